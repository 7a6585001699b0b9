// The staged store: how the npm package keeps Workflow and Health in a store that answers
// asynchronously (a Node Redis client) while the engine's steps stay synchronous. Before a step
// the package reads the records the step needs from its store and loads them here; the step
// (a runner's next() or report()) reads and writes this copy with the rules of logic.cpp and
// journals every operation that writes; after it, the package applies the journal to its store,
// one operation at a time, each atomic there (a Redis script), so concurrent writers merge as
// they do on the C++ stores. docs/javascript.md, "State".
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "recourse/store.hpp"

namespace recourse::js {

/// A Store over records loaded by load(): every operation applies to the loaded copy (a record
/// not loaded reads as never recorded, and is named in take()'s misses) and every operation
/// that may write is journalled with its answer here. Quorum votes are not staged: vote() is
/// journalled and answers nullopt (the process's own breaker decides, store_unavailable).
class StagedStore final : public Store {
 public:
  /// Replaces the copy with `records`: {"tools": {name: ToolHealth}, "operations": {key:
  /// OperationState}, "ledger": {operation: LedgerEntry}} in ops.hpp's forms (each member may be
  /// absent; a null record is one never recorded; `false`, or a record that does not read as its
  /// shape, one the store could not read: the operations on it answer nullopt, as a store that
  /// cannot answer, and are not journalled). std::invalid_argument when `records` or a member is
  /// not an object; the copy is then unchanged. The journal and the misses are cleared.
  void load(const nlohmann::json& records);
  /// {"ops": [{"op": ..., "answer": ...}], "misses": [{"kind": "tool" | "operation" | "ledger",
  /// "key"}]}: the operations that wrote since load() or the last take(), each with the answer
  /// this copy gave, and the records read without being loaded. Clears both.
  nlohmann::json take();

  std::optional<std::int64_t> bucket(std::string_view tool, BucketEvent event,
                                     const BucketSpec& spec, std::int64_t now_ms) noexcept override;
  std::optional<CircuitState> outcome(std::string_view tool, std::string_view operation,
                                      bool failed, const BreakerSpec& spec,
                                      std::int64_t now_ms) noexcept override;
  std::optional<CircuitState> probe(std::string_view tool, std::string_view operation,
                                    const BreakerSpec& spec, std::int64_t now_ms) noexcept override;
  std::optional<CircuitState> hold(std::string_view tool, std::int64_t wait_ms,
                                   std::int64_t now_ms) noexcept override;
  std::optional<ToolHealth> control(std::string_view tool, BreakerCommand command,
                                    std::int64_t wait_ms, std::int64_t now_ms) noexcept override;
  std::optional<std::int64_t> vote(std::string_view tool, std::string_view worker, bool open,
                                   std::int64_t vote_ms, std::int64_t now_ms) noexcept override;
  std::optional<ToolHealth> tool(std::string_view tool, std::int64_t now_ms) noexcept override;
  std::optional<OperationState> count(std::string_view operation, const CountEvent& event,
                                      std::int64_t now_ms) noexcept override;
  std::optional<LedgerEntry> claim(std::string_view operation, std::string_view idempotency_key,
                                   std::int64_t lease_ms, std::int64_t now_ms) noexcept override;
  std::optional<LedgerEntry> transition(std::string_view operation, LedgerState to,
                                        std::int64_t now_ms) noexcept override;
  std::optional<LedgerEntry> read(std::string_view operation,
                                  std::int64_t now_ms) noexcept override;
  /// The loaded entries (the package lists a store's ledger from the store itself).
  std::optional<std::vector<LedgerEntry>> entries(std::size_t limit,
                                                  std::int64_t now_ms) noexcept override;
  std::string name() const override { return "staged"; }

 private:
  template <typename T>
  T& record(std::map<std::string, T, std::less<>>& map, std::string_view key, const char* kind);
  // Journals `op` with `answer` (nullopt: the answer is null); returns `answer`.
  template <typename T>
  std::optional<T> journal(nlohmann::json op, std::optional<T> answer) noexcept;

  std::mutex mutex_;
  std::map<std::string, ToolHealth, std::less<>> tools_;
  std::map<std::string, OperationState, std::less<>> operations_;
  std::map<std::string, LedgerEntry, std::less<>> ledger_;
  std::set<std::string, std::less<>> unavailable_;  ///< "<kind>:<key>" of records not read
  nlohmann::json ops_ = nlohmann::json::array();
  nlohmann::json misses_ = nlohmann::json::array();
};

}  // namespace recourse::js
