// Evaluate stage: envelope + context -> attributes -> table row -> decision.
//
// make_point() computes the attributes before the lookup, the derived ones included
// (attempts_left = max attempts - attempt, with the host's per-call override clamped to the
// engine's ceiling; time_left = deadline - elapsed; `field in arguments` against the host's list
// or the tool block's): for decide() only those the table's columns and finish() read, for the
// reference interpreter all of them. The table picks the row; finish() adds what is computed after
// the lookup: the delay (tested, not proven), budgets left, the idempotency-key directive and the
// trace id. Nothing here allocates or throws.
#include <algorithm>

#include "envelope/steering.hpp"
#include "eval/backoff.hpp"
#include "model/fields.hpp"
#include "source/nearest.hpp"
#include "table/compiled.hpp"

namespace recourse {

const char* to_string(Route route) noexcept {
  return detail::name_of(route).data();
}

const char* to_string(KeyDirective directive) noexcept {
  return detail::name_of(directive).data();
}

namespace detail {

void CodeIndex::emplace(std::string_view name, std::int64_t id) {
  entries_.push_back({name, id});
  if (slots_.size() >= entries_.size() * 4) return place(entries_.back());
  std::size_t size = std::max<std::size_t>(4, slots_.size());
  while (size < entries_.size() * 4) size *= 2;
  slots_.assign(size, Slot{});
  for (const Slot& e : entries_) place(e);
}

void CodeIndex::place(const Slot& slot) {
  std::size_t i = hash(slot.name) & (slots_.size() - 1);
  while (slots_[i].id >= 0) i = (i + 1) & (slots_.size() - 1);
  slots_[i] = slot;
}

namespace {

std::int64_t max_attempts(const Compiled& p, const Context& c) {
  return std::min(c.max_attempts.value_or(p.spec.attempts), p.attempt_ceiling);
}

// a - b where kUnlimited stays kUnlimited.
std::int64_t left(std::int64_t limit, std::int64_t used) {
  return limit == kUnlimited ? kUnlimited : saturating_sub(limit, used);
}

std::int64_t deadline_of(const Compiled& p, const Context& c) {
  return c.deadline_ms.value_or(p.spec.deadline_ms);
}

// The warning of every decision made from a context the store could not fill (docs/state.md),
// with a policy or without one.
std::uint32_t store_warning(const Context& c) {
  return c.store_unavailable ? std::uint32_t{kStoreUnavailable} : 0u;
}

}  // namespace

Point make_point(const Compiled& p, const Envelope& e, const Context& c, std::uint32_t wanted,
                 std::uint32_t& warnings, std::string_view& nearest_code) noexcept {
  Point point;
  // The code is always resolved: an unknown code warns whatever the table tests.
  if (e.code) {
    std::int64_t id = p.code_ids.find(*e.code);
    if (id < 0) {
      id = kUnknownCodeId;
      warnings |= recourse::kUnknownCode;
      nearest_code = nearest(*e.code, p.spec.codes);
    }
    point.set(Attr::Code, id);
  }
  const std::optional<SideEffect> side_effect = side_effect_of(c);
  if (!side_effect) warnings |= kSideEffectAssumed;
  auto want = [&](Attr a) { return (wanted & bit(a)) != 0; };
  auto number = [&](Attr a, std::int64_t v) {
    if (want(a)) point.set(a, v);
  };
  // The fields that are an attribute's value (model/fields.hpp); absent optionals stay absent.
  auto give = [&](const Field& f, const auto& field) {
    using T = std::decay_t<decltype(field)>;
    if (!f.attr || *f.attr == Attr::Code || !want(*f.attr)) return;
    const unwrapped_t<T>* value = nullptr;
    if constexpr (std::is_same_v<T, unwrapped_t<T>>)
      value = &field;
    else if (field)
      value = &*field;
    if constexpr (kTextField<T>) {
      if (value) point.set(*f.attr, std::string_view(*value));
    } else if constexpr (kNumberField<T>) {
      if (value) point.set(*f.attr, static_cast<std::int64_t>(*value));
    }
  };
  for_each_envelope_field([&](const Field& f, auto field) { give(f, e.*field); });
  for_each_context_field([&](const Field& f, auto field) { give(f, c.*field); });
  // Two context attributes are never absent: an unset one takes its default. The side effect is
  // side_effect_of()'s, which a stream's undiscardable output makes committed.
  if (!c.idempotent) number(Attr::Idempotent, p.spec.idempotent);
  number(Attr::SideEffect, static_cast<std::int64_t>(side_effect.value_or(SideEffect::Unknown)));
  // Retries made below us and by an outer layer count against the same attempts budget (no
  // multiplying across layers).
  const std::int64_t retried = c.lower_retries + c.outer_retries;  // both at most 1e9
  number(Attr::AttemptsLeft,
         saturating_sub(saturating_sub(max_attempts(p, c), c.attempt), retried));
  number(Attr::AttemptsUsed, c.attempt + retried);
  // The run's budgets: the smaller of what is left in all and of this tool.
  const auto run_left = [](std::int64_t all, std::int64_t used, std::int64_t tool,
                           std::int64_t tool_used) {
    return std::min(left(all, used), left(tool, tool_used));
  };
  number(Attr::RunCallsLeft,
         run_left(p.spec.run_calls, c.run_calls, p.spec.run_tool_calls, c.run_tool_calls));
  number(Attr::RunCostLeft,
         run_left(p.spec.run_cost, c.run_cost, p.spec.run_tool_cost, c.run_tool_cost));
  number(Attr::RunFailuresLeft, run_left(p.spec.run_failures, c.run_failures,
                                         p.spec.run_tool_failures, c.run_tool_failures));
  const std::int64_t time_left = left(deadline_of(p, c), c.elapsed_ms);
  number(Attr::TimeLeft, time_left);
  number(Attr::CostLeft, left(p.spec.cost_max, c.cost_spent));
  if (e.retry_after_ms) number(Attr::DeadlineSlack, left(time_left, *e.retry_after_ms));
  if (e.field && want(Attr::FieldInArguments)) {
    const auto& args = c.arguments ? *c.arguments : p.spec.arguments;
    const bool in = std::find(args.begin(), args.end(), *e.field) != args.end();
    point.set(Attr::FieldInArguments, in);
  }
  // The steering detector reads the untrusted texts on every decision: its warning names what
  // it found whatever the table tests (docs/language.md section 4). A redacted decision-log
  // record brings what it found in the texts as received (Envelope::steering).
  const std::uint32_t message = e.steering  ? *e.steering & 0xffffu
                                : e.message ? scan_steering(*e.message, p.steering)
                                            : 0;
  const std::uint32_t suggestion = e.steering     ? *e.steering >> 16
                                   : e.suggestion ? scan_steering(*e.suggestion, p.steering)
                                                  : 0;
  point.steering = message | suggestion << 16;
  if (point.steering) warnings |= kSuspiciousText;
  number(Attr::SuspiciousText, (message | suggestion) != 0);
  number(Attr::SuspiciousSuggestion, suggestion != 0);
  return point;
}

std::uint64_t mint_trace_id(const Context& c, std::uint64_t seed) noexcept {
  return splitmix64(fnv1a(c.operation_id, fnv1a(c.tool)) ^ static_cast<std::uint64_t>(c.attempt) ^
                    seed);
}

// A replace to the tool's fallback chain: the chain's first tool the context does not list as
// unavailable (this operation called it, or its circuit is open); with none left, stop.
void take_chain(const PolicySpec& spec, const Context& c, Decision& d) noexcept {
  const auto listed = [&](const std::string& tool) {
    return c.unavailable_tools &&
           std::find(c.unavailable_tools->begin(), c.unavailable_tools->end(), tool) !=
               c.unavailable_tools->end();
  };
  for (const std::string& tool : spec.fallback) {
    if (!listed(tool)) {
      d.target = tool;
      return;
    }
  }
  d.route = Route::Stop;
  d.target = {};
  d.reason = kNoFallbackLeft;
}

void finish(const Compiled& p, const Action& a, std::string_view label, std::string_view exhausted,
            const Point& point, const Envelope& e, const Context& c, Decision& d,
            std::optional<std::int64_t> rule_attempts) noexcept {
  d.route = a.route;
  d.rule = label;
  d.reason = a.reason;
  d.target = a.target;
  if (a.chain) take_chain(p.spec, c, d);
  d.exhausted = exhausted;
  d.policy = p.spec.name;
  d.policy_hash = p.hash;
  d.attempt = c.attempt;
  d.retry_after_ms = e.retry_after_ms;
  d.warnings |= store_warning(c);
  d.steering = point.steering;
  if (!e.trace_id) {
    d.warnings |= kTraceIdMinted;
    d.minted_trace_id = mint_trace_id(c, p.seed);
  }
  const std::int64_t time_left = point.number(Attr::TimeLeft);
  if (d.route == Route::Retry) {
    const std::string_view key_source = !c.operation_id.empty() ? std::string_view(c.operation_id)
                                        : e.trace_id            ? std::string_view(*e.trace_id)
                                                                : std::string_view(c.tool);
    // gRFC A6: after a retry on the server's pushback the backoff starts again from its first
    // step ("retry delay will reset to initial backoff for the following retry").
    const bool restart = c.pushback_attempt > 0 && c.pushback_attempt < c.attempt;
    const std::int64_t n = restart ? c.attempt - c.pushback_attempt : c.attempt;
    if (restart) d.backoff_attempt = static_cast<std::int32_t>(n);
    const Backoff& b = schedule_of(p.spec, a);
    const std::uint64_t key = fnv1a(key_source, p.seed);
    const Delay delay = backoff_delay(b, n, key);
    // After a server hint, the hint's own jitter (hint_jitter) spreads the clients it woke.
    const Delay hint =
        hint_delay(b, e.retry_after_ms.value_or(0), c.attempt, key, p.spec.retry_after_max_ms);
    d.delay_ms = std::max({delay.delay_ms, p.spec.min_delay_ms, hint.delay_ms});
    d.jitter_ms = b.hint_jitter > 0 && e.retry_after_ms ? hint.draw_ms : delay.draw_ms;
    d.idempotency_key = key_directive(p.spec, d.route);
    // The deadline covers the waits too. The guard rows proved the hint fits; the backoff is
    // computed after the lookup, so this last check is tested, not proven.
    if (d.delay_ms >= time_left) {
      d.route = p.spec.on_exhausted.route;
      d.target = p.spec.on_exhausted.target;
      d.rule = "budget:deadline";
      d.reason = "the next attempt would start after the deadline";
      if (p.spec.on_exhausted.chain) take_chain(p.spec, c, d);
      d.exhausted = "deadline";
      d.delay_ms = 0;
      d.jitter_ms = 0;
      d.backoff_attempt = 0;
      d.idempotency_key = KeyDirective::None;
    }
  } else {
    d.idempotency_key = key_directive(p.spec, d.route);
  }

  // Budgets before this decision and after the call it leads to.
  const bool call = d.route == Route::Retry || d.route == Route::Repair;
  auto spend = [](std::int64_t before, std::int64_t amount) {
    return before == kUnlimited ? kUnlimited
                                : std::max<std::int64_t>(0, saturating_sub(before, amount));
  };
  // A rule's own cap (`with attempts N`; its guard's action carries it too) lowers what is left.
  const std::int64_t cap = rule_attempts.value_or(a.attempts);
  const std::int64_t rule_left =
      cap == kUnlimited ? kUnlimited : cap - c.attempt - c.lower_retries - c.outer_retries;
  const std::int64_t attempts_left =
      std::max<std::int64_t>(0, std::min(point.number(Attr::AttemptsLeft), rule_left));
  const std::int64_t repairs_left =
      std::max<std::int64_t>(0, saturating_sub(p.spec.repairs, c.repairs));
  d.attempts = {attempts_left, spend(attempts_left, call ? 1 : 0)};
  d.repairs = {repairs_left, spend(repairs_left, d.route == Route::Repair ? 1 : 0)};
  const std::int64_t cost_left = std::max<std::int64_t>(0, point.number(Attr::CostLeft));
  d.cost = {cost_left, spend(cost_left, call ? p.spec.cost : 0)};
  const std::int64_t time_before = std::max<std::int64_t>(0, time_left);
  d.time_ms = {time_before, spend(time_before, d.delay_ms)};
  if (call) {
    if (p.spec.try_timeout_ms != kUnlimited || d.time_ms.after != kUnlimited)
      d.timeout_ms = std::min(p.spec.try_timeout_ms, d.time_ms.after);
    if (c.now_ms && d.route == Route::Retry) d.retry_at_ms = *c.now_ms + d.delay_ms;
  }
}

}  // namespace detail

Decision Policy::decide(const Envelope& envelope, const Context& context) const noexcept {
  Decision d;
  const detail::Compiled& p = *impl_;
  const detail::Point point =
      detail::make_point(p, envelope, context, p.wanted, d.warnings, d.nearest_code);
  const std::uint32_t row = p.table.match(point);
  const detail::RowAction& a = p.table.actions[p.table.rows[row].action];
  detail::finish(p, a.action, a.label, a.exhausted, point, envelope, context, d);
  return d;
}

const detail::Compiled& detail::compiled(const Policy& policy) noexcept {
  return *policy.impl_;
}

std::string_view Policy::name() const noexcept {
  return impl_->spec.name;
}
std::string_view Policy::hash() const noexcept {
  return impl_->hash;
}
std::int64_t Policy::call_cost() const noexcept {
  return impl_->spec.cost;
}
const std::vector<CodeMapping>& Policy::mappings() const noexcept {
  return impl_->spec.mappings;
}
std::string Policy::dump() const {
  return detail::dump(impl_->table, impl_->spec, true);
}

const Policy* Bundle::find(std::string_view tool) const noexcept {
  auto by_name = [](const Policy& p, std::string_view n) { return p.name() < n; };
  for (std::string_view name : {tool, std::string_view("*")}) {
    auto it = std::lower_bound(policies_.begin(), policies_.end(), name, by_name);
    if (it != policies_.end() && it->name() == name) return &*it;
  }
  return nullptr;
}

Decision Bundle::unreadable(const Context& context) const noexcept {
  Decision d;
  if (const Policy* p = find(context.tool)) {
    d.policy = p->name();
    d.policy_hash = p->hash();
  }
  d.route = Route::Stop;
  d.rule = "unreadable_envelope";
  d.reason = "the envelope could not be read";
  d.attempt = context.attempt;
  d.warnings = kUnreadableEnvelope | kTraceIdMinted | detail::store_warning(context);
  d.minted_trace_id = detail::mint_trace_id(context, 0);
  return d;
}

Decision Bundle::decide(const Envelope& envelope, const Context& context) const noexcept {
  if (const Policy* p = find(context.tool)) return p->decide(envelope, context);
  Decision d;
  d.route = Route::Stop;
  d.rule = "no_policy";
  d.reason = "no policy for this tool and no \"*\" policy";
  d.attempt = context.attempt;
  d.retry_after_ms = envelope.retry_after_ms;
  d.warnings = kNoPolicy | detail::store_warning(context);
  if (!envelope.trace_id) {
    d.warnings |= kTraceIdMinted;
    d.minted_trace_id = detail::mint_trace_id(context, 0);
  }
  return d;
}

}  // namespace recourse
