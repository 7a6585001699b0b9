// Reference interpreter: walks the checked rules directly, with no table.
//
// It exists to be obviously right: tests and the differential fuzzer compare it with the
// compiled table on many inputs, and `recourse explain` uses it to show each rule's tests and
// the values they saw. It shares make_point() and finish() with decide(), and eval_test() with
// the compiler, so what it checks is the table: cells, DNF, guard rows and the matcher.
#include "eval/eval.hpp"
#include "recourse/tooling.hpp"
#include "table/compiled.hpp"

namespace recourse {
namespace detail {
namespace {

std::string value_text(const Compiled& p, Attr attr, const Slot& s) {
  if (!s.present) return "absent";
  switch (info(attr).type) {
    case Type::Code:
      return p.spec.codes.at(static_cast<std::size_t>(s.num));
    case Type::Bool:
      return s.num ? "true" : "false";
    case Type::Enum:
      return std::string(info(attr).values[s.num]);
    case Type::String:
      return "\"" + std::string(s.str) + "\"";
    case Type::Duration:
      return s.num == kUnlimited ? "unlimited" : std::to_string(s.num) + "ms";
    default:
      return std::to_string(s.num);
  }
}

// Evaluates `c`; with `trace`, appends each test evaluated (short-circuit order).
bool eval(const Compiled& p, const Cond& c, const Point& point, std::vector<ExplainedTest>* trace) {
  using K = ast::Expr::Kind;
  switch (c.kind) {
    case K::Test: {
      const Slot slot = point.slot(c.attr);
      const bool r = eval_test(c, slot);
      if (trace) trace->push_back({c.text, value_text(p, c.attr, slot), r});
      return r;
    }
    case K::Not:
      return !eval(p, c.children[0], point, trace);
    case K::And:
      for (const auto& child : c.children)
        if (!eval(p, child, point, trace)) return false;
      return true;
    case K::Or:
      for (const auto& child : c.children)
        if (eval(p, child, point, trace)) return true;
      return false;
  }
  return false;
}

struct Outcome {
  std::uint32_t rule = 0;
  const Guard* guard = nullptr;
};

// The rule that decides: the first match in file order; under `hit safest` every rule is
// tested and the most conservative match wins (ties: the earlier rule). The default (last) only
// when nothing else matches. Then the guards of that rule, in precedence order.
Outcome run(const Compiled& p, const Point& point, std::vector<ExplainedRule>* trace) {
  const std::uint32_t last = static_cast<std::uint32_t>(p.spec.rules.size() - 1);
  const bool safest = p.spec.hit == HitPolicy::Safest;
  std::uint32_t chosen = last;
  for (std::uint32_t i = 0; i < last; ++i) {
    const RuleSpec& rule = p.spec.rules[i];
    std::vector<ExplainedTest> tests;
    const bool matched = !rule.when || eval(p, *rule.when, point, trace ? &tests : nullptr);
    if (trace) {
      if (!matched && !tests.empty()) tests.erase(tests.begin(), tests.end() - 1);
      trace->push_back({rule.name, rule.pos.line, rule.pos.column, matched, std::move(tests)});
    }
    if (!matched) continue;
    if (chosen == last ||
        safety_rank(rule.action.route) < safety_rank(p.spec.rules[chosen].action.route))
      chosen = i;
    if (!safest) break;
  }
  if (chosen == last && trace)
    trace->push_back({p.spec.rules[last].name,
                      p.spec.rules[last].pos.line,
                      p.spec.rules[last].pos.column,
                      true,
                      {}});
  for (const Guard& g : p.spec.guards)
    if (guards_rule(g, p.spec.rules[chosen]) && eval(p, g.when, point, nullptr))
      return {chosen, &g};
  return {chosen, nullptr};
}

// The interpreter's decision; with `trace`, each rule's tests up to the one that matched.
Decision decide_by_rules(const Compiled& p, const Envelope& envelope, const Context& context,
                         std::vector<ExplainedRule>* trace, std::string* guard) {
  Decision d;
  const Point point = make_point(p, envelope, context, kAllAttrs, d.warnings, d.nearest_code);
  const Outcome o = run(p, point, trace);
  const RuleSpec& rule = p.spec.rules[o.rule];
  if (o.guard)
    finish(p, o.guard->action, o.guard->name, o.guard->exhausted, point, envelope, context, d,
           rule.action.attempts);
  else
    finish(p, rule.action, rule.name, {}, point, envelope, context, d);
  if (guard && o.guard) *guard = o.guard->name;
  return d;
}

}  // namespace
}  // namespace detail

Decision interpret(const Policy& policy, const Envelope& envelope, const Context& context) {
  return detail::decide_by_rules(detail::compiled(policy), envelope, context, nullptr, nullptr);
}

Explanation explain(const Policy& policy, const Envelope& envelope, const Context& context) {
  Explanation x;
  x.decision =
      detail::decide_by_rules(detail::compiled(policy), envelope, context, &x.rules, &x.guard);
  return x;
}

}  // namespace recourse
