// Schedules per rule: named backoffs (`backoff NAME { KIND ... }`), a retry rule that waits by
// one (`-> retry with backoff NAME`), a rule's own cap on attempts (`with attempts N`), and the
// jitter after a server hint (`hint_jitter F`), docs/language.md sections 6 and 12.
#include <set>

#include "support.hpp"

namespace {

using recourse::Route;

// Throttling waits 1 s doubling, transient failures 50 ms doubling (AWS SDK defaults); the
// throttled rule may make 2 calls in all, the policy 4.
const char* kPolicy = R"(
policy "llm.chat" {
  tool   { idempotent = true }
  limits { attempts = 4  retry_after_max = 90s  min_delay = 0ms }
  backoff exponential base 50ms factor 2 max 2s jitter none
  backoff throttled { exponential base 1s factor 2 max 20s jitter none hint_jitter 0.25 }
  rule throttled when code == RATE_LIMITED -> retry with backoff throttled attempts 2
  rule transient when code in [TRANSIENT, TIMEOUT] -> retry
  default -> stop
})";

recourse::Decision decide(const recourse::Policy& p, const std::string& envelope,
                          const std::string& context) {
  const auto e = test::envelope(envelope);
  const auto c = test::context(context);
  const auto d = p.decide(e, c);
  const auto i = recourse::interpret(p, e, c);  // the table and the interpreter agree
  CHECK(d.route == i.route);
  CHECK(d.rule == i.rule);
  CHECK(d.delay_ms == i.delay_ms);
  CHECK(d.jitter_ms == i.jitter_ms);
  CHECK(d.attempts.before == i.attempts.before);
  return d;
}

}  // namespace

TEST_CASE("schedule: each rule waits by its own backoff", "[schedule]") {
  const auto p = test::policy(kPolicy);
  // Attempt 1: transient 50 ms, throttled 1 s; attempt 3 (transient only): 200 ms.
  auto d = decide(p, R"({"code":"TIMEOUT"})", R"({"sideEffect":"none","attempt":1})");
  CHECK(d.route == Route::Retry);
  CHECK(d.delay_ms == 50);
  d = decide(p, R"({"code":"TIMEOUT"})", R"({"sideEffect":"none","attempt":3})");
  CHECK(d.delay_ms == 200);
  d = decide(p, R"({"code":"RATE_LIMITED"})", R"({"sideEffect":"none","attempt":1})");
  CHECK(d.route == Route::Retry);
  CHECK(d.rule == "throttled");
  CHECK(d.delay_ms == 1000);
  CHECK(d.jitter_ms == 0);
}

TEST_CASE("schedule: a rule's attempts cap its retries below the policy's", "[schedule]") {
  const auto p = test::policy(kPolicy);
  // The throttled rule allows 2 calls: after the second, budget:attempts (on_exhausted stop).
  auto d = decide(p, R"({"code":"RATE_LIMITED"})", R"({"sideEffect":"none","attempt":1})");
  CHECK(d.route == Route::Retry);
  CHECK(d.attempts.before == 1);
  CHECK(d.attempts.after == 0);
  d = decide(p, R"({"code":"RATE_LIMITED"})", R"({"sideEffect":"none","attempt":2})");
  CHECK(d.route == Route::Stop);
  CHECK(d.rule == "budget:attempts");
  CHECK(d.exhausted == "attempts");
  CHECK(d.attempts.before == 0);
  // Retries made below count against the rule's cap as against the policy's.
  d = decide(p, R"({"code":"RATE_LIMITED"})",
             R"({"sideEffect":"none","attempt":1,"lowerRetries":1})");
  CHECK(d.rule == "budget:attempts");
  // The transient rule keeps the policy's 4.
  d = decide(p, R"({"code":"TIMEOUT"})", R"({"sideEffect":"none","attempt":3})");
  CHECK(d.route == Route::Retry);
  CHECK(d.attempts.before == 1);
}

TEST_CASE("schedule: jitter after a hint is never below it nor past retry_after_max",
          "[schedule]") {
  const auto p = test::policy(kPolicy);
  // 60 s hint, hint_jitter 0.25: 60..75 s, different per operation, the same for the same one.
  std::set<std::int64_t> delays;
  for (int op = 0; op < 16; ++op) {
    const std::string ctx =
        R"({"sideEffect":"none","operationId":"session-)" + std::to_string(op) + R"("})";
    const auto d = decide(p, R"({"code":"RATE_LIMITED","retryAfterMs":60000})", ctx);
    REQUIRE(d.route == Route::Retry);
    CHECK(d.delay_ms >= 60000);
    CHECK(d.delay_ms <= 75000);
    CHECK(d.jitter_ms == d.delay_ms - 60000);
    CHECK(decide(p, R"({"code":"RATE_LIMITED","retryAfterMs":60000})", ctx).delay_ms == d.delay_ms);
    delays.insert(d.delay_ms);
  }
  CHECK(delays.size() >= 15);  // 16 sessions no longer wake in the same millisecond
  // 80 s hint: the spread (20 s) is held to the 90 s cap, so 80..90 s.
  for (int op = 0; op < 16; ++op) {
    const auto d = decide(p, R"({"code":"RATE_LIMITED","retryAfterMs":80000})",
                          R"({"sideEffect":"none","operationId":"s)" + std::to_string(op) + "\"}");
    CHECK(d.delay_ms >= 80000);
    CHECK(d.delay_ms <= 90000);
  }
  // At the cap the hint is waited exactly; a hint below the backoff leaves the backoff.
  CHECK(decide(p, R"({"code":"RATE_LIMITED","retryAfterMs":90000})", R"({"sideEffect":"none"})")
            .delay_ms == 90000);
  CHECK(decide(p, R"({"code":"RATE_LIMITED","retryAfterMs":100})", R"({"sideEffect":"none"})")
            .delay_ms == 1000);
  // The transient rule's backoff has no hint_jitter: the hint exactly.
  CHECK(decide(p, R"({"code":"TIMEOUT","retryAfterMs":3000})",
               R"({"sideEffect":"none","operationId":"x"})")
            .delay_ms == 3000);
}

TEST_CASE("schedule: the dump and the hash show schedules and rule options", "[schedule]") {
  const auto p = test::policy(kPolicy);
  const std::string dump = p.dump();
  CHECK(dump.find("backoff throttled exponential base=1000ms factor=2 max=20000ms jitter=none "
                  "hint_jitter=0.25\n") != std::string::npos);
  CHECK(dump.find("-> retry with backoff throttled attempts 2") != std::string::npos);
  // A policy without hint_jitter prints none: older dumps and hashes are unchanged.
  CHECK(dump.find("backoff exponential base=50ms factor=2 max=2000ms jitter=none\n") !=
        std::string::npos);
  std::string other = kPolicy;
  other.replace(other.find("hint_jitter 0.25"), 16, "hint_jitter 0.5");
  CHECK(test::policy(other).hash() != p.hash());
}

TEST_CASE("schedule: checker errors", "[schedule][check]") {
  struct Case {
    const char* text;
    const char* code;
    int line, column;
  };
  const Case cases[] = {
      {"policy \"p\" {\n  rule r when code == TIMEOUT -> retry with backoff slow\n  default -> "
       "stop\n}",
       "E018", 2, 53},
      {"policy \"p\" {\n  backoff slow { constant base 1s }\n  backoff slow { constant base 2s }\n"
       "  default -> stop\n}",
       "E021", 3, 11},
      {"policy \"p\" {\n  backoff slow { constant base 1s }\n  default -> stop with backoff "
       "slow\n}",
       "E036", 3, 32},
      {"policy \"p\" {\n  rule r when code == TIMEOUT -> retry with attempts 11\n  default -> "
       "stop\n}",
       "E019", 2, 54},
      {"policy \"p\" {\n  default -> escalate with attempts 2\n}", "E036", 2, 37},
      {"policy \"p\" {\n  backoff slow { constant base 1s hint_jitter 2 }\n  default -> stop\n}",
       "E019", 2, 47},
      {"policy \"p\" {\n  rule r when code == TIMEOUT -> retry with\n  default -> stop\n}", "E001",
       3, 3},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const auto diags = test::diagnostics(c.text);
    REQUIRE(!diags.empty());
    CHECK(diags[0].code == c.code);
    CHECK(diags[0].line == c.line);
    CHECK(diags[0].column == c.column);
  }
}

TEST_CASE("schedule: fmt prints named backoffs and rule options as written", "[schedule][fmt]") {
  const std::string text =
      "version 1\npolicy \"p\" {\n  backoff slow { constant base 1s hint_jitter 0.1 }\n"
      "  rule r when code == TIMEOUT -> retry with backoff slow attempts 2\n"
      "  rule s when code == VALIDATION -> repair with attempts 2\n  default -> stop\n}\n";
  const auto formatted = recourse::format(text);
  REQUIRE(formatted.ok());
  CHECK(*formatted == text);
}
