// Engine: hot reload (swap, failed compile keeps the old bundle, decisions keep their snapshot),
// the decision log and its JSON record, the counters.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "support.hpp"

namespace {

const char* kStop = R"(policy "pay" {
  rule throttled when code == RATE_LIMITED -> stop "no retries today"
  default -> stop
})";
const char* kRetry = R"(policy "pay" {
  tool { idempotent = true }
  limits { attempts = 2 }
  rule throttled when code == RATE_LIMITED -> retry
  default -> escalate
})";

recourse::Bundle bundle(const char* text) {
  auto r = recourse::compile({{"pay.recourse", text}});
  REQUIRE(r.ok());
  return std::move(*r.bundle);
}

}  // namespace

TEST_CASE("engine: reload swaps the bundle, a failed compile keeps it", "[engine]") {
  recourse::Engine engine(bundle(kStop));
  const auto envelope = test::envelope(R"({"code":"RATE_LIMITED","traceId":"t-1"})");
  const auto context = test::context(R"({"tool":"pay","sideEffect":"none"})");
  CHECK(engine.generation() == 0);
  const recourse::Decision before = engine.decide(envelope, context);
  CHECK(before.route == recourse::Route::Stop);
  const std::string before_hash(before.policy_hash);

  auto ok = engine.reload({{"pay.recourse", kRetry}});
  CHECK(ok.ok);
  CHECK(ok.generation == 1);
  CHECK(engine.generation() == 1);
  const recourse::Decision after = engine.decide(envelope, context);
  CHECK(after.route == recourse::Route::Retry);
  CHECK(after.policy_hash != before_hash);
  // The earlier decision still reads its own policy's strings.
  CHECK(before.policy_hash == before_hash);
  CHECK(before.reason == "no retries today");

  auto bad =
      engine.reload({{"pay.recourse", "policy \"pay\" { rule r when code == NOPE -> stop }"}});
  CHECK_FALSE(bad.ok);
  CHECK(bad.generation == 1);
  REQUIRE_FALSE(bad.diagnostics.empty());
  CHECK(recourse::has_errors(bad.diagnostics));
  CHECK(engine.decide(envelope, context).route == recourse::Route::Retry);
  CHECK(engine.bundle()->find("pay")->hash() == after.policy_hash);

  auto missing = engine.reload_paths({"/nonexistent/policies"});
  CHECK_FALSE(missing.ok);
  CHECK(missing.diagnostics.front().code == "E000");
  // Sources that hold no policy (an empty list, an empty text) never empty the engine.
  for (const auto& empty :
       {std::vector<recourse::Source>{}, std::vector<recourse::Source>{{"e", ""}}}) {
    auto none = engine.reload(empty);
    CHECK_FALSE(none.ok);
    CHECK(none.generation == 1);
    REQUIRE_FALSE(none.diagnostics.empty());
    CHECK(none.diagnostics.back().code == "E004");
    CHECK(engine.decide(envelope, context).route == recourse::Route::Retry);
  }
  CHECK(engine.swap(bundle(kStop)) == 2);
  CHECK(engine.decide(envelope, context).route == recourse::Route::Stop);
}

TEST_CASE("engine: decisions pin their policy per thread and outlive the engine and the thread",
          "[engine]") {
  const auto envelope = test::envelope(R"({"code":"RATE_LIMITED","traceId":"t-1"})");
  const auto context = test::context(R"({"tool":"pay","sideEffect":"none"})");
  recourse::Decision other_thread, this_thread;
  {
    recourse::Engine engine(bundle(kStop));
    std::thread t([&] { other_thread = engine.decide(envelope, context); });
    t.join();
    this_thread = engine.decide(envelope, context);
    // Same policy, but each thread's decisions count on a control block of their own, so
    // deciding on two threads never writes one shared reference count.
    const auto& a = other_thread.keep_alive;
    const auto& b = this_thread.keep_alive;
    CHECK(a.get() == b.get());
    CHECK((a.owner_before(b) || b.owner_before(a)));
    CHECK(engine.reload({{"pay.recourse", kRetry}}).ok);
    CHECK(engine.decide(envelope, context).route == recourse::Route::Retry);
  }
  // The engine and the other thread are gone; the decisions still read their policy.
  CHECK(other_thread.reason == "no retries today");
  CHECK(this_thread.reason == "no retries today");
  CHECK(other_thread.keep_alive.use_count() == 1);  // the decision is the last owner
}

TEST_CASE("engine: without policies every decision stops with kNoPolicy", "[engine]") {
  recourse::Engine engine;
  const auto d = engine.decide(test::envelope(R"({"code":"TRANSIENT"})"),
                               test::context(R"({"tool":"x","sideEffect":"none"})"));
  CHECK(d.route == recourse::Route::Stop);
  CHECK((d.warnings & recourse::kNoPolicy) != 0);
}

TEST_CASE("engine: the decision log receives inputs, hash, rule and trace id", "[engine]") {
  recourse::Engine engine(bundle(kRetry));
  std::vector<std::string> lines;
  engine.set_log([&](const recourse::DecisionRecord& r) { lines.push_back(recourse::to_json(r)); });
  const auto context = test::context(R"({"tool":"pay","sideEffect":"none","attempt":1})");
  engine.decide(test::envelope(R"({"code":"RATE_LIMITED","retryAfterMs":500,"traceId":"t-9"})"),
                context);
  engine.unreadable(context);
  REQUIRE(lines.size() == 2);
  const auto j = nlohmann::json::parse(lines[0]);
  CHECK(j["policy"] == "pay");
  CHECK(j["policyHash"] == std::string(engine.bundle()->find("pay")->hash()));
  CHECK(j["rule"] == "throttled");
  CHECK(j["route"] == "retry");
  CHECK(j["traceId"] == "t-9");
  CHECK(j["tool"] == "pay");
  CHECK(j["input"]["envelope"]["retryAfterMs"] == 500);
  CHECK(j["input"]["context"]["sideEffect"] == "none");
  CHECK(j["result"]["delayMs"] == 500);
  const auto u = nlohmann::json::parse(lines[1]);
  CHECK(u["rule"] == "unreadable_envelope");
  CHECK(u["traceId"].get<std::string>().rfind("local-", 0) == 0);

  // A throwing log loses its record, never the decision; an empty log stops logging.
  engine.set_log([](const recourse::DecisionRecord&) { throw std::runtime_error("disk full"); });
  CHECK(engine.decide(test::envelope(R"({"code":"RATE_LIMITED"})"), context).route ==
        recourse::Route::Retry);
  engine.set_log({});
  engine.decide(test::envelope(R"({"code":"RATE_LIMITED"})"), context);
  CHECK(lines.size() == 2);
}

TEST_CASE("engine: the context's JSON reads back to the same context", "[engine]") {
  const auto c = test::context(R"({"tool":"pay","idempotent":false,"sideEffect":"unknown",
    "attempt":3,"repairs":1,"elapsedMs":900,"arguments":["a","b"],"maxAttempts":4,
    "deadlineMs":60000,"operationId":"op","workflowId":"wf","lowerRetries":2,"repeats":1,
    "costSpent":7,"idempotencyKey":"k-1","circuit":"half_open","retryThrottled":true,
    "nowMs":1700000000000,"argsHash":"h"})");
  const auto back = test::context(recourse::to_json(c));
  CHECK(recourse::to_json(back) == recourse::to_json(c));
  CHECK(back.idempotency_key_pinned);
  CHECK(back.circuit == recourse::CircuitState::HalfOpen);
  CHECK(back.arguments == c.arguments);
  CHECK(back.now_ms == c.now_ms);
  // A key that rotates, and a pin without a shared key, keep their meaning.
  recourse::Context rotated;
  rotated.idempotency_key = "k-1";
  CHECK_FALSE(test::context(recourse::to_json(rotated)).idempotency_key_pinned);
  recourse::Context pinned;
  pinned.idempotency_key_pinned = true;
  CHECK(test::context(recourse::to_json(pinned)).idempotency_key_pinned);
  CHECK_FALSE(recourse::read_context(R"({"idempotencyKeyPinned": "yes"})").ok);
  const auto empty = nlohmann::json::parse(recourse::to_json(recourse::Context{}));
  CHECK_FALSE(empty.contains("sideEffect"));
  CHECK_FALSE(empty.contains("nowMs"));
}

TEST_CASE("engine: counters per route, rule and exhausted budget, summed over threads",
          "[engine]") {
  recourse::EngineOptions options;
  options.count = true;
  recourse::Engine engine(bundle(kRetry), options);
  const auto throttled = test::envelope(R"({"code":"RATE_LIMITED"})");
  const auto first = test::context(R"({"tool":"pay","sideEffect":"none","attempt":1})");
  const auto last = test::context(R"({"tool":"pay","sideEffect":"none","attempt":2})");
  auto work = [&] {
    for (int i = 0; i < 10; ++i) {
      engine.decide(throttled, first);
      engine.decide(throttled, last);
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  engine.decide(test::envelope(R"({"code":"TRANSIENT"})"), first);
  const auto c = engine.counters();
  CHECK(c.decisions == 41);
  CHECK(c.routes.at("retry") == 20);
  CHECK(c.routes.at("stop") == 20);  // no on_exhausted, no fallback tool: stop
  CHECK(c.routes.at("escalate") == 1);
  CHECK(c.rules.at("pay").at("throttled") == 20);
  CHECK(c.rules.at("pay").at("budget:attempts") == 20);
  CHECK(c.rules.at("pay").at("default") == 1);
  CHECK(c.exhausted.at("attempts") == 20);
  const auto j = nlohmann::json::parse(recourse::to_json(c));
  CHECK(j["routes"]["retry"] == 20);

  recourse::Engine quiet(bundle(kRetry));
  quiet.decide(throttled, first);
  CHECK(quiet.counters().decisions == 0);
}
