// Views for `recourse diff`: see diff_views.hpp.
#include "tools/diff_views.hpp"

#include <algorithm>
#include <set>

#include "eval/backoff.hpp"
#include "eval/eval.hpp"

namespace recourse::detail {
namespace {

using K = ast::Expr::Kind;
using ast::Op;

std::int64_t max_attempts_of(const PolicySpec& spec, std::int64_t ceiling) {
  return std::min(spec.attempts, ceiling);
}

// A condition that always holds (an `and` of nothing) or never does (an `or` of nothing).
Cond constant(bool value) {
  Cond c;
  c.kind = value ? K::And : K::Or;
  return c;
}

Cond test_of(Attr attr, Op op, std::vector<Constant> values) {
  Cond c;
  c.attr = attr;
  c.op = op;
  c.values = std::move(values);
  return c;
}

// The test on a derived attribute whose value is `value_ms` whenever the attribute is present
// (an unlimited budget), as a constant, or for deadline_slack (absent with Retry-After) as a
// test of retry_after's presence.
Cond folded(const Cond& test, std::int64_t value, bool untrusted) {
  const bool present = eval_test(test, Slot{true, value, {}});
  if (!untrusted) return constant(present);
  const bool absent = eval_test(test, Slot{});
  if (present == absent) return constant(present);
  return test_of(Attr::RetryAfter, present ? Op::IsPresent : Op::IsAbsent, {});
}

// `attr OP k` read in coordinates `delta` below the version's: `attr OP k - delta`.
void shift(Cond& test, std::int64_t delta) {
  for (Constant& k : test.values) k.num = saturating_sub(k.num, delta);
}

// A test on what is left of `limit` (kUnlimited: none), read against `reference`'s: a constant
// when the version has no limit, else shifted by the difference of the two.
void rebase(Cond& test, std::int64_t limit, std::int64_t reference, bool untrusted) {
  if (limit == kUnlimited)
    test = folded(test, kUnlimited, untrusted);
  else
    shift(test, saturating_sub(limit, reference));
}

// time_left OP k with time_left = deadline - elapsed, as a test on elapsed.
Cond on_elapsed(const Cond& test, std::int64_t deadline) {
  Cond out = test;
  out.attr = Attr::Elapsed;
  for (Constant& k : out.values) k.num = saturating_sub(deadline, k.num);
  switch (test.op) {
    case Op::Lt:
      out.op = Op::Gt;
      break;
    case Op::Le:
      out.op = Op::Ge;
      break;
    case Op::Gt:
      out.op = Op::Lt;
      break;
    case Op::Ge:
      out.op = Op::Le;
      break;
    default:  // ==, != and `in` keep their meaning; a list stays sorted
      std::sort(out.values.begin(), out.values.end(),
                [](const Constant& a, const Constant& b) { return a.num < b.num; });
  }
  return out;
}

struct Rewrite {
  const PolicySpec& version;
  const View& view;
  std::int64_t attempts_delta = 0;  // the version's max attempts minus the coordinates'
  std::int64_t deadline_ref = kUnlimited, cost_ref = kUnlimited;

  void operator()(Cond& c) const {
    if (c.kind != K::Test) {
      for (Cond& child : c.children) (*this)(child);
      return;
    }
    switch (c.attr) {
      case Attr::AttemptsLeft:
        if (view.attempts) shift(c, attempts_delta);
        break;
      case Attr::TimeLeft:
        if (!view.deadline) break;
        c = version.deadline_ms == kUnlimited ? folded(c, kUnlimited, false)
                                              : on_elapsed(c, version.deadline_ms);
        break;
      case Attr::DeadlineSlack:
        if (view.deadline) rebase(c, version.deadline_ms, deadline_ref, true);
        break;
      case Attr::CostLeft:
        if (view.cost) rebase(c, version.cost_max, cost_ref, false);
        break;
      case Attr::FieldInArguments: {  // `field in arguments`: the one Truthy test there is
        if (!view.arguments) break;
        std::set<std::string> names(version.arguments.begin(), version.arguments.end());
        std::vector<Constant> values;
        for (const auto& n : names) values.push_back({0, n});
        const Cond in = test_of(Attr::Field, Op::InList, std::move(values));
        c = in.values.empty() ? constant(false) : in;
        break;
      }
      case Attr::Idempotent:
        if (view.idempotent) c = folded(c, version.idempotent, false);
        break;
      default:
        break;
    }
  }
};

// A limit's reference: the first version's, or the other's where the first has none.
std::int64_t reference(std::int64_t before, std::int64_t after) {
  return before != kUnlimited ? before : after;
}

}  // namespace

std::vector<View> views(const PolicySpec& a, const PolicySpec& b, std::int64_t ceiling) {
  const bool attempts = max_attempts_of(a, ceiling) != max_attempts_of(b, ceiling);
  const bool deadline = a.deadline_ms != b.deadline_ms;
  const bool arguments = a.arguments != b.arguments;
  const bool idempotent = a.idempotent != b.idempotent;
  std::vector<View> out;
  for (unsigned mask = 0; mask < 16; ++mask) {
    View v{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0, (mask & 8) != 0,
           a.cost_max != b.cost_max};
    if ((v.attempts && !attempts) || (v.deadline && !deadline) || (v.arguments && !arguments) ||
        (v.idempotent && !idempotent))
      continue;
    out.push_back(v);
  }
  return out;
}

PolicySpec in_view(const PolicySpec& version, const PolicySpec& a, const PolicySpec& b,
                   const View& view, std::int64_t ceiling) {
  PolicySpec out = version;
  const Rewrite rewrite{
      version, view, saturating_sub(max_attempts_of(version, ceiling), max_attempts_of(a, ceiling)),
      reference(a.deadline_ms, b.deadline_ms), reference(a.cost_max, b.cost_max)};
  for (RuleSpec& r : out.rules)
    if (r.when) rewrite(*r.when);
  for (Guard& g : out.guards) rewrite(g.when);
  out.assertions.clear();
  // make_point() then computes the coordinates: the first version's attempts, the references'
  // deadline and cost limit.
  if (view.attempts) out.attempts = a.attempts;
  if (view.deadline) out.deadline_ms = rewrite.deadline_ref;
  if (view.cost) out.cost_max = rewrite.cost_ref;
  return out;
}

DelayBounds delay_bounds(const PolicySpec& spec, const Backoff& backoff, std::int64_t attempt,
                         std::int64_t hint_ms) {
  const DelayRange r = backoff_range(backoff, attempt);
  const std::int64_t extra = hint_extra_max(backoff, hint_ms, spec.retry_after_max_ms);
  return {std::max({r.min_ms, spec.min_delay_ms, hint_ms}),
          std::max({r.max_ms, spec.min_delay_ms, hint_ms + extra})};
}

namespace {

bool backoffs_differ(const Backoff& x, const Backoff& y) {
  return x.kind != y.kind || x.base_ms != y.base_ms || x.factor != y.factor ||
         x.max_ms != y.max_ms || x.jitter != y.jitter || x.hint_jitter != y.hint_jitter;
}

}  // namespace

bool delays_differ(const PolicySpec& a, const PolicySpec& b) {
  // retry_after_max bounds the hint's jitter: it moves a delay only where a backoff has one.
  auto hint_jitter = [](const PolicySpec& s) {
    bool any = s.backoff.hint_jitter > 0;
    for (const Schedule& named : s.schedules) any |= named.backoff.hint_jitter > 0;
    return any;
  };
  if (a.min_delay_ms != b.min_delay_ms || backoffs_differ(a.backoff, b.backoff) ||
      a.schedules.size() != b.schedules.size() ||
      ((hint_jitter(a) || hint_jitter(b)) && a.retry_after_max_ms != b.retry_after_max_ms))
    return true;
  for (std::size_t i = 0; i < a.schedules.size(); ++i)
    if (a.schedules[i].name != b.schedules[i].name ||
        backoffs_differ(a.schedules[i].backoff, b.schedules[i].backoff))
      return true;
  return false;
}

void cut_for_delays(PolicySpec& spec, const PolicySpec& a, const PolicySpec& b, std::int64_t last) {
  // max(bound, hint) of the two versions differ exactly for the hints below the greater bound:
  // cutting retry_after at every bound of both makes that one answer per cell.
  std::set<std::int64_t> attempts, hints;
  for (std::int64_t n = 1; n <= last; ++n) {
    attempts.insert(n);
    for (const PolicySpec* s : {&a, &b}) {
      std::vector<const Backoff*> backoffs = {&s->backoff};
      for (const Schedule& named : s->schedules) backoffs.push_back(&named.backoff);
      for (const Backoff* backoff : backoffs) {
        const DelayBounds d = delay_bounds(*s, *backoff, n, 0);
        hints.insert(d.min_ms);
        hints.insert(d.max_ms);
      }
    }
  }
  auto list = [](const std::set<std::int64_t>& values) {
    std::vector<Constant> out;
    for (std::int64_t v : values) out.push_back({v, {}});
    return out;
  };
  AssertSpec cuts;
  cuts.when.kind = K::Or;
  cuts.when.children = {test_of(Attr::Attempt, Op::InList, list(attempts)),
                        test_of(Attr::RetryAfter, Op::InList, list(hints))};
  spec.assertions.push_back(std::move(cuts));
}

}  // namespace recourse::detail
