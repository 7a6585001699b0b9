// An independent model of one whole decision, written from docs/language.md (and
// docs/verification.md for the hit policies), to check Policy::decide() (tests/oracle_test.cpp,
// fuzz/fuzz_differential.cpp).
//
// The reference interpreter (eval/interpret.cpp) shares make_point(), finish() and eval_test()
// with the table, so it checks the table and nothing computed around it. This model shares no
// code with the engine's evaluation: from the checked policy (the rules' resolved conditions,
// the settings and codes of model/model.hpp; the checker is not what it checks) it computes the
// derived attributes (section 4), evaluates the conditions with their absent semantics
// (section 5), applies the hit policy (section 6 and verification.md), the guards in their
// documented precedence from the settings, never from PolicySpec::guards (section 8), the delay
// with its own SplitMix64 and FNV-1a (section 12) and the budgets and the rest of the decision
// (sections 8 and 14). Each function names the paragraph it follows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envelope/steering.hpp"
#include "model/model.hpp"
#include "recourse/envelope.hpp"
#include "recourse/policy.hpp"

namespace documented {

using recourse::Route;
using recourse::detail::Attr;
using recourse::detail::Cond;
using recourse::detail::PolicySpec;

/// The decision the documentation gives for one input: the fields of recourse::Decision a host
/// reads (the policy's hash, the row and the minted trace id aside). `problem` is
/// non-empty when the policy breaks a promise the checker made (`hit unique` with two matching
/// rules of different routes).
struct Expected {
  Route route = Route::Stop;
  std::string policy, rule, reason, target, exhausted, nearest_code, problem;
  std::int64_t delay_ms = 0, jitter_ms = 0;
  std::int64_t backoff_attempt = 0;  // section 14: the step after a pushback, else 0
  std::int64_t attempt = 1, attempts_left = 0, repairs_left = 0;
  recourse::BudgetLeft attempts, repairs, cost, time_ms;
  std::optional<std::int64_t> timeout_ms, retry_at_ms, retry_after_ms;
  recourse::KeyDirective key = recourse::KeyDirective::None;
  std::uint32_t warnings = 0;  ///< recourse::DecisionWarning bits
};

namespace naive {

constexpr std::int64_t kNoLimit = recourse::kUnlimited;  // "unlimited" in budgets and attributes

// a - b, saturating at the ends of int64 (section 4: "Subtractions saturate").
inline std::int64_t minus(std::int64_t a, std::int64_t b) {
  if (b > 0 && a < INT64_MIN + b) return INT64_MIN;
  if (b < 0 && a > INT64_MAX + b) return INT64_MAX;
  return a - b;
}

// What is left of `limit` after `used`; no limit stays no limit.
inline std::int64_t left(std::int64_t limit, std::int64_t used) {
  return limit == kNoLimit ? kNoLimit : minus(limit, used);
}

// One attribute's value: absent, a number (count, ms, 0/1, an id) or a text.
struct Value {
  bool present = false;
  bool text = false;
  std::int64_t num = 0;
  std::string_view str;
};

inline Value number(std::int64_t n) {
  return {true, false, n, {}};
}
inline Value text(std::string_view s) {
  return {true, true, 0, s};
}
template <typename T>
Value maybe_number(const std::optional<T>& v) {
  return v ? number(static_cast<std::int64_t>(*v)) : Value{};
}
inline Value maybe_text(const std::optional<std::string>& v) {
  return v ? text(*v) : Value{};
}

// Section 4 lists enum values in this order; the checker gives a constant its position in it.
inline std::int64_t id_of(recourse::SideEffect s) {
  switch (s) {
    case recourse::SideEffect::None:
      return 0;
    case recourse::SideEffect::Unknown:
      return 1;
    case recourse::SideEffect::Committed:
      return 2;
  }
  return 1;
}
inline std::int64_t id_of(recourse::CircuitState s) {
  switch (s) {
    case recourse::CircuitState::Closed:
      return 0;
    case recourse::CircuitState::Open:
      return 1;
    case recourse::CircuitState::HalfOpen:
      return 2;
  }
  return 0;
}

// Every attribute of one input (section 4), indexed by Attr.
struct Input {
  Value at[recourse::detail::kAttrCount];
  const Value& operator[](Attr a) const { return at[static_cast<std::size_t>(a)]; }
  Value& operator[](Attr a) { return at[static_cast<std::size_t>(a)]; }
};

// Section 7: an exact match among the policy's codes, else UNKNOWN with the nearest code.
inline std::int64_t code_id(const PolicySpec& spec, const std::string& code, bool& unknown) {
  for (std::size_t i = 0; i < spec.codes.size(); ++i)
    if (spec.codes[i] == code) return static_cast<std::int64_t>(i);
  unknown = true;
  for (std::size_t i = 0; i < spec.codes.size(); ++i)
    if (spec.codes[i] == "UNKNOWN") return static_cast<std::int64_t>(i);
  return -1;
}

// Levenshtein distance, ASCII case ignored, over the first 64 bytes of each (section 7): row i
// of the table holds the distances from a's first i bytes to each prefix of b.
inline std::size_t distance(std::string_view a, std::string_view b) {
  a = a.substr(0, std::min<std::size_t>(a.size(), 64));
  b = b.substr(0, std::min<std::size_t>(b.size(), 64));
  auto fold = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  std::size_t above[65], row[65];
  for (std::size_t j = 0; j <= b.size(); ++j) above[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      row[j] = std::min({above[j] + 1, row[j - 1] + 1,
                         above[j - 1] + (fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1)});
    std::copy(row, row + b.size() + 1, above);
  }
  return above[b.size()];
}

// Section 7: the known code with the smallest distance, at most max(2, length/3) edits; the
// first in the policy's order (built-ins, then declared) on a tie.
inline std::string nearest_code(const PolicySpec& spec, const std::string& code) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, code.size() / 3) + 1;
  for (const std::string& known : spec.codes) {
    const std::size_t d = distance(code, known);
    if (d < best_distance) {
      best = known;
      best_distance = d;
    }
  }
  return best;
}

// Section 4's table, row by row; the derived attributes as its notes define them.
inline Input attributes(const PolicySpec& spec, const recourse::Envelope& e,
                        const recourse::Context& c, std::int64_t attempt_ceiling, Expected& out) {
  Input in;
  if (e.code) {
    bool unknown = false;
    in[Attr::Code] = number(code_id(spec, *e.code, unknown));
    if (unknown) {
      out.warnings |= recourse::kUnknownCode;
      out.nearest_code = nearest_code(spec, *e.code);
    }
  }
  in[Attr::Retryable] = maybe_number(e.retryable);
  in[Attr::Field] = maybe_text(e.field);
  in[Attr::Suggestion] = maybe_text(e.suggestion);
  in[Attr::RetryAfter] = maybe_number(e.retry_after_ms);
  in[Attr::TraceId] = maybe_text(e.trace_id);
  in[Attr::Idempotent] = number(c.idempotent.value_or(spec.idempotent));
  // Section 13: streamed output the host cannot discard is a committed effect.
  std::optional<recourse::SideEffect> side = c.side_effect;
  if (c.stream_output_emitted && !c.stream_discard_supported)
    side = recourse::SideEffect::Committed;
  if (!side) out.warnings |= recourse::kSideEffectAssumed;
  in[Attr::SideEffect] = number(id_of(side.value_or(recourse::SideEffect::Unknown)));
  in[Attr::Attempt] = number(c.attempt);
  in[Attr::Repairs] = number(c.repairs);
  in[Attr::Elapsed] = number(c.elapsed_ms);
  in[Attr::Tool] = text(c.tool);
  in[Attr::Repeats] = number(c.repeats);
  in[Attr::IdempotencyKey] = number(c.idempotency_key_pinned ? 1 : 0);
  in[Attr::Circuit] = number(id_of(c.circuit));
  in[Attr::RetryThrottled] = number(c.retry_throttled ? 1 : 0);
  // min(maxAttempts or limits.attempts, 10) - attempt - lowerRetries - outerRetries.
  const std::int64_t most = std::min(c.max_attempts.value_or(spec.attempts), attempt_ceiling);
  in[Attr::AttemptsLeft] =
      number(minus(minus(minus(most, c.attempt), c.lower_retries), c.outer_retries));
  // (deadlineMs or limits.deadline) - elapsedMs; unlimited when neither is set.
  in[Attr::TimeLeft] = number(left(c.deadline_ms.value_or(spec.deadline_ms), c.elapsed_ms));
  in[Attr::CostLeft] = number(left(spec.cost_max, c.cost_spent));
  if (e.field) {  // the context's arguments, or when it gives none the tool block's
    const std::vector<std::string>& args = c.arguments ? *c.arguments : spec.arguments;
    in[Attr::FieldInArguments] =
        number(std::find(args.begin(), args.end(), *e.field) != args.end() ? 1 : 0);
  }
  // suspicious_text: the detector flags the message or the suggestion (false when both are
  // absent); suspicious_suggestion: it flags the suggestion. The detector's verdict on one text
  // is the one piece shared with the engine: the corpus test (steering_test.cpp) measures it.
  const recourse::SteeringLimits limits;
  auto flagged = [&](const std::optional<std::string>& s) {
    return s ? recourse::detail::scan_steering(*s, limits) : 0u;
  };
  const std::uint32_t message = flagged(e.message), suggestion = flagged(e.suggestion);
  if (message | suggestion) out.warnings |= recourse::kSuspiciousText;
  in[Attr::SuspiciousText] = number((message | suggestion) != 0 ? 1 : 0);
  in[Attr::SuspiciousSuggestion] = number(suggestion != 0 ? 1 : 0);
  // deadline_slack (guards only) is not computed: guard 10 reads retry_after and time_left.
  return in;
}

// Section 5, "Tests" and "Absent values": a test on an absent attribute is false but for
// `is absent`; a bare bool is true when true, a bare string when present.
inline bool test(const Cond& t, const Value& v) {
  using recourse::ast::Op;
  if (t.op == Op::IsAbsent) return !v.present;
  if (!v.present) return false;
  auto equal = [&](const recourse::detail::Constant& k) {
    return v.text ? v.str == k.str : v.num == k.num;
  };
  switch (t.op) {
    case Op::IsPresent:
      return true;
    case Op::Truthy:
    case Op::InArguments:  // `field in arguments`: the derived bool
      return v.text || v.num != 0;
    case Op::Eq:
      return equal(t.values.at(0));
    case Op::Ne:
      return !equal(t.values.at(0));
    case Op::Lt:
      return v.num < t.values.at(0).num;
    case Op::Le:
      return v.num <= t.values.at(0).num;
    case Op::Gt:
      return v.num > t.values.at(0).num;
    case Op::Ge:
      return v.num >= t.values.at(0).num;
    case Op::InList:
      return std::any_of(t.values.begin(), t.values.end(), equal);
    case Op::IsAbsent:
      break;
  }
  return false;
}

// `not` negates the whole test; `and`, `or` as in logic.
inline bool holds(const Cond& c, const Input& in) {
  using K = recourse::ast::Expr::Kind;
  switch (c.kind) {
    case K::Test:
      return test(c, in[c.attr]);
    case K::Not:
      return !holds(c.children.at(0), in);
    case K::And:
      return std::all_of(c.children.begin(), c.children.end(),
                         [&](const Cond& x) { return holds(x, in); });
    case K::Or:
      return std::any_of(c.children.begin(), c.children.end(),
                         [&](const Cond& x) { return holds(x, in); });
  }
  return false;
}

// verification.md, "Hit policies": stop > escalate > authorize > replace, degrade > repair >
// retry (lower is safer).
inline int rank(Route r) {
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
    case Route::Retry:
      return 5;
  }
  return 5;
}

// The rule that decides (section 6; verification.md "Hit policies"): `first` the first match in
// file order; `safest` the safest matching route, ties by file order; `unique` every match has
// one route (the checker proved it), and the first in file order names the decision. The
// default (last) decides only when no rule matches.
inline std::size_t choose(const PolicySpec& spec, const Input& in, Expected& out) {
  const std::size_t last = spec.rules.size() - 1;
  std::vector<std::size_t> matched;
  for (std::size_t i = 0; i < last; ++i)
    if (!spec.rules[i].when || holds(*spec.rules[i].when, in)) matched.push_back(i);
  if (matched.empty()) return last;
  std::size_t chosen = matched.front();
  for (std::size_t i : matched) {
    const Route route = spec.rules[i].action.route;
    if (spec.hit == recourse::detail::HitPolicy::Safest &&
        rank(route) < rank(spec.rules[chosen].action.route))
      chosen = i;
    if (spec.hit == recourse::detail::HitPolicy::Unique &&
        route != spec.rules[matched.front()].action.route)
      out.problem = "hit unique, yet rules '" + spec.rules[matched.front()].name + "' and '" +
                    spec.rules[i].name + "' both match with different routes";
  }
  return chosen;
}

// A guard that fired: what replaces the rule's action (section 8).
struct Override {
  std::string rule, exhausted, reason;
  Route route = Route::Stop;
  std::string target;
};

inline bool waived(const PolicySpec& spec, std::string_view invariant) {
  return std::find(spec.waived.begin(), spec.waived.end(), invariant) != spec.waived.end();
}

// Section 8's guard table, in its precedence order: the first that holds wins. Each exists as
// its "Exists" column says and applies to the routes its "Applies to" column lists.
inline std::optional<Override> guard(const PolicySpec& spec, const recourse::detail::RuleSpec& rule,
                                     Route route, const Input& in, const recourse::Context& c) {
  const bool retry = route == Route::Retry;
  const std::int64_t side = in[Attr::SideEffect].num;
  const Value& hint = in[Attr::RetryAfter];
  const std::int64_t time_left = in[Attr::TimeLeft].num;
  auto spent = [&](std::string budget, std::string reason) {
    return Override{"budget:" + budget, budget, std::move(reason), spec.on_exhausted.route,
                    spec.on_exhausted.target};
  };
  // 1. gate:committed
  if (!waived(spec, "retry_after_commit") && side == 2)
    return Override{"gate:committed", "", "side effect already committed", Route::Stop, ""};
  // 2. gate:unknown_outcome; a retry with a pinned key the tool honours passes.
  const bool exempt = retry && spec.honours_keys && c.idempotency_key_pinned;
  if (!waived(spec, "unsafe_resend") && side == 1 && !in[Attr::Idempotent].num && !exempt) {
    const bool verify = !spec.verify.empty();
    return Override{"gate:unknown_outcome", "", "outcome unknown; verify before resending",
                    verify ? Route::Replace : Route::Escalate, spec.verify};
  }
  // 3. gate:steering: a repair of a suggestion that reads as instructions
  if (!retry && in[Attr::SuspiciousSuggestion].num)
    return Override{"gate:steering", "", "the suggestion reads as instructions to the agent",
                    Route::Escalate, ""};
  // 4. budget:retry_after (false when absent)
  if (retry && hint.present && hint.num > spec.retry_after_max_ms)
    return spent("retry_after", "server asked to wait longer than retry_after_max");
  // 5. budget:repeats, with limits.repeats
  if (spec.repeats != kNoLimit && c.repeats >= spec.repeats)
    return spent("repeats", "the same call failed the same way too often; change approach");
  // 6. budget:attempts
  if (in[Attr::AttemptsLeft].num <= 0) return spent("attempts", "attempt budget spent");
  // 6, a rule's own cap (`with attempts N`): its calls and the retries made below reach N.
  if (rule.action.attempts != kNoLimit &&
      c.attempt + c.lower_retries + c.outer_retries >= rule.action.attempts)
    return spent("attempts", "attempt budget of rule " + rule.name + " spent");
  // 7. budget:repairs
  if (!retry && c.repairs >= spec.repairs) return spent("repairs", "repair budget spent");
  // 8. budget:cost, with limits.cost
  if (spec.cost_max != kNoLimit && in[Attr::CostLeft].num < spec.cost)
    return spent("cost", "cost budget spent");
  // 8, the run's: each limit in all or of this tool whose count has reached it (cost: less left
  // than one call costs).
  auto reached = [](std::int64_t limit, std::int64_t used, std::int64_t need) {
    return limit != kNoLimit && limit - used < need;
  };
  if (reached(spec.run_calls, c.run_calls, 1) || reached(spec.run_tool_calls, c.run_tool_calls, 1))
    return spent("run_calls", "the run's call budget spent");
  if (reached(spec.run_cost, c.run_cost, spec.cost) ||
      reached(spec.run_tool_cost, c.run_tool_cost, spec.cost))
    return spent("run_cost", "the run's cost budget spent");
  if (reached(spec.run_failures, c.run_failures, 1) ||
      reached(spec.run_tool_failures, c.run_tool_failures, 1))
    return spent("run_failures", "the run's failure budget spent");
  // 9. budget:deadline: no time left
  if (time_left != kNoLimit && time_left <= 0)
    return spent("deadline", "operation deadline passed");
  // 10. budget:deadline: the hint ends at or after the deadline
  if (retry && hint.present && time_left != kNoLimit && hint.num >= time_left)
    return spent("deadline", "server asked to wait beyond the deadline");
  // 11. budget:retry_tokens, with throttle
  if (retry && spec.throttle.enabled && c.retry_throttled)
    return spent("retry_tokens", "retries throttled for this tool (gRFC A6 token bucket)");
  // 12. circuit:open, with breaker
  if (spec.breaker.enabled && c.circuit == recourse::CircuitState::Open)
    return Override{"circuit:open", "", "circuit open for this tool", spec.on_open.route,
                    spec.on_open.target};
  return std::nullopt;
}

// Section 12's generator: SplitMix64's output function (Steele, Lea and Flood, OOPSLA 2014) and
// 64-bit FNV-1a (offset basis 14695981039346656037, prime 1099511628211).
inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
inline std::uint64_t fnv(std::string_view bytes, std::uint64_t h) {
  for (char ch : bytes) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  return h;
}

// U(lo, hi) of draw k for the operation key (section 12).
inline std::int64_t uniform(std::uint64_t key, std::uint64_t k, std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) return lo;
  const std::uint64_t count = static_cast<std::uint64_t>(hi - lo) + 1;
  return lo + static_cast<std::int64_t>(mix(key ^ mix(k)) % count);
}

struct Backoff {
  std::int64_t delay = 0, draw = 0;
};

// Section 12: what keys the draws: the context's operationId, else the envelope's traceId, else
// the tool.
inline std::string_view key_source(const recourse::Envelope& e, const recourse::Context& c) {
  if (!c.operation_id.empty()) return c.operation_id;
  if (e.trace_id) return *e.trace_id;
  return c.tool;
}

// Section 12: the backoff a retry rule waits by: the one it names (`with backoff NAME`), else
// the policy's line.
inline const recourse::detail::Backoff& rule_backoff(const PolicySpec& spec,
                                                     const recourse::detail::Action& action) {
  for (const auto& named : spec.schedules)
    if (!action.schedule.empty() && named.name == action.schedule) return named.backoff;
  return spec.backoff;
}

// Section 12: the operation's key for the draws.
inline std::uint64_t draw_key(const PolicySpec& spec, std::string_view source) {
  return fnv(source, mix(fnv(spec.name, 14695981039346656037ull)));
}

// Section 12: the wait after a server hint h with hint_jitter F: h + U(0, spread), draw
// 2^32 + n, spread = floor(h * F) held so h + spread <= retry_after_max; h when F is 0.
inline Backoff after_hint(const PolicySpec& spec, const recourse::detail::Backoff& b,
                          std::int64_t hint, std::int64_t attempt, std::string_view source) {
  if (b.hint_jitter <= 0 || hint <= 0 || hint >= spec.retry_after_max_ms) return {hint, 0};
  const std::int64_t spread =
      std::min(static_cast<std::int64_t>(std::floor(static_cast<double>(hint) * b.hint_jitter)),
               spec.retry_after_max_ms - hint);
  const std::uint64_t k =
      (std::uint64_t{1} << 32) + static_cast<std::uint64_t>(std::max<std::int64_t>(attempt, 1));
  const std::int64_t u = uniform(draw_key(spec, source), k, 0, spread);
  return {hint + u, u};
}

// Section 12: the delay after call n failed, before min_delay and the hint.
inline Backoff backoff(const PolicySpec& spec, const recourse::detail::Backoff& b,
                       std::int64_t attempt, std::string_view source) {
  using recourse::detail::BackoffKind;
  using recourse::detail::Jitter;
  const std::uint64_t key = draw_key(spec, source);
  const std::int64_t n = std::max<std::int64_t>(attempt, 1);
  double raw = static_cast<double>(b.base_ms);  // in double precision, then rounded down
  if (b.kind == BackoffKind::Linear) raw = static_cast<double>(b.base_ms) * static_cast<double>(n);
  if (b.kind == BackoffKind::Exponential)
    raw = static_cast<double>(b.base_ms) * std::pow(b.factor, static_cast<double>(n - 1));
  const std::int64_t d =
      raw >= static_cast<double>(b.max_ms) ? b.max_ms : static_cast<std::int64_t>(std::floor(raw));
  switch (b.jitter) {
    case Jitter::None:
      return {d, 0};
    case Jitter::Full: {
      const std::int64_t u = uniform(key, static_cast<std::uint64_t>(n), 0, d);
      return {u, u};
    }
    case Jitter::Equal: {
      const std::int64_t half = d / 2;
      const std::int64_t u = uniform(key, static_cast<std::uint64_t>(n), 0, d - half);
      return {half + u, u};
    }
    case Jitter::Decorrelated: {
      std::int64_t s = b.base_ms;
      for (std::int64_t k = 2; k <= std::min<std::int64_t>(n, 64); ++k)
        s = std::min(b.max_ms, uniform(key, static_cast<std::uint64_t>(k), b.base_ms,
                                       std::min(3 * s, b.max_ms)));
      return {s, s - b.base_ms};
    }
  }
  return {d, 0};
}

// A budget's amount after spending `amount`: never below 0; no limit stays no limit.
inline std::int64_t spend(std::int64_t before, std::int64_t amount) {
  return before == kNoLimit ? kNoLimit : std::max<std::int64_t>(0, minus(before, amount));
}

}  // namespace naive

/// The decision docs/language.md gives for `envelope` and `context` under `spec` (a checked
/// policy; `attempt_ceiling` is CompileOptions::attempt_ceiling). Never reads spec.guards.
// Section 3, "Fallback chains": a spent budget or an open circuit sent to `replace` goes to the
// tool's fallback chain, whose first tool the context's unavailableTools does not list is the
// target; with every one listed, the route is stop (the guard's rule and budget kept).
inline void fallback_chain(const PolicySpec& spec, const recourse::Context& c, Expected& out) {
  if (out.route != Route::Replace || out.rule == "gate:unknown_outcome") return;
  const std::vector<std::string> none;
  const std::vector<std::string>& listed = c.unavailable_tools ? *c.unavailable_tools : none;
  for (const std::string& tool : spec.fallback) {
    if (std::find(listed.begin(), listed.end(), tool) == listed.end()) {
      out.target = tool;
      return;
    }
  }
  out.route = Route::Stop;
  out.target.clear();
  out.reason = "every fallback tool was tried by this operation or has its circuit open";
}

inline Expected decide(const PolicySpec& spec, const recourse::Envelope& e,
                       const recourse::Context& c, std::int64_t attempt_ceiling = 10) {
  using namespace naive;
  Expected out;
  out.policy = spec.name;
  const Input in = attributes(spec, e, c, attempt_ceiling, out);
  const std::int64_t time_left = in[Attr::TimeLeft].num;
  if (c.store_unavailable) out.warnings |= recourse::kStoreUnavailable;
  if (!e.trace_id) out.warnings |= recourse::kTraceIdMinted;
  out.attempt = c.attempt;
  out.retry_after_ms = e.retry_after_ms;

  // The rule, then the guards of a retry or repair (sections 6 and 8).
  const recourse::detail::RuleSpec& rule = spec.rules[choose(spec, in, out)];
  out.route = rule.action.route;
  out.rule = rule.name;
  out.reason = rule.action.reason;
  out.target = rule.action.target;
  if (out.route == Route::Retry || out.route == Route::Repair)
    if (const auto g = guard(spec, rule, out.route, in, c)) {
      out.route = g->route;
      out.rule = g->rule;
      out.reason = g->reason;
      out.target = g->target;
      out.exhausted = g->exhausted;
      fallback_chain(spec, c, out);
    }

  // Section 12: the delay of a retry; then section 8's check after the lookup.
  if (out.route == Route::Retry) {
    // n is the attempt, or attempt - pushbackAttempt after a server pushback (gRFC A6 restart).
    const bool restart = c.pushback_attempt >= 1 && c.pushback_attempt <= c.attempt - 1;
    const std::int64_t n = restart ? c.attempt - c.pushback_attempt : c.attempt;
    const recourse::detail::Backoff& schedule = rule_backoff(spec, rule.action);
    const Backoff b = backoff(spec, schedule, n, key_source(e, c));
    const Backoff h =
        after_hint(spec, schedule, e.retry_after_ms.value_or(0), c.attempt, key_source(e, c));
    out.delay_ms = std::max({b.delay, spec.min_delay_ms, h.delay});
    out.jitter_ms = schedule.hint_jitter > 0 && e.retry_after_ms ? h.draw : b.draw;
    if (restart) out.backoff_attempt = n;
    if (time_left != kNoLimit && out.delay_ms >= time_left) {
      out.route = spec.on_exhausted.route;
      out.target = spec.on_exhausted.target;
      out.rule = "budget:deadline";
      out.reason = "the next attempt would start after the deadline";
      out.exhausted = "deadline";
      out.delay_ms = 0;
      out.jitter_ms = 0;
      out.backoff_attempt = 0;
      fallback_chain(spec, c, out);
    }
  }
  if (spec.honours_keys && out.route == Route::Retry) out.key = recourse::KeyDirective::Reuse;
  if (spec.honours_keys && out.route == Route::Repair) out.key = recourse::KeyDirective::New;

  // Section 8, "Budgets in the decision", and section 14.
  const bool call = out.route == Route::Retry || out.route == Route::Repair;
  // A rule's own cap lowers what is left, on its route and on the guard that replaced it.
  const std::int64_t rule_left =
      rule.action.attempts == kNoLimit
          ? kNoLimit
          : rule.action.attempts - c.attempt - c.lower_retries - c.outer_retries;
  out.attempts_left = std::max<std::int64_t>(0, std::min(in[Attr::AttemptsLeft].num, rule_left));
  out.repairs_left = std::max<std::int64_t>(0, minus(spec.repairs, c.repairs));
  out.attempts = {out.attempts_left, spend(out.attempts_left, call ? 1 : 0)};
  out.repairs = {out.repairs_left, spend(out.repairs_left, out.route == Route::Repair ? 1 : 0)};
  const std::int64_t cost = std::max<std::int64_t>(0, in[Attr::CostLeft].num);
  out.cost = {cost, spend(cost, call ? spec.cost : 0)};
  const std::int64_t time = std::max<std::int64_t>(0, time_left);
  out.time_ms = {time, spend(time, out.delay_ms)};
  if (call && (spec.try_timeout_ms != kNoLimit || out.time_ms.after != kNoLimit))
    out.timeout_ms = std::min(spec.try_timeout_ms, out.time_ms.after);
  if (out.route == Route::Retry && c.now_ms) out.retry_at_ms = *c.now_ms + out.delay_ms;
  return out;
}

namespace naive {

// Section 1: the policy named as the context's tool, else the one named "*", else none.
inline const PolicySpec* select(const std::vector<const PolicySpec*>& policies,
                                const std::string& tool) {
  for (const std::string& name : {tool, std::string("*")})
    for (const PolicySpec* p : policies)
      if (p->name == name) return p;
  return nullptr;
}

// Section 14: a decision no policy made stops, with no budgets and no delay.
inline Expected unmade(const recourse::Context& c, std::string rule, std::string reason,
                       std::uint32_t warnings) {
  Expected out;
  out.rule = std::move(rule);
  out.reason = std::move(reason);
  out.attempt = c.attempt;
  out.warnings = warnings;
  if (c.store_unavailable) out.warnings |= recourse::kStoreUnavailable;
  return out;
}

}  // namespace naive

/// The decision of a bundle of `policies` (section 1): the policy of the context's tool, else
/// the "*" policy, else `stop` with rule `no_policy` (section 14).
inline Expected decide(const std::vector<const PolicySpec*>& policies, const recourse::Envelope& e,
                       const recourse::Context& c) {
  if (const PolicySpec* p = naive::select(policies, c.tool)) return decide(*p, e, c);
  Expected out = naive::unmade(
      c, "no_policy", "no policy for this tool and no \"*\" policy",
      recourse::kNoPolicy | (e.trace_id ? 0u : std::uint32_t{recourse::kTraceIdMinted}));
  out.retry_after_ms = e.retry_after_ms;
  return out;
}

/// The decision of a bundle of `policies` for an envelope that could not be read (sections 11
/// and 14): `stop` with rule `unreadable_envelope`, naming the tool's policy if there is one.
inline Expected unreadable(const std::vector<const PolicySpec*>& policies,
                           const recourse::Context& c) {
  Expected out = naive::unmade(c, "unreadable_envelope", "the envelope could not be read",
                               recourse::kUnreadableEnvelope | recourse::kTraceIdMinted);
  if (const PolicySpec* p = naive::select(policies, c.tool)) out.policy = p->name;
  return out;
}

namespace naive {

inline std::string shown(std::int64_t v) {
  return std::to_string(v);
}
inline std::string shown(const std::optional<std::int64_t>& v) {
  return v ? std::to_string(*v) : std::string("none");
}
inline std::string shown(std::string_view v) {
  return "\"" + std::string(v) + "\"";
}
inline std::string shown(Route v) {
  return recourse::to_string(v);
}
inline std::string shown(recourse::KeyDirective v) {
  return recourse::to_string(v);
}

}  // namespace naive

/// The fields where `d` differs from `x`, one "name: oracle X, engine Y" line each; empty when
/// they agree.
inline std::string differences(const Expected& x, const recourse::Decision& d) {
  std::string out = x.problem.empty() ? "" : "problem: " + x.problem + "\n";
  auto field = [&](const char* name, const auto& a, const auto& b) {
    if (a == b) return;  // text only for a difference: the check runs on every input
    out += std::string(name) + ": oracle " + naive::shown(a) + ", engine " + naive::shown(b) + "\n";
  };
  auto view = [](const std::string& s) { return std::string_view(s); };
  field("policy", view(x.policy), d.policy);
  field("route", x.route, d.route);
  field("rule", view(x.rule), d.rule);
  field("reason", view(x.reason), d.reason);
  field("target", view(x.target), d.target);
  field("exhausted", view(x.exhausted), d.exhausted);
  field("delayMs", x.delay_ms, d.delay_ms);
  field("jitterMs", x.jitter_ms, d.jitter_ms);
  field("backoffAttempt", x.backoff_attempt, d.backoff_attempt);
  field("attempt", x.attempt, d.attempt);
  field("attemptsLeft", x.attempts_left, d.attempts_left());
  field("repairsLeft", x.repairs_left, d.repairs_left());
  field("budgets.attempts.before", x.attempts.before, d.attempts.before);
  field("budgets.attempts.after", x.attempts.after, d.attempts.after);
  field("budgets.repairs.before", x.repairs.before, d.repairs.before);
  field("budgets.repairs.after", x.repairs.after, d.repairs.after);
  field("budgets.cost.before", x.cost.before, d.cost.before);
  field("budgets.cost.after", x.cost.after, d.cost.after);
  field("budgets.timeMs.before", x.time_ms.before, d.time_ms.before);
  field("budgets.timeMs.after", x.time_ms.after, d.time_ms.after);
  field("timeoutMs", x.timeout_ms, d.timeout_ms);
  field("retryAt", x.retry_at_ms, d.retry_at_ms);
  field("retryAfterMs", x.retry_after_ms, d.retry_after_ms);
  field("idempotencyKey", x.key, d.idempotency_key);
  field("warnings", static_cast<std::int64_t>(x.warnings), static_cast<std::int64_t>(d.warnings));
  field("nearestCode", view(x.nearest_code), d.nearest_code);
  return out;
}

}  // namespace documented
