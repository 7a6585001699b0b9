// Concurrent decide() with hot reloads and shadow candidates, for ThreadSanitizer
// (scripts/tsan.sh) and ctest.
//
// Deciding threads run while the main thread alternates two versions of a policy, with failed
// reloads in between, and sets, swaps and drops a candidate (engine.hpp, "Shadow policies"), with
// failed candidate reloads that must leave it as it was. Every decision, and every candidate's
// decision the log carries, must come whole from one version (its rule, route and policy hash
// agree), decisions kept across reloads must still read their strings, the log and the counters
// must see every decision, and the shadow counters every disagreement the log saw. Exit 0, or 1
// with the first broken property.
//
//   reload_stress [THREADS] [RELOADS]
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "recourse/recourse.hpp"

namespace {

const char* kVersions[2] = {
    R"(policy "pay" {
  tool { idempotent = true }
  rule slow_down when code == RATE_LIMITED -> retry
  default -> stop
})",
    R"(policy "pay" {
  rule hand_over when code == RATE_LIMITED -> escalate "ask a person"
  default -> stop
})"};

std::atomic<bool> broken{false};

void fail(const std::string& what) {
  if (!broken.exchange(true)) std::cerr << "reload_stress: " << what << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reloads = argc > 2 ? std::atoi(argv[2]) : 200;
  std::string hashes[2];
  for (int v = 0; v < 2; ++v) {
    auto r = recourse::compile({{"pay.recourse", kVersions[v]}});
    if (!r.ok()) return std::cerr << "reload_stress: version " << v << " does not compile\n", 1;
    hashes[v] = std::string(r->find("pay")->hash());
  }

  recourse::EngineOptions options;
  options.count = true;
  recourse::Engine engine({}, options);
  if (!engine.reload({{"pay.recourse", kVersions[0]}}).ok()) return 1;
  std::atomic<std::uint64_t> logged{0}, disagreements{0};
  // Whether `d` comes whole from one version.
  auto whole = [&](const recourse::Decision& d) {
    return (d.rule == "slow_down" && d.route == recourse::Route::Retry &&
            d.policy_hash == hashes[0]) ||
           (d.rule == "hand_over" && d.route == recourse::Route::Escalate &&
            d.policy_hash == hashes[1] && d.reason == "ask a person");
  };
  engine.set_log([&](const recourse::DecisionRecord& r) {
    if (r.decision.policy != "pay") fail("log record without its policy");
    if (r.candidate) {
      if (!whole(*r.candidate)) fail("a candidate's decision mixes two versions");
      if (r.candidate->rule == r.decision.rule) fail("an agreeing candidate was logged");
      if (r.differences != recourse::shadow_differences(r.decision, *r.candidate))
        fail("a record's differences are not the decisions'");
      disagreements.fetch_add(1, std::memory_order_relaxed);
    }
    logged.fetch_add(1, std::memory_order_relaxed);
  });

  const auto envelope = recourse::read_envelope(R"({"code":"RATE_LIMITED","traceId":"t"})");
  recourse::Context context;
  context.tool = "pay";
  context.side_effect = recourse::SideEffect::None;

  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> decided{0};
  auto decide = [&] {
    // Decisions held across reloads, each with the bundle it came from (Engine::pinned()).
    std::vector<std::pair<recourse::Decision, std::shared_ptr<const recourse::Bundle>>> kept;
    std::uint64_t n = 0;
    while (!done.load(std::memory_order_acquire)) {
      recourse::Decision d = engine.decide(*envelope, context);
      ++n;
      if (!whole(d)) fail("a decision mixes two versions: rule " + std::string(d.rule));
      if (n % 64 == 0) kept.emplace_back(d, engine.pinned());
    }
    for (const auto& [d, pin] : kept)
      if (d.policy_hash != hashes[0] && d.policy_hash != hashes[1])
        fail("a kept decision lost its policy");
    decided.fetch_add(n);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(decide);

  for (int i = 1; i <= reloads && !broken; ++i) {
    if (!engine.reload({{"pay.recourse", kVersions[i % 2]}}).ok()) fail("a good reload failed");
    if (i % 10 == 0 && engine.reload({{"pay.recourse", "policy \"pay\" {"}}).ok())
      fail("a bad reload succeeded");
    if (i % 25 == 0) engine.counters();
    // The candidate: the other version (every decision disagrees), the same one (none does), or
    // none; a candidate that fails to compile changes nothing.
    if (i % 3 == 0 && !engine.reload_candidate({{"pay.recourse", kVersions[(i / 3) % 2]}}).ok())
      fail("a good candidate failed");
    if (i % 7 == 0) engine.drop_candidate();
    if (i % 11 == 0) {
      const auto before = engine.candidate();
      if (engine.reload_candidate({{"pay.recourse", "policy \"pay\" {"}}).ok())
        fail("a bad candidate compiled");
      if (engine.candidate() != before) fail("a bad candidate replaced the candidate");
      engine.shadow_counters();
    }
    std::this_thread::yield();
  }
  done = true;
  for (auto& t : pool) t.join();

  const auto counters = engine.counters();
  if (logged != decided) fail("the log missed decisions");
  if (counters.decisions != decided) fail("the counters missed decisions");
  const auto shadow = engine.shadow_counters();
  if (shadow.disagreements != disagreements) fail("the shadow counters missed disagreements");
  if (shadow.decisions > decided) fail("the candidate decided more than the engine");
  if (disagreements == 0) fail("no candidate ever disagreed");
  if (engine.bundle()->find("pay")->hash() != hashes[reloads % 2]) fail("the last reload is lost");
  if (broken) return 1;
  std::cout << "reload_stress: " << decided << " decisions on " << threads << " threads, "
            << reloads << " reloads, " << shadow.decisions << " shadowed, " << disagreements
            << " disagreements, generation " << engine.generation() << "\n";
  return 0;
}
