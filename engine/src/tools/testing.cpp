// Policy tests: runs the `test` blocks the checker turned into TestSpecs and compares each
// decision with its expectation.
#include <fmt/format.h>

#include <algorithm>

#include "recourse/tooling.hpp"
#include "table/compiled.hpp"
#include "wire/context.hpp"

namespace recourse {
namespace {

// A rule or guard name as a test writes it: guards ("budget:attempts") need quotes.
std::string rule_name(std::string_view name) {
  const bool plain = !name.empty() && name.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_") == std::string_view::npos;
  return plain ? std::string(name) : fmt::format("\"{}\"", name);
}

// The decision in the words of an expectation: route, target, rule, delay (retries), exhausted
// budget; pasted after `expect`, it is a test of this decision.
std::string describe(const Decision& d) {
  std::string s = to_string(d.route);
  if (!d.target.empty()) s += fmt::format(" \"{}\"", d.target);
  s += " rule " + rule_name(d.rule);
  if (d.route == Route::Retry) s += fmt::format(" delay {}ms", d.delay_ms);
  if (!d.exhausted.empty()) s += fmt::format(" exhausted {}", d.exhausted);
  return s;
}

std::vector<std::string> mismatches(const detail::TestSpec& t, const Decision& d) {
  std::vector<std::string> out;
  if (d.route != t.route)
    out.push_back(
        fmt::format("route: expected {}, got {}", to_string(t.route), to_string(d.route)));
  if (t.target && *t.target != d.target)
    out.push_back(fmt::format("target: expected \"{}\", got \"{}\"", *t.target, d.target));
  if (t.rule && *t.rule != d.rule)
    out.push_back(fmt::format("rule: expected {}, got {}", *t.rule, d.rule));
  if (t.delay_min_ms && (d.delay_ms < *t.delay_min_ms || d.delay_ms > *t.delay_max_ms))
    out.push_back(*t.delay_min_ms == *t.delay_max_ms
                      ? fmt::format("delay: expected {}ms, got {}ms", *t.delay_min_ms, d.delay_ms)
                      : fmt::format("delay: expected {}ms..{}ms, got {}ms", *t.delay_min_ms,
                                    *t.delay_max_ms, d.delay_ms));
  if (t.exhausted && *t.exhausted != d.exhausted)
    out.push_back(fmt::format("exhausted: expected {}, got {}", *t.exhausted,
                              d.exhausted.empty() ? "none" : d.exhausted));
  return out;
}

// The rule whose condition decided an input, from its explanation: the one that matched (under
// `hit safest`, the most conservative of those that matched, ties to the earlier), else the
// default.
std::string decided_by(const detail::PolicySpec& spec, const Explanation& x) {
  const detail::RuleSpec* chosen = nullptr;
  for (const ExplainedRule& e : x.rules) {
    if (!e.matched) continue;
    for (const detail::RuleSpec& r : spec.rules)
      if (r.name == e.rule && (!chosen || detail::safety_rank(r.action.route) <
                                              detail::safety_rank(chosen->action.route)))
        chosen = &r;
  }
  return chosen ? chosen->name : spec.rules.back().name;
}

}  // namespace

PolicyInfo info(const Policy& policy) {
  const detail::PolicySpec& s = detail::compiled(policy).spec;
  PolicyInfo i;
  i.attempts = s.attempts;
  i.repairs = s.repairs;
  i.min_delay_ms = s.min_delay_ms;
  i.retry_after_max_ms = s.retry_after_max_ms;
  i.deadline_ms = s.deadline_ms;
  i.backoff_max_ms = s.backoff.max_ms;
  i.hint_jitter = s.backoff.hint_jitter;
  for (const detail::Schedule& named : s.schedules) {
    i.backoff_max_ms = std::max(i.backoff_max_ms, named.backoff.max_ms);
    i.hint_jitter = std::max(i.hint_jitter, named.backoff.hint_jitter);
  }
  i.codes = s.codes;
  i.arguments = s.arguments;
  i.bounds = s.bounds;
  i.file = s.file;
  for (const detail::RuleSpec& r : s.rules)
    if (!(r.name == "default" && s.implicit_default && &r == &s.rules.back()))
      i.rules.push_back({r.name, r.pos.line, r.pos.column, r.pos.source != s.pos.source});
  for (const detail::Guard& g : s.guards)
    if (std::find(i.guards.begin(), i.guards.end(), g.name) == i.guards.end() &&
        std::any_of(s.rules.begin(), s.rules.end(),
                    [&](const detail::RuleSpec& r) { return detail::guards_rule(g, r); }))
      i.guards.push_back(g.name);
  return i;
}

std::vector<TestResult> run_tests(const Policy& policy) {
  std::vector<TestResult> results;
  for (const detail::TestSpec& t : detail::compiled(policy).spec.tests) {
    const Result<Envelope> read = read_envelope(t.envelope);
    const Envelope envelope = read.ok() ? *read : Envelope{};
    const Decision d = policy.decide(envelope, t.context);
    TestResult r;
    r.policy = std::string(policy.name());
    r.name = t.name;
    r.file = t.file;
    r.line = t.pos.line;
    r.column = t.pos.column;
    r.offset = t.pos.offset;
    r.expected = t.expected;
    r.actual = describe(d);
    r.mismatches = mismatches(t, d);
    r.passed = r.mismatches.empty();
    r.decision_json = to_json(d, envelope);
    r.input = {to_json(envelope), detail::context_json(t.context, true),
               std::string(to_string(d.route))};
    const Explanation x = explain(policy, envelope, t.context);
    r.rule = decided_by(detail::compiled(policy).spec, x);
    r.guard = x.guard;
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace recourse
