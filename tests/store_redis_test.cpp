// The Redis store against a redis-server each test starts itself (redis_server.hpp): the
// conformance suite with clients in separate processes, the ledger's durability check at connect,
// and the faults: a paused (SIGSTOP) and a killed server give flagged, conservative decisions, and
// the store recovers after a restart (which empties the script cache: the NOSCRIPT path).
#ifdef RECOURSE_HAVE_REDIS
#include "redis_server.hpp"
#include "store/backends.hpp"

using test::RedisServer;

TEST_CASE("store: the redis store conforms, with clients in separate processes", "[store][redis]") {
  RedisServer server;
  test::conformance({"redis",
                     [&](recourse::StoreOptions o) {
                       o.timeout_ms = 2000;  // a loaded machine's fsync (appendfsync always)
                       return recourse::open_store(server.url(), o).value();
                     },
                     true});
}

TEST_CASE("store: a redis ledger needs appendfsync always", "[store][redis]") {
  RedisServer server({"everysec"});
  auto r = recourse::open_store(server.url());
  REQUIRE(r.ok());
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].message.find("appendfsync everysec") != std::string::npos);
  CHECK_FALSE(r.value()->claim("op", "key", 1000, 0));  // refused: reads as unavailable
  CHECK(r.value()->bucket("t", recourse::BucketEvent::Read, {}, 0) == 10000);  // the rest works
}

TEST_CASE("store: a paused or killed redis gives flagged, conservative decisions, then recovers",
          "[store][redis]") {
  RedisServer server;
  recourse::StoreOptions o;
  o.timeout_ms = 250;  // a paused server never answers; a loaded one does within this
  o.down_ms = 400;
  auto store = recourse::open_store(server.url(), o).value();
  REQUIRE(store);
  const auto p = test::policy(R"(policy "t" {
    tool { idempotent = true }
    limits { attempts = 5 on_exhausted = degrade }
    throttle { max_tokens = 10 }
    rule r when retryable and code != CONTEXT_OVERFLOW -> retry
    default -> stop })");
  const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  recourse::Health health(store);
  auto decide = [&] {
    recourse::Context c = test::context(R"({"tool":"t","sideEffect":"none","operationId":"op"})");
    health.prepare(p, c, test::now_ms());
    return p.decide(e, c);
  };
  auto flagged = [](const recourse::Decision& d) {
    return (d.warnings & recourse::kStoreUnavailable) != 0;
  };
  auto d = decide();
  CHECK(d.route == recourse::Route::Retry);
  CHECK_FALSE(flagged(d));

  SECTION("paused") {
    kill(server.pid(), SIGSTOP);
    d = decide();  // the call times out: fallback bucket of 0 tokens, no retry
    CHECK(flagged(d));
    CHECK(d.route == recourse::Route::Degrade);
    CHECK(d.rule == "budget:retry_tokens");
    d = decide();  // the store's breaker fails fast
    CHECK(flagged(d));
    CHECK(health.store_unavailable() == 2);
    kill(server.pid(), SIGCONT);
    test::sleep_ms(500);
    d = decide();
    CHECK_FALSE(flagged(d));
    CHECK(d.route == recourse::Route::Retry);
  }
  SECTION("killed and restarted") {
    const std::int64_t loads = recourse::detail::redis_script_loads(*store);
    server.stop(SIGKILL);
    d = decide();
    CHECK(flagged(d));
    CHECK(d.route == recourse::Route::Degrade);
    server.wipe();
    server.start();  // an empty script cache: the next call meets NOSCRIPT
    test::sleep_ms(500);
    d = decide();
    CHECK_FALSE(flagged(d));
    CHECK(d.route == recourse::Route::Retry);
    CHECK(recourse::detail::redis_script_loads(*store) == loads + 1);  // the bucket's script
    CHECK(health.store_unavailable() == 1);
  }
}
#endif
