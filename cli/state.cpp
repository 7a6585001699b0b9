// --state (replay, decide, simulate) and `recourse ledger`: the shared state store
// (recourse/store.hpp; docs/state.md).
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace recourse::cli {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::shared_ptr<Store> open_state(const std::string& spec) {
  Result<std::shared_ptr<Store>> r = open_store(spec);
  for (const auto& d : r.diagnostics())
    if (d.severity == Severity::Warning) std::cerr << "warning: " << d.message << "\n";
  if (!r.ok()) {
    std::cerr << "error: --state: " << r.message() << "\n";
    return nullptr;
  }
  return std::move(*r);
}

void before_decision(Workflow* workflow, Health& health, const Policy& policy, Context& c,
                     const Envelope& envelope, std::int64_t now_ms) {
  if (workflow) {
    workflow->record_attempt(c, policy.call_cost(), now_ms);
    workflow->record_failure(c, envelope);
    workflow->apply(c, now_ms);
  }
  health.record_failure(policy, c, now_ms, &envelope);  // the outcome of the call that failed
  health.prepare(policy, c, now_ms);                    // the state for the next call
}

void after_decision(Workflow* workflow, Health& health, const Policy& policy, const Context& c,
                    const Decision& d) {
  if (workflow) workflow->record_decision(c, d);
  health.record_decision(policy, c, d);
}

int run_ledger(const Options& o) {
  auto store = open_state(o.state);
  if (!store) return 1;
  const std::int64_t now = wall_ms();
  std::vector<LedgerEntry> entries;
  if (o.paths.empty()) {
    auto all = store->entries(o.limit, now);
    if (!all) return std::cerr << "error: " << store->name() << " did not answer\n", 1;
    entries = std::move(*all);
  }
  for (const auto& operation : o.paths) {
    auto e = store->read(operation, now);
    if (!e) return std::cerr << "error: " << store->name() << " did not answer\n", 1;
    entries.push_back(std::move(*e));
  }
  if (o.format == Format::Json) {
    auto out = nlohmann::ordered_json::array();
    for (const auto& e : entries)
      out.push_back({{"operation", e.operation},
                     {"state", to_string(e.state)},
                     {"idempotencyKey", e.idempotency_key},
                     {"updatedMs", e.updated_ms},
                     {"leaseUntilMs", e.lease_until_ms}});
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:<32} {:<10} {:<32} {:>15} {:>15}\n", "operation", "state",
                           "idempotency key", "updated ms", "lease until ms");
  for (const auto& e : entries)
    std::cout << fmt::format("{:<32} {:<10} {:<32} {:>15} {:>15}\n", e.operation,
                             to_string(e.state), e.idempotency_key, e.updated_ms, e.lease_until_ms);
  std::cout << fmt::format("{} entries in {}\n", entries.size(), store->name());
  return 0;
}

}  // namespace recourse::cli
