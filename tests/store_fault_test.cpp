// Store faults (docs/state.md, "Faults"), each against a Redis or a SQLite file the test makes
// itself: every decision made through a faulty store is conservative (no retry on the shared
// budget) and flagged store_unavailable, no command crashes, and no acknowledged ledger entry is
// lost; at open, a store that cannot answer fails the command with one line naming it.
#include <fstream>

#include "recourse/state.hpp"
#include "redis_server.hpp"
#include "store_backends.hpp"
#include "store_conformance.hpp"
#include "support.hpp"

namespace {

using recourse::LedgerState;
using recourse::Route;

// Retries while the shared tokens allow; its breaker is the store's (scope shared), so every
// decision reads and writes counters, breaker, tokens and the ledger.
constexpr const char* kPolicy = R"(policy "t" {
  tool { idempotent = true }
  limits { attempts = 5 on_exhausted = degrade }
  breaker { failures = 50 cooldown = 30s scope = shared }
  throttle { max_tokens = 10 }
  rule r when retryable and code != CONTEXT_OVERFLOW -> retry
  default -> stop })";

struct Outcome {
  recourse::Decision decision;
  std::int64_t attempt = 0;
  std::optional<recourse::SideEffect> side_effect;
  bool flagged() const { return (decision.warnings & recourse::kStoreUnavailable) != 0; }
  /// Flagged, and on the fallback bucket of 0 tokens: no retry.
  bool conservative() const {
    return flagged() && decision.route == Route::Degrade && decision.rule == "budget:retry_tokens";
  }
};

// A host's decision cycle over one store (cli/state.cpp's before_decision and after_decision):
// count the attempt and the failure, read the counters, record the failure on the breaker,
// prepare (probe, tokens, the ledger), decide, record the decision.
struct Host {
  explicit Host(std::shared_ptr<recourse::Store> store)
      : workflow(store), health(store), policy(test::policy(kPolicy)) {}
  /// A failed call of `operation`; the side effect is the ledger's unless `side_effect`.
  Outcome decide(const std::string& operation, const char* side_effect = "none") {
    std::string json = R"({"tool":"t","operationId":")" + operation + "\"";
    if (side_effect) json += R"(,"sideEffect":")" + std::string(side_effect) + "\"";
    recourse::Context c = test::context(json + "}");
    const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
    const std::int64_t now = test::now_ms();
    workflow.record_attempt(c, 1, now);
    workflow.record_failure(c, e);
    workflow.apply(c, now);
    health.record_failure(policy, c, now);
    health.prepare(policy, c, now);
    Outcome out{policy.decide(e, c), c.attempt, c.side_effect};
    workflow.record_decision(c, out.decision);
    health.record_decision(policy, c, out.decision);
    return out;
  }
  recourse::Workflow workflow;
  recourse::Health health;
  recourse::Policy policy;
};

std::string cli(const std::string& args) {
  return "timeout 20 " + test::cli() + " " + args;
}

std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// The command lines of every command that takes --state, each with its inputs in `dir`; replay
// last (it takes seconds before it opens the store: its trace reader fills a 1 GiB buffer).
std::vector<std::string> state_commands(const std::string& dir) {
  const std::string policies = test::source_dir() + "/rules/examples";
  const std::string e = write(dir + "/e.json", R"({"code":"TRANSIENT","retryable":true})");
  const std::string c =
      write(dir + "/c.json", R"({"tool":"search.query","operationId":"q-1","sideEffect":"none"})");
  return {"decide -p " + policies + " -e " + e + " -c " + c,
          "simulate --runs 1 --ops 1 --policy " + policies + "/search.query.recourse", "ledger",
          "replay " + test::source_dir() + "/rules/traces/workflow.jsonl -p " + policies};
}

// Runs every --state command against `spec` (but replay, unless `replay`): each must exit 1 with
// one line on stderr, the `expected` one.
void every_command_fails(const std::string& dir, const std::string& spec,
                         const std::string& expected, bool replay = false) {
  auto commands = state_commands(dir);
  if (!replay) commands.pop_back();
  for (const auto& command : commands) {
    const auto r = test::run(cli(command + " --state " + spec + " 2>&1 >/dev/null"));
    INFO(command);
    CHECK(r.status == 1);
    CHECK(r.out == expected + "\n");
  }
}

}  // namespace

// ---- Redis ----------------------------------------------------------------------------------
#ifdef RECOURSE_HAVE_REDIS

TEST_CASE("faults: a redis that does not answer at open fails every --state command in one line",
          "[faults][redis][cli]") {
  test::RedisServer server({"always", true});
  const std::string url = server.tcp_url();
  recourse::StoreOptions o;
  o.timeout_ms = 100;

  kill(server.pid(), SIGSTOP);  // connects (the kernel accepts), never answers
  const std::int64_t start = test::now_ms();
  auto r = recourse::open_store(url, o);
  CHECK_FALSE(r.store);
  CHECK(r.error == url + " did not answer within 100 ms");
  CHECK(test::now_ms() - start < 2000);
  every_command_fails(server.dir(), url, "error: --state: " + url + " did not answer within 50 ms",
                      true);
  kill(server.pid(), SIGCONT);

  const auto busy = server.send({"DEBUG", "SLEEP", "3"});  // answers nothing for 3 s
  test::sleep_ms(50);
  r = recourse::open_store(url, o);
  CHECK_FALSE(r.store);
  CHECK(r.error == url + " did not answer within 100 ms");
  every_command_fails(server.dir(), url, "error: --state: " + url + " did not answer within 50 ms");

  server.stop(SIGKILL);
  every_command_fails(server.dir(), url,
                      "error: --state: cannot connect to " + url + ": Connection refused");
}

TEST_CASE("faults: a redis stopped, slow, or killed and restarted mid-run", "[faults][redis]") {
  test::RedisServer server;
  recourse::StoreOptions o;
  o.timeout_ms = 100;
  o.down_ms = 200;
  auto store = recourse::open_store(server.url(), o).store;
  REQUIRE(store);
  auto now = [] { return test::now_ms(); };
  REQUIRE(store->claim("paid", "key-paid", 60000, now())->claimed);  // acknowledged
  REQUIRE(store->transition("paid", LedgerState::Committed, now())->state ==
          LedgerState::Committed);
  Host host(store);
  CHECK_FALSE(host.decide("before").flagged());
  CHECK(host.decide("before").decision.route == Route::Retry);

  auto during = [&](const std::string& fault) {
    INFO(fault);
    const Outcome d = host.decide(fault);
    CHECK(d.conservative());
    CHECK(host.decide(fault, nullptr).side_effect == recourse::SideEffect::Unknown);
    CHECK_FALSE(store->claim(fault, "key", 60000, now()));  // not acknowledged
    CHECK_FALSE(store->read("paid", now()));
    CHECK_FALSE(store->entries(100, now()));  // the SCAN path
  };
  auto after = [&](const std::string& fault) {
    INFO(fault);
    test::sleep_ms(o.down_ms + 50);  // the store's own breaker lets calls through again
    const Outcome d = host.decide("after-" + fault);
    CHECK_FALSE(d.flagged());
    CHECK(d.decision.route == Route::Retry);
    CHECK(host.decide("paid", nullptr).side_effect == recourse::SideEffect::Committed);
    const auto entries = store->entries(100, now());
    REQUIRE(entries);
    CHECK(std::any_of(entries->begin(), entries->end(), [](const recourse::LedgerEntry& e) {
      return e.operation == "paid" && e.state == LedgerState::Committed;
    }));
  };

  kill(server.pid(), SIGSTOP);
  during("stopped");
  kill(server.pid(), SIGCONT);
  after("stopped");

  auto busy = server.send({"DEBUG", "SLEEP", "0.6"});
  test::sleep_ms(50);
  during("slow");
  test::sleep_ms(600);
  after("slow");

  const std::int64_t loads = recourse::detail::redis_script_loads(*store);
  server.stop(SIGKILL);
  during("killed");
  server.start();  // from its append-only file: the data is back, the scripts are not
  after("killed");
  CHECK(recourse::detail::redis_script_loads(*store) > loads);  // NOSCRIPT, loaded again
}

#endif
