// MemoryStore: the store operations on maps under one mutex (logic.hpp has the rules).
// Entries expire like a shared store's keys: a tool or operation state_ttl_ms after its last
// change, a ledger entry ledger_ttl_ms after.
#include <nlohmann/json.hpp>

#include "recourse/diagnostic.hpp"
#include "store/logic.hpp"

namespace recourse {
namespace {

// Runs `apply` on the live value of `key` (a default when absent or expired) and stores the
// value back, with a new expiry, when `apply` returns true.
template <typename Map, typename Apply>
auto update(Map& map, std::string_view key, std::int64_t now_ms, std::int64_t ttl_ms, Apply apply) {
  auto it = map.find(key);
  if (it != map.end() && now_ms >= it->second.expires_ms) {
    map.erase(it);
    it = map.end();
  }
  auto value = it == map.end() ? decltype(it->second.value){} : it->second.value;
  const auto [changed, result] = apply(value);
  if (changed) {
    if (it == map.end()) it = map.emplace(std::string(key), typename Map::mapped_type{}).first;
    it->second = {value, now_ms + ttl_ms};
  }
  return result;
}

}  // namespace

std::optional<std::int64_t> MemoryStore::bucket(std::string_view tool, BucketEvent event,
                                                const BucketSpec& spec,
                                                std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(tools_, tool, now_ms, options_.state_ttl_ms, [&](ToolHealth& h) {
    return std::pair(event != BucketEvent::Read, detail::apply_bucket(h, event, spec));
  });
}

std::optional<CircuitState> MemoryStore::outcome(std::string_view tool, std::string_view operation,
                                                 bool failed, const BreakerSpec& spec,
                                                 std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(tools_, tool, now_ms, options_.state_ttl_ms, [&](ToolHealth& h) {
    return std::pair(true, detail::apply_outcome(h, operation, failed, spec, now_ms));
  });
}

std::optional<CircuitState> MemoryStore::probe(std::string_view tool, std::string_view operation,
                                               const BreakerSpec& spec,
                                               std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(tools_, tool, now_ms, options_.state_ttl_ms, [&](ToolHealth& h) {
    const ToolHealth before = h;
    const CircuitState c = detail::apply_probe(h, operation, spec, now_ms);
    return std::pair(h.probe_until_ms != before.probe_until_ms, c);
  });
}

std::optional<CircuitState> MemoryStore::hold(std::string_view tool, std::int64_t wait_ms,
                                              std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(tools_, tool, now_ms, options_.state_ttl_ms, [&](ToolHealth& h) {
    return std::pair(true, detail::apply_hold(h, wait_ms, now_ms));
  });
}

std::optional<ToolHealth> MemoryStore::control(std::string_view tool, BreakerCommand command,
                                               std::int64_t wait_ms, std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(tools_, tool, now_ms, options_.state_ttl_ms, [&](ToolHealth& h) {
    detail::apply_control(h, command, wait_ms, now_ms);
    return std::pair(true, h);
  });
}

std::optional<std::int64_t> MemoryStore::vote(std::string_view tool, std::string_view worker,
                                              bool open, std::int64_t vote_ms,
                                              std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(votes_, tool, now_ms, options_.state_ttl_ms,
                [&](std::map<std::string, std::int64_t>& votes) {
                  return std::pair(true, detail::apply_vote(votes, worker, open, vote_ms, now_ms));
                });
}

std::optional<ToolHealth> MemoryStore::tool(std::string_view tool, std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(tools_, tool, now_ms, 0, [](ToolHealth& h) { return std::pair(false, h); });
}

std::optional<OperationState> MemoryStore::count(std::string_view operation,
                                                 const CountEvent& event,
                                                 std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  auto result =
      update(operations_, operation, now_ms, options_.state_ttl_ms, [&](OperationState& op) {
        detail::apply_count(op, event, now_ms);
        return std::pair(event.kind != CountEvent::Read, op);
      });
  if (event.kind == CountEvent::Success) operations_.erase(std::string(operation));
  return result;
}

std::optional<LedgerEntry> MemoryStore::claim(std::string_view operation,
                                              std::string_view idempotency_key,
                                              std::int64_t lease_ms, std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(ledger_, operation, now_ms, options_.ledger_ttl_ms, [&](LedgerEntry& e) {
    e.operation = std::string(operation);
    const bool claimed = detail::apply_claim(e, idempotency_key, lease_ms, now_ms);
    LedgerEntry out = detail::view(e, now_ms);
    out.claimed = claimed;
    return std::pair(claimed, out);
  });
}

std::optional<LedgerEntry> MemoryStore::transition(std::string_view operation, LedgerState to,
                                                   std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(ledger_, operation, now_ms, options_.ledger_ttl_ms, [&](LedgerEntry& e) {
    e.operation = std::string(operation);
    const bool changed = detail::apply_transition(e, to, now_ms);
    return std::pair(changed, detail::view(e, now_ms));
  });
}

std::optional<LedgerEntry> MemoryStore::read(std::string_view operation,
                                             std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return update(ledger_, operation, now_ms, 0, [&](LedgerEntry& e) {
    e.operation = std::string(operation);
    return std::pair(false, detail::view(e, now_ms));
  });
}

std::optional<std::vector<LedgerEntry>> MemoryStore::entries(std::size_t limit,
                                                             std::int64_t now_ms) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<LedgerEntry> out;
  for (const auto& [id, e] : ledger_)
    if (out.size() < limit && now_ms < e.expires_ms) out.push_back(detail::view(e.value, now_ms));
  return out;
}

std::string MemoryStore::to_json() const {
  using json = nlohmann::json;
  std::lock_guard<std::mutex> lock(mutex_);
  json tools = json::object(), ops = json::object();
  for (const auto& [name, h] : tools_) tools[name] = json::parse(detail::tool_to_json(h.value));
  for (const auto& [id, op] : operations_)
    ops[id] = json::parse(detail::operation_to_json(op.value));
  return json{{"tools", tools}, {"operations", ops}}.dump();
}

Status MemoryStore::from_json(std::string_view text) noexcept {
  using json = nlohmann::json;
  try {
    const json j = detail::parse_record(text, 3);  // {"tools": {name: {record}}, ...}
    decltype(tools_) tools;
    decltype(operations_) ops;
    const auto forever = std::numeric_limits<std::int64_t>::max();
    // Each record of one member, read by `read` (its errors name the record).
    auto each = [&](const char* member, const char* what, auto read) {
      auto it = j.find(member);
      if (it == j.end()) return;
      if (!it->is_object()) throw std::invalid_argument(std::string(member) + " is not an object");
      for (const auto& [name, record] : it->items()) {
        try {
          read(name, record);
        } catch (const detail::BadRecord& e) {
          throw std::invalid_argument(std::string(what) + " " + recourse::quoted(name) + ": " +
                                      e.what());
        }
      }
    };
    each("tools", "tool", [&](const std::string& name, const json& t) {
      tools.emplace(name, Expiring<ToolHealth>{detail::tool_from_json(t), forever});
    });
    each("operations", "operation", [&](const std::string& id, const json& o) {
      ops.emplace(id, Expiring<OperationState>{detail::operation_from_json(o), forever});
    });
    std::lock_guard<std::mutex> lock(mutex_);
    tools_ = std::move(tools);
    operations_ = std::move(ops);
    return {};
  } catch (const std::exception& e) {
    return Status::failure(error_diagnostic("S004", e.what()));
  } catch (...) {
    return Status::failure(error_diagnostic("S004", "state could not be read"));
  }
}

}  // namespace recourse
