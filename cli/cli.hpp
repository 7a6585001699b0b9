// The `recourse` command: shared options, input helpers and the subcommands.
//
// Exit codes for every command: 0 success (warnings allowed), 1 errors or failed checks
// (--strict turns warnings into errors), 2 usage errors (CLI11 reports those).
#pragma once

#include <fstream>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "recourse/recourse.hpp"

namespace recourse::cli {

enum class Format { Text, Json };

/// Input limits of the command (the library's own limits apply on top); docs/language.md,
/// section 17, has them all.
inline constexpr std::size_t kMaxEnvelopeFileBytes = 1 << 20;
inline constexpr std::size_t kMaxContextBytes = ContextLimits{}.max_bytes;  // the reader's
/// A trace (replay --max-trace-bytes) and one line of it (--max-line-bytes): a line holds at
/// most an envelope or a raw form (1 MiB) and a context (1 MiB), with room to spare.
inline constexpr std::size_t kMaxTraceBytes = std::size_t{1} << 30;
inline constexpr std::size_t kMaxTraceLineBytes = std::size_t{4} << 20;
inline constexpr std::size_t kMaxTraceLineDepth = 64;

struct Options {
  Format format = Format::Text;
  bool strict = false;
  std::vector<std::string> policies;  // --policy (files or directories)
  std::string envelope;               // --envelope FILE, or "-" / empty for stdin
  std::string context;                // --context FILE
  std::vector<std::string> paths;     // positional arguments
  bool dump = false;
  CompileOptions compile;  // --max-rules, --max-codes; check --analysis-work, --max-cover-splits
  std::string from;        // --from http|grpc|mcp|jsonrpc|auto: the input is a raw form
  std::optional<std::int64_t> now;  // --now MS (envelope): the clock for HTTP-dates
  bool check = false;               // fmt --check: write nothing, list files that would change
  std::string name;                 // diff: the policy to compare
  std::string before;               // diff: the file before the change
  std::string after;                // diff: the file after the change
  std::string state;                // --state memory|sqlite:PATH|redis://HOST:PORT (empty: none)
  std::size_t limit = 1000;         // ledger: entries listed at most
  std::string breaker;              // breaker: show, isolate, open or reset
  std::int64_t for_ms = 0;          // breaker open --for-ms: how long it is held open
  std::string endpoint;             // breaker --endpoint: the tools' circuits for this target
  std::string log;                  // --log FILE (decide, replay): the decision log, JSONL
  std::string log_text = "redact";  // --log-text redact|keep: the log's untrusted texts
  std::vector<std::string> shadow;  // replay --shadow: the candidate policies' files or folders
  std::size_t max_trace_bytes = kMaxTraceBytes;     // replay --max-trace-bytes
  std::size_t max_line_bytes = kMaxTraceLineBytes;  // replay --max-line-bytes
  // fuzz
  double seconds = 10;          // time limit per policy (without --sequences)
  std::uint64_t sequences = 0;  // sequences per policy (0: until --seconds)
  std::uint64_t seed = 1;
  std::size_t max_length = 16;      // failed calls per sequence (the sequence length limit)
  std::size_t max_violations = 10;  // stop a policy after this many broken properties
  std::string out;                  // directory for the violating traces
  std::string tool;                 // fuzz only this policy
  // test
  bool coverage = false;            // --coverage: which rules, defaults and guards tests reach
  std::optional<double> threshold;  // --threshold PERCENT: fail below it (implies --coverage)
};

// io.cpp
/// Reads a file ("-" or empty: stdin), failing with `error` beyond `max_bytes` or on anything
/// but a regular file (a directory, a FIFO: read_regular_file(), so it never blocks).
std::optional<std::string> read_text(const std::string& path, std::size_t max_bytes,
                                     std::string& error);

/// The lines of a file or of stdin, read in chunks of 64 KiB: memory follows the longest line
/// kept (at most `max_line_bytes`), never the input's size or the limits.
class LineReader {
 public:
  enum class Result {
    Line,      ///< a line, without its '\n' (a '\r' before it is kept)
    TooLong,   ///< a line of more than max_line_bytes: read to its end and dropped
    End,       ///< no more input
    TooLarge,  ///< the input passed max_total_bytes (error() says so); nothing more is read
    Failed     ///< a read failed (error() says why)
  };
  LineReader(std::size_t max_line_bytes, std::size_t max_total_bytes)
      : max_line_(max_line_bytes), max_total_(max_total_bytes) {}
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  /// Opens `path` ("-" or empty: stdin; else a regular file, by open_regular_file()); false
  /// with error() set, also for a file already larger than max_total_bytes.
  bool open(const std::string& path);
  /// The next line into `line` (empty unless Line).
  Result next(std::string& line);
  const std::string& error() const { return error_; }

 private:
  bool fill();  // reads the next chunk; false at the end, on a failure or past the limit
  std::size_t max_line_, max_total_;
  std::string name_, error_;
  int fd_ = -1;
  bool owned_ = false;  // fd_ is closed by the destructor (not stdin)
  bool failed_ = false;
  std::vector<char> chunk_;
  std::size_t pos_ = 0, len_ = 0, total_ = 0;
};
/// Compiles paths, prints diagnostics to stderr (text or JSON), returns the bundle or nullopt.
/// Without `analyze` only the tables are built (CompileOptions::analyze): the commands that
/// decide leave the proofs and findings to `recourse check`.
std::optional<Bundle> load(const std::vector<std::string>& paths, const Options& options,
                           bool analyze = true);
/// A top-level member of a JSON object's text: its key as a parser reads it (escapes resolved)
/// and the [begin, end) offsets of its value's exact text, so a trace's envelope reaches the
/// envelope reader byte for byte (duplicate keys, huge numbers and all).
struct RawMember {
  std::string key;
  std::size_t begin = 0, end = 0;
};
/// The top-level members of the JSON object in `text`, in order, a key given twice as often as
/// it is given. The walk stops at the first thing that is not a member (the text is validated
/// by a parser afterwards); empty when `text` is not an object.
std::vector<RawMember> raw_members(std::string_view text);
/// The first member named `key`, or nullptr.
const RawMember* find_member(const std::vector<RawMember>& members, std::string_view key);
/// The deepest nesting of objects and arrays in JSON text (brackets inside strings ignored),
/// checked before a DOM parse, whose copies and destructors recurse.
std::size_t nesting(std::string_view json);
/// The policy files `paths` name, in order: each path as given ("-" too), each directory
/// expanded to the *.recourse files below it, sorted.
std::vector<std::string> policy_files(const std::vector<std::string>& paths);
/// Writes `diagnostics` as text (file:line:col, caret) or as one JSON array.
void print_diagnostics(const std::vector<Diagnostic>& diagnostics, Format format,
                       std::ostream& out);
/// A decision's delay for the text outputs: "250ms" for a retry, "-" for every other route.
std::string delay_text(const Decision& decision);
/// The decision log of --log FILE: each decision appended as one line of engine.hpp's record.
/// Without a path it writes nothing.
class DecisionLogFile {
 public:
  /// Opens `path` for appending (empty: no log), its records written with `options`; false,
  /// with the reason on stderr, on failure.
  bool open(const std::string& path, const LogOptions& options = {});
  /// Appends one record; `candidate` (with its ShadowDifference bits) when a candidate disagreed.
  void write(const Envelope& envelope, const Context& context, const Decision& decision,
             const Decision* candidate = nullptr, std::uint32_t differences = 0);
  /// Appends one record already written as JSON (an operator's breaker command).
  void write(const std::string& json_line);
  /// Flushes; false, with the reason on stderr, when a write failed.
  bool close();

 private:
  std::string path_;
  LogOptions options_;
  std::ofstream out_;
};
/// The decision log's options --log-text gives ("keep": LogText::Keep, else LogText::Redact).
LogOptions log_options(const Options& options);

// adapt.cpp
/// Reads a raw form through its adapter: `from` names the protocol (empty: the form's own
/// "protocol" member). The policy for `context->tool` in `bundle` supplies its `map` overrides;
/// the clock is `now`, else the context's nowMs.
Result<Adapted> adapt(const std::string& from, std::string_view raw, const Context* context,
                      const Bundle* bundle, std::optional<std::int64_t> now);
/// Reads a failure given to decide, explain or a replay line's "envelope" as `from` says. Empty:
/// an envelope, with a `raw_form` warning (on `code`) when it has no code and looks like a raw
/// form (raw_form_protocol()), which reading it as an envelope turns into UNKNOWN. "auto": a raw
/// form through its adapter when it looks like one, else an envelope. A protocol: a raw form of
/// it (adapt()). The failure's message starts with "envelope: " or "raw form: ".
Result<Adapted> read_failure(const std::string& from, std::string_view text, const Context& context,
                             const Bundle& bundle);
int run_envelope(const Options& options);

// commands.cpp
int run_check(const Options& options);
int run_decide(const Options& options, bool explain);
int run_replay(const Options& options);
int run_compile(const Options& options);
/// `recourse diff BEFORE AFTER`: exit 0 when no decision changes, 1 when some do (as diff(1)),
/// or on errors.
int run_diff(const Options& options);

// fmt.cpp
int run_fmt(const Options& options);

// state.cpp
/// Wall-clock ms since the epoch (for decisions whose context gives no nowMs).
std::int64_t wall_ms();
/// Opens the --state store, printing its warnings and, on failure, the error (nullptr).
std::shared_ptr<Store> open_state(const std::string& spec);
/// Before deciding on a failed call: counts it in `workflow` (may be null), records the failure
/// on the tool's breaker and fills the context from the state (Workflow::apply, Health::prepare).
void before_decision(Workflow* workflow, Health& health, const Policy& policy, Context& context,
                     const Envelope& envelope, std::int64_t now_ms);
/// After deciding: records the decision (a repair's next call, a retry's token).
void after_decision(Workflow* workflow, Health& health, const Policy& policy,
                    const Context& context, const Decision& decision);
/// `recourse ledger --state SPEC [OPERATION...]`: the ledger's entries (all, or those named).
int run_ledger(const Options& options);
/// `recourse breaker --state SPEC COMMAND TOOL...`: shows, isolates, opens (held --for-ms) or
/// resets tools' breakers in the store (the breakers of `scope = shared`), each command
/// appended to the --log decision log.
int run_breaker(const Options& options);

// fuzz.cpp
/// `recourse fuzz POLICY`: adversarial sequences of failures through the policies; exit 1 when
/// a property or a declared `assert sequence` bound breaks.
int run_fuzz(const Options& options);

// test.cpp
/// `recourse test PATHS`: runs the `test` blocks of every policy file, each file compiled on its
/// own (with the bases it extends). Exit 0 when all pass, 1 on a failure or a compile error.
int run_test(const Options& options);

// coverage.cpp
/// A rule, the default or a guard of a policy, and how many of the policy's tests reach it.
struct CoverageTarget {
  std::string name;   ///< the rule's name, "default", or the guard's name
  std::string guard;  ///< a guard's name; empty for a rule or the default
  RuleInfo rule;      ///< a rule's or the default's place
  std::size_t tests = 0;
};
/// One policy's targets (PolicyInfo::rules, then ::guards) and its tests' reach.
struct PolicyCoverage {
  std::string policy;
  std::vector<CoverageTarget> targets;
  std::size_t reached() const;  ///< targets at least one test reaches
};
/// The policies a file defines, with their coverage by the file's tests.
struct FileCoverage {
  std::string file;
  std::vector<PolicyCoverage> policies;
};
/// The coverage of `policy` by `tests`, its own tests' results (run_tests()).
PolicyCoverage coverage_of(const Policy& policy, const std::vector<TestResult>& tests);
/// Reports coverage: as text on stdout (each policy's share, the targets no test reaches, the
/// total), or, for Format::Json, as an object in `*json` ({"policies", "reached", "total",
/// "percent", "threshold"}). False when the total share is below `threshold` (percent).
bool report_coverage(const std::vector<FileCoverage>& files, Format format,
                     std::optional<double> threshold, nlohmann::ordered_json* json);

// lsp.cpp
/// The limits of `recourse lsp` (--max-message-bytes, --max-documents).
struct LspLimits {
  /// One message's body; larger ones are read past and answered with an error. The default
  /// holds a document of CompileOptions::max_source_bytes escaped as JSON many times over.
  std::size_t max_message_bytes = std::size_t{16} << 20;
  std::size_t max_documents = 1000;  ///< documents open at once; a didOpen beyond is refused
};
/// `recourse lsp`: a Language Server Protocol server on stdin and stdout (cli/lsp.hpp). Exit 0
/// after `shutdown` and `exit`, 1 when stdin ends or `exit` comes first.
int run_lsp(const LspLimits& limits, const CompileOptions& options);

}  // namespace recourse::cli
