// Engine: hot reload (swap, failed compile keeps the old bundle, decisions keep their snapshot),
// the decision log and its JSON record, the counters.
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>

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
  return std::move(*r);
}

}  // namespace

TEST_CASE("engine: reload swaps the bundle, a failed compile keeps it", "[engine]") {
  recourse::Engine engine(bundle(kStop));
  const auto envelope = test::envelope(R"({"code":"RATE_LIMITED","traceId":"t-1"})");
  const auto context = test::context(R"({"tool":"pay","sideEffect":"none"})");
  CHECK(engine.generation() == 0);
  const recourse::Decision before = engine.decide(envelope, context);
  const std::shared_ptr<const recourse::Bundle> pin = engine.pinned();  // keeps `before` readable
  CHECK(before.route == recourse::Route::Stop);
  const std::string before_hash(before.policy_hash);

  auto ok = engine.reload({{"pay.recourse", kRetry}});
  CHECK(ok.ok());
  CHECK(*ok == 1);
  CHECK(engine.generation() == 1);
  const recourse::Decision after = engine.decide(envelope, context);
  CHECK(after.route == recourse::Route::Retry);
  CHECK(after.policy_hash != before_hash);
  // The earlier decision still reads its own policy's strings, pinned.
  CHECK(before.policy_hash == before_hash);
  CHECK(before.reason == "no retries today");

  auto bad =
      engine.reload({{"pay.recourse", "policy \"pay\" { rule r when code == NOPE -> stop }"}});
  CHECK_FALSE(bad.ok());
  CHECK(engine.generation() == 1);
  REQUIRE_FALSE(bad.diagnostics().empty());
  CHECK(recourse::has_errors(bad.diagnostics()));
  CHECK(engine.decide(envelope, context).route == recourse::Route::Retry);
  CHECK(engine.bundle()->find("pay")->hash() == after.policy_hash);

  auto missing = engine.reload_paths({"/nonexistent/policies"});
  CHECK_FALSE(missing.ok());
  CHECK(missing.diagnostics().front().code == "E000");
  // Sources that hold no policy (an empty list, an empty text) never empty the engine.
  for (const auto& empty :
       {std::vector<recourse::Source>{}, std::vector<recourse::Source>{{"e", ""}}}) {
    auto none = engine.reload(empty);
    CHECK_FALSE(none.ok());
    CHECK(engine.generation() == 1);
    REQUIRE_FALSE(none.diagnostics().empty());
    CHECK(none.diagnostics().back().code == "E004");
    CHECK(engine.decide(envelope, context).route == recourse::Route::Retry);
  }
  CHECK(engine.swap(bundle(kStop)) == 2);
  CHECK(engine.decide(envelope, context).route == recourse::Route::Stop);
}

TEST_CASE(
    "engine: a thread's decisions stay valid until it decides after a swap; pinned() keeps them",
    "[engine]") {
  const auto envelope = test::envelope(R"({"code":"RATE_LIMITED","traceId":"t-1"})");
  const auto context = test::context(R"({"tool":"pay","sideEffect":"none"})");
  recourse::Decision other_thread, this_thread;
  std::shared_ptr<const recourse::Bundle> other_pin, this_pin;
  {
    recourse::Engine engine(bundle(kStop));
    std::thread t([&] {
      other_thread = engine.decide(envelope, context);
      other_pin = engine.pinned();
    });
    t.join();
    this_thread = engine.decide(envelope, context);
    this_pin = engine.pinned();
    CHECK(this_pin.get() == other_pin.get());  // one snapshot's bundle
    CHECK(engine.reload({{"pay.recourse", kRetry}}).ok());
    // This thread has not decided since the swap: its snapshot still holds the old bundle.
    CHECK(engine.pinned().get() == this_pin.get());
    CHECK(this_thread.reason == "no retries today");
    CHECK(engine.decide(envelope, context).route == recourse::Route::Retry);
    CHECK(engine.pinned().get() != this_pin.get());
  }
  // The engine and the other thread are gone; the pins keep the decisions' strings readable
  // (AddressSanitizer, scripts/asan.sh, would report a read of a freed policy).
  CHECK(other_thread.reason == "no retries today");
  CHECK(this_thread.reason == "no retries today");
  CHECK(this_pin->find("pay") != nullptr);
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
    "nowMs":1700000000000,"argsHash":"h","endpoint":"eu-west"})");
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
  CHECK_FALSE(recourse::read_context(R"({"idempotencyKeyPinned": "yes"})").ok());
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

TEST_CASE("api: one way to fail, no empty policy, decisions are plain values", "[engine][api]") {
  static_assert(!std::is_default_constructible_v<recourse::Policy>);
  static_assert(std::is_trivially_copyable_v<recourse::BudgetLeft>);
  static_assert(std::is_copy_constructible_v<recourse::Decision>);
  // A failure always says why; a success may carry warnings.
  const auto bad = recourse::read_envelope("[1]");
  REQUIRE_FALSE(bad.ok());
  REQUIRE(bad.diagnostics().size() == 1);
  CHECK(bad.diagnostics()[0].code == "N001");
  CHECK(bad.diagnostics()[0].severity == recourse::Severity::Error);
  CHECK_THROWS_AS(bad.value(), std::bad_optional_access);
  const auto store = recourse::open_store("sqlite:");
  REQUIRE_FALSE(store.ok());
  CHECK(store.diagnostics()[0].code == "S001");
  CHECK(store.message() == "state store \"sqlite:\": no PATH after sqlite:");
  recourse::Workflow workflow;
  const recourse::Status restored = workflow.from_json("not json");
  REQUIRE_FALSE(restored.ok());
  CHECK(restored.diagnostics()[0].code == "S004");
  const auto raw = recourse::from_raw(std::nullopt, R"({"status": 429})", std::nullopt);
  REQUIRE_FALSE(raw.ok());
  CHECK(raw.diagnostics()[0].code == "N001");
  CHECK(raw.message() == "the raw form names no protocol (http, grpc, mcp or jsonrpc)");
  const auto empty = recourse::Result<int>::failure(std::vector<recourse::Diagnostic>{});
  REQUIRE(empty.diagnostics().size() == 1);
  CHECK(empty.diagnostics()[0].code == "E099");
}
