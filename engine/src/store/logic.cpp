// The store operations as pure functions on one record; see store_logic.hpp.
//
// The token bucket follows gRFC A6 ("gRPC Retry Design", retry throttling): tokens start at
// max_tokens, a failure the engine decides to retry takes 1, a success gives token_ratio back
// (capped at max_tokens), and retries are allowed only while tokens > max_tokens / 2. Tokens are
// integer thousandths. The breaker is the classic closed -> open -> half-open machine
// (Nygard, "Release It!"), with the half-open probe held as a lease.
#include "store/logic.hpp"

#include <nlohmann/json.hpp>

namespace recourse {

const char* to_string(LedgerState state) noexcept {
  static constexpr const char* names[] = {"absent", "pending", "committed", "released", "unknown"};
  return names[static_cast<std::size_t>(state)];
}

std::optional<SideEffect> side_effect_of(LedgerState state) noexcept {
  switch (state) {
    case LedgerState::Committed:
      return SideEffect::Committed;
    case LedgerState::Released:
      return SideEffect::None;
    case LedgerState::Pending:
    case LedgerState::Unknown:
      return SideEffect::Unknown;
    default:
      return std::nullopt;
  }
}

namespace detail {
namespace {

using json = nlohmann::json;

std::uint64_t window_mask(const BreakerSpec& b) {
  const std::int64_t width = std::min<std::int64_t>(b.window, 64);
  return width < 64 ? (std::uint64_t{1} << width) - 1 : ~std::uint64_t{0};
}

void push(ToolHealth& h, const BreakerSpec& b, bool failed) {
  h.window = ((h.window << 1) | (failed ? 1u : 0u)) & window_mask(b);
  h.window_calls = std::min<std::int64_t>(std::min<std::int64_t>(b.window, 64), h.window_calls + 1);
}

void release_probe(ToolHealth& h) {
  h.probe_taken = false;
  h.probe_operation.clear();
  h.probe_until_ms = 0;
}

template <typename T>
void read(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end()) out = it->get<T>();
}

}  // namespace

std::int64_t apply_bucket(ToolHealth& h, BucketEvent event, const BucketSpec& spec) {
  const std::int64_t tokens = h.milli_tokens < 0 ? spec.max_milli : h.milli_tokens;
  if (event == BucketEvent::Retry)
    h.milli_tokens = std::max<std::int64_t>(0, tokens - 1000);
  else if (event == BucketEvent::Success && h.milli_tokens >= 0)
    h.milli_tokens = std::min(spec.max_milli, tokens + spec.ratio_milli);
  return h.milli_tokens < 0 ? spec.max_milli : h.milli_tokens;
}

CircuitState apply_outcome(ToolHealth& h, std::string_view operation, bool failed,
                           const BreakerSpec& b, std::int64_t now_ms) {
  if (!failed) {
    h.consecutive_failures = 0;
    push(h, b, false);
    h.circuit = CircuitState::Closed;
    release_probe(h);
    return h.circuit;
  }
  if (h.circuit != CircuitState::Closed) {
    if (h.probe_taken && operation == h.probe_operation) {  // the probe failed
      h.opened_ms = now_ms;
      release_probe(h);
    }
    return h.circuit;
  }
  ++h.consecutive_failures;
  push(h, b, true);
  const auto failures = static_cast<std::int64_t>(__builtin_popcountll(h.window));
  const bool by_ratio = b.ratio_milli > 0 && h.window_calls >= b.min_calls &&
                        failures * 1000 >= b.ratio_milli * h.window_calls;
  if (h.consecutive_failures >= b.failures || by_ratio) {
    h.circuit = CircuitState::Open;
    h.opened_ms = now_ms;
  }
  return h.circuit;
}

CircuitState apply_probe(ToolHealth& h, std::string_view operation, const BreakerSpec& b,
                         std::int64_t now_ms) {
  if (h.circuit == CircuitState::Closed) return CircuitState::Closed;
  const bool live = h.probe_taken && now_ms < h.probe_until_ms;
  if (live && h.probe_operation == operation) return CircuitState::HalfOpen;  // asks again
  if (!live && now_ms - h.opened_ms >= b.cooldown_ms) {
    h.probe_taken = true;  // this caller's next call is the half-open probe
    h.probe_operation = std::string(operation);
    h.probe_until_ms = now_ms + b.cooldown_ms;
    return CircuitState::HalfOpen;
  }
  return CircuitState::Open;
}

std::int64_t apply_vote(std::map<std::string, std::int64_t>& votes, std::string_view worker,
                        bool open, std::int64_t vote_ms, std::int64_t now_ms) {
  if (open)
    votes[std::string(worker)] = now_ms + vote_ms;
  else
    votes.erase(std::string(worker));
  for (auto it = votes.begin(); it != votes.end();)
    it = it->second > now_ms ? std::next(it) : votes.erase(it);
  return static_cast<std::int64_t>(votes.size());
}

void apply_count(OperationState& op, const CountEvent& e, std::int64_t now_ms) {
  switch (e.kind) {
    case CountEvent::Attempt:
      if (!op.recorded()) op.started_ms = now_ms;
      ++op.attempts;
      if (op.repair_pending) ++op.repairs;
      op.repair_pending = false;
      op.cost += e.cost;
      break;
    case CountEvent::Failure:
      op.repeats = op.repeats > 0 && op.last_failure == e.failure ? op.repeats + 1 : 1;
      op.last_failure = e.failure;
      break;
    case CountEvent::Decision:
      if (op.recorded()) op.repair_pending = e.repair;
      break;
    case CountEvent::Success:
      op = OperationState{};
      break;
    default:
      break;
  }
}

bool apply_claim(LedgerEntry& e, std::string_view key, std::int64_t lease_ms, std::int64_t now_ms) {
  if (e.state != LedgerState::Absent && e.state != LedgerState::Released) return false;
  if (e.idempotency_key.empty()) e.idempotency_key = std::string(key);
  e.state = LedgerState::Pending;
  e.updated_ms = now_ms;
  e.lease_until_ms = now_ms + lease_ms;
  return true;
}

bool apply_transition(LedgerEntry& e, LedgerState to, std::int64_t now_ms) {
  const bool open = e.state == LedgerState::Pending || e.state == LedgerState::Unknown;
  if (!open || (to != LedgerState::Committed && to != LedgerState::Released)) return false;
  e.state = to;
  e.updated_ms = now_ms;
  e.lease_until_ms = 0;
  return true;
}

LedgerEntry view(LedgerEntry e, std::int64_t now_ms) {
  if (e.state == LedgerState::Pending && now_ms >= e.lease_until_ms) e.state = LedgerState::Unknown;
  return e;
}

std::string tool_to_json(const ToolHealth& h) {
  static constexpr const char* circuits[] = {"closed", "open", "half_open"};
  return json{{"circuit", circuits[static_cast<int>(h.circuit)]},
              {"consecutiveFailures", h.consecutive_failures},
              {"window", h.window},
              {"windowCalls", h.window_calls},
              {"openedMs", h.opened_ms},
              {"probeTaken", h.probe_taken},
              {"probeOperation", h.probe_operation},
              {"probeUntilMs", h.probe_until_ms},
              {"milliTokens", h.milli_tokens}}
      .dump();
}

ToolHealth tool_from_json(std::string_view text) {
  const json t = json::parse(text);
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
  read(t, "probeUntilMs", h.probe_until_ms);
  read(t, "milliTokens", h.milli_tokens);
  return h;
}

std::string votes_to_json(const std::map<std::string, std::int64_t>& votes) {
  return json(votes).dump();
}

std::map<std::string, std::int64_t> votes_from_json(std::string_view text) {
  return json::parse(text).get<std::map<std::string, std::int64_t>>();
}

std::string operation_to_json(const OperationState& op) {
  return json{{"attempts", op.attempts},
              {"repairs", op.repairs},
              {"repeats", op.repeats},
              {"cost", op.cost},
              {"startedMs", op.started_ms},
              {"lastFailure", op.last_failure},
              {"repairPending", op.repair_pending}}
      .dump();
}

OperationState operation_from_json(std::string_view text) {
  const json o = json::parse(text);
  OperationState op;
  read(o, "attempts", op.attempts);
  read(o, "repairs", op.repairs);
  read(o, "repeats", op.repeats);
  read(o, "cost", op.cost);
  read(o, "startedMs", op.started_ms);
  read(o, "lastFailure", op.last_failure);
  read(o, "repairPending", op.repair_pending);
  if (op.attempts < 0 || op.repairs < 0 || op.repeats < 0 || op.cost < 0)
    throw std::invalid_argument("negative counter");
  return op;
}

LedgerState ledger_state(std::string_view name) {
  for (auto s : {LedgerState::Pending, LedgerState::Committed, LedgerState::Released})
    if (name == to_string(s)) return s;
  throw std::invalid_argument("unknown ledger state \"" + std::string(name) + "\"");
}

}  // namespace detail
}  // namespace recourse
