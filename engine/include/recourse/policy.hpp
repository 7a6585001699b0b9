// Compiling policies and deciding with them: the embedding API.
//
// compile() turns .recourse sources into a Bundle of compiled policies (one per tool, "*" the
// fallback). It either returns a complete Bundle or none at all, with every diagnostic found; a
// policy that fails to compile never replaces a good one. A Bundle and its Policies are
// immutable after compilation and safe to share between threads; decide() is const, noexcept and
// allocates nothing for an already-read envelope. A Decision is a plain value whose strings view
// the compiled policy: they stay valid while the Policy, a copy of it or its Bundle lives (an
// Engine's decisions: see engine.hpp). Authoring tools over a Policy (explain, tests, diff,
// format, samples) are in tooling.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recourse/diagnostic.hpp"
#include "recourse/envelope.hpp"
#include "recourse/result.hpp"

namespace recourse {

class Policy;
namespace detail {
struct Compiled;
/// The compiled form behind a Policy, for the library's own stages and tools.
const Compiled& compiled(const Policy& policy) noexcept;
}  // namespace detail
struct BundleBuilder;

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

/// One decision: a plain value, copyable, holding no reference count. Its string views point into
/// the compiled policy and stay valid while that Policy (a copy of it, or its Bundle) lives.
/// Each field has one name across C++, C and JSON (docs/embedding.md, "The decision's fields").
/// sizeof(Decision) is 272 bytes on 64-bit targets.
struct Decision {
  std::string_view rule;          ///< the rule that decided (or "default", or a guard name)
  std::string_view reason;        ///< the route's reason string, or the guard's
  std::string_view target;        ///< replace/degrade target tool, or empty
  std::string_view policy;        ///< policy name
  std::string_view policy_hash;   ///< "sha256:<hex>" of the compiled table
  std::string_view exhausted;     ///< the budget that ran out ("attempts", ...), or empty
  std::string_view nearest_code;  ///< with kUnknownCode: the known code nearest the input
  std::int64_t delay_ms = 0;      ///< wait before the next call (retry); 0 otherwise
  std::int64_t jitter_ms = 0;     ///< the random part drawn for delay_ms, ms
  std::int64_t attempt = 1;       ///< Context::attempt
  /// Calls, repairs and cost units left before this decision and after the call it leads to
  /// (kUnlimited when no policy decided).
  BudgetLeft attempts, repairs, cost;
  BudgetLeft time_ms;                          ///< ms to the deadline
  std::optional<std::int64_t> retry_at_ms;     ///< with Context::now_ms: when to send the retry
  std::optional<std::int64_t> timeout_ms;      ///< per-try timeout for the next call, ms
  std::optional<std::int64_t> retry_after_ms;  ///< the server's valid hint, carried on every route
  std::uint64_t minted_trace_id = 0;           ///< with kTraceIdMinted: print as "local-%016x"
  std::uint32_t warnings = 0;                  ///< DecisionWarning bits
  /// With kSuspiciousText: the steering categories found (docs/language.md section 4, in the
  /// order of its table, bit k for row k+1), the message's in bits 0-15, the suggestion's in
  /// bits 16-31.
  std::uint32_t steering = 0;
  Route route = Route::Stop;
  KeyDirective idempotency_key = KeyDirective::None;
  /// On a retry after the server's pushback (Context::pushback_attempt, below attempt): the
  /// attempt number the backoff counted, attempt - pushback_attempt, since gRFC A6 restarts the
  /// backoff after a pushback; 0 otherwise (the backoff counted `attempt`). The JSON's
  /// backoffAttempt.
  std::int32_t backoff_attempt = 0;

  /// attempts.before, or 0 when no policy decided (no_policy, unreadable_envelope): the JSON's
  /// attemptsLeft and C's attempts_left.
  std::int64_t attempts_left() const noexcept {
    return attempts.before == kUnlimited ? 0 : attempts.before;
  }
  /// repairs.before, or 0 when no policy decided: the JSON's repairsLeft, C's repairs_left.
  std::int64_t repairs_left() const noexcept {
    return repairs.before == kUnlimited ? 0 : repairs.before;
  }
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

/// A compiled policy: immutable and thread-safe. Copying shares the compiled form. Made only by
/// compile() (there is no empty Policy).
class Policy {
 public:
  /// Decides the route for one failed call. Never throws; allocates nothing; writes nothing
  /// shared, so any number of threads may decide with one Policy at once.
  Decision decide(const Envelope& envelope, const Context& context) const noexcept;
  /// The decision table as stable text: strategy, columns and their cells, rows with cube, action
  /// and source position. Golden tests compare it.
  std::string dump() const;
  std::string_view name() const noexcept;
  std::string_view hash() const noexcept;
  /// Cost units one call of the tool charges (tool.cost; default 1).
  std::int64_t call_cost() const noexcept;
  /// The policy's `map` lines: per-tool overrides of the adapters' tables, for
  /// AdapterOptions::mappings.
  const std::vector<CodeMapping>& mappings() const noexcept;

 private:
  Policy() = default;
  friend struct BundleBuilder;
  friend const detail::Compiled& detail::compiled(const Policy& policy) noexcept;
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

/// Parses, checks and compiles sources into one bundle: the whole Bundle, with any warnings, or
/// every error found (E0xx with file, line and column) and no Bundle. Never throws.
Result<Bundle> compile(const std::vector<Source>& sources, const CompileOptions& options = {});

/// Reads files and directories (every *.recourse file below, sorted by path) and compiles them
/// as one bundle. Unreadable paths, and paths that are not regular files (a FIFO, a device), are
/// diagnostics (E000). Never throws.
Result<Bundle> compile_paths(const std::vector<std::string>& paths,
                             const CompileOptions& options = {});

/// The decision as one JSON object (route, delayMs, rule, policy, policyHash, attempt,
/// attemptsLeft, idempotencyKey, warnings, traceId, ...). `envelope` supplies the trace id and
/// the reader's warnings.
std::string to_json(const Decision& decision, const Envelope& envelope);

/// The decision's trace id: the envelope's traceId, else the one minted ("local-%016x").
std::string trace_id(const Decision& decision, const Envelope& envelope);

}  // namespace recourse
