// Compiling policies and deciding with them: the embedding API.
//
// compile() turns .recourse sources into a Bundle of compiled policies (one per tool, "*" the
// fallback). It either returns a complete Bundle or none at all, with every diagnostic found; a
// policy that fails to compile never replaces a good one. A Bundle and its Policies are
// immutable after compilation and safe to share between threads; decide() is const, noexcept and
// allocates nothing for an already-read envelope. A Decision keeps its policy alive, so a bundle
// may be dropped or replaced while decisions made from it are still in use.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recourse/adapters.hpp"
#include "recourse/diagnostic.hpp"
#include "recourse/envelope.hpp"

namespace recourse {

namespace detail {
struct Compiled;
}
struct BundleBuilder;
class Health;

/// What to do next. Ordered from the most to the least permissive; issue of the seed 000.
enum class Route : std::uint8_t {
  Retry,      ///< call again, unchanged, after delay_ms
  Repair,     ///< call again with an argument changed (see Envelope::field, suggestion)
  Authorize,  ///< obtain a credential or approval first
  Replace,    ///< call another tool (Decision::target)
  Degrade,    ///< fall back to a degraded answer (Decision::target names it, if any)
  Escalate,   ///< hand to a human
  Stop        ///< give up; another attempt would waste time or repeat a side effect
};

/// "retry", "repair", ... as in the language.
const char* to_string(Route route) noexcept;

/// What the host should do with the idempotency key of the next call (IETF Idempotency-Key
/// draft; RFC 9110 section 9.2.2): send the same key (Reuse), a fresh one because the arguments
/// changed (New), or none because the tool takes none or no call follows (None).
enum class KeyDirective : std::uint8_t { None, Reuse, New };
const char* to_string(KeyDirective directive) noexcept;

/// Problems met while deciding, as bits of Decision::warnings.
enum DecisionWarning : std::uint32_t {
  kUnknownCode = 1u << 0,         ///< the code matched none; read as UNKNOWN (see nearest_code)
  kNoPolicy = 1u << 1,            ///< no policy for the tool and no "*" fallback: route is stop
  kSideEffectAssumed = 1u << 2,   ///< the context gave no sideEffect: read as unknown
  kTraceIdMinted = 1u << 3,       ///< the envelope had no traceId: Decision::minted_trace_id
  kUnreadableEnvelope = 1u << 4,  ///< the envelope was not JSON: conservative stop
  kStoreUnavailable = 1u << 5,    ///< the state store could not answer: local, conservative state
  kSuspiciousText = 1u << 6       ///< the message or suggestion reads as instructions to the agent
                                  ///< (Decision::steering names the categories)
};

/// A decision warning and its kind, the name the decision's JSON gives it.
struct DecisionWarningKind {
  DecisionWarning warning;
  const char* kind;
};

/// Every DecisionWarning with its kind, in the order the decision's JSON lists them
/// (docs/language.md section 14).
inline constexpr DecisionWarningKind kDecisionWarningKinds[] = {
    {kUnknownCode, "unknown_code"},
    {kSideEffectAssumed, "side_effect_assumed"},
    {kNoPolicy, "no_policy"},
    {kUnreadableEnvelope, "unreadable_envelope"},
    {kTraceIdMinted, "trace_id_minted"},
    {kStoreUnavailable, "store_unavailable"},
    {kSuspiciousText, "suspicious_text"}};

/// No limit: a budget the policy does not set (no deadline, no cost cap).
inline constexpr std::int64_t kUnlimited = INT64_MAX;

/// One budget's amount left before this decision, and after the call it leads to (a retry or a
/// repair spends one attempt, its cost and its delay; a repair also one repair). kUnlimited when
/// the policy and the host set no limit.
struct BudgetLeft {
  std::int64_t before = kUnlimited;
  std::int64_t after = kUnlimited;
};

/// One decision. String views point into the compiled policy, which `keep_alive` owns.
struct Decision {
  Route route = Route::Stop;
  std::int64_t delay_ms = 0;           ///< wait before the next call (retry); 0 otherwise
  std::int64_t jitter_draw = 0;        ///< the random part drawn for delay_ms, ms
  std::string_view rule;               ///< the rule that decided (or "default", or a guard name)
  std::string_view reason;             ///< the route's reason string, or the guard's
  std::string_view target;             ///< replace/degrade target tool, or empty
  std::string_view policy;             ///< policy name
  std::string_view policy_hash;        ///< "sha256:<hex>" of the compiled table
  std::string_view exhausted;          ///< the budget that ran out ("attempts", ...), or empty
  std::string_view nearest_code;       ///< with kUnknownCode: the known code nearest the input
  std::int64_t attempt = 1;            ///< Context::attempt
  std::int64_t attempts_left = 0;      ///< max attempts - attempt - lower retries (>= 0)
  std::int64_t repairs_left = 0;       ///< max repairs - repairs (>= 0)
  BudgetLeft attempts, repairs, cost;  ///< calls, repairs, cost units
  BudgetLeft time_ms;                  ///< ms to the deadline
  std::optional<std::int64_t> retry_at_ms;     ///< with Context::now_ms: when to send the retry
  std::optional<std::int64_t> timeout_ms;      ///< per-try timeout for the next call, ms
  std::optional<std::int64_t> retry_after_ms;  ///< the server's valid hint, carried on every route
  KeyDirective idempotency_key = KeyDirective::None;
  std::uint32_t warnings = 0;         ///< DecisionWarning bits
  std::uint64_t minted_trace_id = 0;  ///< with kTraceIdMinted: print as "local-%016x"
  /// With kSuspiciousText: the steering categories found (docs/language.md section 4, in the
  /// order of its table, bit k for row k+1), the message's in bits 0-15, the suggestion's in
  /// bits 16-31.
  std::uint32_t steering = 0;
  std::uint32_t row = 0;  ///< decision-table row that matched
  std::shared_ptr<const detail::Compiled> keep_alive;
};

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
/// the table); `guard` names the budget guard that overrode the rule's route, if any.
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

/// What a policy allows, for tools that check its decisions from outside (recourse fuzz): calls
/// and ms as in its limits and backoff lines; kUnlimited where it sets none.
struct PolicyInfo {
  std::int64_t attempts = 0;      ///< limits.attempts: calls per operation, the first included
  std::int64_t repairs = 0;       ///< limits.repairs
  std::int64_t min_delay_ms = 0;  ///< limits.min_delay: the shortest retry delay
  std::int64_t retry_after_max_ms = 0;  ///< limits.retry_after_max: the longest server hint obeyed
  std::int64_t deadline_ms = kUnlimited;  ///< limits.deadline for the whole operation
  std::int64_t backoff_max_ms = 0;        ///< the backoff's max
  std::vector<std::string> codes;         ///< built-in and declared codes
  std::vector<std::string> arguments;     ///< tool.arguments
  std::vector<SequenceBound> bounds;      ///< `assert sequence` lines
};

/// Limits of the compiler; each has a stable diagnostic when exceeded.
struct CompileOptions {
  std::size_t max_source_bytes = 1 << 20;  ///< per file (E090)
  std::size_t max_rules = 20000;           ///< per policy (E091)
  std::size_t max_codes = 20000;           ///< codes declared per policy, bases' included (E095)
  std::size_t max_depth = 64;              ///< condition nesting (E092)
  std::size_t max_extends_depth = 16;      ///< bases above one policy along `extends` (E033)
  std::size_t max_terms_per_rule = 4096;   ///< DNF terms of one rule's condition (E093)
  std::size_t max_dnf_work = 1 << 22;      ///< term intersections while expanding one rule (E093)
  std::size_t max_table_bytes = std::size_t{256} << 20;  ///< the compiled table's size (E094)
  /// Largest direct-indexed table: entries, one per combination of the columns' classes of
  /// cells (2 bytes each); a table with more, or with more than 65,535 rows, uses bitsets.
  std::size_t direct_table_max_entries = 1 << 16;
  std::int64_t attempt_ceiling = 10;  ///< no policy may allow more attempts (gRPC clamps at 5)
  /// Work the analysis may spend on all the coverage questions of one policy (shadowed rules,
  /// invariants, assertions, `hit unique` overlaps), in units of a row test (8 words of a row, or
  /// of the matcher's bitsets read, cost one); about a second. The questions left beyond it are
  /// reported as W109, not decided. 10,500 random rules (1 MiB of them) need about 2^30.
  std::size_t max_analysis_work = std::size_t{1} << 26;
  /// Splits one coverage question of the analysis (or of diff()) may make: each cuts a part of
  /// the question's cube in two on one column and keeps one more part to cover, so this bounds
  /// one question's time and memory as max_analysis_work bounds all of them. A question that
  /// needs more is reported as W109, not decided.
  std::size_t max_cover_splits = 200000;
  /// Whether compile() and compile_paths() also analyse each table: the proofs of the
  /// invariants and assertions (E101-E104, E120), E016, E106 and the findings (W101-W109).
  /// Without it the tables are built and nothing is proven, for a host that checks its policies
  /// ahead (`recourse check` in CI) and loads them on a hot path; `recourse decide`, `explain`
  /// and `replay` compile so.
  bool analyze = true;
  /// Limits of the steering detector that gives `suspicious_text` and `suspicious_suggestion`
  /// (docs/language.md section 4); the compiled policy keeps them for every decision.
  SteeringLimits steering;
};

/// A compiled policy: immutable and thread-safe. Copying shares the compiled form.
class Policy {
 public:
  /// Decides the route for one failed call. Never throws; allocates nothing.
  Decision decide(const Envelope& envelope, const Context& context) const noexcept;
  /// The same decision without `keep_alive`, so no write to memory shared between threads
  /// (copying the shared pointer updates one reference count from every thread): the path for
  /// many threads deciding at once. Its string views stay valid while this Policy, a copy of it
  /// or its Bundle lives. Never throws; allocates nothing.
  Decision decide_unpinned(const Envelope& envelope, const Context& context) const noexcept;
  /// The same decision, with each rule's tests and values, from the reference interpreter.
  Explanation explain(const Envelope& envelope, const Context& context) const;
  /// The decision the reference interpreter gives (walks the AST; used to check the table).
  Decision interpret(const Envelope& envelope, const Context& context) const;
  /// Runs the policy's own `test` blocks, in file order: each envelope read by read_envelope,
  /// each context by read_context (both checked when the policy compiled), decided by this
  /// policy's table. Tests of a base policy run with the base, not with policies extending it.
  /// Never throws but for allocation failure.
  std::vector<TestResult> run_tests() const;
  /// The decision table as stable text: strategy, columns and their cells, rows with cube, action
  /// and source position. Golden tests compare it.
  std::string dump() const;
  std::string_view name() const noexcept;
  /// The policy's limits, codes, arguments and sequence bounds.
  PolicyInfo info() const;
  std::string_view hash() const noexcept;
  /// Cost units one call of the tool charges (tool.cost; default 1).
  std::int64_t call_cost() const noexcept;
  /// The policy's `map` lines: per-tool overrides of the adapters' tables, for
  /// AdapterOptions::mappings.
  const std::vector<CodeMapping>& mappings() const noexcept;

 private:
  friend struct BundleBuilder;
  friend class Health;
  friend class Bundle;
  friend class Engine;
  std::shared_ptr<const detail::Compiled> impl_;
};

/// One source to compile: a path for diagnostics and the text.
struct Source {
  std::string path;
  std::string text;
};

/// Compiled policies selected by tool name; the policy named "*" catches other tools.
class Bundle {
 public:
  /// The policy for `tool`, else the "*" policy, else nullptr.
  const Policy* find(std::string_view tool) const noexcept;
  /// Decides with find(context.tool); without a policy: stop, with kNoPolicy. Never throws.
  Decision decide(const Envelope& envelope, const Context& context) const noexcept;
  /// The conservative decision for an envelope that could not be read (read_envelope() not ok):
  /// stop, with kUnreadableEnvelope and a minted trace id. Never throws.
  Decision unreadable(const Context& context) const noexcept;
  const std::vector<Policy>& policies() const noexcept { return policies_; }

 private:
  friend struct BundleBuilder;
  std::vector<Policy> policies_;  // sorted by name
};

/// A Bundle, or the reasons there is none. Warnings come with a Bundle too.
struct CompileResult {
  std::optional<Bundle> bundle;
  std::vector<Diagnostic> diagnostics;
  bool ok() const noexcept { return bundle.has_value(); }
};

/// Parses, checks and compiles sources into one bundle. Never throws.
CompileResult compile(const std::vector<Source>& sources, const CompileOptions& options = {});

/// Reads files and directories (every *.recourse file below, sorted by path) and compiles them
/// as one bundle. Unreadable paths, and paths that are not regular files (a FIFO, a device), are
/// diagnostics (E000). Never throws.
CompileResult compile_paths(const std::vector<std::string>& paths,
                            const CompileOptions& options = {});

/// Opens the regular file at `path` for reading, as read_regular_file() does (O_NONBLOCK, then
/// fstat(), so a FIFO, socket, device or directory is refused without blocking): the file
/// descriptor, which the caller closes, or -1 with `error` set to the same phrases. For readers
/// that stream a file instead of holding it (`recourse replay`'s trace). `size`, when given, is
/// set to the file's size in bytes (fstat()'s). Never throws.
int open_regular_file(const std::string& path, std::string& error,
                      std::uint64_t* size = nullptr) noexcept;

/// Reads the regular file at `path` as compile_paths() reads a policy file, at most `max_bytes`
/// + 1 bytes (one past the limit, so the caller can tell an oversized file; memory follows the
/// file's size). A FIFO, socket, device or directory is refused without blocking: the file is
/// opened with O_NONBLOCK and checked with fstat() before any read (opening a FIFO without it
/// waits for a writer). nullopt otherwise, with `error` set to a phrase that follows the path:
/// "is a FIFO, not a regular file", "is a directory", "cannot be read: Permission denied".
/// `size`, when given, is set to the file's size in bytes (fstat()'s, or the bytes read if the
/// file grew meanwhile), which may be beyond what was read. Never throws.
std::optional<std::string> read_regular_file(const std::string& path, std::size_t max_bytes,
                                             std::string& error,
                                             std::uint64_t* size = nullptr) noexcept;

/// A region of inputs whose decision differs between two versions of a policy.
struct DecisionChange {
  std::string before_rule, after_rule;  ///< the rule or guard that decides, before and after
  Route before_route = Route::Stop, after_route = Route::Stop;
  std::string before_target, after_target;  ///< replace/degrade targets
  std::string example;                      ///< `envelope {...} context {...}` in the region
};

/// A setting that differs between the two versions (`limits.attempts`, `backoff.max`,
/// `tool.idempotent`, `breaker.failures`, `hit`, ...). Settings move budgets, delays and guards
/// for inputs the comparison of the tables cannot single out (a guard tests attempts_left, whose
/// meaning the setting changes), so diff() names each one instead.
struct SettingChange {
  std::string setting;
  std::string before, after;  ///< as the table dump prints them ("absent" when not set)
};

/// What diff() found: `ok` when both versions compiled and were compared.
struct DiffResult {
  bool ok = false;
  std::vector<Diagnostic> diagnostics;
  std::vector<DecisionChange> changes;  ///< one per pair of deciding rules, in table order
  std::vector<SettingChange> settings;  ///< in the dump's order
};

/// Compares two versions of one policy: every region of inputs whose route or target changes,
/// grouped by the rule (or guard) that decides before and after, each with an example input
/// that `recourse decide` reproduces, and every setting that differs. A version that extends a
/// base is compiled with it (BASE.recourse beside the version's path, as compile_paths() finds
/// it). `policy` names the policy when a source holds several.
/// Both versions must declare the same codes (E040). Decided by cube algebra over the two tables
/// compiled into one cell space; nothing enumerates the inputs. Never throws.
DiffResult diff(const Source& before, const Source& after, std::string_view policy = {},
                const CompileOptions& options = {});

/// The decision as one JSON object (route, delayMs, rule, policy, policyHash, attempt,
/// attemptsLeft, idempotencyKey, warnings, traceId, ...). `envelope` supplies the trace id and
/// the reader's warnings.
std::string to_json(const Decision& decision, const Envelope& envelope);

}  // namespace recourse
