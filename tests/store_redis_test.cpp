// The Redis store against a redis-server each test starts itself, on a unix socket in its own
// temp directory (never a shared port), stopped by its PID: the conformance suite with clients
// in separate processes, the ledger's durability check at connect, and the faults: a paused
// (SIGSTOP) and a killed server give flagged, conservative decisions, and the store recovers
// after a restart (which empties the script cache: the NOSCRIPT path).
#ifdef RECOURSE_HAVE_REDIS
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "store/backends.hpp"
#include "store_conformance.hpp"
#include "support.hpp"

namespace {

class RedisServer {
 public:
  explicit RedisServer(const char* appendfsync = "always") : fsync_(appendfsync) { start(); }
  ~RedisServer() { stop(SIGKILL); }
  std::string url() const { return "redis+unix://" + dir_ + "/redis.sock"; }
  pid_t pid() const { return pid_; }

  /// Starts redis-server and waits (at most 5 s) until it answers.
  void start() {
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      const std::string sock = dir_ + "/redis.sock";
      const int log = ::open((dir_ + "/redis.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      dup2(log, 1);
      dup2(log, 2);
      execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", sock.c_str(),
             "--unixsocketperm", "700", "--dir", dir_.c_str(), "--save", "", "--appendonly", "yes",
             "--appendfsync", fsync_, "--daemonize", "no", "--loglevel", "warning",
             static_cast<char*>(nullptr));
      _exit(127);  // redis-server is not installed: scripts/deps.sh installs it
    }
    for (std::int64_t until = test::now_ms() + 5000; test::now_ms() < until; test::sleep_ms(20)) {
      int status = 0;
      REQUIRE(waitpid(pid_, &status, WNOHANG) == 0);  // it exited: not installed, or bad flags
      if (answers()) return;
    }
    FAIL("redis-server did not answer within 5 s");
  }
  /// PING on a plain connection (a store would load its scripts).
  bool answers() const {
    redisContext* c = redisConnectUnix((dir_ + "/redis.sock").c_str());
    auto* r = c && !c->err ? static_cast<redisReply*>(redisCommand(c, "PING")) : nullptr;
    const bool pong = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    if (c) redisFree(c);
    return pong;
  }
  /// Removes the server's data (the append-only files): a restart then starts empty, as a new
  /// server after a failover does, without the scripts.
  void wipe() { std::filesystem::remove_all(dir_ + "/appendonlydir"); }
  /// Sends `signal` and, unless it pauses or resumes, waits (at most 5 s) for the exit.
  void stop(int signal) {
    if (pid_ <= 0) return;
    kill(pid_, signal);
    for (std::int64_t until = test::now_ms() + 5000; test::now_ms() < until; test::sleep_ms(10))
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return void(pid_ = -1);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  const char* fsync_;
  test::TempDir temp_;
  const std::string& dir_ = temp_.path;
  pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("store: the redis store conforms, with clients in separate processes", "[store][redis]") {
  RedisServer server;
  test::conformance({"redis",
                     [&](recourse::StoreOptions o) {
                       o.timeout_ms = 2000;  // a loaded machine's fsync (appendfsync always)
                       return recourse::open_store(server.url(), o).store;
                     },
                     true});
}

TEST_CASE("store: a redis ledger needs appendfsync always", "[store][redis]") {
  RedisServer server("everysec");
  auto r = recourse::open_store(server.url());
  REQUIRE(r.store);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("appendfsync everysec") != std::string::npos);
  CHECK_FALSE(r.store->claim("op", "key", 1000, 0));  // refused: reads as unavailable
  CHECK(r.store->bucket("t", recourse::BucketEvent::Read, {}, 0) == 10000);  // the rest works
}

TEST_CASE("store: a paused or killed redis gives flagged, conservative decisions, then recovers",
          "[store][redis]") {
  RedisServer server;
  recourse::StoreOptions o;
  o.timeout_ms = 250;  // a paused server never answers; a loaded one does within this
  o.down_ms = 400;
  auto store = recourse::open_store(server.url(), o).store;
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
