// Budget state: Workflow (per-operation counters) and Health (per-tool breaker and retry
// tokens). See recourse/state.hpp for the contracts.
//
// The token bucket follows gRFC A6 ("gRPC Retry Design", retry throttling): tokens start at
// max_tokens, a failure the engine decides to retry takes 1, a success gives token_ratio back
// (capped at max_tokens), and retries are allowed only while tokens > max_tokens / 2. Tokens are
// kept as integer thousandths, as a shared store will keep them.
#include <nlohmann/json.hpp>

#include "backoff.hpp"
#include "compiled.hpp"
#include "recourse/state.hpp"

namespace recourse {
namespace {

using json = nlohmann::json;

std::uint64_t failure_key(const Context& c, const Envelope& e, std::string_view args_hash) {
  std::uint64_t h = detail::fnv1a(c.tool);
  h = detail::fnv1a(e.code.value_or("\x01"
                                    "absent"),
                    h ^ 0x1f);
  h = detail::fnv1a(e.field.value_or("\x01"
                                     "absent"),
                    h ^ 0x2f);
  return detail::splitmix64(detail::fnv1a(args_hash, h ^ 0x3f));
}

std::int64_t full_tokens(const detail::Throttle& t) {
  return static_cast<std::int64_t>(t.max_tokens * 1000.0 + 0.5);
}

template <typename T>
bool read(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  out = it->get<T>();
  return true;
}

}  // namespace

// ---- Workflow -------------------------------------------------------------------------------

void Workflow::record_attempt(const Context& c, std::int64_t cost, std::int64_t now_ms) {
  auto [it, fresh] = operations_.try_emplace(c.operation_id);
  OperationState& op = it->second;
  if (fresh) op.started_ms = now_ms;
  ++op.attempts;
  if (op.repair_pending) ++op.repairs;
  op.repair_pending = false;
  op.cost += cost;
}

void Workflow::record_failure(const Context& c, const Envelope& e) {
  OperationState& op = operations_[c.operation_id];
  const std::uint64_t key = failure_key(c, e, c.args_hash);
  op.repeats = op.repeats > 0 && op.last_failure == key ? op.repeats + 1 : 1;
  op.last_failure = key;
}

void Workflow::record_decision(const Context& c, const Decision& d) {
  auto it = operations_.find(c.operation_id);
  if (it != operations_.end()) it->second.repair_pending = d.route == Route::Repair;
}

void Workflow::record_success(const Context& c) {
  auto it = operations_.find(c.operation_id);
  if (it != operations_.end()) operations_.erase(it);
}

void Workflow::apply(Context& c, std::int64_t now_ms) const {
  const OperationState* op = find(c.operation_id);
  if (!op) return;
  // The larger count wins: the host may have counted calls this workflow never saw.
  c.attempt = std::max(c.attempt, op->attempts);
  c.repairs = std::max(c.repairs, op->repairs);
  c.repeats = std::max(c.repeats, op->repeats);
  c.cost_spent = std::max(c.cost_spent, op->cost);
  c.elapsed_ms = std::max(c.elapsed_ms, now_ms - op->started_ms);
}

const OperationState* Workflow::find(std::string_view operation_id) const {
  auto it = operations_.find(operation_id);
  return it == operations_.end() ? nullptr : &it->second;
}

std::string Workflow::to_json() const {
  json ops = json::object();
  for (const auto& [id, op] : operations_)
    ops[id] = {{"attempts", op.attempts},
               {"repairs", op.repairs},
               {"repeats", op.repeats},
               {"cost", op.cost},
               {"startedMs", op.started_ms},
               {"lastFailure", op.last_failure},
               {"repairPending", op.repair_pending}};
  return json{{"operations", ops}}.dump();
}

bool Workflow::from_json(std::string_view text, std::string& error) {
  try {
    const json j = json::parse(text);
    std::map<std::string, OperationState, std::less<>> ops;
    for (const auto& [id, o] : j.at("operations").items()) {
      OperationState op;
      read(o, "attempts", op.attempts);
      read(o, "repairs", op.repairs);
      read(o, "repeats", op.repeats);
      read(o, "cost", op.cost);
      read(o, "startedMs", op.started_ms);
      read(o, "lastFailure", op.last_failure);
      read(o, "repairPending", op.repair_pending);
      if (op.attempts < 0 || op.repairs < 0 || op.repeats < 0 || op.cost < 0)
        throw std::invalid_argument("negative counter in operation " + id);
      ops.emplace(id, op);
    }
    operations_ = std::move(ops);
    return true;
  } catch (const std::exception& e) {
    error = std::string("workflow state: ") + e.what();
    return false;
  }
}

// ---- Health ---------------------------------------------------------------------------------

void Health::record_failure(const Policy& policy, const Context& c, std::int64_t now_ms) {
  const detail::Breaker& b = policy.impl_->spec.breaker;
  if (!b.enabled) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ToolHealth& h = tools_.try_emplace(c.tool).first->second;
  if (h.circuit != CircuitState::Closed) {
    if (h.probe_taken && c.operation_id == h.probe_operation) {  // the probe failed
      h.opened_ms = now_ms;
      h.probe_taken = false;
      h.probe_operation.clear();
    }
    return;
  }
  ++h.consecutive_failures;
  const std::int64_t width = std::min<std::int64_t>(b.window, 64);
  h.window = (h.window << 1) | 1u;
  if (width < 64) h.window &= (std::uint64_t{1} << width) - 1;
  h.window_calls = std::min(width, h.window_calls + 1);
  const double failed = static_cast<double>(__builtin_popcountll(h.window));
  const bool by_ratio = b.ratio > 0 && h.window_calls >= b.min_calls &&
                        failed >= b.ratio * static_cast<double>(h.window_calls);
  if (h.consecutive_failures >= b.failures || by_ratio) {
    h.circuit = CircuitState::Open;
    h.opened_ms = now_ms;
  }
}

void Health::prepare(const Policy& policy, Context& c, std::int64_t now_ms) {
  const detail::PolicySpec& spec = policy.impl_->spec;
  std::lock_guard<std::mutex> lock(mutex_);
  c.circuit = CircuitState::Closed;
  c.retry_throttled = false;
  auto it = tools_.find(c.tool);
  if (it == tools_.end()) return;
  ToolHealth& h = it->second;
  if (spec.breaker.enabled && h.circuit == CircuitState::Open) {
    if (h.probe_taken && h.probe_operation == c.operation_id) {
      c.circuit = CircuitState::HalfOpen;  // the probe's holder asks again
    } else if (!h.probe_taken && now_ms - h.opened_ms >= spec.breaker.cooldown_ms) {
      h.probe_taken = true;  // this caller's next call is the half-open probe
      h.probe_operation = c.operation_id;
      c.circuit = CircuitState::HalfOpen;
    } else {
      c.circuit = CircuitState::Open;
    }
  }
  const std::int64_t tokens = h.milli_tokens < 0 ? full_tokens(spec.throttle) : h.milli_tokens;
  c.retry_throttled = spec.throttle.enabled && tokens * 2 <= full_tokens(spec.throttle);
}

void Health::record_decision(const Policy& policy, const Context& c, const Decision& d) {
  const detail::Throttle& t = policy.impl_->spec.throttle;
  if (!t.enabled || d.route != Route::Retry) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ToolHealth& h = tools_.try_emplace(c.tool).first->second;
  if (h.milli_tokens < 0) h.milli_tokens = full_tokens(t);
  h.milli_tokens = std::max<std::int64_t>(0, h.milli_tokens - 1000);
}

void Health::record_success(const Policy& policy, const Context& c, std::int64_t) {
  const detail::PolicySpec& spec = policy.impl_->spec;
  std::lock_guard<std::mutex> lock(mutex_);
  ToolHealth& h = tools_.try_emplace(c.tool).first->second;
  if (spec.throttle.enabled && h.milli_tokens >= 0)
    h.milli_tokens = std::min(
        full_tokens(spec.throttle),
        h.milli_tokens + static_cast<std::int64_t>(spec.throttle.token_ratio * 1000.0 + 0.5));
  h.consecutive_failures = 0;
  h.window <<= 1;
  const std::int64_t width = std::min<std::int64_t>(spec.breaker.window, 64);
  if (width < 64) h.window &= (std::uint64_t{1} << width) - 1;
  h.window_calls = std::min(width, h.window_calls + 1);
  h.circuit = CircuitState::Closed;
  h.probe_taken = false;
  h.probe_operation.clear();
}

ToolHealth Health::get(std::string_view tool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = tools_.find(tool);
  return it == tools_.end() ? ToolHealth{} : it->second;
}

std::string Health::to_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  static constexpr const char* circuits[] = {"closed", "open", "half_open"};
  json tools = json::object();
  for (const auto& [name, h] : tools_)
    tools[name] = {{"circuit", circuits[static_cast<int>(h.circuit)]},
                   {"consecutiveFailures", h.consecutive_failures},
                   {"window", h.window},
                   {"windowCalls", h.window_calls},
                   {"openedMs", h.opened_ms},
                   {"probeTaken", h.probe_taken},
                   {"milliTokens", h.milli_tokens}};
  return json{{"tools", tools}}.dump();
}

bool Health::from_json(std::string_view text, std::string& error) {
  try {
    const json j = json::parse(text);
    std::map<std::string, ToolHealth, std::less<>> tools;
    for (const auto& [name, t] : j.at("tools").items()) {
      ToolHealth h;
      const std::string circuit = t.at("circuit").get<std::string>();
      if (circuit == "closed")
        h.circuit = CircuitState::Closed;
      else if (circuit == "open")
        h.circuit = CircuitState::Open;
      else if (circuit == "half_open")
        h.circuit = CircuitState::HalfOpen;
      else
        throw std::invalid_argument("unknown circuit state \"" + circuit + "\"");
      read(t, "consecutiveFailures", h.consecutive_failures);
      read(t, "window", h.window);
      read(t, "windowCalls", h.window_calls);
      read(t, "openedMs", h.opened_ms);
      read(t, "probeTaken", h.probe_taken);
      read(t, "probeOperation", h.probe_operation);
      read(t, "milliTokens", h.milli_tokens);
      tools.emplace(name, h);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    tools_ = std::move(tools);
    return true;
  } catch (const std::exception& e) {
    error = std::string("health state: ") + e.what();
    return false;
  }
}

}  // namespace recourse
