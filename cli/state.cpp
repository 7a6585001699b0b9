// --state (replay, decide, simulate), `recourse ledger` and `recourse breaker`: the shared state
// store (recourse/store.hpp; docs/state.md).
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
    workflow->apply(policy, c, now_ms);
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

int run_breaker(const Options& o) {
  auto store = open_state(o.state);
  if (!store) return 1;
  DecisionLogFile log;
  if (!log.open(o.log)) return 1;
  const std::int64_t now = wall_ms();
  const std::optional<BreakerCommand> command = breaker_command(o.breaker);  // nullopt: show
  auto out = nlohmann::ordered_json::array();
  for (const auto& tool : o.paths) {
    const std::string key = circuit_key(tool, o.endpoint);
    const auto health =
        command ? store->control(key, *command, o.for_ms, now) : store->tool(key, now);
    if (!health) return std::cerr << "error: " << store->name() << " did not answer\n", 1;
    auto record = nlohmann::ordered_json::parse(to_json(*health));
    record.erase("format");
    nlohmann::ordered_json line = {{"tool", tool}};
    if (!o.endpoint.empty()) line["endpoint"] = o.endpoint;
    line.update(record);
    if (command) {  // the decision log keeps who changed a circuit by hand, and to what
      nlohmann::ordered_json entry = {{"breaker", o.breaker}, {"tool", tool}};
      if (!o.endpoint.empty()) entry["endpoint"] = o.endpoint;
      entry["store"] = store->name();
      entry["atMs"] = now;
      if (*command == BreakerCommand::Open) entry["forMs"] = o.for_ms;
      entry["health"] = record;
      log.write(entry.dump());
    }
    out.push_back(std::move(line));
  }
  if (!log.close()) return 1;
  if (o.format == Format::Json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:<32} {:<9} {:<8} {:>11} {:>15} {:>15}\n", "tool", "circuit",
                           "isolated", "consecutive", "opened ms", "hold until ms");
  for (const auto& t : out)
    std::cout << fmt::format(
        "{:<32} {:<9} {:<8} {:>11} {:>15} {:>15}\n",
        circuit_key(t["tool"].get<std::string>(), t.value("endpoint", "")),
        t["circuit"].get<std::string>(), t["isolated"].get<bool>() ? "yes" : "no",
        t["consecutiveFailures"].get<std::int64_t>(), t["openedMs"].get<std::int64_t>(),
        t["holdUntilMs"].get<std::int64_t>());
  return 0;
}

}  // namespace recourse::cli
