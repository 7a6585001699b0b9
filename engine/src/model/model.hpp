// The checked policy model: what the checker produces and what the compiler, the reference
// interpreter and decide() consume.
//
// Everything here is resolved: attributes are ids with types, codes are ids into the policy's
// code table, durations are ms, routes are enums. The attribute catalogue (kAttributes) is the
// one place that lists the language's attributes, their types and whether they come from the
// untrusted envelope (and so have an `absent` value); model/fields.hpp binds them to the
// Envelope's and the Context's fields and their JSON keys.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ast.hpp"
#include "model/names.hpp"
#include "recourse/adapters.hpp"
#include "recourse/tooling.hpp"

namespace recourse::detail {

/// Value types of attributes. Enum attributes list their values in AttrInfo::values.
enum class Type : std::uint8_t { Code, Bool, Enum, String, Duration, Count };

/// Attribute ids; kAttributes is indexed by them.
enum class Attr : std::uint8_t {
  Code,
  Retryable,
  Field,
  Suggestion,
  RetryAfter,
  TraceId,  // envelope (untrusted)
  Idempotent,
  SideEffect,
  Attempt,
  Repairs,
  Elapsed,
  Tool,
  Repeats,  // context (trusted)
  IdempotencyKey,
  Circuit,
  RetryThrottled,  // context or host state
  AttemptsLeft,
  TimeLeft,
  CostLeft,              // derived before the lookup
  FieldInArguments,      // derived: `field in arguments`
  SuspiciousText,        // derived: the steering detector on message and suggestion
  SuspiciousSuggestion,  // derived: the steering detector on suggestion
  DeadlineSlack,         // derived, guards only
  AttemptsUsed,          // derived, guards only: attempt + lowerRetries, for a rule's own cap
  RunCallsLeft,          // derived, guards only: the run's calls left (the smaller of the two)
  RunCostLeft,           // derived, guards only: the run's cost units left
  RunFailuresLeft,       // derived, guards only: the run's failures left
  kCount
};
inline constexpr std::size_t kAttrCount = static_cast<std::size_t>(Attr::kCount);

/// The values of the idempotency_key attribute: whether the host pinned the call's key.
inline constexpr std::array<std::string_view, 2> kKeyStates = {"none", "pinned"};

struct AttrInfo {
  std::string_view name;  ///< in the language
  Type type;
  bool untrusted;                            ///< from the envelope: has an `absent` value
  bool internal = false;                     ///< derived for the guards; not usable in rules
  const std::string_view* values = nullptr;  ///< Enum: the values, in id order
  std::size_t value_count = 0;
};

inline constexpr std::array<AttrInfo, kAttrCount> kAttributes = {{
    {"code", Type::Code, true},
    {"retryable", Type::Bool, true},
    {"field", Type::String, true},
    {"suggestion", Type::String, true},
    {"retry_after", Type::Duration, true},
    {"trace_id", Type::String, true},
    {"idempotent", Type::Bool, false},
    {"side_effect", Type::Enum, false, false, Names<SideEffect>::kValues.data(),
     Names<SideEffect>::kValues.size()},
    {"attempt", Type::Count, false},
    {"repairs", Type::Count, false},
    {"elapsed", Type::Duration, false},
    {"tool", Type::String, false},
    {"repeats", Type::Count, false},
    {"idempotency_key", Type::Enum, false, false, kKeyStates.data(), kKeyStates.size()},
    {"circuit", Type::Enum, false, false, Names<CircuitState>::kValues.data(),
     Names<CircuitState>::kValues.size()},
    {"retry_throttled", Type::Bool, false},
    {"attempts_left", Type::Count, false},
    {"time_left", Type::Duration, false},
    {"cost_left", Type::Count, false},
    {"field in arguments", Type::Bool, true},
    {"suspicious_text", Type::Bool, false},
    {"suspicious_suggestion", Type::Bool, false},
    {"deadline_slack", Type::Duration, true, true},
    {"attempts_used", Type::Count, false, true},
    {"run_calls_left", Type::Count, false, true},
    {"run_cost_left", Type::Count, false, true},
    {"run_failures_left", Type::Count, false, true},
}};

// Every Attr has its row, in enum order (a missing row would be an empty name), and the
// attribute masks (std::uint32_t, bit(a)) hold every attribute.
static_assert(kAttrCount <= 32, "attribute masks are 32 bits");
static_assert(
    [] {
      for (const AttrInfo& a : kAttributes)
        if (a.name.empty()) return false;
      return true;
    }(),
    "every Attr needs its row of kAttributes");
static_assert(kAttributes[static_cast<std::size_t>(Attr::DeadlineSlack)].name == "deadline_slack",
              "kAttributes is in Attr order");

inline const AttrInfo& info(Attr a) {
  return kAttributes[static_cast<std::size_t>(a)];
}

/// The built-in codes, ids 0..10 in every policy; declared codes follow. PENDING (a success
/// status that means "not done yet") came last so the older codes keep their ids.
inline constexpr std::array<std::string_view, 11> kBuiltinCodes = {
    "TRANSIENT", "RATE_LIMITED",   "TIMEOUT",          "VALIDATION", "PERMISSION", "NOT_FOUND",
    "CONFLICT",  "QUOTA_EXCEEDED", "CONTEXT_OVERFLOW", "UNKNOWN",    "PENDING"};
inline constexpr std::int64_t kUnknownCodeId = 9;  ///< UNKNOWN's id

/// a - b, held at the int64 bounds instead of overflowing (a limit minus a count the host sent).
inline std::int64_t saturating_sub(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    return b > 0 ? std::numeric_limits<std::int64_t>::min()
                 : std::numeric_limits<std::int64_t>::max();
  return r;
}

/// One attribute's value for one input. Enums and booleans are small integers in `num`.
struct Slot {
  bool present = false;
  std::int64_t num = 0;
  std::string_view str;
};

/// Bit `a` for attribute a, in masks of attributes.
inline constexpr std::uint32_t bit(Attr a) {
  return std::uint32_t{1} << static_cast<unsigned>(a);
}
inline constexpr std::uint32_t kAllAttrs = (std::uint32_t{1} << kAttrCount) - 1;

/// The attributes of one input, computed before the lookup (see decide.cpp). Numbers (code and
/// enum ids, 0/1, counts, ms) are in `num`, text in `text`, and bit a of `present` is set when
/// attribute a has a value. Only the attributes make_point() was asked for are written: the
/// arrays are left uninitialised, so a decision pays for the columns its table has, not for all.
struct Point {
  struct Text {  // a trivial string_view, so the array needs no initialisation
    const char* data;
    std::size_t size;
  };
  std::int64_t num[kAttrCount];
  Text text[kAttrCount];
  std::uint32_t present = 0;
  /// The steering detector's categories (envelope/steering.hpp): the message's in the low 16
  /// bits, the suggestion's in the high 16; always computed, for the decision's warning.
  std::uint32_t steering = 0;

  bool has(Attr a) const noexcept { return present & bit(a); }
  std::int64_t number(Attr a) const noexcept { return num[static_cast<std::size_t>(a)]; }
  void set(Attr a, std::int64_t v) noexcept {
    num[static_cast<std::size_t>(a)] = v;
    present |= bit(a);
  }
  void set(Attr a, std::string_view s) noexcept {
    text[static_cast<std::size_t>(a)] = {s.data(), s.size()};
    num[static_cast<std::size_t>(a)] = 0;
    present |= bit(a);
  }
  /// The attribute as a Slot (absent when not present), for eval_test().
  Slot slot(Attr a) const noexcept {
    if (!has(a)) return {};
    const Text& t = text[static_cast<std::size_t>(a)];
    return info(a).type == Type::String ? Slot{true, 0, std::string_view(t.data, t.size)}
                                        : Slot{true, number(a), {}};
  }
};

/// A resolved constant of a test: a number (count, ms, enum id, 0/1) or a string.
struct Constant {
  std::int64_t num = 0;
  std::string str;
};

/// A resolved condition: the AST's shape with attributes and constants resolved.
struct Cond {
  ast::Expr::Kind kind = ast::Expr::Kind::Test;
  ast::Pos pos;
  std::vector<Cond> children;
  Attr attr = Attr::Code;
  ast::Op op = ast::Op::Truthy;
  std::vector<Constant> values;  ///< `in`: sorted (by str for strings, else num), no repeats
  std::string text;              ///< the test as written, for explanations
};

/// A route with its target and reason. A rule's retry may name a backoff schedule
/// (`with backoff NAME`) and cap its own attempts (`with attempts N`).
struct Action {
  Route route = Route::Stop;
  std::string target;
  std::string reason;
  std::string schedule{};              ///< the named backoff a retry waits by ("" the policy's)
  std::int32_t schedule_index = -1;    ///< its index in PolicySpec::schedules, -1 for none
  std::int64_t attempts = kUnlimited;  ///< `attempts N`: the rule's cap (kUnlimited: none)
  /// The target is the tool's fallback chain (`tool { fallback }`): decide() takes its first
  /// tool the context does not list as unavailable (`target` holds the chain's first).
  bool chain = false;
};

/// The reason of a `stop` a fallback chain ends in: no tool of it is left for the operation.
inline constexpr std::string_view kNoFallbackLeft =
    "every fallback tool was tried by this operation or has its circuit open";

/// A rule after checking. `when` empty matches every input.
struct RuleSpec {
  std::string name;
  ast::Pos pos;
  std::optional<Cond> when;
  Action action;
};

/// A guard: overrides a retry or repair chosen by a rule when `when` holds. Guards are
/// synthesized by the checker from the tool facts and limits, in the documented precedence
/// order: side-effect gates, the Retry-After cap, spent budgets, the open circuit.
struct Guard {
  std::string name;       ///< e.g. "budget:attempts"; shown as the decision's rule
  std::string exhausted;  ///< the budget's name in the decision ("" for gates and the circuit)
  std::string rule;       ///< the one rule it guards (a rule's `with attempts N`); "" for all
  bool applies_to_retry = true;
  bool applies_to_repair = true;
  Cond when;
  Action action;
};

enum class BackoffKind : std::uint8_t { Constant, Linear, Exponential };
template <>
struct Names<BackoffKind> {
  static constexpr std::array<std::string_view, 3> kValues = {"constant", "linear", "exponential"};
};
enum class Jitter : std::uint8_t { None, Full, Equal, Decorrelated };
template <>
struct Names<Jitter> {
  static constexpr std::array<std::string_view, 4> kValues = {"none", "full", "equal",
                                                              "decorrelated"};
};

/// Backoff parameters; the defaults are those of a policy without a backoff line.
struct Backoff {
  BackoffKind kind = BackoffKind::Exponential;
  std::int64_t base_ms = 250;
  double factor = 2.0;
  std::int64_t max_ms = 20000;
  Jitter jitter = Jitter::Full;
  /// `hint_jitter F`: after a server hint, wait hint + U(0, floor(hint * F)), never past
  /// limits.retry_after_max; 0 (the default) waits the hint exactly.
  double hint_jitter = 0;
};

/// A named backoff, `backoff NAME { KIND ... }`, that rules choose with `with backoff NAME`.
struct Schedule {
  std::string name;
  Backoff backoff;
};

/// Circuit breaker settings (`breaker { }`): open after `failures` consecutive failures, or when
/// at least `min_calls` of the last `window` calls ended and `ratio` of them failed; stay open for
/// `cooldown_ms`, then let one probe through (half-open).
/// The defaults are the store's (recourse::BreakerSpec), so both read the same numbers.
struct Breaker {
  bool enabled = false;
  std::int64_t failures = BreakerSpec{}.failures;
  double ratio = 0;  ///< 0: ratio rule off (BreakerSpec::ratio_milli is 0 by default too)
  std::int64_t window = BreakerSpec{}.window;
  std::int64_t min_calls = BreakerSpec{}.min_calls;
  std::int64_t cooldown_ms = BreakerSpec{}.cooldown_ms;
  std::int64_t probe_lease_ms = BreakerSpec{}.probe_lease_ms;  ///< probe_lease (default: cooldown)
  /// counts = [...]: the ids of the codes whose failures count against the circuit, ascending;
  /// a failure of another code is recorded as a success (the tool answered). The default is
  /// the failures a retry could fix: TRANSIENT, RATE_LIMITED, TIMEOUT and PENDING.
  std::vector<std::int64_t> counts = {0, 1, 2, 10};
  bool shared = false;      ///< scope = shared: kept in the shared store (default: per process)
  bool by_quorum = false;   ///< scope = quorum: per process, open when `quorum` processes see it
  std::int64_t quorum = 2;  ///< quorum = N
};

/// Retry throttling (`throttle { }`), gRFC A6: tokens start at max_tokens; each failure the
/// engine decides to retry costs 1, each success gives token_ratio back; retries are allowed
/// only while tokens > max_tokens / 2.
struct Throttle {
  bool enabled = false;
  double max_tokens = 10;
  double token_ratio = 0.1;
};

/// `assert never|always ROUTES when COND`: proven over the compiled table (analyze.cpp).
struct AssertSpec {
  ast::Pos pos;
  bool never = true;         ///< never: no input in `when` decides one of `routes`; always: all do
  std::uint32_t routes = 0;  ///< bit (1 << Route) per route
  Cond when;
  std::string text;       ///< as written, for reports
  std::string invariant;  ///< for a built-in invariant: its name (kInvariants, "bounded_retries"
                          ///< or "steered_repair")
};

/// Built-in invariants (docs/language.md, "Verification"). The first two hold by the side-effect
/// gates; waiving one removes its gate.
inline constexpr std::array<std::string_view, 3> kInvariants = {
    "retry_after_commit",      ///< no retry or repair after a committed side effect
    "unsafe_resend",           ///< no resend of a non-idempotent call with an unknown outcome
    "context_overflow_retry",  ///< CONTEXT_OVERFLOW is never retried unchanged
};

/// How rules combine (`hit`). First: the first matching rule in file order. Safest: among the
/// matching rules the most conservative route wins (stop > escalate > authorize > replace,
/// degrade > repair > retry; ties by file order), like Cedar's forbid-overrides. Unique: no input
/// may match two rules with different routes (the checker proves it), so order does not matter.
enum class HitPolicy : std::uint8_t { First, Safest, Unique };
template <>
struct Names<HitPolicy> {
  static constexpr std::array<std::string_view, 3> kValues = {"first", "safest", "unique"};
};

/// Conservativeness of a route under `hit safest`: lower wins.
inline int safety_rank(Route r) {
  switch (r) {
    case Route::Stop:
      return 0;
    case Route::Escalate:
      return 1;
    case Route::Authorize:
      return 2;
    case Route::Replace:
    case Route::Degrade:
      return 3;
    case Route::Repair:
      return 4;
    default:
      return 5;  // retry
  }
}

/// A checked policy: the input of compile() and of the reference interpreter.
/// A `test` block, checked: the decision the policy must make for one input. Unset
/// expectations are not checked.
struct TestSpec {
  std::string name;
  std::string file;
  ast::Pos pos;
  std::string envelope;  ///< JSON as written; read by read_envelope when the test runs
  Context context;       ///< read by read_context; tool defaults to the policy's name
  Route route = Route::Stop;
  std::optional<std::string> target, rule, exhausted;
  std::optional<std::int64_t> delay_min_ms, delay_max_ms;
  std::string expected;  ///< the expectation as written (canonical spelling), for reports
};

struct PolicySpec {
  std::string name;
  std::string file;
  ast::Pos pos;
  bool idempotent = false;             ///< tool default
  bool honours_keys = false;           ///< tool honours idempotency keys
  std::vector<std::string> arguments;  ///< tool's argument names
  std::int64_t cost = 1;               ///< tool.cost: units each call charges
  std::string verify;                  ///< tool.verify: the tool that checks an unknown outcome
  /// tool.fallback: the chain of replace targets when budgets run out or the circuit is open,
  /// in order (one tool or a list; empty: none).
  std::vector<std::string> fallback;
  std::int64_t attempts = 3;  ///< limits.attempts, calls including the first
  std::int64_t repairs = 1;   ///< limits.repairs
  std::int64_t retry_after_max_ms = 60000;
  std::int64_t deadline_ms = kUnlimited;  ///< limits.deadline (kUnlimited: none)
  std::int64_t min_delay_ms = 50;
  std::int64_t cost_max = kUnlimited;  ///< limits.cost (kUnlimited: none)
  std::int64_t repeats =
      kUnlimited;  ///< limits.repeats: identical failures allowed (kUnlimited: none)
  std::int64_t try_timeout_ms = kUnlimited;  ///< limits.try_timeout (kUnlimited: none)
  /// limits.run_*: the run's (every tool's) calls, cost units and failures; limits.run_tool_*:
  /// this tool's within the run (kUnlimited: none).
  std::int64_t run_calls = kUnlimited, run_cost = kUnlimited, run_failures = kUnlimited;
  std::int64_t run_tool_calls = kUnlimited, run_tool_cost = kUnlimited,
               run_tool_failures = kUnlimited;
  Action on_exhausted;  ///< route when a budget guard fires
  Action on_open;       ///< route while the circuit is open
  Breaker breaker;
  Throttle throttle;
  Backoff backoff;
  std::vector<Schedule> schedules;  ///< named backoffs, sorted by name
  std::vector<std::string> codes;   ///< built-ins then declared
  std::vector<RuleSpec> rules;      ///< author rules, then the default as a rule without `when`
  std::vector<Guard> guards;        ///< in precedence order
  std::vector<AssertSpec> assertions;
  HitPolicy hit = HitPolicy::First;
  bool implicit_default = false;      ///< no `default` line: proven unreachable, else E016
  std::vector<std::string> waived;    ///< invariants waived (names from kInvariants)
  std::vector<CodeMapping> mappings;  ///< `map` lines: adapter overrides for this tool
  std::vector<TestSpec> tests;        ///< `test` blocks of this policy (not of its bases)
  std::vector<SequenceBound> bounds;  ///< `assert sequence` lines (checked by recourse fuzz)
};

/// Whether guard `g` checks `rule`'s route: a retry or repair it applies to, and, for a
/// rule's own cap, that rule only.
inline bool guards_rule(const Guard& g, const RuleSpec& rule) {
  const Route route = rule.action.route;
  const bool applies =
      route == Route::Retry ? g.applies_to_retry : route == Route::Repair && g.applies_to_repair;
  return applies && (g.rule.empty() || g.rule == rule.name);
}

/// The action of guard `g` over `rule`: the guard's, carrying the rule's own cap on attempts so
/// the decision's budgets count it whichever guard decides.
inline Action guard_action(const Guard& g, const RuleSpec& rule) {
  Action a = g.action;
  a.attempts = rule.action.attempts;
  return a;
}

/// The backoff a retry by `action` waits by: its named schedule, else the policy's.
inline const Backoff& schedule_of(const PolicySpec& spec, const Action& action) {
  return action.schedule_index >= 0
             ? spec.schedules[static_cast<std::size_t>(action.schedule_index)].backoff
             : spec.backoff;
}

}  // namespace recourse::detail
