// The staged store (staged.hpp): the loaded copy, the rules of logic.cpp, the journal.
#include "staged.hpp"

#include <stdexcept>
#include <type_traits>
#include <utility>

#include "ops.hpp"
#include "store/logic.hpp"

namespace recourse::js {

void StagedStore::load(const json& records) {
  decltype(tools_) tools;
  decltype(operations_) operations;
  decltype(ledger_) ledger;
  decltype(unavailable_) unavailable;
  // Each record of one member, read by `read`; null: not recorded; false, or a record that does
  // not read as its shape (as a C++ store's BadRecord): not read.
  auto each = [&](const char* kind, const char* member, auto& map, auto read) {
    auto it = records.find(member);
    if (it == records.end()) return;
    if (!it->is_object()) throw std::invalid_argument(std::string(member) + " is not an object");
    for (const auto& [key, record] : it->items()) try {
        if (record == false) throw std::invalid_argument("not read");
        map.emplace(key, record.is_null() ? typename std::decay_t<decltype(map)>::mapped_type{}
                                          : read(record));
      } catch (const std::invalid_argument&) {
        unavailable.insert(std::string(kind) + ":" + key);
      }
  };
  if (!records.is_object()) throw std::invalid_argument("records: not a JSON object");
  each("tool", "tools", tools, tool_health);
  each("operation", "operations", operations, operation_state);
  each("ledger", "ledger", ledger, ledger_entry);
  std::lock_guard<std::mutex> lock(mutex_);
  tools_ = std::move(tools);
  operations_ = std::move(operations);
  ledger_ = std::move(ledger);
  unavailable_ = std::move(unavailable);
  for (auto& [operation, e] : ledger_) e.operation = operation;
  ops_ = json::array();
  misses_ = json::array();
}

json StagedStore::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  json out = {{"ops", std::exchange(ops_, json::array())},
              {"misses", std::exchange(misses_, json::array())}};
  return out;
}

template <typename T>
T& StagedStore::record(std::map<std::string, T, std::less<>>& map, std::string_view key,
                       const char* kind) {
  auto it = map.find(key);
  if (it != map.end()) return it->second;
  if (unavailable_.count(std::string(kind) + ":" + std::string(key)))
    throw std::runtime_error("not read");  // the operation answers nullopt
  misses_.push_back({{"kind", kind}, {"key", key}});
  return map.emplace(std::string(key), T{}).first->second;
}

template <typename T>
std::optional<T> StagedStore::journal(json op, std::optional<T> answer) noexcept {
  try {
    op["answer"] = js::answer(answer);
    ops_.push_back(std::move(op));
    return answer;
  } catch (...) {  // out of memory: the write would be lost, so the step reads it as unanswered
    return std::nullopt;
  }
}

std::optional<std::int64_t> StagedStore::bucket(std::string_view tool, BucketEvent event,
                                                const BucketSpec& spec,
                                                std::int64_t now_ms) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t tokens = detail::apply_bucket(record(tools_, tool, "tool"), event, spec);
  if (event == BucketEvent::Read) return tokens;
  return journal(bucket_op(tool, event, spec, now_ms), std::optional(tokens));
} catch (...) {
  return std::nullopt;
}

std::optional<CircuitState> StagedStore::outcome(std::string_view tool, std::string_view operation,
                                                 bool failed, const BreakerSpec& spec,
                                                 std::int64_t now_ms) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  ToolHealth& h = record(tools_, tool, "tool");
  return journal(outcome_op(tool, operation, failed, spec, now_ms),
                 std::optional(detail::apply_outcome(h, operation, failed, spec, now_ms)));
} catch (...) {
  return std::nullopt;
}

std::optional<CircuitState> StagedStore::probe(std::string_view tool, std::string_view operation,
                                               const BreakerSpec& spec,
                                               std::int64_t now_ms) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  ToolHealth& h = record(tools_, tool, "tool");
  return journal(probe_op(tool, operation, spec, now_ms),
                 std::optional(detail::apply_probe(h, operation, spec, now_ms)));
} catch (...) {
  return std::nullopt;
}

std::optional<CircuitState> StagedStore::hold(std::string_view tool, std::int64_t wait_ms,
                                              std::int64_t now_ms) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  ToolHealth& h = record(tools_, tool, "tool");
  return journal(hold_op(tool, wait_ms, now_ms),
                 std::optional(detail::apply_hold(h, wait_ms, now_ms)));
} catch (...) {
  return std::nullopt;
}

std::optional<ToolHealth> StagedStore::control(std::string_view tool, BreakerCommand command,
                                               std::int64_t wait_ms, std::int64_t now_ms) noexcept
    try {
  std::lock_guard<std::mutex> lock(mutex_);
  ToolHealth& h = record(tools_, tool, "tool");
  detail::apply_control(h, command, wait_ms, now_ms);
  return journal(control_op(tool, command, wait_ms, now_ms), std::optional(h));
} catch (...) {
  return std::nullopt;
}

std::optional<std::int64_t> StagedStore::vote(std::string_view tool, std::string_view worker,
                                              bool open, std::int64_t vote_ms,
                                              std::int64_t now_ms) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  return journal(vote_op(tool, worker, open, vote_ms, now_ms), std::optional<std::int64_t>());
} catch (...) {
  return std::nullopt;
}

std::optional<ToolHealth> StagedStore::tool(std::string_view tool, std::int64_t) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  return record(tools_, tool, "tool");
} catch (...) {
  return std::nullopt;
}

std::optional<OperationState> StagedStore::count(std::string_view operation,
                                                 const CountEvent& event,
                                                 std::int64_t now_ms) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  OperationState& op = record(operations_, operation, "operation");
  detail::apply_count(op, event, now_ms);
  if (event.kind == CountEvent::Read) return op;
  return journal(count_op(operation, event, now_ms), std::optional(op));
} catch (...) {
  return std::nullopt;
}

std::optional<LedgerEntry> StagedStore::claim(std::string_view operation,
                                              std::string_view idempotency_key,
                                              std::int64_t lease_ms, std::int64_t now_ms) noexcept
    try {
  std::lock_guard<std::mutex> lock(mutex_);
  LedgerEntry& e = record(ledger_, operation, "ledger");
  e.operation = std::string(operation);
  const bool claimed = detail::apply_claim(e, idempotency_key, lease_ms, now_ms);
  LedgerEntry out = detail::view(e, now_ms);
  out.claimed = claimed;
  return journal(claim_op(operation, idempotency_key, lease_ms, now_ms), std::optional(out));
} catch (...) {
  return std::nullopt;
}

std::optional<LedgerEntry> StagedStore::transition(std::string_view operation, LedgerState to,
                                                   std::int64_t now_ms) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  LedgerEntry& e = record(ledger_, operation, "ledger");
  e.operation = std::string(operation);
  detail::apply_transition(e, to, now_ms);
  return journal(transition_op(operation, to, now_ms), std::optional(detail::view(e, now_ms)));
} catch (...) {
  return std::nullopt;
}

std::optional<LedgerEntry> StagedStore::read(std::string_view operation,
                                             std::int64_t now_ms) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  LedgerEntry& e = record(ledger_, operation, "ledger");
  e.operation = std::string(operation);
  return detail::view(e, now_ms);
} catch (...) {
  return std::nullopt;
}

std::optional<std::vector<LedgerEntry>> StagedStore::entries(std::size_t limit,
                                                             std::int64_t now_ms) noexcept try {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<LedgerEntry> out;
  for (const auto& [operation, e] : ledger_)
    if (out.size() < limit && e.state != LedgerState::Absent)
      out.push_back(detail::view(e, now_ms));
  return out;
} catch (...) {
  return std::nullopt;
}

}  // namespace recourse::js
