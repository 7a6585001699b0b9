// The runner's step machine (recourse/runner.hpp) with a fake clock: every time is a number the
// test passes, so each wait, deadline and elapsed_ms is checked to the millisecond.
#include <catch2/catch.hpp>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "recourse/recourse.hpp"
#include "runner_support.hpp"

namespace {

using recourse::Action;
using recourse::Ending;
using recourse::Outcome;
using recourse::Step;
using test::kOrders;
using test::kOrdersWrite;
using test::kSearch;
using test::kT0;
using test::Loop;

Outcome failure(const std::string& envelope_json,
                std::optional<recourse::SideEffect> side_effect = recourse::SideEffect::None) {
  Outcome o;
  o.envelope = test::envelope(envelope_json);
  o.side_effect = side_effect;
  return o;
}

Outcome of(Outcome::Kind kind, std::optional<std::string> arguments = std::nullopt) {
  Outcome o;
  o.kind = kind;
  o.arguments = std::move(arguments);
  return o;
}

}  // namespace

TEST_CASE("runner: a 429 waits the server's hint, then resends the same key", "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", R"({"amount":100,"currency":"EUR"})");
  Action a = runner->next(kT0);
  REQUIRE(a.step == Step::Call);
  CHECK(a.tool == "orders.create");
  CHECK(a.arguments == R"({"amount":100,"currency":"EUR"})");
  CHECK(a.idempotency_key == "key-1");
  CHECK(a.attempt == 1);
  CHECK(a.timeout_ms == std::optional<std::int64_t>(120000));  // the policy's deadline
  CHECK(runner->next(kT0 + 5).step == Step::Call);             // still out: the same call
  REQUIRE(runner
              ->report(failure(R"({"code":"RATE_LIMITED","retryable":true,"retryAfterMs":1500})"),
                       kT0 + 20)
              .ok());
  a = runner->next(kT0 + 20);
  REQUIRE(a.step == Step::Wait);
  CHECK(a.wait_ms == 1500);  // max(backoff 100 ms, the server's 1500 ms)
  REQUIRE(a.decision);
  CHECK(a.decision->rule == "throttled");
  CHECK(a.decision->idempotency_key == recourse::KeyDirective::Reuse);
  CHECK(runner->next(kT0 + 1000).wait_ms == 520);  // asked early: the time left
  a = runner->next(kT0 + 1520);
  REQUIRE(a.step == Step::Call);
  CHECK(a.attempt == 2);
  CHECK(a.idempotency_key == "key-1");
  CHECK(a.timeout_ms == std::optional<std::int64_t>(120000 - 1520));
  REQUIRE(runner->report(of(Outcome::Kind::Success), kT0 + 1600).ok());
  a = runner->next(kT0 + 1600);
  CHECK(a.step == Step::Done);
  CHECK(a.ending == Ending::Success);
  CHECK(a.elapsed_ms == 1600);
  CHECK(runner->next(kT0 + 9999).ending == Ending::Success);  // once done, done
  // The ledger holds the success; a second runner for the same operation calls nothing.
  auto again = loop.runner("orders.create", "{}");
  CHECK(again->next(kT0 + 2000).ending == Ending::Committed);
}

TEST_CASE("runner: the decision sees the attempt, the elapsed time and the pinned key",
          "[runner]") {
  Loop loop({kOrders});
  std::vector<std::string> logged;
  loop.engine.set_log(
      [&](const recourse::DecisionRecord& r) { logged.push_back(recourse::to_json(r)); });
  auto runner = loop.runner("orders.create", "{}");
  runner->next(kT0);
  REQUIRE(runner->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0 + 10).ok());
  runner->next(kT0 + 110);
  REQUIRE(runner->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0 + 300).ok());
  REQUIRE(logged.size() == 2);
  const auto second = nlohmann::json::parse(logged[1])["input"]["context"];
  CHECK(second["attempt"] == 2);
  CHECK(second["elapsedMs"] == 300);
  CHECK(second["nowMs"] == kT0 + 300);
  CHECK(second["idempotencyKey"] == "key-1");
  CHECK(second["idempotencyKeyPinned"] == true);
  CHECK(second["operationId"] == "op-1");
  CHECK(second["sideEffect"] == "none");
}

TEST_CASE("runner: a repair is asked for and resent with a new key", "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", R"({"amount":-5})");
  CHECK(runner->next(kT0).idempotency_key == "key-1");
  REQUIRE(
      runner
          ->report(
              failure(R"({"code":"VALIDATION","field":"amount","suggestion":"a positive amount"})"),
              kT0 + 10)
          .ok());
  Action a = runner->next(kT0 + 10);
  REQUIRE(a.step == Step::Repair);
  CHECK(a.arguments == R"({"amount":-5})");
  CHECK(a.envelope.field == std::optional<std::string>("amount"));
  CHECK(a.envelope.suggestion == std::optional<std::string>("a positive amount"));
  CHECK(a.decision->idempotency_key == recourse::KeyDirective::New);
  CHECK_FALSE(runner->report(of(Outcome::Kind::Success), kT0 + 20).ok());  // R003: not a call
  REQUIRE(runner->report(of(Outcome::Kind::Resume, R"({"amount":5})"), kT0 + 20).ok());
  a = runner->next(kT0 + 20);
  REQUIRE(a.step == Step::Call);
  CHECK(a.arguments == R"({"amount":5})");
  CHECK(a.idempotency_key == "key-2");
  CHECK(a.attempt == 2);
  // A second invalid amount: the one repair is spent.
  REQUIRE(
      runner
          ->report(failure(R"({"code":"VALIDATION","field":"amount","suggestion":"x"})"), kT0 + 30)
          .ok());
  a = runner->next(kT0 + 30);
  CHECK(a.ending == Ending::Decided);
  CHECK(a.decision->exhausted == "repairs");
}

TEST_CASE("runner: an authorization keeps the key unless the arguments change", "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", "{}");
  runner->next(kT0);
  REQUIRE(runner->report(failure(R"({"code":"PERMISSION"})"), kT0).ok());
  CHECK(runner->next(kT0).step == Step::Authorize);
  REQUIRE(runner->report(of(Outcome::Kind::Resume), kT0 + 5).ok());
  CHECK(runner->next(kT0 + 5).idempotency_key == "key-1");
  REQUIRE(runner->report(failure(R"({"code":"PERMISSION"})"), kT0 + 6).ok());
  REQUIRE(runner->report(of(Outcome::Kind::Resume, R"({"scope":"write"})"), kT0 + 7).ok());
  CHECK(runner->next(kT0 + 7).idempotency_key == "key-2");
  // A person asked for (escalate) and the host gives up.
  REQUIRE(runner->report(failure(R"({"code":"CONFLICT"})"), kT0 + 8).ok());
  CHECK(runner->next(kT0 + 8).step == Step::Escalate);
  REQUIRE(runner->report(of(Outcome::Kind::Abandon), kT0 + 9).ok());
  const Action done = runner->next(kT0 + 9);
  CHECK(done.ending == Ending::Decided);
  CHECK(done.decision->rule == "person");
}

TEST_CASE("runner: arguments changed before a retry take a new key", "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", R"({"amount":1})");
  runner->next(kT0);
  CHECK_FALSE(runner->set_arguments("{}").ok());  // R003: a call is out
  REQUIRE(runner->report(failure(R"({"code":"RATE_LIMITED","retryable":true})"), kT0).ok());
  REQUIRE(runner->set_arguments(R"({"amount":1})").ok());  // the same bytes: the same key
  CHECK(runner->next(kT0 + 100).idempotency_key == "key-1");
  REQUIRE(runner->report(failure(R"({"code":"RATE_LIMITED","retryable":true})"), kT0 + 100).ok());
  REQUIRE(runner->set_arguments(R"({"amount":2})").ok());
  const Action a = runner->next(kT0 + 200);
  CHECK(a.arguments == R"({"amount":2})");
  CHECK(a.idempotency_key == "key-2");
}

TEST_CASE("runner: a lost response is resent only under a pinned key", "[runner]") {
  Loop loop({kOrders, kOrdersWrite});
  SECTION("no key: the unknown outcome is escalated, never resent") {
    auto runner = loop.runner("orders.write", "{}");
    const Action call = runner->next(kT0);
    CHECK(call.idempotency_key.empty());
    Outcome lost;
    lost.raw = R"({"transportError":"read timeout"})";
    lost.protocol = recourse::Protocol::Http;
    REQUIRE(runner->report(lost, kT0 + 30000).ok());  // no side effect given: the ledger's pending
    const Action a = runner->next(kT0 + 30000);
    CHECK(a.step == Step::Escalate);
    CHECK(a.decision->rule == "gate:unknown_outcome");
    CHECK(a.envelope.code == std::optional<std::string>("TIMEOUT"));
  }
  SECTION("a key the tool honours: resent with the same key") {
    auto runner = loop.runner("orders.create", "{}");
    runner->next(kT0);
    REQUIRE(runner->report(failure(R"({"code":"TIMEOUT"})", std::nullopt), kT0 + 30000).ok());
    const Action a = runner->next(kT0 + 30100);
    REQUIRE(a.step == Step::Call);
    CHECK(a.idempotency_key == "key-1");
    CHECK(a.decision->rule == "keyed_resend");
    const auto entry = loop.store->read("op-1", kT0 + 30100);
    CHECK(entry->state == recourse::LedgerState::Pending);
  }
  SECTION("the host knows the tool is idempotent (a trusted MCP server's hint): resent") {
    auto spec = loop.spec("orders.write", "{}");
    spec.idempotent = true;
    auto runner = loop.runner(std::move(spec));
    runner->next(kT0);
    CHECK(loop.store->read("op-1", kT0)->state == recourse::LedgerState::Absent);  // no claim
    REQUIRE(runner->report(failure(R"({"code":"TIMEOUT"})", std::nullopt), kT0 + 30000).ok());
    const Action a = runner->next(kT0 + 30100);
    REQUIRE(a.step == Step::Call);
    CHECK(a.decision->rule == "lost");
  }
}

TEST_CASE("runner: the breaker opens and the fallback is called", "[runner]") {
  Loop loop({kSearch});
  auto runner = loop.runner("search.query", R"({"q":"x"})");
  CHECK(runner->next(kT0).idempotency_key.empty());  // the tool takes no keys
  REQUIRE(runner->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0).ok());
  Action a = runner->next(kT0);
  CHECK(a.wait_ms == 200);
  a = runner->next(kT0 + 200);
  REQUIRE(a.step == Step::Call);
  REQUIRE(runner->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0 + 250).ok());
  a = runner->next(kT0 + 250);  // two failures: open, the fallback now
  REQUIRE(a.step == Step::Call);
  CHECK(a.tool == "search.cache");
  CHECK(a.attempt == 1);
  CHECK(a.arguments == R"({"q":"x"})");
  CHECK(a.decision->rule == "circuit:open");
  CHECK(loop.health.get("search.query").circuit == recourse::CircuitState::Open);
  REQUIRE(runner->report(of(Outcome::Kind::Success), kT0 + 260).ok());
  a = runner->next(kT0 + 260);
  CHECK(a.ending == Ending::Success);
  CHECK(a.tool == "search.cache");
}

TEST_CASE("runner: an open circuit refuses the call before it is made", "[runner]") {
  Loop loop({kSearch});
  std::vector<std::string> logged;
  loop.engine.set_log(
      [&](const recourse::DecisionRecord& r) { logged.push_back(recourse::to_json(r)); });
  // Two failures open the circuit (failures = 2, cooldown 30 s) at kT0 + 250.
  auto first = loop.runner("search.query", R"({"q":"x"})");
  first->next(kT0);
  REQUIRE(first->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0).ok());
  first->next(kT0 + 200);
  REQUIRE(first->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0 + 250).ok());
  REQUIRE(loop.health.get("search.query").circuit == recourse::CircuitState::Open);
  logged.clear();

  // A new operation: its first call goes to the fallback, search.query is never called.
  recourse::RunnerSpec spec = loop.spec("search.query", R"({"q":"y"})");
  spec.operation_id = "op-2";
  auto second = loop.runner(std::move(spec));
  Action a = second->next(kT0 + 1000);
  REQUIRE(a.step == Step::Call);
  CHECK(a.tool == "search.cache");
  CHECK(a.attempt == 1);
  CHECK(a.arguments == R"({"q":"y"})");
  REQUIRE(a.decision);
  CHECK(a.decision->rule == "circuit:open");
  CHECK(a.decision->route == recourse::Route::Replace);
  CHECK(a.decision->target == "search.cache");
  CHECK(a.envelope.code == std::optional<std::string>("TRANSIENT"));  // the refusal
  REQUIRE(logged.size() == 1);  // the refusal's decision is logged like any other
  const auto record = nlohmann::json::parse(logged[0]);
  CHECK(record["input"]["context"]["circuit"] == "open");
  CHECK(record["input"]["context"]["operationId"] == "op-2");
  CHECK(record["rule"] == "circuit:open");
  CHECK_FALSE(loop.workflow.find("op-2", "search.query"));  // no call of it was counted
  REQUIRE(second->report(of(Outcome::Kind::Success), kT0 + 1010).ok());
  CHECK(second->next(kT0 + 1010).ending == Ending::Success);

  // The retry of an operation whose tool failed before re-decides on that failure: the
  // operation's own next call (a retry decided while the circuit was closed) is refused too.
  Loop slow({kSearch});
  auto retrying = slow.runner("search.query", "{}");
  retrying->next(kT0);
  REQUIRE(retrying->report(failure(R"({"code":"TIMEOUT"})"), kT0).ok());  // one failure: retry
  CHECK(retrying->next(kT0).wait_ms == 200);
  // Meanwhile another operation's failure opens the circuit.
  recourse::RunnerSpec other = slow.spec("search.query", "{}");
  other.operation_id = "op-9";
  auto opener = slow.runner(std::move(other));
  opener->next(kT0 + 10);
  REQUIRE(opener->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0 + 20).ok());
  a = retrying->next(kT0 + 200);
  REQUIRE(a.step == Step::Call);
  CHECK(a.tool == "search.cache");
  CHECK(a.decision->rule == "circuit:open");
  CHECK(a.envelope.code == std::optional<std::string>("TIMEOUT"));  // its own failure
}

TEST_CASE("runner: after the cooldown one operation probes, the others go to the fallback",
          "[runner]") {
  Loop loop({kSearch});
  auto opener = loop.runner("search.query", "{}");
  opener->next(kT0);
  REQUIRE(opener->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0).ok());
  opener->next(kT0 + 200);
  REQUIRE(opener->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0 + 200).ok());
  const std::int64_t after = kT0 + 200 + 30000;  // the cooldown has passed
  auto runner_for = [&](const std::string& operation) {
    recourse::RunnerSpec spec = loop.spec("search.query", "{}");
    spec.operation_id = operation;
    return loop.runner(std::move(spec));
  };
  auto probe = runner_for("op-probe");
  auto other = runner_for("op-other");
  Action a = probe->next(after);
  REQUIRE(a.step == Step::Call);
  CHECK(a.tool == "search.query");  // the half-open probe, its lease taken before the call
  CHECK_FALSE(a.decision);
  CHECK(loop.health.get("search.query").probe_operation == "op-probe");
  a = other->next(after + 5);
  CHECK(a.tool == "search.cache");  // the probe is out: still open for everyone else
  CHECK(a.decision->rule == "circuit:open");
  SECTION("the probe succeeds: the circuit closes and the tool is called again") {
    REQUIRE(probe->report(of(Outcome::Kind::Success), after + 50).ok());
    CHECK(probe->next(after + 50).ending == Ending::Success);
    CHECK(loop.health.get("search.query").circuit == recourse::CircuitState::Closed);
    CHECK(runner_for("op-3")->next(after + 60).tool == "search.query");
  }
  SECTION(
      "the probe fails: open for another cooldown, the probe's operation goes to the fallback") {
    REQUIRE(probe->report(failure(R"({"code":"TRANSIENT","retryable":true})"), after + 50).ok());
    a = probe->next(after + 50);
    CHECK(a.tool == "search.cache");
    CHECK(a.decision->rule == "circuit:open");
    const recourse::ToolHealth h = loop.health.get("search.query");
    CHECK(h.circuit == recourse::CircuitState::Open);
    CHECK(h.opened_ms == after + 50);
    CHECK(runner_for("op-3")->next(after + 60).tool == "search.cache");
  }
  SECTION("the probe never reports: its lease (the cooldown) ends and another operation probes") {
    CHECK(runner_for("op-3")->next(after + 29999).tool == "search.cache");
    CHECK(runner_for("op-4")->next(after + 30000).tool == "search.query");
  }
}

TEST_CASE("runner: a degrade that names a target calls it", "[runner]") {
  const char* const degrading = R"(version 1
policy "quotes.live" {
  tool { idempotent = true }
  rule stale when code == TRANSIENT -> degrade "quotes.cached" "serve the cached quote"
  rule plain when code == NOT_FOUND -> degrade "no quote"
  default -> stop
}
)";
  Loop loop({degrading});
  auto runner = loop.runner("quotes.live", R"({"symbol":"ACME"})");
  runner->next(kT0);
  REQUIRE(runner->report(failure(R"({"code":"TRANSIENT"})"), kT0 + 10).ok());
  Action a = runner->next(kT0 + 10);
  REQUIRE(a.step == Step::Call);
  CHECK(a.tool == "quotes.cached");
  CHECK(a.attempt == 1);
  CHECK(a.arguments == R"({"symbol":"ACME"})");
  CHECK(a.decision->route == recourse::Route::Degrade);
  CHECK(a.decision->rule == "stale");
  REQUIRE(runner->report(of(Outcome::Kind::Success), kT0 + 20).ok());
  a = runner->next(kT0 + 20);
  CHECK(a.ending == Ending::Success);
  CHECK(a.tool == "quotes.cached");
  // A degrade without a target ends the operation: the host serves its degraded answer.
  recourse::RunnerSpec spec = loop.spec("quotes.live", "{}");
  spec.operation_id = "op-2";
  auto plain = loop.runner(std::move(spec));
  plain->next(kT0);
  REQUIRE(plain->report(failure(R"({"code":"NOT_FOUND"})"), kT0 + 10).ok());
  a = plain->next(kT0 + 10);
  CHECK(a.ending == Ending::Decided);
  CHECK(a.decision->route == recourse::Route::Degrade);
  CHECK(a.decision->target.empty());
}

TEST_CASE("runner: arguments are compared by value, not by bytes", "[runner]") {
  Loop loop({kOrders});
  std::vector<std::string> logged;
  loop.engine.set_log(
      [&](const recourse::DecisionRecord& r) { logged.push_back(recourse::to_json(r)); });
  auto runner = loop.runner("orders.create", R"({"amount":100,"currency":"EUR"})");
  CHECK(runner->next(kT0).idempotency_key == "key-1");
  REQUIRE(runner->report(failure(R"({"code":"RATE_LIMITED","retryable":true})"), kT0).ok());
  // The same value spelt another way (members reordered, spaces, 100.0): the same key.
  REQUIRE(runner->set_arguments(R"({ "currency": "EUR", "amount": 100.0 })").ok());
  Action a = runner->next(kT0 + 100);
  CHECK(a.arguments == R"({ "currency": "EUR", "amount": 100.0 })");  // sent as given
  CHECK(a.idempotency_key == "key-1");
  REQUIRE(runner->report(failure(R"({"code":"RATE_LIMITED","retryable":true})"), kT0 + 100).ok());
  // The arguments' hash the decisions see is the value's too.
  REQUIRE(logged.size() == 2);
  CHECK(nlohmann::json::parse(logged[0])["input"]["context"]["argsHash"] ==
        nlohmann::json::parse(logged[1])["input"]["context"]["argsHash"]);
  // Another value: a new key; a string "100" is not the number 100.
  REQUIRE(runner->set_arguments(R"({"amount":"100","currency":"EUR"})").ok());
  CHECK(runner->next(kT0 + 200).idempotency_key == "key-2");
  REQUIRE(runner->report(failure(R"({"code":"RATE_LIMITED","retryable":true})"), kT0 + 200).ok());
  // Text that is not JSON is compared by its bytes.
  recourse::RunnerSpec spec = loop.spec("orders.create", "amount=100");
  spec.operation_id = "op-2";
  auto form = loop.runner(std::move(spec));
  CHECK(form->next(kT0).idempotency_key == "key-1");
  REQUIRE(form->report(failure(R"({"code":"RATE_LIMITED","retryable":true})"), kT0).ok());
  REQUIRE(form->set_arguments("amount=100").ok());
  CHECK(form->next(kT0 + 100).idempotency_key == "key-1");
  REQUIRE(form->report(failure(R"({"code":"RATE_LIMITED","retryable":true})"), kT0 + 100).ok());
  REQUIRE(form->set_arguments("amount=100 ").ok());
  CHECK(form->next(kT0 + 200).idempotency_key == "key-2");
}

TEST_CASE("runner: an isolated tool is not called, not even probed, until it is reset",
          "[runner]") {
  Loop loop({kSearch});
  const auto bundle = loop.engine.bundle();
  const recourse::Policy& policy = *bundle->find("search.query");
  const auto isolated =
      loop.health.control(policy, "search.query", recourse::BreakerCommand::Isolate, kT0);
  REQUIRE(isolated);
  CHECK(isolated->isolated);
  CHECK(isolated->circuit == recourse::CircuitState::Open);
  auto runner = loop.runner("search.query", "{}");
  Action a = runner->next(kT0 + 3'600'000);  // an hour on, long past the cooldown (30 s)
  CHECK(a.tool == "search.cache");
  CHECK(a.decision->rule == "circuit:open");
  const auto reset =
      loop.health.control(policy, "search.query", recourse::BreakerCommand::Reset, kT0 + 3'600'001);
  REQUIRE(reset);
  CHECK(reset->circuit == recourse::CircuitState::Closed);
  recourse::RunnerSpec spec = loop.spec("search.query", "{}");
  spec.operation_id = "op-2";
  CHECK(loop.runner(std::move(spec))->next(kT0 + 3'600'002).tool == "search.query");
  // Opened by hand for 10 minutes: no probe before they end, then the usual probe.
  loop.health.control(policy, "search.query", recourse::BreakerCommand::Open, kT0, 600'000);
  spec = loop.spec("search.query", "{}");
  spec.operation_id = "op-3";
  CHECK(loop.runner(std::move(spec))->next(kT0 + 599'999).tool == "search.cache");
  spec = loop.spec("search.query", "{}");
  spec.operation_id = "op-4";
  CHECK(loop.runner(std::move(spec))->next(kT0 + 600'000).tool == "search.query");
}

TEST_CASE("runner: replacements are bounded", "[runner]") {
  const char* const loop_policy = R"(version 1
policy "*" {
  tool { idempotent = true }
  rule elsewhere when code == NOT_FOUND -> replace "other"
  default -> stop
}
)";
  Loop loop({loop_policy});
  recourse::RunnerSpec spec = loop.spec("a", "{}");
  spec.max_replacements = 2;
  auto runner = loop.runner(std::move(spec));
  std::vector<std::string> tools;
  for (Action a = runner->next(kT0); a.step == Step::Call; a = runner->next(kT0)) {
    tools.push_back(a.tool);
    REQUIRE(runner->report(failure(R"({"code":"NOT_FOUND"})"), kT0).ok());
  }
  CHECK(tools == std::vector<std::string>{"a", "other", "other"});
  CHECK(runner->next(kT0).ending == Ending::Decided);
}

TEST_CASE("runner: the deadline ends the loop", "[runner]") {
  Loop loop({kSearch});
  recourse::RunnerSpec spec = loop.spec("search.query", "{}");
  spec.deadline_ms = 1000;
  auto runner = loop.runner(std::move(spec));
  CHECK(runner->next(kT0).timeout_ms == std::optional<std::int64_t>(1000));
  SECTION("a host that comes back late") {
    REQUIRE(runner->report(failure(R"({"code":"TRANSIENT","retryable":true})"), kT0 + 100).ok());
    CHECK(runner->next(kT0 + 100).wait_ms == 200);
    CHECK(runner->next(kT0 + 1000).ending == Ending::Deadline);
  }
  SECTION("the decision's own budget: a hint past it goes to the fallback") {
    REQUIRE(runner
                ->report(failure(R"({"code":"TRANSIENT","retryable":true,"retryAfterMs":5000})"),
                         kT0 + 100)
                .ok());
    const Action a = runner->next(kT0 + 100);
    REQUIRE(a.step == Step::Call);
    CHECK(a.tool == "search.cache");
    CHECK(a.decision->exhausted == "deadline");
    CHECK(a.timeout_ms == std::optional<std::int64_t>(900));
    CHECK(runner->next(kT0 + 1000).ending == Ending::Deadline);  // the fallback's call too
  }
}

TEST_CASE("runner: cancel ends a wait", "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", "{}");
  runner->next(kT0);
  REQUIRE(
      runner
          ->report(failure(R"({"code":"RATE_LIMITED","retryable":true,"retryAfterMs":20000})"), kT0)
          .ok());
  CHECK(runner->next(kT0 + 10).step == Step::Wait);
  runner->cancel();
  const Action a = runner->next(kT0 + 20);
  CHECK(a.ending == Ending::Cancelled);
  CHECK(a.decision->rule == "throttled");
}

TEST_CASE("runner: a call that fails after cancel is recorded, and the operation ends cancelled",
          "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", "{}");
  REQUIRE(runner->next(kT0).step == Step::Call);
  runner->cancel();  // while the call is out
  REQUIRE(runner->report(failure(R"({"code":"NOT_FOUND"})"), kT0 + 5).ok());
  const Action a = runner->next(kT0 + 10);
  CHECK(a.step == Step::Done);
  CHECK(a.ending == Ending::Cancelled);
  REQUIRE(a.decision.has_value());
  CHECK(a.decision->route == recourse::Route::Stop);  // what the failure was decided as
  CHECK(runner->next(kT0 + 20).ending == Ending::Cancelled);
}

TEST_CASE("runner: reports that answer nothing are refused and change nothing", "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", "{}");
  auto code = [](const recourse::Status& s) {
    return s.ok() ? std::string() : s.diagnostics().front().code;
  };
  CHECK(code(runner->report(of(Outcome::Kind::Success), kT0)) == "R003");  // nothing asked
  REQUIRE(runner->next(kT0).step == Step::Call);
  CHECK(code(runner->report(of(Outcome::Kind::Resume), kT0)) == "R003");
  CHECK(code(runner->report(Outcome{}, kT0)) == "R003");  // a failure with nothing to read
  CHECK(runner->next(kT0).step == Step::Call);            // still out
  Outcome garbled;
  garbled.raw = "not json";
  REQUIRE(runner->report(garbled, kT0).ok());  // unreadable: the conservative stop
  const Action a = runner->next(kT0);
  CHECK(a.ending == Ending::Decided);
  CHECK((a.decision->warnings & recourse::kUnreadableEnvelope) != 0);
  CHECK(code(runner->report(of(Outcome::Kind::Success), kT0)) == "R003");  // ended
  recourse::RunnerSpec bad = loop.spec("orders.create", "{}");
  bad.operation_id.clear();
  auto refused = recourse::Runner::make(loop.engine, loop.workflow, loop.health, loop.store, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.diagnostics().front().code == "R002");
}

TEST_CASE("runner: run() drives the step machine with the host's clock and sleeper", "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", "{}");
  std::int64_t now = kT0;
  std::vector<std::int64_t> slept;
  std::vector<std::string> keys;
  recourse::RunnerHost host;
  host.clock = [&] { return now; };
  host.sleep = [&](std::int64_t ms) { slept.push_back(ms), now += ms; };
  host.call = [&](const Action& a) {
    keys.push_back(a.idempotency_key);
    now += 40;  // the call takes 40 ms
    if (keys.size() < 3)
      return failure(R"({"code":"RATE_LIMITED","retryable":true,"retryAfterMs":700})");
    return of(Outcome::Kind::Success);
  };
  const Action done = runner->run(host);
  CHECK(done.ending == Ending::Success);
  CHECK(slept == std::vector<std::int64_t>{700, 700});
  CHECK(keys == std::vector<std::string>{"key-1", "key-1", "key-1"});
  CHECK(done.elapsed_ms == 3 * 40 + 2 * 700);
}

TEST_CASE("runner: run() reads a throwing callback as a failure, and ends", "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", "{}");
  recourse::RunnerHost host;
  host.clock = [] { return kT0; };
  host.call = [](const Action&) -> Outcome { throw std::runtime_error("boom"); };
  const Action done = runner->run(host);
  CHECK(done.ending == Ending::Decided);
  CHECK(done.envelope.code == std::optional<std::string>("UNKNOWN"));
}

TEST_CASE("runner: many runners share the Health and the store", "[runner]") {
  // Eight threads, each running operations of a tool that always fails: the shared breaker
  // opens on the failures of all of them, and every operation ends on the fallback.
  Loop loop({kSearch});
  constexpr int kThreads = 8, kOperations = 25;
  std::atomic<int> primary_calls{0}, fallback_calls{0}, successes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      recourse::Workflow workflow(loop.store);  // one per loop
      for (int i = 0; i < kOperations; ++i) {
        recourse::RunnerSpec spec;
        spec.tool = "search.query";
        spec.operation_id = "op-" + std::to_string(t) + "-" + std::to_string(i);
        auto made = recourse::Runner::make(loop.engine, workflow, loop.health, loop.store, spec);
        std::int64_t now = kT0;
        recourse::RunnerHost host;
        host.clock = [&] { return now; };
        host.sleep = [&](std::int64_t ms) { now += ms; };
        host.call = [&](const Action& a) {
          (a.tool == "search.query" ? primary_calls : fallback_calls)++;
          return a.tool == "search.query" ? failure(R"({"code":"TRANSIENT","retryable":true})")
                                          : of(Outcome::Kind::Success);
        };
        if ((*made)->run(host).ending == Ending::Success) ++successes;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(successes == kThreads * kOperations);
  CHECK(fallback_calls == kThreads * kOperations);
  // Once open (30 s cooldown, never reached on these clocks), the breaker refuses every call of
  // the tool before it is made: the primary calls are the two failures that opened it and at
  // most one under way in each other thread when it opened.
  CHECK(primary_calls >= 2);
  CHECK(primary_calls <= kThreads + 1);
  CHECK(loop.health.get("search.query").circuit == recourse::CircuitState::Open);
}

TEST_CASE("runner: actions and outcomes as JSON", "[runner]") {
  Loop loop({kOrders});
  auto runner = loop.runner("orders.create", R"({"amount":1})");
  auto call = nlohmann::json::parse(recourse::to_json(runner->next(kT0)));
  CHECK(call == nlohmann::json::parse(
                    R"({"step":"call","tool":"orders.create","attempt":1,"elapsedMs":0,
                        "arguments":{"amount":1},"idempotencyKey":"key-1","timeoutMs":120000})"));
  auto o = recourse::read_outcome(
      R"({"outcome":"failure","raw":{"status":429,"headers":{"Retry-After":"2"}},"sideEffect":"none"})");
  REQUIRE(o.ok());
  CHECK_FALSE(o->protocol);  // read from the raw form's shape: an integer status is HTTP
  REQUIRE(runner->report(*o, kT0 + 10).ok());
  auto wait = nlohmann::json::parse(recourse::to_json(runner->next(kT0 + 10)));
  CHECK(wait["step"] == "wait");
  CHECK(wait["waitMs"] == 2000);
  CHECK(wait["decision"]["rule"] == "throttled");
  CHECK(wait["envelope"]["code"] == "RATE_LIMITED");
  for (const char* bad :
       {"", "[]", "{}", R"({"outcome":1})", R"({"outcome":"maybe"})",
        R"({"outcome":"failure","envelope":[]})", R"({"outcome":"failure","envelope":{"code":{}}})",
        R"({"outcome":"failure","raw":"x"})", R"({"outcome":"failure","protocol":"smtp"})",
        R"({"outcome":"failure","sideEffect":"maybe"})"}) {
    INFO(bad);
    auto r = recourse::read_outcome(bad);
    if (!r.ok()) CHECK(r.diagnostics().front().code == "R001");
    // An envelope's malformed field is dropped, as read_envelope() does: still an outcome.
    CHECK(r.ok() == (std::string(bad) == R"({"outcome":"failure","envelope":{"code":{}}})"));
  }
  auto resume = recourse::read_outcome(R"({"outcome":"resume","arguments":{"amount":2}})");
  REQUIRE(resume.ok());
  CHECK(resume->arguments == std::optional<std::string>(R"({"amount":2})"));
}

TEST_CASE("runner: a key source that throws ends the operation", "[runner]") {
  Loop loop({kOrders});
  recourse::RunnerSpec spec = loop.spec("orders.create", "{}");
  spec.new_key = []() -> std::string { throw std::runtime_error("no entropy"); };
  auto runner = loop.runner(std::move(spec));
  CHECK(runner->next(kT0).ending == Ending::Decided);
  CHECK(runner->next(kT0 + 1).ending == Ending::Decided);  // once done, done
  const recourse::Status s = runner->report(of(Outcome::Kind::Success), kT0 + 2);
  REQUIRE_FALSE(s.ok());
  CHECK(s.diagnostics().front().code == "R003");
  CHECK(loop.store->read("op-1", kT0)->state == recourse::LedgerState::Absent);  // never called
}
