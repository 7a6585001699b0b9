// Budget state: gRFC A6 retry tokens, circuit breaker transitions, per-operation counters, and
// JSON round trips. Time is passed in; nothing reads a clock.
#include <nlohmann/json.hpp>
#include <set>

#include "recourse/state.hpp"
#include "support.hpp"

namespace {

using recourse::CircuitState;
using recourse::Route;

recourse::Decision with_route(Route route) {
  recourse::Decision d;
  d.route = route;
  return d;
}

}  // namespace

TEST_CASE("state: retry tokens: every failure gRFC A6 counts takes one, then the check",
          "[state][a6]") {
  const auto p = test::policy(R"(policy "t" {
    throttle { max_tokens = 10 token_ratio = 0.5 }
    rule r when code in [TRANSIENT, TIMEOUT] and retryable -> retry
    rule v when code == VALIDATION -> stop
    default -> stop })");
  const auto transient = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  const auto validation = test::envelope(R"({"code":"VALIDATION","retryable":false})");
  recourse::Health health;
  recourse::Context c;
  c.tool = "t";
  health.prepare(p, c, 0);
  CHECK_FALSE(c.retry_throttled);
  // A failure of a code the policy does not retry takes nothing; nor do decisions.
  for (int i = 0; i < 20; ++i) {
    health.record_failure(p, c, 0, &validation);
    health.record_decision(p, c, with_route(Route::Retry));
  }
  CHECK(health.get("t").milli_tokens == -1);
  // Each counted failure takes one before the check: the fifth leaves 5 of 10, already
  // throttled (10 -> 5 after 5 failures; the decision that follows sees it).
  for (int i = 0; i < 4; ++i) health.record_failure(p, c, 0, &transient);
  health.prepare(p, c, 0);
  CHECK(health.get("t").milli_tokens == 6000);
  CHECK_FALSE(c.retry_throttled);
  health.record_failure(p, c, 0, &transient);
  health.prepare(p, c, 0);
  CHECK(health.get("t").milli_tokens == 5000);
  CHECK(c.retry_throttled);
  // Throttled failures still count (A6: "retried or not"): the bucket drains below half.
  health.record_failure(p, c, 0, &transient);
  CHECK(health.get("t").milli_tokens == 4000);
  // A success gives token_ratio back: 4.5, then 5, then 5.5 > 5: retries allowed again.
  for (int i = 0; i < 3; ++i) health.record_success(p, c, 0);
  health.prepare(p, c, 0);
  CHECK(health.get("t").milli_tokens == 5500);
  CHECK_FALSE(c.retry_throttled);
  // Tokens never exceed max_tokens nor drop below 0; without an envelope every failure counts.
  for (int i = 0; i < 50; ++i) health.record_success(p, c, 0);
  CHECK(health.get("t").milli_tokens == 10000);
  for (int i = 0; i < 50; ++i) health.record_failure(p, c, 0);
  CHECK(health.get("t").milli_tokens == 0);
}

TEST_CASE("state: the failures A6 counts are the codes a policy's retry rules take",
          "[state][a6]") {
  auto counted = [](const std::string& rules, const std::string& envelope) {
    const auto p = test::policy(R"(policy "t" { throttle { max_tokens = 4 } )" + rules + " }");
    recourse::Health health;
    recourse::Context c;
    c.tool = "t";
    const auto e = test::envelope(envelope);
    health.record_failure(p, c, 0, &e);
    return health.get("t").milli_tokens == 3000;
  };
  const std::string some = R"(rule r when code in [TRANSIENT, TIMEOUT] and retryable -> retry
      rule v when code == VALIDATION -> repair  default -> stop)";
  CHECK(counted(some, R"({"code":"TRANSIENT","retryable":true})"));
  CHECK(counted(some, R"({"code":"TRANSIENT","retryable":false})"));  // a don't-retry pushback
  CHECK(counted(some, R"({"code":"TIMEOUT"})"));
  CHECK_FALSE(counted(some, R"({"code":"VALIDATION","retryable":false})"));
  CHECK_FALSE(counted(some, R"({"code":"RATE_LIMITED","retryable":true})"));
  CHECK_FALSE(counted(some, R"({"code":"NO_SUCH_CODE"})"));  // read as UNKNOWN
  CHECK_FALSE(counted(some, R"({"message":"no code"})"));
  const std::string negated =
      "rule r when code is present and not (code in [VALIDATION, CONTEXT_OVERFLOW]) -> retry "
      "default -> stop";
  CHECK(counted(negated, R"({"code":"RATE_LIMITED"})"));
  CHECK(counted(negated, R"({"code":"NO_SUCH_CODE"})"));
  CHECK_FALSE(counted(negated, R"({"code":"VALIDATION"})"));
  CHECK(counted("rule r when retryable and code != CONTEXT_OVERFLOW -> retry  default -> stop",
                R"({"code":"VALIDATION"})"));
  CHECK(counted("rule c when code == CONTEXT_OVERFLOW -> stop  default -> retry",
                R"({"code":"PERMISSION"})"));
  CHECK_FALSE(
      counted("rule r when code is absent -> retry  default -> stop", R"({"code":"TRANSIENT"})"));
  CHECK(counted("rule r when code is absent -> retry  default -> stop", R"({"message":"m"})"));
}

TEST_CASE("state: grpc-go's TestRetryThrottling, call by call", "[state][a6]") {
  // grpc-go test/retry_test.go: maxAttempts 4, retryableStatusCodes [UNAVAILABLE], maxTokens 10,
  // tokenRatio 0.5; the server answers OK on its calls 0, 3, 6, 10, 11, 12, 13, 14, 16 and 18
  // and UNAVAILABLE otherwise. Each row: the call's outcome, the server's call count after it
  // (the test's `i`), and the tokens after it.
  const auto p = test::policy(R"(policy "g" {
    limits { attempts = 4 }
    throttle { max_tokens = 10 token_ratio = 0.5 }
    rule r when code == TRANSIENT -> retry
    default -> stop })");
  const auto unavailable = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  const std::set<int> ok = {0, 3, 6, 10, 11, 12, 13, 14, 16, 18};
  struct Call {
    bool ok;
    int count;
    std::int64_t milli;
  };
  const Call calls[] = {{true, 0, 10000}, {true, 3, 8500},  {true, 6, 7000},  {false, 8, 5000},
                        {false, 9, 4000}, {true, 10, 4500}, {true, 11, 5000}, {true, 12, 5500},
                        {true, 13, 6000}, {true, 14, 6500}, {true, 16, 6000}, {false, 17, 5000}};
  recourse::Health health;
  int i = -1;
  for (const Call& call : calls) {
    recourse::Context c = test::context(R"({"tool":"g","sideEffect":"none"})");
    bool succeeded = false;
    for (c.attempt = 1;; ++c.attempt) {
      if (ok.count(++i)) {
        health.record_success(p, c, 0);
        succeeded = true;
        break;
      }
      health.record_failure(p, c, 0, &unavailable);
      health.prepare(p, c, 0);
      const auto d = p.decide(unavailable, c);
      health.record_decision(p, c, d);
      if (d.route != Route::Retry) break;
    }
    INFO("call ending at " << call.count);
    CHECK(succeeded == call.ok);
    CHECK(i == call.count);
    const std::int64_t milli = health.get("g").milli_tokens;
    CHECK((milli < 0 ? 10000 : milli) == call.milli);
  }
}

TEST_CASE("state: grpc-java's RetriableStreamTest throttling sequences", "[state][a6]") {
  // grpc-java RetriableStreamTest: Throttle(4, 0.8); RETRIABLE_STATUS_CODE_1 is a code the
  // policy retries (TRANSIENT here), NON_RETRIABLE_STATUS_CODE one it does not (VALIDATION).
  const auto p = test::policy(R"(policy "j" {
    throttle { max_tokens = 4 token_ratio = 0.8 }
    rule r when code == TRANSIENT -> retry
    default -> stop })");
  auto e = [](const char* json) { return test::envelope(json); };
  const auto retriable = e(R"({"code":"TRANSIENT","retryable":true})");
  const auto non_retriable = e(R"({"code":"VALIDATION","retryable":false})");
  auto above = [&](recourse::Health& h) {  // Throttle.isAboveThreshold()
    recourse::Context c;
    c.tool = "j";
    h.prepare(p, c, 0);
    return !c.retry_throttled;
  };
  recourse::Context c;
  c.tool = "j";
  SECTION("throttle: failures, then successes") {
    recourse::Health h;
    const bool expected[] = {true, false, false, false, false, false};  // 3, 2, 1, 0, 0, 0
    for (bool want : expected) {
      h.record_failure(p, c, 0, &retriable);  // onQualifiedFailureThenCheckIsAboveThreshold
      CHECK(above(h) == want);
    }
    const std::int64_t tokens[] = {800, 1600, 2400, 3200, 4000, 4000};
    for (std::int64_t t : tokens) {
      h.record_success(p, c, 0);
      CHECK(h.get("j").milli_tokens == t);
      CHECK(above(h) == (t * 2 > 4000));
    }
    h.record_failure(p, c, 0, &retriable);
    CHECK(above(h));  // 3
    h.record_failure(p, c, 0, &retriable);
    CHECK_FALSE(above(h));  // 2
  }
  // Each stream: another call's counted failure first (4 -> 3), then the stream's own.
  auto stream = [&](const recourse::Envelope& failure) {
    recourse::Health h;
    h.record_failure(p, c, 0, &retriable);
    CHECK(above(h));
    h.record_failure(p, c, 0, &failure);
    return h.get("j").milli_tokens;
  };
  SECTION("FailWithRetriableStatusCode_WithoutPushback: counted, no retry") {
    CHECK(stream(retriable) == 2000);
  }
  SECTION("FailWithNonRetriableStatusCode_WithoutPushback: not counted") {
    CHECK(stream(non_retriable) == 3000);
  }
  SECTION("FailWithRetriableStatusCode_WithRetriablePushback: counted") {
    CHECK(stream(e(R"({"code":"TRANSIENT","retryable":true,"retryAfterMs":123})")) == 2000);
  }
  SECTION("FailWithNonRetriableStatusCode_WithRetriablePushback: not counted") {
    CHECK(stream(e(R"({"code":"VALIDATION","retryable":false,"retryAfterMs":123})")) == 3000);
  }
  SECTION("FailWithRetriableStatusCode_WithNonRetriablePushback: counted") {
    CHECK(stream(e(R"({"code":"TRANSIENT","retryable":false})")) == 2000);
  }
  // A don't-retry pushback as the gRPC adapter reads it: grpc-java's test sends an empty
  // grpc-retry-pushback-ms; NON_RETRIABLE_STATUS_CODE is INTERNAL, RETRIABLE_STATUS_CODE_1
  // UNAVAILABLE (TRANSIENT).
  auto pushed_back = [](const char* status) {
    return recourse::from_grpc(status, "", {{"grpc-retry-pushback-ms", ""}})->envelope;
  };
  SECTION("FailWithRetriableStatusCode_WithNonRetriablePushback, from the adapter: counted") {
    CHECK(stream(pushed_back("UNAVAILABLE")) == 2000);
  }
  SECTION("FailWithNonRetriableStatusCode_WithNonRetriablePushback: counted") {
    // A6 counts "a pushback response indicating not to retry" whatever the code: INTERNAL
    // (UNKNOWN here) is not a code the policy retries, and still takes a token.
    const auto internal = pushed_back("INTERNAL");
    CHECK(internal.code == "UNKNOWN");
    CHECK(internal.retryable == false);
    CHECK(stream(internal) == 2000);
    // A plain retryable false on that code, without the pushback, takes nothing.
    CHECK(stream(e(R"({"code":"UNKNOWN","retryable":false})")) == 3000);
  }
  SECTION("Succeed: three counted failures, then successes") {
    recourse::Health h;
    for (int k = 0; k < 3; ++k) h.record_failure(p, c, 0, &retriable);  // 1
    h.record_success(p, c, 0);
    CHECK(h.get("j").milli_tokens == 1800);
    CHECK_FALSE(above(h));
    h.record_success(p, c, 0);
    CHECK(h.get("j").milli_tokens == 2600);
    CHECK(above(h));
  }
}

TEST_CASE("state: the backoff restarts after a server pushback, as grpc-java's pushback()",
          "[state][a6]") {
  // grpc-java RetriableStreamTest.pushback(): maxAttempts 6, initialBackoff 100 s, maxBackoff
  // 700 s, backoffMultiplier 2, retryable UNAVAILABLE and DATA_LOSS. Attempt 1 fails with a
  // pushback of 123 ms, attempt 2 with one of 4567 s; attempts 3, 4 and 5 fail without one and
  // wait the initial backoff, then twice, then four times it (the test's random is 0.5 of those;
  // jitter none here gives the bounds themselves); attempt 6 fails with a pushback and is not
  // retried: the attempts are spent. recourse waits at least the backoff, so attempt 1's retry
  // waits 100 s, not 123 ms (docs/language.md section 12).
  const auto p = test::policy(R"(policy "g" {
    limits { attempts = 6  retry_after_max = 2h }
    backoff exponential base 100s factor 2 max 700s jitter none
    rule r when code in [TRANSIENT, UNKNOWN] -> retry
    default -> stop })");
  const auto unavailable = [](const char* pushback) {
    recourse::Headers metadata;
    if (pushback) metadata.push_back({"grpc-retry-pushback-ms", pushback});
    return recourse::from_grpc("UNAVAILABLE", "", metadata)->envelope;
  };
  struct Failure {
    const char* pushback;
    Route route;
    std::int64_t delay_ms, backoff_attempt, pushback_attempt;  // pushback_attempt: after it
  };
  const Failure failures[] = {
      {"123", Route::Retry, 100000, 0, 1},   {"4567000", Route::Retry, 4567000, 1, 2},
      {nullptr, Route::Retry, 100000, 1, 2}, {nullptr, Route::Retry, 200000, 2, 2},
      {nullptr, Route::Retry, 400000, 3, 2}, {"4567000", Route::Stop, 0, 0, 2}};
  recourse::Workflow workflow;
  std::int64_t now = 0;
  for (const Failure& f : failures) {
    recourse::Context c = test::context(R"({"tool":"g","sideEffect":"none","operationId":"op"})");
    const auto e = unavailable(f.pushback);
    workflow.record_attempt(c, 0, now);
    workflow.record_failure(c, e);
    workflow.apply(c, now);
    const auto d = p.decide(e, c);
    workflow.record_decision(c, d);
    INFO("attempt " << c.attempt);
    CHECK(d.route == f.route);
    CHECK(d.delay_ms == f.delay_ms);
    CHECK(d.backoff_attempt == f.backoff_attempt);
    CHECK(workflow.find("op", "g")->pushback_attempt == f.pushback_attempt);
    now += d.delay_ms;
  }
  CHECK(p.decide(unavailable(nullptr), test::context(R"({"tool":"g","sideEffect":"none",
      "operationId":"op","attempt":5})"))
            .delay_ms == 700000);  // without the restart: 1600 s, capped
  // The decision shows the step it counted; the state keeps it across a restore.
  recourse::Workflow restored;
  REQUIRE(restored.from_json(workflow.to_json()).ok());
  CHECK(restored.find("op", "g")->pushback_attempt == 2);
  CHECK(workflow.to_json().find(R"("pushbackAttempt":2)") != std::string::npos);
  // A success drops it with the counters: the next operation's first retry waits 100 s.
  workflow.record_success(test::context(R"({"tool":"g","operationId":"op"})"));
  CHECK_FALSE(workflow.find("op", "g"));
}

TEST_CASE("state: a host without a Workflow passes pushbackAttempt", "[state][a6]") {
  // grpc-go stream.go counts numRetriesSincePushback: the backoff of the retry after attempt n
  // is initialBackoff * multiplier^(n - pushbackAttempt - 1).
  const auto p = test::policy(R"(policy "h" {
    limits { attempts = 10 }
    backoff exponential base 1s factor 2 max 1m jitter none
    rule r when code == TRANSIENT -> retry
    default -> stop })");
  const auto e = test::envelope(R"({"code":"TRANSIENT"})");
  auto decide = [&](const char* context) {
    return p.decide(e, test::context(R"({"tool":"h","sideEffect":"none",)" + std::string(context)));
  };
  CHECK(decide(R"("attempt":4})").delay_ms == 8000);
  CHECK(decide(R"("attempt":4,"pushbackAttempt":2})").delay_ms == 2000);
  CHECK(decide(R"("attempt":4,"pushbackAttempt":2})").backoff_attempt == 2);
  CHECK(decide(R"("attempt":4,"pushbackAttempt":3})").delay_ms == 1000);
  // At or after the attempt (stale, or the host's own count) it changes nothing.
  CHECK(decide(R"("attempt":4,"pushbackAttempt":4})").delay_ms == 8000);
  CHECK(decide(R"("attempt":4,"pushbackAttempt":9})").backoff_attempt == 0);
  const std::string json = recourse::to_json(decide(R"("attempt":4,"pushbackAttempt":3})"), e);
  CHECK(json.find(R"("attempt":4,"backoffAttempt":1,)") != std::string::npos);
  CHECK(recourse::to_json(decide(R"("attempt":4})"), e).find("backoffAttempt") ==
        std::string::npos);
}

TEST_CASE("state: the breaker opens, half-opens for one probe, and closes", "[state]") {
  const auto p =
      test::policy(R"(policy "b" { breaker { failures = 3 cooldown = 10s } default -> stop })");
  recourse::Health health;
  auto call = [](const char* operation) {
    recourse::Context c;
    c.tool = "b";
    c.operation_id = operation;
    return c;
  };
  auto circuit = [&](const char* operation, std::int64_t now) {
    recourse::Context c = call(operation);
    health.prepare(p, c, now);
    return c.circuit;
  };
  health.record_failure(p, call("op-1"), 1000);
  health.record_failure(p, call("op-2"), 2000);
  CHECK(circuit("op-3", 2000) == CircuitState::Closed);
  health.record_failure(p, call("op-3"), 3000);  // third consecutive: opens
  CHECK(circuit("op-4", 3000) == CircuitState::Open);
  health.record_failure(p, call("op-1"), 9000);  // in flight while open: no new cooldown
  CHECK(circuit("op-4", 12999) == CircuitState::Open);
  CHECK(circuit("op-5", 13000) == CircuitState::HalfOpen);  // cooldown over: op-5 probes
  CHECK(circuit("op-6", 13001) == CircuitState::Open);      // the probe is out; others wait
  CHECK(circuit("op-5", 13002) == CircuitState::HalfOpen);  // the holder may ask again
  SECTION("a successful probe closes the circuit") {
    health.record_success(p, call("op-5"), 13500);
    CHECK(circuit("op-6", 13500) == CircuitState::Closed);
    health.record_failure(p, call("op-6"), 14000);
    CHECK(circuit("op-6", 14000) == CircuitState::Closed);  // consecutive count restarted
  }
  SECTION("a failed probe reopens it for another cooldown") {
    health.record_failure(p, call("op-6"), 13400);  // not the probe: changes nothing
    health.record_failure(p, call("op-5"), 13500);  // the probe
    CHECK(circuit("op-7", 23499) == CircuitState::Open);
    CHECK(circuit("op-7", 23500) == CircuitState::HalfOpen);
  }
}

TEST_CASE("state: the breaker opens on a failure ratio over its window", "[state]") {
  const auto p = test::policy(
      R"(policy "r" { breaker { failures = 100 ratio = 0.5 window = 4 min_calls = 4 } default -> stop })");
  recourse::Health health;
  recourse::Context c;
  c.tool = "r";
  health.record_success(p, c, 0);
  health.record_failure(p, c, 0);
  health.record_success(p, c, 0);
  health.prepare(p, c, 0);
  CHECK(c.circuit == CircuitState::Closed);  // 3 calls: below min_calls
  health.record_failure(p, c, 0);            // 2 of 4 failed
  health.prepare(p, c, 0);
  CHECK(c.circuit == CircuitState::Open);
}

TEST_CASE("state: an open circuit routes retries to on_open", "[state]") {
  const auto p = test::policy(R"(policy "o" {
    limits { on_open = degrade }
    breaker { failures = 1 cooldown = 1m }
    rule r when retryable and code != CONTEXT_OVERFLOW -> retry
    default -> stop })");
  recourse::Health health;
  recourse::Context c = test::context(R"({"tool":"o","sideEffect":"none"})");
  const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  health.prepare(p, c, 0);
  CHECK(p.decide(e, c).route == Route::Retry);
  health.record_failure(p, c, 0);
  health.prepare(p, c, 1000);
  const auto d = p.decide(e, c);
  CHECK(d.route == Route::Degrade);
  CHECK(d.rule == "circuit:open");
}

TEST_CASE("state: a workflow counts attempts, repairs, repeats, cost and time", "[state]") {
  recourse::Workflow wf;
  recourse::Context base;
  base.tool = "t";
  base.operation_id = "op";
  base.args_hash = "args-1";
  const auto e = test::envelope(R"({"code":"VALIDATION","field":"a"})");
  auto at = [&](std::int64_t now) {  // the context a host builds for a decision at `now`
    recourse::Context c = base;
    wf.apply(c, now);
    return c;
  };
  wf.record_attempt(base, 2, 1000);
  wf.record_failure(base, e);
  auto c = at(1500);
  CHECK(c.attempt == 1);
  CHECK(c.repeats == 1);
  CHECK(c.cost_spent == 2);
  CHECK(c.elapsed_ms == 500);
  wf.record_decision(base, with_route(Route::Repair));
  wf.record_attempt(base, 2, 2000);
  wf.record_failure(base, e);  // same call, same failure
  c = at(2500);
  CHECK(c.attempt == 2);
  CHECK(c.repairs == 1);
  CHECK(c.repeats == 2);
  CHECK(c.cost_spent == 4);
  wf.record_decision(base, with_route(Route::Retry));
  wf.record_attempt(base, 2, 3000);
  base.args_hash = "args-2";
  wf.record_failure(base, e);  // reshaped arguments, the same field rejected: the same failure
  c = at(3000);
  CHECK(c.attempt == 3);
  CHECK(c.repairs == 1);
  CHECK(c.repeats == 3);
  CHECK(c.elapsed_ms == 2000);
  // Without a field the arguments tell failures apart: other arguments, a new failure.
  const auto timeout = test::envelope(R"({"code":"TIMEOUT"})");
  wf.record_failure(base, timeout);
  CHECK(at(3000).repeats == 1);
  wf.record_failure(base, timeout);
  CHECK(at(3000).repeats == 2);
  base.args_hash = "args-3";
  wf.record_failure(base, timeout);
  CHECK(at(3000).repeats == 1);
  // A count the host gives higher is kept.
  base.attempt = 7;
  CHECK(at(3000).attempt == 7);

  wf.record_success(base);
  CHECK_FALSE(wf.find("op", "t"));
}

TEST_CASE("state: counters are kept per operation and tool", "[state]") {
  const auto p = test::policy(R"(policy "a" {
    tool { idempotent = true }
    limits { attempts = 4 on_exhausted = escalate }
    rule r when code == TRANSIENT -> retry
    default -> stop })");
  const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  recourse::Workflow wf;
  auto call = [](const char* tool) {
    recourse::Context c;
    c.tool = tool;
    c.operation_id = "op";
    c.side_effect = recourse::SideEffect::None;
    return c;
  };
  std::int64_t now = 0;
  auto fail = [&](const char* tool) {  // the host's loop for one failed call
    recourse::Context c = call(tool);
    wf.record_attempt(c, 1, now);
    wf.record_failure(c, e);
    wf.apply(c, now);
    const auto d = p.decide(e, c);
    wf.record_decision(c, d);
    now += 1000;
    return std::pair(c.attempt, std::string(d.rule));
  };
  // Failures of tool a alternate with successes (and failures) of tool b under one operation
  // id: b's outcomes neither reset a's count nor add to it, so a's fourth call is its last.
  std::vector<std::pair<std::int64_t, std::string>> a;
  for (int i = 0; i < 10; ++i) {
    a.push_back(fail("a"));
    fail("b");
    wf.record_success(call("b"));
  }
  REQUIRE(a.size() == 10);
  CHECK(a[0] == std::pair<std::int64_t, std::string>(1, "r"));
  CHECK(a[2] == std::pair<std::int64_t, std::string>(3, "r"));
  CHECK(a[3] == std::pair<std::int64_t, std::string>(4, "budget:attempts"));
  CHECK(a[9] == std::pair<std::int64_t, std::string>(10, "budget:attempts"));
  REQUIRE(wf.find("op", "a"));
  CHECK(wf.find("op", "a")->attempts == 10);
  CHECK_FALSE(wf.find("op", "b"));  // b's own success dropped b's counters
  fail("b");
  // A success of a drops a's counters only.
  wf.record_success(call("a"));
  CHECK_FALSE(wf.find("op", "a"));
  REQUIRE(wf.find("op", "b"));
  CHECK(wf.find("op", "b")->attempts == 1);
  CHECK(fail("a").first == 1);
}

TEST_CASE("state: workflow counters survive a JSON round trip", "[state]") {
  // Ids holding the key's separators stay apart: (a/b, c) and (a, b/c) are two counters.
  auto store = std::make_shared<recourse::MemoryStore>();
  recourse::Workflow wf(store, "wf/1");
  auto attempt = [&](const char* operation, const char* tool, std::int64_t cost) {
    recourse::Context c;
    c.operation_id = operation;
    c.tool = tool;
    wf.record_attempt(c, cost, 5);
  };
  attempt("a/b", "c", 1);
  attempt("a", "b/c", 2);
  attempt("a", "b/c", 2);
  attempt("100%", "t", 3);
  REQUIRE(wf.find("a/b", "c"));
  CHECK(wf.find("a/b", "c")->attempts == 1);
  CHECK(wf.find("a", "b/c")->attempts == 2);
  CHECK(wf.find("100%", "t")->cost == 3);
  CHECK_FALSE(wf.find("a", "b"));
  const auto json = nlohmann::json::parse(wf.to_json());
  CHECK(json["version"] == 2);
  CHECK(json["operations"]["a/b"]["c"]["attempts"] == 1);
  CHECK(json["operations"]["a"]["b/c"]["attempts"] == 2);
  CHECK(json["operations"]["a"]["b/c"]["cost"] == 4);
  CHECK(json["operations"]["100%"]["t"]["startedMs"] == 5);

  recourse::Workflow copy(nullptr, "another scope");
  std::string error;
  REQUIRE(copy.from_json(wf.to_json()).ok());
  CHECK(copy.to_json() == wf.to_json());
  CHECK(copy.find("a", "b/c")->attempts == 2);
  error = copy.from_json(R"({"version":2,"operations":{"op":{"t":{"attempts":-1}}}})").message();
  CHECK_FALSE(error.empty());
  CHECK(
      error ==
      R"(workflow state: operation "op", tool "t": "attempts": expected a whole number >= 0, got -1)");
  error = copy.from_json(R"({"version":2,"operations":{"op":{"attempts":1}}})").message();
  CHECK_FALSE(error.empty());
  CHECK(error ==
        R"(workflow state: operation "op", tool "attempts": a record is a JSON object, not 1)");
  error = copy.from_json(R"({"version":3,"operations":{}})").message();
  CHECK_FALSE(error.empty());
  CHECK(error == "workflow state: version 3 is not 2, the version this build reads");
  error = copy.from_json("not json").message();
  CHECK_FALSE(error.empty());
  // The form before version 2 counted per operation alone: its counters cannot be given a tool.
  error = copy.from_json(R"({"operations":{"op":{"attempts":1}},"tools":{}})").message();
  CHECK_FALSE(error.empty());
  CHECK(error ==
        "workflow state: counters per operation alone, the form before version 2, cannot be "
        "restored: version 2 keeps them per operation and tool, and which tool they counted is "
        "not recorded");
  CHECK(copy.to_json() == wf.to_json());  // a failed restore changes nothing
  REQUIRE(copy.from_json(R"({"operations":{},"tools":{}})").ok());  // nothing to place
  CHECK(copy.to_json() == R"({"operations":{},"version":2})");
}

TEST_CASE("state: health survives a JSON round trip", "[state]") {
  const auto p = test::policy(
      R"(policy "b" { breaker { failures = 1 } throttle { max_tokens = 4 } default -> stop })");
  recourse::Health health;
  recourse::Context c;
  c.tool = "b";
  health.record_failure(p, c, 42);
  health.record_decision(p, c, with_route(Route::Retry));
  recourse::Health copy;
  std::string error;
  REQUIRE(copy.from_json(health.to_json()).ok());
  CHECK(copy.to_json() == health.to_json());
  CHECK(copy.get("b").circuit == CircuitState::Open);
  CHECK(copy.get("b").opened_ms == 42);
  CHECK(copy.get("b").milli_tokens == 3000);
  error = copy.from_json(R"({"tools":{"b":{"circuit":"ajar"}}})").message();
  CHECK_FALSE(error.empty());
  CHECK(error ==
        R"(health state: tool "b": "circuit": expected closed, open or half_open, got "ajar")");
}

namespace {

// A store that never answers (an outage).
struct DownStore final : recourse::Store {
  std::optional<std::int64_t> bucket(std::string_view, recourse::BucketEvent,
                                     const recourse::BucketSpec&, std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<CircuitState> outcome(std::string_view, std::string_view, bool,
                                      const recourse::BreakerSpec&,
                                      std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<CircuitState> probe(std::string_view, std::string_view,
                                    const recourse::BreakerSpec&, std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<CircuitState> hold(std::string_view, std::int64_t, std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<recourse::ToolHealth> control(std::string_view, recourse::BreakerCommand,
                                              std::int64_t, std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<std::int64_t> vote(std::string_view, std::string_view, bool, std::int64_t,
                                   std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<recourse::ToolHealth> tool(std::string_view, std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<recourse::OperationState> count(std::string_view, const recourse::CountEvent&,
                                                std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<recourse::LedgerEntry> claim(std::string_view, std::string_view, std::int64_t,
                                             std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<recourse::LedgerEntry> transition(std::string_view, recourse::LedgerState,
                                                  std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<recourse::LedgerEntry> read(std::string_view, std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::optional<std::vector<recourse::LedgerEntry>> entries(std::size_t,
                                                            std::int64_t) noexcept override {
    return std::nullopt;
  }
  std::string name() const override { return "down"; }
};

const char* kThrottled = R"(policy "t" {
  tool { idempotent = true }
  limits { attempts = 9 on_exhausted = degrade }
  breaker { failures = 1 cooldown = 1m }
  throttle { max_tokens = 10 }
  rule r when retryable and code != CONTEXT_OVERFLOW -> retry
  default -> stop })";

}  // namespace

TEST_CASE("state: the engine reads side_effect from the ledger when the host gives none",
          "[state]") {
  const auto p = test::policy(kThrottled);
  auto store = std::make_shared<recourse::MemoryStore>();
  recourse::Health health(store);
  const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  auto decide = [&](const char* context) {
    recourse::Context c = test::context(context);
    health.prepare(p, c, 1000);
    return std::pair(c.side_effect, p.decide(e, c));
  };
  const char* bare = R"({"tool":"t","operationId":"pay-1","idempotent":false})";
  CHECK_FALSE(decide(bare).first);  // no ledger entry: absent, read as unknown
  REQUIRE(store->claim("pay-1", "key-1", 5000, 1000)->claimed);
  CHECK(decide(bare).first == recourse::SideEffect::Unknown);  // pending: it may have happened
  store->transition("pay-1", recourse::LedgerState::Committed, 1000);
  auto [side_effect, d] = decide(bare);
  CHECK(side_effect == recourse::SideEffect::Committed);
  CHECK(d.rule == "gate:committed");
  // The host's own word wins.
  CHECK(decide(R"({"tool":"t","operationId":"pay-1","sideEffect":"none"})").second.route ==
        Route::Retry);
}

TEST_CASE("state: a shared breaker is seen by every process, a local one by its own", "[state]") {
  const auto local = test::policy(kThrottled);
  auto shared_text = std::string(kThrottled);
  shared_text.replace(shared_text.find("cooldown = 1m"), 13, "cooldown = 1m scope = shared");
  const auto shared = test::policy(shared_text);
  auto store = std::make_shared<recourse::MemoryStore>();
  recourse::Health a(store), b(store);
  recourse::Context c = test::context(R"({"tool":"t","operationId":"op"})");
  a.record_failure(local, c, 0);
  b.prepare(local, c, 1);
  CHECK(c.circuit == CircuitState::Closed);
  a.record_failure(shared, c, 0);
  b.prepare(shared, c, 1);
  CHECK(c.circuit == CircuitState::Open);
  CHECK(test::diagnostics(R"(policy "x" { breaker { scope = fleet } default -> stop })")
            .front()
            .message == "scope must be local, shared or quorum, got 'fleet'");
  CHECK(test::diagnostics(R"(policy "x" { breaker { quorum = 2 } default -> stop })")
            .front()
            .message == "quorum needs scope = quorum");
}

TEST_CASE("state: a breaker keeps one circuit per endpoint the context names", "[state][breaker]") {
  const auto p = test::policy(
      R"(policy "b" { breaker { failures = 2 cooldown = 10s scope = shared } default -> stop })");
  auto store = std::make_shared<recourse::MemoryStore>();
  recourse::Health a(store), b(store);
  auto call = [](const std::string& endpoint) {
    return test::context(R"({"tool":"b","operationId":"op","endpoint":")" + endpoint + "\"}");
  };
  auto circuit = [&](recourse::Health& h, const std::string& endpoint, std::int64_t now) {
    recourse::Context c = call(endpoint);
    h.prepare(p, c, now);
    return c.circuit;
  };
  CHECK(call("eu-west").endpoint == "eu-west");
  a.record_failure(p, call("eu-west"), 1000);
  a.record_failure(p, call("us-east"), 1500);
  a.record_failure(p, call("eu-west"), 2000);  // the second of eu-west: its circuit opens
  CHECK(circuit(b, "eu-west", 2000) == CircuitState::Open);  // shared: the other process too
  CHECK(circuit(b, "us-east", 2000) == CircuitState::Closed);
  CHECK(circuit(b, "", 2000) == CircuitState::Closed);  // the tool's own circuit
  CHECK(a.get("b", "eu-west").circuit == CircuitState::Open);
  CHECK(a.get("b", "us-east").consecutive_failures == 1);
  CHECK(a.get("b").consecutive_failures == 0);
  CHECK(store->tool("b@eu-west", 2000)->circuit == CircuitState::Open);
  // An operator resets the one circuit; the cooldown half-opens the other as usual.
  REQUIRE(a.control(p, "b", recourse::BreakerCommand::Reset, 3000, 0, "eu-west"));
  CHECK(circuit(b, "eu-west", 3000) == CircuitState::Closed);
  a.record_failure(p, call("us-east"), 4000);
  CHECK(circuit(b, "us-east", 4000) == CircuitState::Open);
  CHECK(circuit(b, "us-east", 14000) == CircuitState::HalfOpen);
}

TEST_CASE("state: a quorum breaker opens for all only when enough processes see it open",
          "[state]") {
  auto text = std::string(kThrottled);
  text.replace(text.find("cooldown = 1m"), 13, "cooldown = 1m scope = quorum quorum = 2");
  const auto p = test::policy(text);
  auto store = std::make_shared<recourse::MemoryStore>();
  recourse::Health a(store), b(store), c(store);
  auto circuit = [&](recourse::Health& h, std::int64_t now) {
    recourse::Context x = test::context(R"({"tool":"t","operationId":"op"})");
    h.prepare(p, x, now);
    return x.circuit;
  };
  recourse::Context x = test::context(R"({"tool":"t","operationId":"op"})");
  a.record_failure(p, x, 0);  // a's own breaker opens: one vote of two
  CHECK(circuit(a, 1) == CircuitState::Closed);
  CHECK(circuit(c, 1) == CircuitState::Closed);
  b.record_failure(p, x, 0);  // b's too: the quorum is reached, for everyone
  CHECK(circuit(b, 2) == CircuitState::Open);
  CHECK(circuit(c, 2) == CircuitState::Open);
  CHECK(circuit(a, 2) == CircuitState::Open);
  b.record_success(p, x, 3);  // b's breaker closes: its vote is withdrawn
  CHECK(circuit(b, 4) == CircuitState::Closed);
  CHECK(circuit(c, 4) == CircuitState::Closed);
}

TEST_CASE("state: while the store is down, decisions are conservative and flagged", "[state]") {
  const auto p = test::policy(kThrottled);
  const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  auto store = std::make_shared<DownStore>();
  recourse::Workflow wf(store);
  auto decide = [&](recourse::Health& health) {
    recourse::Context c = test::context(R"({"tool":"t","operationId":"op"})");
    wf.record_attempt(c, 1, 0);
    wf.apply(c, 0);
    health.prepare(p, c, 0);
    const auto d = p.decide(e, c);
    health.record_decision(p, c, d);
    return std::tuple(d, c.attempt, c.side_effect);
  };
  recourse::Health health(store);
  auto [d, attempt, side_effect] = decide(health);
  CHECK((d.warnings & recourse::kStoreUnavailable) != 0);
  CHECK(d.rule == "budget:retry_tokens");               // fallback bucket of 0 tokens: no retries
  CHECK(attempt == 1);                                  // the local counts apply
  CHECK(side_effect == recourse::SideEffect::Unknown);  // an unreadable ledger reads as unknown
  CHECK(std::get<1>(decide(health)) == 2);
  CHECK(health.store_unavailable() == 2);
  CHECK(to_json(d, e).find(R"("kind":"store_unavailable")") != std::string::npos);

  recourse::Health some(store, {1, false, {}});  // one retry from the fallback bucket, then none
  CHECK(std::get<0>(decide(some)).route == Route::Retry);
  CHECK(std::get<0>(decide(some)).rule == "budget:retry_tokens");
  recourse::Health open(store, {0, true, {}});  // failing open: an explicit opt-in
  CHECK(std::get<0>(decide(open)).route == Route::Retry);
  CHECK(std::get<0>(decide(open)).route == Route::Retry);
}

TEST_CASE("state: the breaker counts only the failures of its counts", "[state][breaker]") {
  const auto p = test::policy(R"(policy "c" {
    codes { UPSTREAM_DOWN }
    breaker { failures = 2  cooldown = 10s }
    default -> stop })");
  recourse::Health health;
  recourse::Context c;
  c.tool = "c";
  c.operation_id = "op";
  auto fail = [&](const char* envelope, std::int64_t now) {
    const recourse::Envelope e = test::envelope(envelope);
    health.record_failure(p, c, now, &e);
    health.prepare(p, c, now);
    return c.circuit;
  };
  const char* transient = R"({"code":"TRANSIENT"})";
  const char* validation = R"({"code":"VALIDATION","field":"q"})";
  SECTION("a model's validation errors and business answers never open it") {
    for (int i = 0; i < 10; ++i) CHECK(fail(validation, i) == CircuitState::Closed);
    CHECK(fail(R"({"code":"NOT_FOUND"})", 10) == CircuitState::Closed);
    CHECK(fail(R"({"code":"UPSTREAM_DOWN"})", 11) == CircuitState::Closed);  // declared, not listed
    CHECK(fail(R"({"code":"NO_SUCH_CODE"})", 12) == CircuitState::Closed);   // UNKNOWN, not listed
    CHECK(health.get("c").consecutive_failures == 0);
  }
  SECTION("an uncounted failure is the tool's answer: it restarts the consecutive count") {
    CHECK(fail(transient, 0) == CircuitState::Closed);
    CHECK(fail(validation, 1) == CircuitState::Closed);
    CHECK(fail(transient, 2) == CircuitState::Closed);
    CHECK(health.get("c").consecutive_failures == 1);
    CHECK(health.get("c").window == 0b101);  // failure, answer, failure (newest in bit 0)
    CHECK(fail(R"({"code":"TIMEOUT"})", 3) == CircuitState::Open);
  }
  SECTION("the default counts TRANSIENT, RATE_LIMITED, TIMEOUT and PENDING") {
    for (const char* code : {"TRANSIENT", "RATE_LIMITED", "TIMEOUT", "PENDING"}) {
      INFO(code);
      recourse::Health h;
      const recourse::Envelope e = test::envelope(std::string(R"({"code":")") + code + "\"}");
      h.record_failure(p, c, 0, &e);
      h.record_failure(p, c, 0, &e);
      h.prepare(p, c, 0);
      CHECK(c.circuit == CircuitState::Open);
    }
  }
  SECTION("a failure without an envelope, or without a code, counts") {
    health.record_failure(p, c, 0);
    CHECK(fail(R"({"message":"bad gateway"})", 1) == CircuitState::Open);
  }
  SECTION("an uncounted answer of the half-open probe closes the circuit") {
    fail(transient, 0);
    CHECK(fail(transient, 0) == CircuitState::Open);
    health.prepare(p, c, 10000);
    CHECK(c.circuit == CircuitState::HalfOpen);
    CHECK(fail(validation, 10001) == CircuitState::Closed);
  }
  SECTION("counts chooses the codes") {
    const auto q = test::policy(R"(policy "c" {
      codes { UPSTREAM_DOWN }
      breaker { failures = 2  counts = [UPSTREAM_DOWN, VALIDATION] }
      default -> stop })");
    for (const char* envelope : {transient, transient, transient}) {
      const recourse::Envelope e = test::envelope(envelope);
      health.record_failure(q, c, 0, &e);
    }
    health.prepare(q, c, 0);
    CHECK(c.circuit == CircuitState::Closed);
    for (const char* envelope : {R"({"code":"UPSTREAM_DOWN"})", validation}) {
      const recourse::Envelope e = test::envelope(envelope);
      health.record_failure(q, c, 0, &e);
    }
    health.prepare(q, c, 0);
    CHECK(c.circuit == CircuitState::Open);
  }
}

TEST_CASE("state: a half-open probe that never reports back is lost after its lease",
          "[state][breaker]") {
  const auto p = test::policy(
      R"(policy "l" { breaker { failures = 1  cooldown = 10s  probe_lease = 2s } default -> stop })");
  recourse::Health health;
  auto circuit = [&](const char* operation, std::int64_t now) {
    recourse::Context c;
    c.tool = "l";
    c.operation_id = operation;
    health.prepare(p, c, now);
    return c.circuit;
  };
  recourse::Context opener;
  opener.tool = "l";
  opener.operation_id = "op-0";
  health.record_failure(p, opener, 0);
  CHECK(circuit("op-1", 10000) == CircuitState::HalfOpen);  // op-1 probes, and is never heard of
  CHECK(circuit("op-2", 11999) == CircuitState::Open);      // within its 2 s lease
  CHECK(circuit("op-2", 12000) == CircuitState::HalfOpen);  // lost: op-2 probes
  CHECK(health.get("l").probe_until_ms == 14000);
  CHECK(circuit("op-3", 12001) == CircuitState::Open);
  // The default lease is one cooldown.
  const auto d =
      test::policy(R"(policy "l" { breaker { failures = 1  cooldown = 10s } default -> stop })");
  CHECK_THAT(d.dump(), Catch::Contains("cooldown=10000ms probe_lease=10000ms"));
}

TEST_CASE("state: a server's wait beyond retry_after_max holds the circuit open until it ends",
          "[state][breaker]") {
  const auto p = test::policy(R"(policy "w" {
    limits  { retry_after_max = 10s  on_open = degrade }
    breaker { failures = 5  cooldown = 1s }
    rule transient when code in [TRANSIENT, RATE_LIMITED] -> retry
    default -> stop })");
  auto call = [](const char* operation) {
    recourse::Context c = test::context(R"({"tool":"w","sideEffect":"none"})");
    c.operation_id = operation;
    return c;
  };
  const auto wait = test::envelope(R"({"code":"RATE_LIMITED","retryAfterMs":60000})");
  const auto transient = test::envelope(R"({"code":"TRANSIENT"})");
  recourse::Health health;
  recourse::Context first = call("op-1");
  health.record_failure(p, first, 0, &wait);
  health.prepare(p, first, 0);
  // The failure that asked for the wait is stopped by its own guard, which precedes the circuit.
  CHECK(p.decide(wait, first).rule == "budget:retry_after");
  CHECK(health.get("w").hold_until_ms == 60000);
  // The next operation does not call the throttled tool at once: the circuit is open.
  for (const std::int64_t now : {1000, 30000, 59999}) {
    recourse::Context next = call("op-2");
    health.prepare(p, next, now);
    CHECK(next.circuit == CircuitState::Open);
    const auto d = p.decide(transient, next);
    CHECK(d.route == Route::Degrade);
    CHECK(d.rule == "circuit:open");
  }
  recourse::Context later = call("op-2");
  health.prepare(p, later, 60000);  // the server's time: one probe
  CHECK(later.circuit == CircuitState::HalfOpen);
  CHECK(p.decide(transient, later).route == Route::Retry);

  SECTION("a wait the policy makes opens nothing") {
    recourse::Health h;
    recourse::Context c = call("op-3");
    const auto short_wait = test::envelope(R"({"code":"RATE_LIMITED","retryAfterMs":10000})");
    h.record_failure(p, c, 0, &short_wait);
    h.prepare(p, c, 1);
    CHECK(c.circuit == CircuitState::Closed);
    CHECK(h.get("w").hold_until_ms == 0);
  }
  SECTION("with scope = shared, the whole fleet waits") {
    const auto shared = test::policy(R"(policy "w" {
      limits  { retry_after_max = 10s }
      breaker { scope = shared  cooldown = 1s }
      default -> stop })");
    auto store = std::make_shared<recourse::MemoryStore>();
    recourse::Health a(store), b(store);
    recourse::Context c = call("op-4");
    a.record_failure(shared, c, 0, &wait);
    recourse::Context other = call("op-5");
    b.prepare(shared, other, 30000);
    CHECK(other.circuit == CircuitState::Open);
    b.prepare(shared, other, 60000);
    CHECK(other.circuit == CircuitState::HalfOpen);
  }
  SECTION("with the shared store down, this process still waits, and says so") {
    const auto shared = test::policy(R"(policy "w" {
      limits  { retry_after_max = 10s }
      breaker { scope = shared  cooldown = 1s }
      rule transient when code in [TRANSIENT, RATE_LIMITED] -> retry
      default -> stop })");
    recourse::Health down(std::make_shared<DownStore>());
    recourse::Context c = call("op-6");
    down.record_failure(shared, c, 0, &wait);
    recourse::Context other = call("op-7");
    other.side_effect = recourse::SideEffect::None;
    down.prepare(shared, other, 30000);
    CHECK(other.circuit == CircuitState::Open);  // the local breaker holds it
    CHECK(other.store_unavailable);
    const auto d = shared.decide(transient, other);
    CHECK(d.rule == "circuit:open");
    CHECK((d.warnings & recourse::kStoreUnavailable) != 0);
  }
}

TEST_CASE("state: a fallback chain skips the tools the operation tried and the open circuits",
          "[state][fallback]") {
  // primary -> its chain [secondary, small]; secondary's own chain goes back to primary first.
  const auto primary = test::policy(R"(policy "primary" {
    tool { idempotent = true  fallback = ["secondary", "small"] }
    limits { attempts = 1 }
    rule r when code == TRANSIENT -> retry
    default -> stop })");
  const auto secondary = test::policy(R"(policy "secondary" {
    tool { idempotent = true  fallback = ["primary", "small"] }
    limits { attempts = 1 }
    rule r when code == TRANSIENT -> retry
    default -> stop })");
  const auto small = test::policy(R"(policy "small" {
    tool { idempotent = true }
    breaker { failures = 1  cooldown = 1m }
    rule r when code == TRANSIENT -> retry
    default -> stop })");
  const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  recourse::Workflow wf;
  recourse::Health health;
  auto fail = [&](const recourse::Policy& p, const char* op, std::int64_t now) {
    recourse::Context c;
    c.tool = std::string(p.name());
    c.operation_id = op;
    c.side_effect = recourse::SideEffect::None;
    wf.record_attempt(c, 1, now);
    wf.record_failure(c, e);
    wf.apply(p, c, now);
    health.record_failure(p, c, now, &e);
    health.prepare(p, c, now);
    const recourse::Decision d = p.decide(e, c);
    wf.record_decision(c, d);
    return std::pair(d, c.unavailable_tools.value_or(std::vector<std::string>{}));
  };
  // The primary's one attempt fails: the chain's first tool.
  auto [d1, skip1] = fail(primary, "op-1", 0);
  CHECK(d1.route == Route::Replace);
  CHECK(d1.target == "secondary");
  CHECK(d1.rule == "budget:attempts");
  CHECK(skip1 == std::vector<std::string>{});
  // The replacement fails too: its chain passes over primary, which this operation called.
  auto [d2, skip2] = fail(secondary, "op-1", 1000);
  CHECK(d2.route == Route::Replace);
  CHECK(d2.target == "small");
  CHECK(skip2 == std::vector<std::string>{"primary"});
  // Another operation has not called primary: secondary's chain starts there.
  CHECK(fail(secondary, "op-2", 1000).first.target == "primary");
  // small's circuit opens (one failure) for every operation of this process.
  fail(small, "op-3", 2000);
  CHECK(health.get("small").circuit == CircuitState::Open);
  auto [d3, skip3] = fail(primary, "op-4", 3000);
  CHECK(d3.target == "secondary");
  CHECK(skip3 == std::vector<std::string>{"small"});
  // op-1 tried primary and small is open: nothing of secondary's chain is left.
  auto [d4, skip4] = fail(secondary, "op-1", 4000);
  CHECK(d4.route == Route::Stop);
  CHECK(d4.target.empty());
  CHECK(d4.rule == "budget:attempts");
  CHECK(d4.exhausted == "attempts");
  CHECK(d4.reason == "every fallback tool was tried by this operation or has its circuit open");
  CHECK(skip4 == std::vector<std::string>{"primary", "small"});
}

TEST_CASE("state: a run's budgets count every operation of the workflow", "[state][run]") {
  // An agent re-issues a failing search under a new operation id each time: the operation's
  // attempts start again, the run's calls and failures do not.
  const auto search = test::policy(R"(policy "search" {
    tool { idempotent = true  cost = 3 }
    limits { attempts = 3  run_calls = 7  run_tool_failures = 5  run_cost = 100 }
    rule r when code == TRANSIENT -> retry
    default -> stop })");
  const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  recourse::Workflow wf(nullptr, "run-1");
  auto fail = [&](const std::string& op, const char* tool, std::int64_t now) {
    recourse::Context c;
    c.tool = tool;
    c.operation_id = op;
    c.side_effect = recourse::SideEffect::None;
    wf.record_attempt(c, 3, now);
    wf.record_failure(c, e);
    wf.apply(c, now);
    const recourse::Decision d = search.decide(e, c);
    wf.record_decision(c, d);
    return std::pair(std::string(d.rule), c);
  };
  std::vector<std::string> rules;
  for (int i = 0; i < 4; ++i) rules.push_back(fail("op-" + std::to_string(i), "search", i).first);
  // Four operations, one failed call each: four of the tool's five failures.
  CHECK(rules == std::vector<std::string>(4, "r"));
  // Another tool's failures count for the run's calls, not for this tool's failures.
  fail("op-x", "fetch", 10);
  fail("op-x", "fetch", 11);
  const auto [fifth, c5] = fail("op-5", "search", 20);
  CHECK(fifth == "budget:run_calls");  // the seventh call of the run
  CHECK(c5.run_calls == 7);
  CHECK(c5.run_cost == 21);
  CHECK(c5.run_failures == 7);
  CHECK(c5.run_tool_calls == 5);
  CHECK(c5.run_tool_failures == 5);
  CHECK(c5.attempt == 1);
  const recourse::Decision d = search.decide(e, c5);
  CHECK(d.route == Route::Stop);
  CHECK(d.exhausted == "run_calls");
  // The run's counters survive the workflow's JSON form, and a bad run member is refused.
  recourse::Workflow restored(nullptr, "run-1");
  REQUIRE(restored.from_json(wf.to_json()).ok());
  recourse::Context c;
  c.tool = "search";
  restored.apply(c, 30);
  CHECK(c.run_calls == 7);
  CHECK(c.run_tool_failures == 5);
  CHECK(c.run_tool_cost == 15);
  const auto json = nlohmann::json::parse(wf.to_json());
  CHECK(json.at("run").at("all").at("attempts") == 7);
  CHECK(json.at("run").at("tools").at("fetch").at("repeats") == 2);
  CHECK_FALSE(json.at("operations").contains("%RUN"));
  CHECK_FALSE(restored.from_json(R"({"version":2,"operations":{},"run":{"every":{}}})").ok());
  CHECK_FALSE(
      restored.from_json(R"({"version":2,"operations":{},"run":{"all":{"attempts":-1}}})").ok());
}
