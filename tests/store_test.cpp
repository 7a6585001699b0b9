// The store conformance suite (store_conformance.hpp), run here against the memory store; the
// SQLite and Redis tests run it against theirs. Each part uses its own keys.
#include "store_conformance.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "recourse/state.hpp"
#include "store/logic.hpp"
#include "support.hpp"

namespace test {

using recourse::BreakerSpec;
using recourse::BucketEvent;
using recourse::BucketSpec;
using recourse::CircuitState;
using recourse::CountEvent;
using recourse::LedgerState;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "recourse-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  path = pattern;
}

TempDir::~TempDir() {
  std::filesystem::remove_all(path);
}

void sleep_ms(std::int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::vector<int> concurrently(const Backend& backend, int n, const std::function<int(int)>& fn,
                              int timeout_ms) {
  std::vector<int> results(n, -1);
  if (!backend.processes) {
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) threads.emplace_back([&, i] { results[i] = fn(i); });
    for (auto& t : threads) t.join();
    return results;
  }
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(fn(i));
    pids.push_back(pid);
  }
  const std::int64_t until = now_ms() + timeout_ms;
  for (int i = 0; i < n; ++i) {
    int status = 0;
    while (waitpid(pids[i], &status, WNOHANG) == 0) {
      if (now_ms() > until) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], &status, 0);
        status = -1;
        break;
      }
      sleep_ms(5);
    }
    results[i] = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return results;
}

namespace {

// A key no other part (or earlier run against a persistent store) uses.
std::string key(const std::string& what) {
  return what + "-" + std::to_string(getpid()) + "-" + std::to_string(now_ms());
}

void tokens(recourse::Store& s) {
  INFO("gRFC A6 token arithmetic");
  const std::string tool = key("tokens");
  const BucketSpec spec{10000, 500};
  CHECK(s.bucket(tool, BucketEvent::Read, spec, now_ms()) == 10000);
  CHECK(s.bucket(tool, BucketEvent::Success, spec, now_ms()) == 10000);  // full stays full
  for (int i = 0; i < 4; ++i) s.bucket(tool, BucketEvent::Retry, spec, now_ms());
  CHECK(s.bucket(tool, BucketEvent::Read, spec, now_ms()) == 6000);
  CHECK(s.bucket(tool, BucketEvent::Retry, spec, now_ms()) == 5000);  // now throttled: <= max/2
  CHECK(s.bucket(tool, BucketEvent::Success, spec, now_ms()) == 5500);
  CHECK(s.tool(tool, now_ms())->milli_tokens == 5500);
  for (int i = 0; i < 20; ++i) s.bucket(tool, BucketEvent::Success, spec, now_ms());
  CHECK(s.bucket(tool, BucketEvent::Read, spec, now_ms()) == 10000);  // capped at max
  for (int i = 0; i < 12; ++i) s.bucket(tool, BucketEvent::Retry, spec, now_ms());
  CHECK(s.bucket(tool, BucketEvent::Read, spec, now_ms()) == 0);  // never below 0
  // A fractional ratio stays exact in milli-tokens (0.1 token).
  CHECK(s.bucket(tool, BucketEvent::Success, {10000, 100}, now_ms()) == 100);
}

void breaker(recourse::Store& s) {
  INFO("breaker transitions");
  const std::string tool = key("breaker");
  const BreakerSpec spec{3, 0, 20, 10, 500, 500};
  auto fail = [&](const char* op) { return s.outcome(tool, op, true, spec, now_ms()); };
  auto probe = [&](const char* op) { return s.probe(tool, op, spec, now_ms()); };
  CHECK(probe("op-0") == CircuitState::Closed);
  CHECK(fail("op-1") == CircuitState::Closed);
  CHECK(fail("op-2") == CircuitState::Closed);
  CHECK(fail("op-3") == CircuitState::Open);  // the third consecutive failure opens it
  CHECK(s.tool(tool, now_ms())->consecutive_failures == 3);
  CHECK(probe("op-4") == CircuitState::Open);
  sleep_ms(600);
  CHECK(fail("op-1") == CircuitState::Open);       // in flight while open: no new cooldown
  CHECK(probe("op-5") == CircuitState::HalfOpen);  // the cooldown is over: op-5 probes
  CHECK(probe("op-6") == CircuitState::Open);      // the probe is out; others wait
  CHECK(probe("op-5") == CircuitState::HalfOpen);  // the holder may ask again
  CHECK(fail("op-6") == CircuitState::Open);       // not the probe: changes nothing
  CHECK(fail("op-5") == CircuitState::Open);       // the probe failed: another cooldown
  CHECK(probe("op-7") == CircuitState::Open);
  sleep_ms(600);
  CHECK(probe("op-7") == CircuitState::HalfOpen);
  sleep_ms(600);  // op-7's lease ran out without an outcome: another caller may probe
  CHECK(probe("op-8") == CircuitState::HalfOpen);
  CHECK(s.outcome(tool, "op-8", false, spec, now_ms()) == CircuitState::Closed);
  CHECK(probe("op-7") == CircuitState::Closed);
  CHECK(fail("op-9") == CircuitState::Closed);  // the consecutive count restarted

  const std::string ratio = key("ratio");
  const BreakerSpec by_ratio{100, 500, 4, 4, 300, 300};
  auto outcome = [&](bool failed) { return s.outcome(ratio, "op", failed, by_ratio, now_ms()); };
  outcome(false);
  outcome(true);
  CHECK(outcome(false) == CircuitState::Closed);  // 3 calls: below min_calls
  CHECK(outcome(true) == CircuitState::Open);     // 2 of 4 failed
  CHECK(s.tool(ratio, now_ms())->window == 0b0101);
}

void probe_lease(recourse::Store& s) {
  INFO("a half-open probe's lease lasts probe_lease_ms, not the cooldown");
  const std::string tool = key("lease");
  const BreakerSpec spec{1, 0, 20, 10, 300, 150};
  auto probe = [&](const char* op) { return s.probe(tool, op, spec, now_ms()); };
  REQUIRE(s.outcome(tool, "op-1", true, spec, now_ms()) == CircuitState::Open);
  sleep_ms(350);
  CHECK(probe("op-2") == CircuitState::HalfOpen);  // the cooldown is over: op-2 probes
  CHECK(probe("op-3") == CircuitState::Open);      // within op-2's lease
  const std::int64_t until = s.tool(tool, now_ms())->probe_until_ms;
  sleep_ms(200);  // op-2 never reported back: its lease (150 ms) ran out
  CHECK(probe("op-3") == CircuitState::HalfOpen);
  CHECK(s.tool(tool, now_ms())->probe_operation == "op-3");
  CHECK(s.tool(tool, now_ms())->probe_until_ms >= until + 150);
  // A late failure of the lost probe changes nothing: op-3 still holds the probe.
  CHECK(s.outcome(tool, "op-2", true, spec, now_ms()) == CircuitState::Open);
  CHECK(probe("op-3") == CircuitState::HalfOpen);
  CHECK(probe("op-4") == CircuitState::Open);
  CHECK(s.outcome(tool, "op-3", true, spec, now_ms()) == CircuitState::Open);  // reopened
  CHECK(probe("op-4") == CircuitState::Open);  // a new cooldown from op-3's failure
}

void hold(recourse::Store& s) {
  INFO("a server's wait holds the circuit open until it ends");
  const std::string tool = key("hold");
  const BreakerSpec spec{5, 0, 20, 10, 100, 100};
  auto probe = [&](const char* op) { return s.probe(tool, op, spec, now_ms()); };
  CHECK(probe("op-1") == CircuitState::Closed);
  const std::int64_t before = now_ms();
  CHECK(s.hold(tool, 500, now_ms()) == CircuitState::Open);  // a closed circuit opens
  const auto held = s.tool(tool, now_ms());
  CHECK(held->circuit == CircuitState::Open);
  CHECK(held->consecutive_failures == 0);  // a wait, not a failure
  CHECK(held->hold_until_ms >= before + 500);
  CHECK(s.hold(tool, 50, now_ms()) == CircuitState::Open);  // ends earlier: changes nothing
  CHECK(s.tool(tool, now_ms())->hold_until_ms == held->hold_until_ms);
  sleep_ms(250);  // past the cooldown (100 ms), within the hold
  CHECK(probe("op-1") == CircuitState::Open);
  sleep_ms(350);
  CHECK(probe("op-1") == CircuitState::HalfOpen);  // the hold is over: op-1 probes
  CHECK(s.outcome(tool, "op-1", false, spec, now_ms()) == CircuitState::Closed);
  CHECK(s.tool(tool, now_ms())->hold_until_ms == 0);  // a success clears it
  // A wait of any size holds, bounded by kMaxHoldMs (an INT64_MAX hint overflowed now + wait).
  // (The Redis store reads its own clock, so the end is checked within the test's.)
  const std::int64_t before_hint = now_ms();
  CHECK(s.hold(tool, INT64_MAX, before_hint) == CircuitState::Open);
  const std::int64_t end = s.tool(tool, now_ms())->hold_until_ms;
  CHECK(end >= before_hint - 1000 + recourse::detail::kMaxHoldMs);
  CHECK(end <= now_ms() + 1000 + recourse::detail::kMaxHoldMs);
}

void control(recourse::Store& s) {
  INFO("an operator's isolate, open and reset");
  using recourse::BreakerCommand;
  const std::string tool = key("control");
  const BreakerSpec spec{2, 0, 20, 10, 100, 100};
  auto probe = [&](const char* op) { return s.probe(tool, op, spec, now_ms()); };
  auto outcome = [&](const char* op, bool failed) {
    return s.outcome(tool, op, failed, spec, now_ms());
  };
  s.bucket(tool, BucketEvent::Retry, {10000, 100}, now_ms());  // 9000 milli-tokens
  const auto isolated = s.control(tool, BreakerCommand::Isolate, 0, now_ms());
  REQUIRE(isolated);
  CHECK(isolated->circuit == CircuitState::Open);
  CHECK(isolated->isolated);
  CHECK(outcome("op-1", false) == CircuitState::Open);  // a success does not close it
  CHECK(outcome("op-1", true) == CircuitState::Open);
  sleep_ms(150);  // past the cooldown: still no probe
  CHECK(probe("op-2") == CircuitState::Open);
  CHECK(s.tool(tool, now_ms())->isolated);
  CHECK(s.tool(tool, now_ms())->probe_operation.empty());
  const auto reset = s.control(tool, BreakerCommand::Reset, 0, now_ms());
  REQUIRE(reset);
  CHECK(reset->circuit == CircuitState::Closed);
  CHECK_FALSE(reset->isolated);
  CHECK(reset->consecutive_failures == 0);
  CHECK(reset->window_calls == 0);
  CHECK(reset->milli_tokens == 9000);  // the retry tokens are kept
  CHECK(probe("op-2") == CircuitState::Closed);
  CHECK(outcome("op-3", true) == CircuitState::Closed);  // counting again from 0: one of two
  // Open: as if tripped now, held for the wait given, then probed as usual.
  const std::int64_t before = now_ms();
  const auto opened = s.control(tool, BreakerCommand::Open, 400, now_ms());
  REQUIRE(opened);
  CHECK(opened->circuit == CircuitState::Open);
  CHECK_FALSE(opened->isolated);
  CHECK(opened->hold_until_ms >= before + 400);
  CHECK(opened->hold_until_ms <= now_ms() + 400);
  sleep_ms(150);  // past the cooldown (100 ms), within the hold
  CHECK(probe("op-4") == CircuitState::Open);
  sleep_ms(300);
  CHECK(probe("op-4") == CircuitState::HalfOpen);
  CHECK(outcome("op-4", false) == CircuitState::Closed);
  // Isolating a closed circuit, then opening it by hand, lifts the isolation.
  s.control(tool, BreakerCommand::Isolate, 0, now_ms());
  CHECK_FALSE(s.control(tool, BreakerCommand::Open, 0, now_ms())->isolated);
  sleep_ms(150);
  CHECK(probe("op-5") == CircuitState::HalfOpen);
  // A tool never recorded: a reset leaves it closed.
  CHECK(s.control(key("never"), BreakerCommand::Reset, 0, now_ms())->circuit ==
        CircuitState::Closed);
}

void one_probe(const Backend& backend, recourse::Store& s) {
  INFO("exactly one probe among concurrent clients");
  const std::string tool = key("probe");
  const BreakerSpec spec{1, 0, 20, 10, 1000, 1000};
  REQUIRE(s.outcome(tool, "opener", true, spec, now_ms()) == CircuitState::Open);
  const std::int64_t start = now_ms() + 1100;  // past the cooldown, once every client is up
  const auto results = concurrently(backend, 8, [&](int i) {
    auto client = backend.open({});
    if (!client) return 3;
    sleep_ms(std::max<std::int64_t>(0, start - now_ms()));
    auto c = client->probe(tool, "worker-" + std::to_string(i), spec, now_ms());
    return !c ? 4 : *c == CircuitState::HalfOpen ? 1 : *c == CircuitState::Open ? 0 : 2;
  });
  CHECK(std::count(results.begin(), results.end(), 1) == 1);
  CHECK(std::count(results.begin(), results.end(), 0) == 7);
}

void no_lost_update(const Backend& backend, recourse::Store& s) {
  INFO("no update lost among concurrent clients");
  const std::string tool = key("contended");
  const BucketSpec spec{1000000, 100};
  const std::int64_t start = now_ms() + 300;  // once every client is up
  const auto results = concurrently(backend, 4, [&](int) {
    auto client = backend.open({});
    if (!client) return 3;
    sleep_ms(std::max<std::int64_t>(0, start - now_ms()));
    for (int i = 0; i < 100; ++i) {
      if (!client->bucket(tool, BucketEvent::Retry, spec, now_ms())) return 4;
      if (!client->count(tool, {CountEvent::Attempt, 1}, now_ms())) return 4;
    }
    return 0;
  });
  CHECK(results == std::vector<int>(4, 0));
  CHECK(s.bucket(tool, BucketEvent::Read, spec, now_ms()) == 1000000 - 400 * 1000);
  CHECK(s.count(tool, {CountEvent::Read}, now_ms())->attempts == 400);
}

void keyed(recourse::Store& s) {
  INFO("one circuit per endpoint (circuit_key)");
  const std::string tool = key("keyed");
  const std::string eu = recourse::circuit_key(tool, "eu-west"),
                    us = recourse::circuit_key(tool, "us-east");
  CHECK(eu == tool + "@eu-west");
  CHECK(recourse::circuit_key(tool, "") == tool);
  const BreakerSpec spec{2, 0, 20, 10, 60000, 60000};
  CHECK(s.outcome(eu, "op-1", true, spec, now_ms()) == CircuitState::Closed);
  CHECK(s.outcome(us, "op-1", true, spec, now_ms()) == CircuitState::Closed);
  CHECK(s.outcome(eu, "op-2", true, spec, now_ms()) == CircuitState::Open);
  CHECK(s.outcome(us, "op-2", false, spec, now_ms()) == CircuitState::Closed);
  CHECK(s.probe(eu, "op-3", spec, now_ms()) == CircuitState::Open);
  CHECK(s.probe(us, "op-3", spec, now_ms()) == CircuitState::Closed);
  CHECK(s.probe(tool, "op-3", spec, now_ms()) == CircuitState::Closed);  // the tool's own
  CHECK(s.tool(eu, now_ms())->consecutive_failures == 2);
  CHECK(s.tool(us, now_ms())->consecutive_failures == 0);
  CHECK(s.tool(tool, now_ms())->consecutive_failures == 0);
  const auto isolated = s.control(us, recourse::BreakerCommand::Isolate, 0, now_ms());
  REQUIRE(isolated);
  CHECK(isolated->isolated);
  CHECK(s.control(eu, recourse::BreakerCommand::Reset, 0, now_ms())->circuit ==
        CircuitState::Closed);
  CHECK(s.probe(us, "op-4", spec, now_ms()) == CircuitState::Open);
  CHECK_FALSE(s.tool(tool, now_ms())->isolated);
}

void votes(recourse::Store& s) {
  INFO("quorum votes");
  const std::string tool = key("votes");
  CHECK(s.vote(tool, "worker-a", true, 60000, now_ms()) == 1);
  CHECK(s.vote(tool, "worker-b", true, 60000, now_ms()) == 2);
  CHECK(s.vote(tool, "worker-b", true, 60000, now_ms()) == 2);  // one vote per worker
  CHECK(s.vote(tool, "worker-c", false, 60000, now_ms()) == 2);
  CHECK(s.vote(tool, "worker-a", false, 60000, now_ms()) == 1);  // withdrawn
}

void counts(recourse::Store& s) {
  INFO("attempt and repeat counting");
  const std::string op = key("count");
  CHECK_FALSE(s.count(op, {CountEvent::Read}, now_ms())->recorded());
  const std::int64_t first = now_ms();
  s.count(op, {CountEvent::Attempt, 2}, first);
  s.count(op, {CountEvent::Failure, 0, 7}, now_ms());
  s.count(op, {CountEvent::Decision, 0, 0, true}, now_ms());
  s.count(op, {CountEvent::Attempt, 2}, now_ms());
  auto c = s.count(op, {CountEvent::Failure, 0, 7}, now_ms());
  REQUIRE(c);
  CHECK(c->attempts == 2);
  CHECK(c->repairs == 1);
  CHECK(c->repeats == 2);
  CHECK(c->cost == 4);
  CHECK(c->started_ms >= first - 1000);
  CHECK(c->started_ms <= now_ms() + 1000);
  CHECK(s.count(op, {CountEvent::Failure, 0, 8}, now_ms())->repeats == 1);  // another failure
  CHECK_FALSE(s.count(op, {CountEvent::Success}, now_ms())->recorded());
  CHECK_FALSE(s.count(op, {CountEvent::Read}, now_ms())->recorded());
}

void run_counters(const Backend& backend) {
  INFO("a run's counters, shared by the workflows of the run (recourse::Workflow)");
  const std::string run = key("run");
  recourse::Workflow a(backend.open({}), run), b(backend.open({}), run),
      other(backend.open({}), key("other-run"));
  recourse::Envelope e;
  e.code = "TRANSIENT";
  auto call = [&](recourse::Workflow& w, const char* op, const char* tool, std::int64_t cost,
                  bool failed) {
    recourse::Context c;
    c.tool = tool;
    c.operation_id = op;
    w.record_attempt(c, cost, now_ms());
    if (failed)
      w.record_failure(c, e);
    else
      w.record_success(c);
  };
  call(a, "op-1", "search", 2, true);
  call(a, "op-1", "search", 2, true);
  call(b, "op-2", "search", 2, true);      // another operation (and client) of the same run
  call(b, "op-2", "fetch", 5, false);      // a success drops op-2's counters, not the run's
  call(other, "op-1", "search", 2, true);  // another run counts apart
  recourse::Workflow reader(backend.open({}), run);
  recourse::Context c;
  c.tool = "search";
  c.operation_id = "op-3";
  reader.apply(c, now_ms());
  CHECK(c.run_calls == 4);
  CHECK(c.run_cost == 11);
  CHECK(c.run_failures == 3);
  CHECK(c.run_tool_calls == 3);
  CHECK(c.run_tool_cost == 6);
  CHECK(c.run_tool_failures == 3);
  CHECK(c.attempt == 1);  // op-3 itself has made no call
  CHECK_FALSE(c.store_unavailable);
  recourse::Context f;
  f.tool = "fetch";
  reader.apply(f, now_ms());
  CHECK(f.run_tool_calls == 1);
  CHECK(f.run_tool_failures == 0);
  CHECK(f.run_calls == 4);
}

void pushback(recourse::Store& s) {
  INFO("the attempt of the last retry on a server pushback (gRFC A6)");
  const std::string op = key("pushback");
  // A decision before any attempt records nothing, as repair_pending does not.
  CHECK(s.count(op, {CountEvent::Decision, 0, 0, false, 1}, now_ms())->pushback_attempt == 0);
  s.count(op, {CountEvent::Attempt}, now_ms());
  CHECK(s.count(op, {CountEvent::Decision, 0, 0, false, 1}, now_ms())->pushback_attempt == 1);
  s.count(op, {CountEvent::Attempt}, now_ms());
  // A decision without a pushback keeps it; a later pushback replaces it.
  CHECK(s.count(op, {CountEvent::Decision, 0, 0, true}, now_ms())->pushback_attempt == 1);
  s.count(op, {CountEvent::Attempt}, now_ms());
  s.count(op, {CountEvent::Failure, 0, 3}, now_ms());
  CHECK(s.count(op, {CountEvent::Decision, 0, 0, false, 3}, now_ms())->pushback_attempt == 3);
  const auto c = s.count(op, {CountEvent::Read}, now_ms());
  CHECK(c->attempts == 3);
  CHECK(c->repairs == 1);
  CHECK(c->pushback_attempt == 3);
  // A success drops it with the counters.
  CHECK(s.count(op, {CountEvent::Success}, now_ms())->pushback_attempt == 0);
  CHECK(s.count(op, {CountEvent::Read}, now_ms())->pushback_attempt == 0);
}

void ledger(recourse::Store& s) {
  INFO("ledger transitions");
  const std::string op = key("ledger");
  CHECK(s.read(op, now_ms())->state == LedgerState::Absent);
  auto e = s.claim(op, "key-1", 60000, now_ms());
  REQUIRE(e);
  CHECK(e->claimed);
  CHECK(e->state == LedgerState::Pending);
  CHECK(e->idempotency_key == "key-1");
  e = s.claim(op, "key-2", 60000, now_ms());  // a second worker: the claim is taken
  CHECK_FALSE(e->claimed);
  CHECK(e->state == LedgerState::Pending);
  CHECK(e->idempotency_key == "key-1");
  CHECK(s.transition(op, LedgerState::Committed, now_ms())->state == LedgerState::Committed);
  CHECK(s.transition(op, LedgerState::Released, now_ms())->state == LedgerState::Committed);
  e = s.claim(op, "key-3", 60000, now_ms());
  CHECK_FALSE(e->claimed);
  CHECK(e->state == LedgerState::Committed);

  const std::string released = key("released");
  s.claim(released, "key-a", 60000, now_ms());
  CHECK(s.transition(released, LedgerState::Released, now_ms())->state == LedgerState::Released);
  e = s.claim(released, "key-b", 60000, now_ms());  // nothing happened: claim again
  CHECK(e->claimed);
  CHECK(e->idempotency_key == "key-a");  // pinned to the operation

  const std::string lost = key("lost");
  CHECK(s.claim(lost, "key-x", 200, now_ms())->claimed);
  sleep_ms(300);  // the worker died holding the claim: the outcome is unknown
  CHECK(s.read(lost, now_ms())->state == LedgerState::Unknown);
  e = s.claim(lost, "key-y", 60000, now_ms());
  CHECK_FALSE(e->claimed);
  CHECK(e->state == LedgerState::Unknown);
  CHECK(s.transition(lost, LedgerState::Committed, now_ms())->state == LedgerState::Committed);
  CHECK(s.read(lost, now_ms())->idempotency_key == "key-x");

  auto all = s.entries(100000, now_ms());
  REQUIRE(all);
  int found = 0;
  for (const auto& x : *all)
    if (x.operation == op || x.operation == released || x.operation == lost) ++found;
  CHECK(found == 3);
}

void ttl(const Backend& backend) {
  INFO("TTL expiry");
  recourse::StoreOptions o;
  o.state_ttl_ms = 500;
  o.ledger_ttl_ms = 500;
  auto s = backend.open(o);
  REQUIRE(s);
  const std::string op = key("ttl");
  const BucketSpec spec{10000, 100};
  s->count(op, {CountEvent::Attempt, 1}, now_ms());
  s->bucket(op, BucketEvent::Retry, spec, now_ms());
  s->claim(op, "k", 60000, now_ms());
  CHECK(s->vote(op, "worker-a", true, 500, now_ms()) == 1);
  CHECK(s->vote(op, "worker-b", true, 60000, now_ms()) == 2);
  CHECK(s->count(op, {CountEvent::Read}, now_ms())->recorded());
  CHECK(s->bucket(op, BucketEvent::Read, spec, now_ms()) == 9000);
  CHECK(s->read(op, now_ms())->state == LedgerState::Pending);
  sleep_ms(700);
  CHECK_FALSE(s->count(op, {CountEvent::Read}, now_ms())->recorded());
  CHECK(s->bucket(op, BucketEvent::Read, spec, now_ms()) == 10000);
  CHECK(s->read(op, now_ms())->state == LedgerState::Absent);
  CHECK(s->vote(op, "worker-c", false, 500, now_ms()) == 0);  // a's vote ran out, b's too (TTL)
}

}  // namespace

void conformance(const Backend& backend) {
  INFO("store: " << backend.name);
  auto s = backend.open({});
  REQUIRE(s);
  tokens(*s);
  breaker(*s);
  probe_lease(*s);
  hold(*s);
  control(*s);
  keyed(*s);
  one_probe(backend, *s);
  no_lost_update(backend, *s);
  votes(*s);
  counts(*s);
  run_counters(backend);
  pushback(*s);
  ledger(*s);
  ttl(backend);
}

}  // namespace test

TEST_CASE("store: the memory store conforms", "[store]") {
  auto shared = std::make_shared<recourse::MemoryStore>();
  test::conformance(
      {"memory", [&](const recourse::StoreOptions& o) -> std::shared_ptr<recourse::Store> {
         return o.state_ttl_ms == recourse::StoreOptions{}.state_ttl_ms
                    ? shared
                    : std::make_shared<recourse::MemoryStore>(o);
       }});
}

TEST_CASE("store: open_store reads its spec", "[store]") {
  CHECK(recourse::open_store("memory").value()->name() == "memory");
  auto r = recourse::open_store("postgres://x");
  CHECK_FALSE(r.ok());
  CHECK(r.message() ==
        "unknown state store \"postgres://x\": expected memory, sqlite:PATH or redis://HOST:PORT");
}

TEST_CASE("store: read_store_spec reads every kind and names what is wrong", "[store]") {
  using Kind = recourse::StoreSpec::Kind;
  auto memory = recourse::read_store_spec("memory");
  CHECK(memory->kind == Kind::Memory);
  CHECK(memory.message().empty());
  auto sqlite = recourse::read_store_spec("sqlite:/var/lib/a:b.db");
  CHECK(sqlite->kind == Kind::Sqlite);
  CHECK(sqlite->path == "/var/lib/a:b.db");
  CHECK(sqlite.message().empty());
  auto redis = recourse::read_store_spec("redis://10.0.0.5:65535");
  CHECK(redis->kind == Kind::Redis);
  CHECK(redis->host == "10.0.0.5");
  CHECK(redis->port == 65535);
  CHECK(redis.message().empty());
  auto default_port = recourse::read_store_spec("redis://cache");
  CHECK(default_port->host == "cache");
  CHECK(default_port->port == 6379);
  CHECK(default_port.message().empty());
  auto unix_socket = recourse::read_store_spec("redis+unix:///run/redis.sock");
  CHECK(unix_socket->kind == Kind::RedisUnix);
  CHECK(unix_socket->path == "/run/redis.sock");
  CHECK(unix_socket.message().empty());

  const std::string port = "is not a number in 1..65535";
  const std::string unknown = "expected memory, sqlite:PATH or redis://HOST:PORT";
  const std::pair<std::string, std::string> malformed[] = {
      {"redis://host:abc", R"(state store "redis://host:abc": port "abc" )" + port},
      {"redis://host:65536", R"(state store "redis://host:65536": port "65536" )" + port},
      {"redis://h:99999999999",
       R"(state store "redis://h:99999999999": port "99999999999" )" + port},
      {"redis://host:0", R"(state store "redis://host:0": port "0" )" + port},
      {"redis://host:-1", R"(state store "redis://host:-1": port "-1" )" + port},
      {"redis://host:12abc", R"(state store "redis://host:12abc": port "12abc" )" + port},
      {"redis://host:", R"(state store "redis://host:": port "" )" + port},
      {"redis://:6379", R"(state store "redis://:6379": no HOST after redis://)"},
      {"redis://", R"(state store "redis://": no HOST after redis://)"},
      {"sqlite:", R"(state store "sqlite:": no PATH after sqlite:)"},
      {"redis+unix://", R"(state store "redis+unix://": no PATH after redis+unix://)"},
      {"memory\n", R"(unknown state store "memory\n": )" + unknown},
      {"", R"(unknown state store "": )" + unknown},
  };
  for (const auto& [spec, error] : malformed)
    CHECK(recourse::read_store_spec(spec).message() == error);

  auto opened = recourse::open_store("redis://host:abc");  // read, never connected
  CHECK_FALSE(opened.ok());
  CHECK(opened.message() ==
        "state store \"redis://host:abc\": port \"abc\" is not a number in 1..65535");
}
