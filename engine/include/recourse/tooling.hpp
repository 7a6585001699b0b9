// Authoring tools over compiled policies: explanations, the reference interpreter, policy tests,
// the policy's limits, diff, formatting, sample inputs, and reading policy files as the compiler
// does. Hosts that only decide need recourse/core.hpp; `recourse check|test|diff|fmt|explain`,
// editors and CI use these. Every fallible function returns a Result (result.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recourse/diagnostic.hpp"
#include "recourse/envelope.hpp"
#include "recourse/policy.hpp"
#include "recourse/result.hpp"

namespace recourse {

/// One tested condition in an explanation: the test as written, the value the attribute had and
/// whether the test held.
struct ExplainedTest {
  std::string test;
  std::string value;
  bool result = false;
};

/// One rule in an explanation, in file order, up to the rule that matched.
struct ExplainedRule {
  std::string rule;
  std::uint32_t line = 0, column = 0;
  bool matched = false;
  std::vector<ExplainedTest>
      tests;  ///< all tests of the matched rule; the first failing one otherwise
};

/// Why a decision came out as it did, by the reference interpreter (which walks the rules, not
/// the table); `guard` names the budget guard that overrode the rule's route, if any. Its
/// decision's string views point into the policy, as decide()'s do.
struct Explanation {
  std::vector<ExplainedRule> rules;
  std::string guard;
  Decision decision;
};

/// The outcome of one `test` block of a policy (docs/language.md, "Tests").
struct TestResult {
  std::string policy;  ///< the policy the test belongs to
  std::string name;    ///< the test's name
  std::string file;
  std::uint32_t line = 0, column = 0;  ///< of `test`: 1-based line and character column
  std::uint64_t offset = 0;            ///< of `test`: bytes from the start of the file
  bool passed = false;
  std::string expected;  ///< the expectation as written, e.g. `retry delay 250ms..20s`
  std::string actual;  ///< the decision in the same words, e.g. `retry rule transient delay 400ms`
  std::vector<std::string> mismatches;  ///< one line per expectation not met
  std::string decision_json;            ///< the decision as to_json() writes it
  Witness input;  ///< the envelope as read and the context the test decides, and the route taken
  /// What the test reaches, for `recourse test --coverage`: the rule whose condition decided
  /// the input ("default" for the default line), and the guard that then overrode its route
  /// ("budget:attempts"), or empty.
  std::string rule, guard;
};

/// A bound declared with `assert sequence METRIC [CODE] <= LIMIT` over the failures of one
/// operation, checked by `recourse fuzz` (docs/language.md, section 16). Metrics: total_wait and
/// max_delay (ms of retry delays), calls (calls made, the first included), calls_after CODE
/// (calls made after the first failure with CODE) and repairs (repaired calls).
struct SequenceBound {
  std::string metric;
  std::string code;        ///< calls_after's code, else empty
  std::int64_t limit = 0;  ///< ms for total_wait and max_delay, calls otherwise
  std::string text;        ///< as written, e.g. `total_wait <= 2m`
  std::string file;
  std::uint32_t line = 0, column = 0;  ///< of `assert`: 1-based line and character column
  std::uint64_t offset = 0;            ///< of `assert`: bytes from the start of the file
};

/// A rule of a policy and where it is written.
struct RuleInfo {
  std::string name;                    ///< "default" for the default line
  std::uint32_t line = 0, column = 0;  ///< of `rule` (or `default`): 1-based line and column
  bool inherited = false;  ///< written in a base (`extends`), whose file line and column are of
};

/// What a policy allows, for tools that check its decisions from outside (recourse fuzz): calls
/// and ms as in its limits and backoff lines; kUnlimited where it sets none.
struct PolicyInfo {
  std::int64_t attempts = 0;      ///< limits.attempts: calls per operation, the first included
  std::int64_t repairs = 0;       ///< limits.repairs
  std::int64_t min_delay_ms = 0;  ///< limits.min_delay: the shortest retry delay
  std::int64_t retry_after_max_ms = 0;  ///< limits.retry_after_max: the longest server hint obeyed
  std::int64_t deadline_ms = kUnlimited;  ///< limits.deadline for the whole operation
  std::int64_t backoff_max_ms = 0;        ///< the largest max of its backoffs (the line, the named)
  /// The largest hint_jitter of its backoffs: a retry after a server hint h waits at most
  /// min(h + floor(h * hint_jitter), retry_after_max_ms); 0 waits h exactly.
  double hint_jitter = 0;
  std::vector<std::string> codes;      ///< built-in and declared codes
  std::vector<std::string> arguments;  ///< tool.arguments
  std::vector<SequenceBound> bounds;   ///< `assert sequence` lines
  /// What tests can reach (`recourse test --coverage`): the rules in the order they are tried,
  /// bases' included, then the default line (left out when the policy has none); and the names
  /// of the guards that check some rule's route, each once, in precedence order.
  std::vector<RuleInfo> rules;
  std::vector<std::string> guards;
  std::string file;  ///< the file that defines the policy, as compiled
};

/// The same decision as policy.decide(), with each rule's tests and values, from the reference
/// interpreter (which walks the rules, not the table).
Explanation explain(const Policy& policy, const Envelope& envelope, const Context& context);
/// The explanation as JSON: {"policy", "rules": [{"rule", "line", "column", "matched", "tests":
/// [{"test", "value", "result"}]}], "guard" ("" when none), "decision" (to_json(decision,
/// envelope))}; what `recourse explain --format json` prints and recourse_engine_explain_json()
/// returns. `envelope` is the one explained.
std::string to_json(const Explanation& explanation, const Envelope& envelope);

/// The decision the reference interpreter gives (walks the AST; used to check the table).
Decision interpret(const Policy& policy, const Envelope& envelope, const Context& context);

/// Runs the policy's own `test` blocks, in file order: each envelope read by read_envelope, each
/// context by read_context (both checked when the policy compiled), decided by the policy's
/// table. Tests of a base policy run with the base, not with policies extending it. Never throws
/// but for allocation failure.
std::vector<TestResult> run_tests(const Policy& policy);

/// The policy's limits, codes, arguments and sequence bounds.
PolicyInfo info(const Policy& policy);

/// A region of inputs whose decision differs between two versions of a policy: in its route,
/// rule, target, spent budget, idempotency-key directive or range of retry delays. With an
/// example, every field is what decide() gives for it, before and after; without one (no input
/// of the region was found) they are the deciding rows', and the delays are 0.
struct DecisionChange {
  std::string before_rule, after_rule;  ///< the rule or guard that decides, before and after
  Route before_route = Route::Stop, after_route = Route::Stop;
  std::string before_target, after_target;        ///< replace/degrade targets
  std::string example;                            ///< `envelope {...} context {...}` in the region
  std::string before_exhausted, after_exhausted;  ///< the budget a guard found spent, or ""
  KeyDirective before_key = KeyDirective::None, after_key = KeyDirective::None;
  /// For a retry, the least and greatest delay (ms) the example's attempt and Retry-After allow
  /// over every jitter draw, floored at min_delay; 0 for the other routes.
  std::int64_t before_delay_min_ms = 0, before_delay_max_ms = 0;
  std::int64_t after_delay_min_ms = 0, after_delay_max_ms = 0;
};

/// A setting that differs between the two versions (`limits.attempts`, `backoff.max`,
/// `tool.idempotent`, `breaker.failures`, `hit`, ...), listed whether or not it changes a
/// decision; the decisions it changes are among PolicyDiff::changes.
struct SettingChange {
  std::string setting;
  std::string before, after;  ///< as the table dump prints them ("absent" when not set)
};

/// What diff() found when both versions compiled and were compared.
struct PolicyDiff {
  /// One per pair of deciding rules (and one more per pair whose retry delays alone differ), in
  /// table order: first the inputs that send the host's override of each limit that differs,
  /// then those that lack one or more (see diff()).
  std::vector<DecisionChange> changes;
  std::vector<SettingChange> settings;  ///< in the dump's order
};

/// Compares two versions of one policy: every region of inputs whose decision changes (route,
/// rule, target, spent budget, idempotency-key directive or range of retry delays), whatever
/// changed it (rules, guards, settings, bases), grouped by the rule (or guard) that decides
/// before and after, each with an example input that `recourse decide` reproduces on both
/// versions, and every setting that differs. A version that extends a base is compiled with it
/// (BASE.recourse beside the version's path, as compile_paths() finds it). `policy` names the
/// policy when a source holds several.
/// Both versions must declare the same codes (E040). Decided by cube algebra over the raw
/// inputs: where a limit differs (attempts, deadline, cost, tool arguments, idempotent), the
/// inputs with and without the host's override of it are compared apart, each version's
/// derived attributes rewritten into common coordinates; nothing enumerates the inputs. Not
/// compared: the deadline's check of a drawn delay after the lookup (a retry whose jittered
/// delay would end past the deadline stops), which depends on the draw. Never throws.
Result<PolicyDiff> diff(const Source& before, const Source& after, std::string_view policy = {},
                        const CompileOptions& options = {});

/// The canonical form of one .recourse file's text (docs/language.md, "Formatting"): the text, or
/// a failure with diagnostics (`path` names the file in them): a syntax error (E001), nesting
/// beyond options.max_depth (E092), a text beyond options.max_source_bytes (E090), or an internal
/// error (E099) when the printed text would not give back the same policies or comments; a printed
/// text that differs from `text` must also pass verify_format(text, printed, path, options), which
/// may read the files of bases beside `path`. The result is idempotent (format(format(x)) ==
/// format(x)) and compiles to the same policies (the same Policy::hash()). Never throws.
Result<std::string> format(std::string_view text, std::string_view path = "",
                           const CompileOptions& options = {});

/// Whether `formatted` may replace `original`, the text of the file at `path`: ok when it
/// fits in options.max_source_bytes and compiles as `original` does. Both are compiled as
/// compile_paths() would compile that file alone (bases named by `extends` read from
/// NAME.recourse beside `path`; the analysis left out, as it changes no table) and must give
/// the same policies with the same decision tables (names and Policy::hash(), which covers the
/// settings and the rows but not source positions), or, when `original` does not compile, the
/// same errors (codes and messages). Otherwise a failure with one diagnostic naming `path`: E090
/// when the formatted text would exceed the limit (its size and the limit), E099 naming the
/// first policy or error that differs. Never throws.
Status verify_format(std::string_view original, std::string_view formatted,
                     std::string_view path = "", const CompileOptions& options = {});

/// One input of a decision.
struct Sample {
  Envelope envelope;
  Context context;  ///< its tool is the policy's name
};

/// Up to `n` inputs drawn from `seed` across the compiled table: each picks a row, then one cell
/// of every column in the part of that row no earlier row takes, and realizes that cell combination
/// as a concrete envelope and context (as the analysis prints counterexamples). Combinations no
/// concrete input reaches (derived attributes) are skipped, so fewer than `n` may come back, never
/// none: an empty envelope is the fallback. Same (policy, n, seed), same inputs. Never throws but
/// on std::bad_alloc.
std::vector<Sample> sample_inputs(const Policy& policy, std::size_t n, std::uint64_t seed);

/// Compiles one file's text as compile_paths() compiles that file alone: the bases its
/// `extends` names are read from NAME.recourse beside `source.path`, and the analysis runs as
/// options.analyze says. The text need not be the file's on disk (an editor's unsaved buffer).
/// Diagnostics as compile_paths() gives them; never throws.
Result<Bundle> compile_file(const Source& source, const CompileOptions& options = {});

/// What kind of word of the policy language a Term is.
enum class TermKind : std::uint8_t { Attribute, Route, Code, Setting, Invariant };

/// One word of the policy language with what the checker knows of it, for editors (`recourse
/// lsp`'s hover and completion). Read from the tables the checker itself is driven by: the
/// attribute catalogue and the envelope's and context's fields (model/model.hpp,
/// model/fields.hpp), the routes, the built-in codes, the settings table (model/settings.hpp)
/// and the built-in invariants; docs/language.md is held to the same tables by its tests.
struct Term {
  TermKind kind = TermKind::Attribute;
  std::string name;   ///< as a policy writes it: `side_effect`, `retry`, `TRANSIENT`, `attempts`
  std::string block;  ///< a setting's block: `tool`, `limits`, `backoff`, `breaker`, `throttle`
  /// Attribute: code, bool, string, duration, count or enum; setting: flag, count, duration,
  /// number, tool, names, codes or word; empty for the other kinds.
  std::string type;
  std::string values;    ///< an enum's or a word setting's values, a number's range ("1 .. 10")
  std::string origin;    ///< attribute: `envelope`, `context` or `derived`
  std::string json_key;  ///< attribute: the envelope's or context's JSON key, if any
  bool may_be_absent = false;  ///< attribute: the server may leave it out (envelope, untrusted)
  std::string default_text;    ///< setting: the default, as docs/language.md shows it
  std::string meaning;         ///< setting: one line from the settings table; else empty
};

/// Every attribute a rule may test, every route, every built-in code, every setting (in the
/// dump's order, block by block) and every built-in invariant. `attempt_ceiling` is the high end
/// of limits.attempts (CompileOptions::attempt_ceiling). Never throws but on std::bad_alloc.
std::vector<Term> vocabulary(std::int64_t attempt_ceiling = CompileOptions{}.attempt_ceiling);

/// A regular file's text, read as compile_paths() reads a policy file.
struct FileText {
  std::string text;  ///< at most max_bytes + 1 bytes: one past the limit tells an oversized file
  std::uint64_t size = 0;  ///< the file's size in bytes (fstat()'s, or the bytes read if it grew)
};

/// Reads the regular file at `path`, at most `max_bytes` + 1 bytes (memory follows the file's
/// size). A FIFO, socket, device or directory is refused without blocking: the file is opened
/// with O_NONBLOCK and checked with fstat() before any read (opening a FIFO without it waits for
/// a writer). Fails with E000 (file: `path`), whose message is a phrase that follows the path:
/// "is a FIFO, not a regular file", "is a directory", "cannot be read: Permission denied".
/// Never throws.
Result<FileText> read_regular_file(const std::string& path, std::size_t max_bytes) noexcept;

/// An open regular file: its descriptor, which the caller closes, and its size in bytes.
struct OpenFile {
  int fd = -1;
  std::uint64_t size = 0;
};

/// Opens the regular file at `path` for reading as read_regular_file() does, for readers that
/// stream a file instead of holding it (`recourse replay`'s trace); fails as it does. Never
/// throws.
Result<OpenFile> open_regular_file(const std::string& path) noexcept;

}  // namespace recourse
