// The runner's blocking form (Runner::run) against a real HTTP server on 127.0.0.1 that each
// test starts: 429 with Retry-After, 503, a write whose response never comes, a validation
// error to repair, a breaker that opens, the deadline, cancellation, and the case
// idempotency-key-reused-after-body-change (tests/cases/cases-2.json). The runner's waits go
// through a sleeper that advances a fake clock (no test sleeps for a backoff), except where
// cancel() must end a real wait; client timeouts are real and short.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "http_loopback.hpp"
#include "recourse/recourse.hpp"
#include "runner_support.hpp"

namespace {

using nlohmann::json;
using recourse::Action;
using recourse::Ending;
using recourse::Outcome;
using recourse::Step;
using test::HttpRequest;
using test::HttpResponse;
using test::kOrders;
using test::kOrdersWrite;
using test::kSearch;
using test::kT0;
using test::Loop;
using test::LoopbackServer;

// A failed HTTP call as the runner reads it: the raw form, with the side effect this test API
// documents (a response with an error status applied nothing; a transport error: unknown).
Outcome outcome_of(const test::HttpResult& r) {
  Outcome o;
  if (r.transport_error.empty() && r.status / 100 == 2) {
    o.kind = Outcome::Kind::Success;
    return o;
  }
  json raw = json::object();
  if (!r.transport_error.empty()) {
    raw["transportError"] = r.transport_error;
  } else {
    raw["status"] = r.status;
    raw["headers"] = json::object();
    for (const auto& [name, value] : r.headers) raw["headers"][name] = value;
    json body = json::parse(r.body, nullptr, false);
    raw["body"] = body.is_discarded() ? json(r.body) : body;
    o.side_effect = recourse::SideEffect::None;
  }
  o.raw = raw.dump();
  o.protocol = recourse::Protocol::Http;
  return o;
}

// A host over the loopback server: POST /<tool> with the arguments as body and the key as
// Idempotency-Key; time from a fake clock the sleeper advances.
struct Host {
  explicit Host(const LoopbackServer& server, std::int64_t max_timeout_ms = 2000)
      : port(server.port()) {
    host.clock = [this] { return now; };
    host.sleep = [this](std::int64_t ms) {
      slept.push_back(ms);
      now += ms;
    };
    host.call = [this, max_timeout_ms](const Action& a) {
      std::vector<std::pair<std::string, std::string>> headers;
      if (!a.idempotency_key.empty()) headers.emplace_back("Idempotency-Key", a.idempotency_key);
      const std::int64_t timeout = std::min(a.timeout_ms.value_or(max_timeout_ms), max_timeout_ms);
      const auto started = std::chrono::steady_clock::now();
      const test::HttpResult r = test::http_post(port, "/" + a.tool, headers, a.arguments, timeout);
      now += std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - started)
                 .count();
      if (r.transport_error == "timeout") now = std::max(now, started_at(a) + timeout);
      return outcome_of(r);
    };
  }
  std::int64_t started_at(const Action& a) const { return kT0 + a.elapsed_ms; }

  int port;
  std::int64_t now = kT0;
  std::vector<std::int64_t> slept;
  recourse::RunnerHost host;
};

std::vector<std::string> keys_of(const std::vector<HttpRequest>& requests) {
  std::vector<std::string> keys;
  for (const auto& r : requests)
    keys.push_back(r.headers.count("idempotency-key") ? r.headers.at("idempotency-key") : "");
  return keys;
}

}  // namespace

TEST_CASE("runner over HTTP: a 429 is retried after the server's Retry-After", "[runner][http]") {
  std::atomic<int> calls{0};
  LoopbackServer server([&](const HttpRequest&) {
    HttpResponse r;
    if (++calls == 1)
      r = {429, {{"Retry-After", "3"}}, R"({"error":"slow down"})"};
    else
      r.body = R"({"id":"ord_1"})";
    return r;
  });
  Loop loop({kOrders, kOrdersWrite, kSearch});
  auto runner = loop.runner("orders.create", R"({"amount":100,"currency":"EUR"})");
  Host host(server);
  const Action done = runner->run(host.host);
  CHECK(done.ending == Ending::Success);
  CHECK(host.slept == std::vector<std::int64_t>{3000});  // the hint, not the 100 ms backoff
  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(keys_of(requests) == std::vector<std::string>{"key-1", "key-1"});
  CHECK(requests[1].body == R"({"amount":100,"currency":"EUR"})");
  CHECK(requests[0].path == "/orders.create");
  CHECK(done.elapsed_ms >= 3000);
}

TEST_CASE("runner over HTTP: a lost write is not resent without a pinned key", "[runner][http]") {
  std::set<std::string> applied;  // the writes the server applied, by key or body
  std::mutex mutex;
  LoopbackServer server([&](const HttpRequest& r) {
    std::lock_guard<std::mutex> lock(mutex);
    const std::string id =
        r.headers.count("idempotency-key") ? r.headers.at("idempotency-key") : r.body;
    HttpResponse out;
    if (applied.insert(id).second)
      out.how = HttpResponse::How::Hang;  // applied; reply lost
    else
      out.body = R"({"replayed":true})";  // Stripe: the saved reply
    return out;
  });
  Loop loop({kOrders, kOrdersWrite, kSearch});
  SECTION("no key: escalated after one call") {
    auto runner = loop.runner("orders.write", R"({"line":"a"})");
    Host host(server, 150);
    const Action done = runner->run(host.host);
    CHECK(done.ending == Ending::Decided);
    CHECK(done.step == Step::Done);
    REQUIRE(done.decision);
    CHECK(done.decision->rule == "gate:unknown_outcome");
    CHECK(done.decision->route == recourse::Route::Escalate);
    CHECK(done.envelope.code == std::optional<std::string>("TIMEOUT"));
    CHECK(server.requests().size() == 1);
    CHECK(loop.store->read("op-1", host.now)->state == recourse::LedgerState::Pending);
  }
  SECTION("a pinned key: resent with it, applied once") {
    auto runner = loop.runner("orders.create", R"({"amount":7})");
    Host host(server, 150);
    const Action done = runner->run(host.host);
    CHECK(done.ending == Ending::Success);
    CHECK(keys_of(server.requests()) == std::vector<std::string>{"key-1", "key-1"});
    CHECK(applied.size() == 1);
    CHECK(loop.store->read("op-1", host.now)->state == recourse::LedgerState::Committed);
  }
}

TEST_CASE("runner over HTTP: a repair is resent with a new key", "[runner][http]") {
  LoopbackServer server([&](const HttpRequest& r) {
    HttpResponse out;
    if (json::parse(r.body)["amount"] <= 0)
      out = {
          422,
          {{"Content-Type", "application/problem+json"}},
          R"({"title":"Invalid amount","errors":[{"pointer":"/amount","detail":"must be positive"}]})"};
    return out;
  });
  Loop loop({kOrders, kOrdersWrite, kSearch});
  auto runner = loop.runner("orders.create", R"({"amount":-3})");
  Host host(server);
  std::vector<Action> asked;
  host.host.ask = [&](const Action& a) {
    asked.push_back(a);
    Outcome o;
    o.kind = Outcome::Kind::Resume;
    o.arguments = R"({"amount":3})";
    return o;
  };
  const Action done = runner->run(host.host);
  CHECK(done.ending == Ending::Success);
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].step == Step::Repair);
  CHECK(asked[0].envelope.field == std::optional<std::string>("amount"));
  CHECK(asked[0].envelope.suggestion == std::optional<std::string>("must be positive"));
  CHECK(keys_of(server.requests()) == std::vector<std::string>{"key-1", "key-2"});
  CHECK(server.requests()[1].body == R"({"amount":3})");
}

TEST_CASE("runner over HTTP: 503s open the breaker and the fallback is called", "[runner][http]") {
  LoopbackServer server([&](const HttpRequest& r) {
    HttpResponse out;
    if (r.path == "/search.query")
      out = {503, {}, "upstream unavailable"};
    else
      out.body = R"({"results":[],"cached":true})";
    return out;
  });
  Loop loop({kOrders, kOrdersWrite, kSearch});
  auto runner = loop.runner("search.query", R"({"q":"recourse"})");
  Host host(server);
  const Action done = runner->run(host.host);
  CHECK(done.ending == Ending::Success);
  CHECK(done.tool == "search.cache");
  std::vector<std::string> paths;
  for (const auto& r : server.requests()) paths.push_back(r.path);
  CHECK(paths == std::vector<std::string>{"/search.query", "/search.query", "/search.cache"});
  CHECK(host.slept == std::vector<std::int64_t>{200});
  CHECK(loop.health.get("search.query").circuit == recourse::CircuitState::Open);
  // The next operation finds the circuit open before its first call: search.query is not
  // called again, the cache is.
  recourse::RunnerSpec next = loop.spec("search.query", R"({"q":"again"})");
  next.operation_id = "op-2";
  const Action again = loop.runner(std::move(next))->run(host.host);
  CHECK(again.ending == Ending::Success);
  CHECK(again.tool == "search.cache");
  CHECK(again.decision->rule == "circuit:open");
  REQUIRE(server.requests().size() == 4);
  CHECK(server.requests()[3].path == "/search.cache");
  CHECK(server.requests()[3].body == R"({"q":"again"})");
}

TEST_CASE("runner over HTTP: the deadline ends the loop", "[runner][http]") {
  LoopbackServer server([&](const HttpRequest&) {
    HttpResponse out;
    out.how = HttpResponse::How::Hang;
    return out;
  });
  Loop loop({kOrders, kOrdersWrite, kSearch});
  recourse::RunnerSpec spec = loop.spec("search.query", "{}");
  spec.deadline_ms = 200;  // real ms: the call's timeout is the time left
  auto runner = loop.runner(std::move(spec));
  recourse::RunnerHost host;  // the system clock and the default sleeper
  std::vector<std::int64_t> timeouts;
  host.call = [&](const Action& a) {
    timeouts.push_back(a.timeout_ms.value_or(-1));
    return outcome_of(
        test::http_post(server.port(), "/" + a.tool, {}, a.arguments, a.timeout_ms.value_or(1000)));
  };
  const auto started = std::chrono::steady_clock::now();
  const Action done = runner->run(host);
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(done.ending == Ending::Deadline);
  REQUIRE(!timeouts.empty());
  CHECK(timeouts[0] == 200);
  CHECK(done.elapsed_ms >= 200);
  CHECK(took < std::chrono::seconds(5));
}

TEST_CASE("runner over HTTP: cancel() ends a wait", "[runner][http]") {
  LoopbackServer server([&](const HttpRequest&) {
    return HttpResponse{429, {{"Retry-After", "25"}}, ""};
  });
  Loop loop({kOrders, kOrdersWrite, kSearch});
  auto runner = loop.runner("orders.create", "{}");
  recourse::RunnerHost host;  // real time: the wait is the default sleeper's
  std::atomic<bool> called{false};
  host.call = [&](const Action& a) {
    called = true;
    return outcome_of(test::http_post(server.port(), "/" + a.tool, {}, a.arguments, 2000));
  };
  std::thread canceller([&] {
    while (!called) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    runner->cancel();
  });
  const auto started = std::chrono::steady_clock::now();
  const Action done = runner->run(host);
  canceller.join();
  CHECK(done.ending == Ending::Cancelled);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));  // not 25 s
  CHECK(server.requests().size() == 1);
  REQUIRE(done.decision);
  CHECK(done.decision->delay_ms == 25000);
}

TEST_CASE("runner over HTTP: idempotency-key-reused-after-body-change", "[runner][http][cases]") {
  // Square's catalog batch upsert, answering as the case's raw attempts do: a 429 first; a key
  // seen before with another body is IDEMPOTENCY_KEY_REUSED. The batch's placeholders resolve
  // during the wait, so the retried body differs: the runner gives it a new key, and the sync
  // goes through instead of sticking.
  std::ifstream in(std::string(RECOURSE_SOURCE_DIR) + "/tests/cases/cases-2.json");
  const json cases = json::parse(in);
  json c;
  for (const auto& each : cases)
    if (each["id"] == "idempotency-key-reused-after-body-change") c = each;
  REQUIRE(c.is_object());
  const json& attempts = c["raw"]["attempts"];
  std::ifstream policy(std::string(RECOURSE_SOURCE_DIR) +
                       "/tests/cases/idempotency-key-reused-after-body-change.recourse");
  const std::string policy_text((std::istreambuf_iterator<char>(policy)), {});
  std::map<std::string, std::string> bodies;  // key -> the body it was first used with
  bool rejected_once = false, reject_next_new_key = false;
  LoopbackServer server([&](const HttpRequest& r) {
    const std::string key = r.headers.at("idempotency-key");
    HttpResponse out;
    if (bodies.empty()) {
      bodies[key] = r.body;
      out = {attempts[0]["status"].get<int>(), {}, attempts[0]["body"].dump()};
      return out;
    }
    const bool seen = bodies.count(key);
    if ((seen && bodies[key] != r.body) || (!seen && reject_next_new_key && !rejected_once)) {
      rejected_once = true;
      out = {attempts[1]["status"].get<int>(), {}, attempts[1]["body"].dump()};
      return out;
    }
    bodies.emplace(key, r.body);
    out.body = R"({"objects":[]})";
    return out;
  });
  Loop loop({policy_text});
  const std::string placeholders = R"({"batches":[{"category":"#tmp-1"}]})";
  const std::string resolved = R"({"batches":[{"category":"CAT-9"}]})";
  SECTION("the changed body takes a new key") {
    auto runner = loop.runner("square_catalog_batch_upsert", placeholders);
    Host host(server);
    host.host.sleep = [&](std::int64_t ms) {
      host.now += ms;
      REQUIRE(runner->set_arguments(resolved).ok());  // the categories got their ids
    };
    const Action done = runner->run(host.host);
    CHECK(done.ending == Ending::Success);
    CHECK(keys_of(server.requests()) == std::vector<std::string>{"key-1", "key-2"});
    CHECK_FALSE(rejected_once);
  }
  SECTION("a key the server refuses anyway is repaired once, with a new key") {
    reject_next_new_key = true;  // e.g. a key another sync already used
    auto runner = loop.runner("square_catalog_batch_upsert", placeholders);
    Host host(server);
    host.host.sleep = [&](std::int64_t ms) {
      host.now += ms;
      (void)runner->set_arguments(resolved);
    };
    std::vector<Action> asked;
    host.host.ask = [&](const Action& a) {
      asked.push_back(a);
      Outcome o;
      o.kind = Outcome::Kind::Resume;
      return o;
    };
    const Action done = runner->run(host.host);
    CHECK(done.ending == Ending::Success);
    REQUIRE(asked.size() == 1);
    REQUIRE(asked[0].decision);
    const recourse::Decision& d = *asked[0].decision;
    CHECK(d.route == recourse::Route::Repair);
    CHECK(d.idempotency_key == recourse::KeyDirective::New);  // idempotencyKeyDirective "new"
    CHECK(d.repairs_left() == c["expected"]["limits"]["furtherRepairs"].get<std::int64_t>());
    CHECK(asked[0].envelope.field == std::optional<std::string>("idempotency_key"));
    // sameKeyResend false: every request carried a key never sent before.
    CHECK(keys_of(server.requests()) == std::vector<std::string>{"key-1", "key-2", "key-3"});
  }
}
