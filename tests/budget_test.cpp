// Guards and budgets: each one runs out with the right route, rule and reason, in precedence
// order; budgets are reported before and after the call a decision leads to.
#include "support.hpp"

namespace {

using recourse::Route;

const char* kPolicy = R"(policy "b" {
  tool   { idempotent = false  idempotency_keys = true  verify = "b.lookup"  fallback = "b.other"  cost = 3 }
  limits { attempts = 5  repairs = 2  cost = 12  repeats = 3  try_timeout = 10s  deadline = 1m  on_exhausted = escalate  on_open = degrade }
  throttle { max_tokens = 10 }
  breaker  { failures = 5 }
  backoff constant base 1s jitter none
  rule r when retryable and code != CONTEXT_OVERFLOW -> retry
  rule f when field is present -> repair
  default -> stop
})";

recourse::Decision decide(const std::string& envelope, const std::string& context) {
  static const auto p = test::policy(kPolicy);
  const auto e = test::envelope(envelope);
  const auto c = test::context(context);
  const auto d = p.decide(e, c);
  const auto i = recourse::interpret(p, e, c);
  CHECK(d.rule == i.rule);
  CHECK(d.route == i.route);
  return d;
}

const std::string kRetry = R"({"code":"TRANSIENT","retryable":true})";
const std::string kRepair = R"({"field":"x"})";

}  // namespace

TEST_CASE("budgets: a plain retry reports every budget before and after", "[budget]") {
  const auto d = decide(
      kRetry, R"({"sideEffect":"none","attempt":2,"costSpent":3,"elapsedMs":1000,"nowMs":5000})");
  REQUIRE(d.route == Route::Retry);
  CHECK(d.delay_ms == 1000);
  CHECK(d.attempts.before == 3);
  CHECK(d.attempts.after == 2);
  CHECK(d.cost.before == 9);
  CHECK(d.cost.after == 6);
  CHECK(d.time_ms.before == 59000);
  CHECK(d.time_ms.after == 58000);
  CHECK(d.repairs.before == 2);
  CHECK(d.repairs.after == 2);
  CHECK(d.timeout_ms == 10000);  // try_timeout, within the time left
  CHECK(d.retry_at_ms == 6000);
}

TEST_CASE("budgets: the side-effect gates come first", "[budget]") {
  auto d = decide(kRetry, R"({"sideEffect":"committed"})");
  CHECK(d.rule == "gate:committed");
  CHECK(d.route == Route::Stop);
  // Unknown outcome, no pinned key: the policy's verification tool.
  d = decide(kRetry, R"({"sideEffect":"unknown"})");
  CHECK(d.rule == "gate:unknown_outcome");
  CHECK(d.route == Route::Replace);
  CHECK(d.target == "b.lookup");
  // A key pinned to the operation, honoured by the tool: the retry goes ahead with the same key.
  d = decide(kRetry, R"({"sideEffect":"unknown","idempotencyKey":"k-1"})");
  CHECK(d.route == Route::Retry);
  CHECK(d.idempotency_key == recourse::KeyDirective::Reuse);
  // A rotating key is not pinned.
  d = decide(
      kRetry,
      R"({"sideEffect":"unknown","idempotencyKey":"k-1","nextAttemptIdempotencyKey":"k-2"})");
  CHECK(d.rule == "gate:unknown_outcome");
  // A repair sends a new key: the pinned key does not exempt it.
  d = decide(kRepair, R"({"sideEffect":"unknown","idempotencyKey":"k-1"})");
  CHECK(d.rule == "gate:unknown_outcome");
  // An idempotent call is not gated.
  CHECK(decide(kRetry, R"({"sideEffect":"unknown","idempotent":true})").route == Route::Retry);
}

TEST_CASE("budgets: each budget runs out with its route and reason", "[budget]") {
  struct Row {
    const char* envelope;
    const char* context;
    const char* rule;
    const char* exhausted;
    const char* reason;
  };
  const Row rows[] = {
      {R"({"code":"TRANSIENT","retryable":true,"retryAfterMs":60001})", R"({"sideEffect":"none"})",
       "budget:retry_after", "retry_after", "server asked to wait longer than retry_after_max"},
      {R"({"code":"TRANSIENT","retryable":true})", R"({"sideEffect":"none","repeats":3})",
       "budget:repeats", "repeats", "the same call failed the same way too often; change approach"},
      {R"({"code":"TRANSIENT","retryable":true})", R"({"sideEffect":"none","attempt":5})",
       "budget:attempts", "attempts", "attempt budget spent"},
      // Retries made by a lower layer count against the same budget.
      {R"({"code":"TRANSIENT","retryable":true})",
       R"({"sideEffect":"none","attempt":2,"lowerRetries":3})", "budget:attempts", "attempts",
       "attempt budget spent"},
      {R"({"field":"x"})", R"({"sideEffect":"none","repairs":2})", "budget:repairs", "repairs",
       "repair budget spent"},
      {R"({"code":"TRANSIENT","retryable":true})", R"({"sideEffect":"none","costSpent":10})",
       "budget:cost", "cost", "cost budget spent"},
      {R"({"code":"TRANSIENT","retryable":true})", R"({"sideEffect":"none","elapsedMs":60000})",
       "budget:deadline", "deadline", "operation deadline passed"},
      {R"({"code":"TRANSIENT","retryable":true,"retryAfterMs":30000})",
       R"({"sideEffect":"none","elapsedMs":40000})", "budget:deadline", "deadline",
       "server asked to wait beyond the deadline"},
      {R"({"code":"TRANSIENT","retryable":true})", R"({"sideEffect":"none","elapsedMs":59500})",
       "budget:deadline", "deadline", "the next attempt would start after the deadline"},
      {R"({"code":"TRANSIENT","retryable":true})", R"({"sideEffect":"none","retryThrottled":true})",
       "budget:retry_tokens", "retry_tokens",
       "retries throttled for this tool (gRFC A6 token bucket)"},
  };
  for (const Row& row : rows) {
    INFO(row.envelope << " " << row.context);
    const auto d = decide(row.envelope, row.context);
    CHECK(d.rule == row.rule);
    CHECK(d.exhausted == row.exhausted);
    CHECK(d.reason == row.reason);
    CHECK(d.route == Route::Escalate);  // on_exhausted
    CHECK(d.delay_ms == 0);
  }
  // A repair is not throttled by retry tokens.
  CHECK(decide(kRepair, R"({"sideEffect":"none","retryThrottled":true})").route == Route::Repair);
}

TEST_CASE("budgets: an open circuit takes on_open; a half-open probe may retry", "[budget]") {
  auto d = decide(kRetry, R"({"sideEffect":"none","circuit":"open"})");
  CHECK(d.rule == "circuit:open");
  CHECK(d.route == Route::Degrade);
  CHECK(d.exhausted.empty());
  CHECK(decide(kRetry, R"({"sideEffect":"none","circuit":"half_open"})").route == Route::Retry);
  // Budgets precede the circuit.
  CHECK(decide(kRetry, R"({"sideEffect":"none","circuit":"open","attempt":5})").rule ==
        "budget:attempts");
}

TEST_CASE("budgets: without on_exhausted, the tool's fallback, else stop", "[budget]") {
  const auto with_fallback = test::policy(
      R"(policy "f" { tool { fallback = "f.cache" } limits { attempts = 1 } rule r when code is absent -> retry default -> stop })");
  const auto d = with_fallback.decide({}, test::context(R"({"sideEffect":"none"})"));
  CHECK(d.route == Route::Replace);
  CHECK(d.target == "f.cache");
  const auto plain = test::policy(
      R"(policy "s" { limits { attempts = 1 } rule r when code is absent -> retry default -> escalate })");
  CHECK(plain.decide({}, test::context(R"({"sideEffect":"none"})")).route == Route::Stop);
  // on_exhausted = replace needs a fallback.
  auto r = recourse::compile(
      {{"t", R"(policy "x" { limits { on_exhausted = replace } default -> stop })"}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.diagnostics().at(0).message == "on_exhausted = replace needs the tool's fallback");
}
