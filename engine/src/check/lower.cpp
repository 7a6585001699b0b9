// Lowering: a checked PolicySpec gains what the language implies but the author did not write.
//
// Input: a PolicySpec the checker built without errors (rules, limits, tool facts, waivers).
// Output: the same spec with `guards`, the budget and gate rows every retry or repair rule is
// checked by, in the documented precedence order (docs/language.md section 8), and the built-in
// invariants appended to `assertions` (docs/verification.md), so the compiler, the reference
// interpreter and the analysis all read one set of synthesized rows. Waived items are left out.
#include "check/lower.hpp"

#include <algorithm>

namespace recourse::detail {
namespace {

using ast::Op;

// A test lowering writes itself, with `text` for dumps and reports.
Cond synthesized_test(Attr attr, Op op, std::int64_t value, std::string text) {
  Cond c;
  c.attr = attr;
  c.op = op;
  if (op != Op::Truthy) c.values.push_back(Constant{value, {}});
  c.text = std::move(text);
  return c;
}

// Whether the author waived the invariant `name` (`waive NAME because "..."`).
bool waived(const PolicySpec& spec, std::string_view name) {
  return std::find(spec.waived.begin(), spec.waived.end(), name) != spec.waived.end();
}

// The built-in invariants, as assertions proven like the author's (analyze.cpp). Waived ones
// are not checked.
void add_invariants(PolicySpec& spec) {
  using K = ast::Expr::Kind;
  // A policy that never retries or repairs has nothing to prove (and keeps its table small).
  if (std::none_of(spec.rules.begin(), spec.rules.end(), [](const RuleSpec& r) {
        return r.action.route == Route::Retry || r.action.route == Route::Repair;
      }))
    return;
  const auto test = synthesized_test;
  auto both = [](std::vector<Cond> children) {
    Cond c;
    c.kind = K::And;
    c.children = std::move(children);
    return c;
  };
  auto never = [&](std::string name, std::uint32_t routes, Cond when, std::string text) {
    if (waived(spec, name)) return;
    AssertSpec a;
    a.pos = spec.pos;
    a.never = true;
    a.routes = routes;
    a.when = std::move(when);
    a.text = std::move(text);
    a.invariant = std::move(name);
    spec.assertions.push_back(std::move(a));
  };
  const std::uint32_t retry = 1u << static_cast<int>(Route::Retry);
  const std::uint32_t repair = 1u << static_cast<int>(Route::Repair);
  Cond not_idempotent;
  not_idempotent.kind = K::Not;
  not_idempotent.children.push_back(test(Attr::Idempotent, Op::Truthy, 0, "idempotent"));
  never("retry_after_commit", retry | repair,
        test(Attr::SideEffect, Op::Eq, static_cast<std::int64_t>(SideEffect::Committed),
             "side_effect == committed"),
        "never [retry, repair] when side_effect == committed");
  std::vector<Cond> unknown = {
      test(Attr::SideEffect, Op::Eq, static_cast<std::int64_t>(SideEffect::Unknown),
           "side_effect == unknown"),
      not_idempotent};
  never("unsafe_resend", repair, both(unknown),
        "never repair when side_effect == unknown and not idempotent");
  if (spec.honours_keys)
    unknown.push_back(test(Attr::IdempotencyKey, Op::Ne, 1, "idempotency_key != pinned"));
  never("unsafe_resend", retry, both(unknown),
        spec.honours_keys ? "never retry when side_effect == unknown and not idempotent and "
                            "idempotency_key != pinned"
                          : "never retry when side_effect == unknown and not idempotent");
  never("context_overflow_retry", retry,
        test(Attr::Code, Op::Eq, std::int64_t{8}, "code == CONTEXT_OVERFLOW"),
        "never retry when code == CONTEXT_OVERFLOW");
  never("bounded_retries", retry | repair,
        test(Attr::AttemptsLeft, Op::Le, 0, "attempts_left <= 0"),
        "never [retry, repair] when attempts_left <= 0");
  // Only a policy that repairs has a suggestion to send (and so the column to prove it on).
  if (std::any_of(spec.rules.begin(), spec.rules.end(),
                  [](const RuleSpec& r) { return r.action.route == Route::Repair; }))
    never("steered_repair", repair,
          test(Attr::SuspiciousSuggestion, Op::Truthy, 0, "suspicious_suggestion"),
          "never repair when suspicious_suggestion");
}

// The guards, in precedence order (docs/language.md, "Guards and precedence"): side-effect
// gates, the steering gate, the Retry-After cap, spent budgets, the open circuit.
void add_guards(PolicySpec& spec) {
  using K = ast::Expr::Kind;
  const auto test = synthesized_test;
  auto node = [](K kind, std::vector<Cond> children) {
    Cond c;
    c.kind = kind;
    c.children = std::move(children);
    return c;
  };
  enum Applies { kRetry = 1, kRepair = 2, kBoth = 3 };
  auto add = [&](std::string name, std::string exhausted, int applies, Cond when, Action action,
                 std::string reason) {
    Guard g;
    g.name = std::move(name);
    g.exhausted = std::move(exhausted);
    g.applies_to_retry = applies & kRetry;
    g.applies_to_repair = applies & kRepair;
    g.when = std::move(when);
    g.action = std::move(action);
    g.action.reason = std::move(reason);
    spec.guards.push_back(std::move(g));
  };
  auto budget = [&](std::string exhausted, int applies, Cond when, std::string reason) {
    add("budget:" + exhausted, exhausted, applies, std::move(when), spec.on_exhausted,
        std::move(reason));
  };
  const auto ms = [](std::int64_t v) { return std::to_string(v) + "ms"; };
  const auto committed = static_cast<std::int64_t>(SideEffect::Committed);
  const auto unknown = static_cast<std::int64_t>(SideEffect::Unknown);

  // Side-effect gates (RFC 9110 section 9.2.2; IETF Idempotency-Key draft): never resend after
  // a committed effect; after an unknown outcome, resend a non-idempotent call only with a
  // pinned key the tool honours (a repaired call carries a new key, so never), else verify.
  if (!waived(spec, "retry_after_commit"))
    add("gate:committed", "", kBoth,
        test(Attr::SideEffect, Op::Eq, committed, "side_effect == committed"),
        Action{Route::Stop, "", ""}, "side effect already committed");
  const Action verify = spec.verify.empty() ? Action{Route::Escalate, "", ""}
                                            : Action{Route::Replace, spec.verify, ""};
  auto unknown_outcome = [&] {
    return std::vector<Cond>{test(Attr::SideEffect, Op::Eq, unknown, "side_effect == unknown"),
                             node(K::Not, {test(Attr::Idempotent, Op::Truthy, 0, "idempotent")})};
  };
  std::vector<Cond> retry_unknown = unknown_outcome();
  if (spec.honours_keys)
    retry_unknown.push_back(test(Attr::IdempotencyKey, Op::Ne, 1, "idempotency_key != pinned"));
  if (!waived(spec, "unsafe_resend")) {
    add("gate:unknown_outcome", "", kRetry, node(K::And, std::move(retry_unknown)), verify,
        "outcome unknown; verify before resending");
    add("gate:unknown_outcome", "", kRepair, node(K::And, unknown_outcome()), verify,
        "outcome unknown; verify before resending");
  }
  // A repair sends the server's suggestion as the next call's arguments: one that reads as
  // instructions to the agent (a command, an install, a URL to fetch, ...) goes to a person.
  add("gate:steering", "", kRepair,
      test(Attr::SuspiciousSuggestion, Op::Truthy, 0, "suspicious_suggestion"),
      Action{Route::Escalate, "", ""}, "the suggestion reads as instructions to the agent");

  budget("retry_after", kRetry,
         test(Attr::RetryAfter, Op::Gt, spec.retry_after_max_ms,
              "retry_after > " + ms(spec.retry_after_max_ms)),
         "server asked to wait longer than retry_after_max");
  // A call stuck failing the same way is the most specific diagnosis: it comes first.
  if (spec.repeats != kUnlimited)
    budget("repeats", kBoth,
           test(Attr::Repeats, Op::Ge, spec.repeats, "repeats >= " + std::to_string(spec.repeats)),
           "the same call failed the same way too often; change approach");
  budget("attempts", kBoth, test(Attr::AttemptsLeft, Op::Le, 0, "attempts_left <= 0"),
         "attempt budget spent");
  // A rule's own cap (`-> retry with attempts N`) guards that rule alone, at the same place:
  // its calls, the first included and a lower layer's retries counted, reach N.
  for (const RuleSpec& r : spec.rules) {
    if (r.action.attempts == kUnlimited) continue;
    const std::string n = std::to_string(r.action.attempts);
    budget("attempts", r.action.route == Route::Retry ? kRetry : kRepair,
           test(Attr::AttemptsUsed, Op::Ge, r.action.attempts, "attempts_used >= " + n),
           "attempt budget of rule " + r.name + " spent");
    spec.guards.back().rule = r.name;
  }
  budget("repairs", kRepair,
         test(Attr::Repairs, Op::Ge, spec.repairs, "repairs >= " + std::to_string(spec.repairs)),
         "repair budget spent");
  if (spec.cost_max != kUnlimited)
    budget("cost", kBoth,
           test(Attr::CostLeft, Op::Lt, spec.cost, "cost_left < " + std::to_string(spec.cost)),
           "cost budget spent");
  // The run's budgets (every operation of the workflow): after the operation's own.
  if (spec.run_calls != kUnlimited || spec.run_tool_calls != kUnlimited)
    budget("run_calls", kBoth, test(Attr::RunCallsLeft, Op::Le, 0, "run_calls_left <= 0"),
           "the run's call budget spent");
  if (spec.run_cost != kUnlimited || spec.run_tool_cost != kUnlimited)
    budget(
        "run_cost", kBoth,
        test(Attr::RunCostLeft, Op::Lt, spec.cost, "run_cost_left < " + std::to_string(spec.cost)),
        "the run's cost budget spent");
  if (spec.run_failures != kUnlimited || spec.run_tool_failures != kUnlimited)
    budget("run_failures", kBoth, test(Attr::RunFailuresLeft, Op::Le, 0, "run_failures_left <= 0"),
           "the run's failure budget spent");
  budget("deadline", kBoth, test(Attr::TimeLeft, Op::Le, 0, "time_left <= 0"),
         "operation deadline passed");
  budget("deadline", kRetry, test(Attr::DeadlineSlack, Op::Le, 0, "retry_after >= time_left"),
         "server asked to wait beyond the deadline");
  if (spec.throttle.enabled)
    budget("retry_tokens", kRetry, test(Attr::RetryThrottled, Op::Truthy, 0, "retry_throttled"),
           "retries throttled for this tool (gRFC A6 token bucket)");
  if (spec.breaker.enabled)
    add("circuit:open", "", kBoth, test(Attr::Circuit, Op::Eq, 1, "circuit == open"), spec.on_open,
        "circuit open for this tool");
}

}  // namespace

void lower(PolicySpec& spec) {
  add_guards(spec);
  add_invariants(spec);
}

}  // namespace recourse::detail
