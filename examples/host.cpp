// A host program embedding recourse: load the policies into an Engine, and let a
// recourse::Runner run the recovery loop of one payment against a (fake) payment API that is
// rate limited twice, then succeeds. The runner decides after each failure, waits the real time
// the decision asks (the system clock and the default sleeper), resends the same idempotency
// key, and counts attempts and elapsed time itself. Build: cmake --build build --target
// host_example
#include <iostream>
#include <memory>

#include "recourse/recourse.hpp"

int main(int argc, char** argv) {
  const std::string rules = argc > 1 ? argv[1] : "rules/examples";
  recourse::Engine engine;
  const recourse::Result<std::uint64_t> loaded = engine.reload_paths({rules});
  for (const auto& d : loaded.diagnostics()) std::cerr << recourse::to_text(d);
  if (!loaded.ok()) return 1;
  engine.set_log([](const recourse::DecisionRecord& r) {
    std::cout << "decision: " << recourse::to_json(r.decision, r.envelope) << "\n";
  });

  // State shared by every operation of the process (a SQLite or Redis store shares it with
  // other processes: recourse::open_store); a Workflow per loop.
  auto store = std::make_shared<recourse::MemoryStore>();
  recourse::Health health(store);
  recourse::Workflow workflow(store);

  recourse::RunnerSpec spec;
  spec.tool = "payments.create";
  spec.arguments = R"({"amount":1999,"currency":"EUR","customer_id":"c-7"})";
  spec.operation_id = "order-1001";
  recourse::Result<std::unique_ptr<recourse::Runner>> made =
      recourse::Runner::make(engine, workflow, health, store, spec);
  if (!made.ok()) return std::cerr << made.message() << "\n", 1;
  recourse::Runner& runner = **made;

  int calls = 0;
  recourse::RunnerHost host;
  host.call = [&](const recourse::Action& a) {
    std::cout << "call " << a.tool << " #" << a.attempt << " at " << a.elapsed_ms
              << " ms, Idempotency-Key " << a.idempotency_key << "\n";
    recourse::Outcome o;
    if (++calls < 3) {  // the API's 429, as the HTTP client returned it
      o.kind = recourse::Outcome::Kind::Failure;
      o.protocol = recourse::Protocol::Http;
      o.raw = R"({"status":429,"headers":{"retry-after-ms":"200","x-request-id":"req-42"},
                  "body":{"error":{"type":"rate_limit_error","message":"Too many requests"}}})";
      o.side_effect = recourse::SideEffect::None;  // rejected before charging
    } else {
      o.kind = recourse::Outcome::Kind::Success;
    }
    return o;
  };
  host.ask = [](const recourse::Action& a) {  // no person at hand: give up on a question
    std::cout << "asked to " << recourse::to_string(a.step) << "; abandoning\n";
    recourse::Outcome o;
    o.kind = recourse::Outcome::Kind::Abandon;
    return o;
  };

  const recourse::Action done = runner.run(host);
  std::cout << "ended: " << recourse::to_string(done.ending) << " on " << done.tool << " after "
            << calls << " calls and " << done.elapsed_ms << " ms\n";
  return done.ending == recourse::Ending::Success ? 0 : 2;
}
