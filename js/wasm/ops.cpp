// The store operations and their answers as JSON (ops.hpp).
#include "ops.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/names.hpp"

namespace recourse::js {
namespace {

const json& member(const json& j, const char* key) {
  if (!j.is_object()) throw std::invalid_argument("not a JSON object");
  auto it = j.find(key);
  if (it == j.end()) throw std::invalid_argument(std::string(key) + " is missing");
  return *it;
}

std::int64_t integer(const json& j, const char* key) {
  const json& v = member(j, key);
  if (!v.is_number_integer()) throw std::invalid_argument(std::string(key) + " is not an integer");
  return v.get<std::int64_t>();
}

std::string text(const json& j, const char* key) {
  const json& v = member(j, key);
  if (!v.is_string()) throw std::invalid_argument(std::string(key) + " is not a string");
  return v.get<std::string>();
}

// `key`'s integer, or `otherwise` when it is absent.
std::int64_t integer_or(const json& j, const char* key, std::int64_t otherwise) {
  return j.is_object() && j.contains(key) ? integer(j, key) : otherwise;
}

bool flag(const json& j, const char* key) {
  const json& v = member(j, key);
  if (!v.is_boolean()) throw std::invalid_argument(std::string(key) + " is not true or false");
  return v.get<bool>();
}

template <typename E>
E named(const json& j, const char* key) {
  const std::string name = text(j, key);
  if (auto value = detail::enum_of<E>(name)) return *value;
  throw std::invalid_argument(std::string(key) + " is not " + detail::names_list<E>());
}

std::uint64_t hash(const json& j, const char* key) {
  const std::string s = text(j, key);
  std::size_t used = 0;
  const bool digits = !s.empty() && s.size() <= 20 && s.find_first_not_of("0123456789") == s.npos;
  const unsigned long long v = digits ? std::stoull(s, &used) : 0;  // throws past 2^64 - 1
  if (!digits || used != s.size()) throw std::invalid_argument(std::string(key) + " is not a hash");
  return v;
}

constexpr const char* kBucketEvents[] = {"read", "retry", "success"};
constexpr const char* kCountKinds[] = {"read", "attempt", "failure", "decision", "success"};

template <std::size_t N>
std::size_t index_of(const char* const (&names)[N], const json& j, const char* key) {
  const std::string name = text(j, key);
  for (std::size_t i = 0; i < N; ++i)
    if (name == names[i]) return i;
  throw std::invalid_argument(std::string(key) + " " + name + " is not known");
}

json bucket_spec(const BucketSpec& s) {
  return {{"maxMilli", s.max_milli}, {"ratioMilli", s.ratio_milli}};
}

BucketSpec bucket_spec(const json& j) {
  return {integer(j, "maxMilli"), integer(j, "ratioMilli")};
}

json breaker_spec(const BreakerSpec& s) {
  return {{"failures", s.failures},      {"ratioMilli", s.ratio_milli},
          {"window", s.window},          {"minCalls", s.min_calls},
          {"cooldownMs", s.cooldown_ms}, {"probeLeaseMs", s.probe_lease_ms}};
}

BreakerSpec breaker_spec(const json& j) {
  return {integer(j, "failures"), integer(j, "ratioMilli"), integer(j, "window"),
          integer(j, "minCalls"), integer(j, "cooldownMs"), integer(j, "probeLeaseMs")};
}

}  // namespace

std::string circuit_name(CircuitState circuit) {
  return std::string(detail::name_of(circuit));
}

json to_json(const ToolHealth& h) {
  std::string window;
  for (std::int64_t i = 0; i < std::min<std::int64_t>(h.window_calls, 64); ++i)
    window += (h.window >> i) & 1 ? '1' : '0';
  return {{"circuit", std::string(detail::name_of(h.circuit))},
          {"consecutiveFailures", h.consecutive_failures},
          {"window", window},
          {"windowCalls", h.window_calls},
          {"openedMs", h.opened_ms},
          {"probeOperation", h.probe_operation},
          {"probeUntilMs", h.probe_until_ms},
          {"holdUntilMs", h.hold_until_ms},
          {"milliTokens", h.milli_tokens},
          {"isolated", h.isolated}};
}

ToolHealth tool_health(const json& j) {
  ToolHealth h;
  h.circuit = named<CircuitState>(j, "circuit");
  h.consecutive_failures = integer(j, "consecutiveFailures");
  const std::string window = text(j, "window");
  if (window.size() > 64 || window.find_first_not_of("01") != window.npos)
    throw std::invalid_argument("window is not up to 64 of '0' and '1'");
  for (std::size_t i = 0; i < window.size(); ++i)
    if (window[i] == '1') h.window |= std::uint64_t{1} << i;
  h.window_calls = integer(j, "windowCalls");
  h.opened_ms = integer(j, "openedMs");
  h.probe_operation = text(j, "probeOperation");
  h.probe_until_ms = integer(j, "probeUntilMs");
  h.probe_taken = h.probe_until_ms > 0;
  h.hold_until_ms = integer(j, "holdUntilMs");
  h.milli_tokens = integer(j, "milliTokens");
  h.isolated = flag(j, "isolated");
  return h;
}

json to_json(const OperationState& op) {
  return {{"attempts", op.attempts},
          {"repairs", op.repairs},
          {"repeats", op.repeats},
          {"cost", op.cost},
          {"startedMs", op.started_ms},
          {"lastFailure", std::to_string(op.last_failure)},
          {"repairPending", op.repair_pending},
          {"pushbackAttempt", op.pushback_attempt}};
}

OperationState operation_state(const json& j) {
  OperationState op;
  op.attempts = integer(j, "attempts");
  op.repairs = integer(j, "repairs");
  op.repeats = integer(j, "repeats");
  op.cost = integer(j, "cost");
  op.started_ms = integer(j, "startedMs");
  op.last_failure = hash(j, "lastFailure");
  op.repair_pending = flag(j, "repairPending");
  op.pushback_attempt = integer(j, "pushbackAttempt");
  return op;
}

json to_json(const LedgerEntry& e) {
  return {{"operation", e.operation},
          {"state", std::string(detail::name_of(e.state))},
          {"idempotencyKey", e.idempotency_key},
          {"updatedMs", e.updated_ms},
          {"leaseUntilMs", e.lease_until_ms},
          {"claimed", e.claimed}};
}

LedgerEntry ledger_entry(const json& j) {
  LedgerEntry e;
  e.operation = text(j, "operation");
  e.state = named<LedgerState>(j, "state");
  if (e.state == LedgerState::Unknown) e.state = LedgerState::Pending;
  e.idempotency_key = text(j, "idempotencyKey");
  e.updated_ms = integer(j, "updatedMs");
  e.lease_until_ms = integer(j, "leaseUntilMs");
  return e;
}

json bucket_op(std::string_view tool, BucketEvent event, const BucketSpec& spec, std::int64_t now) {
  return {{"op", "bucket"},
          {"tool", tool},
          {"event", kBucketEvents[static_cast<int>(event)]},
          {"spec", bucket_spec(spec)},
          {"nowMs", now}};
}

json outcome_op(std::string_view tool, std::string_view operation, bool failed,
                const BreakerSpec& spec, std::int64_t now) {
  return {{"op", "outcome"},
          {"tool", tool},
          {"operation", operation},
          {"failed", failed},
          {"spec", breaker_spec(spec)},
          {"nowMs", now}};
}

json probe_op(std::string_view tool, std::string_view operation, const BreakerSpec& spec,
              std::int64_t now) {
  return {{"op", "probe"},
          {"tool", tool},
          {"operation", operation},
          {"spec", breaker_spec(spec)},
          {"nowMs", now}};
}

json hold_op(std::string_view tool, std::int64_t wait_ms, std::int64_t now) {
  return {{"op", "hold"}, {"tool", tool}, {"waitMs", wait_ms}, {"nowMs", now}};
}

json control_op(std::string_view tool, BreakerCommand command, std::int64_t wait_ms,
                std::int64_t now) {
  return {{"op", "control"},
          {"tool", tool},
          {"command", to_string(command)},
          {"waitMs", wait_ms},
          {"nowMs", now}};
}

json vote_op(std::string_view tool, std::string_view worker, bool open, std::int64_t vote_ms,
             std::int64_t now) {
  return {{"op", "vote"}, {"tool", tool},      {"worker", worker},
          {"open", open}, {"voteMs", vote_ms}, {"nowMs", now}};
}

json count_op(std::string_view operation, const CountEvent& e, std::int64_t now) {
  return {{"op", "count"},
          {"operation", operation},
          {"event",
           {{"kind", kCountKinds[e.kind]},
            {"cost", e.cost},
            {"failure", std::to_string(e.failure)},
            {"repair", e.repair},
            {"pushback", e.pushback}}},
          {"nowMs", now}};
}

json claim_op(std::string_view operation, std::string_view key, std::int64_t lease_ms,
              std::int64_t now) {
  return {{"op", "claim"},
          {"operation", operation},
          {"idempotencyKey", key},
          {"leaseMs", lease_ms},
          {"nowMs", now}};
}

json transition_op(std::string_view operation, LedgerState to, std::int64_t now) {
  return {{"op", "transition"},
          {"operation", operation},
          {"to", std::string(detail::name_of(to))},
          {"nowMs", now}};
}

json apply(Store& store, const json& op) {
  const std::string name = text(op, "op");
  const std::int64_t now = integer(op, "nowMs");
  if (name == "bucket")
    return answer(store.bucket(text(op, "tool"),
                               static_cast<BucketEvent>(index_of(kBucketEvents, op, "event")),
                               bucket_spec(member(op, "spec")), now));
  if (name == "outcome")
    return answer(store.outcome(text(op, "tool"), text(op, "operation"), flag(op, "failed"),
                                breaker_spec(member(op, "spec")), now));
  if (name == "probe")
    return answer(store.probe(text(op, "tool"), text(op, "operation"),
                              breaker_spec(member(op, "spec")), now));
  if (name == "hold") return answer(store.hold(text(op, "tool"), integer(op, "waitMs"), now));
  if (name == "control") {
    const auto command = breaker_command(text(op, "command"));
    if (!command) throw std::invalid_argument("command is not isolate, open or reset");
    return answer(store.control(text(op, "tool"), *command, integer_or(op, "waitMs", 0), now));
  }
  if (name == "vote")
    return answer(store.vote(text(op, "tool"), text(op, "worker"), flag(op, "open"),
                             integer(op, "voteMs"), now));
  if (name == "tool") return answer(store.tool(text(op, "tool"), now));
  if (name == "count") {
    const json& e = member(op, "event");
    CountEvent event;
    event.kind = static_cast<CountEvent::Kind>(index_of(kCountKinds, e, "kind"));
    event.cost = integer_or(e, "cost", 0);
    event.failure = e.contains("failure") ? hash(e, "failure") : 0;
    event.repair = e.contains("repair") && flag(e, "repair");
    event.pushback = integer_or(e, "pushback", 0);
    return answer(store.count(text(op, "operation"), event, now));
  }
  if (name == "claim")
    return answer(store.claim(text(op, "operation"), text(op, "idempotencyKey"),
                              integer(op, "leaseMs"), now));
  if (name == "transition") {
    const LedgerState to = named<LedgerState>(op, "to");
    if (to != LedgerState::Committed && to != LedgerState::Released)
      throw std::invalid_argument("to is not committed or released");
    return answer(store.transition(text(op, "operation"), to, now));
  }
  if (name == "read") return answer(store.read(text(op, "operation"), now));
  if (name == "entries") {
    const std::int64_t limit = integer(op, "limit");
    if (limit < 0) throw std::invalid_argument("limit is negative");
    const auto all = store.entries(static_cast<std::size_t>(limit), now);
    if (!all) return nullptr;
    json out = json::array();
    for (const LedgerEntry& e : *all) out.push_back(js::to_json(e));
    return out;
  }
  throw std::invalid_argument("op " + name + " is not a store operation");
}

}  // namespace recourse::js
