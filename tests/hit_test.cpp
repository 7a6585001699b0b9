// Hit policies: first match, safest (the most conservative matching route wins), unique (the
// checker proves no input matches two rules with different routes).
#include "support.hpp"

namespace {

using recourse::Route;

recourse::Decision decide(const recourse::Policy& p, const std::string& envelope,
                          const std::string& context) {
  const auto e = test::envelope(envelope);
  const auto c = test::context(context);
  const auto d = p.decide(e, c);
  CHECK(d.rule == recourse::interpret(p, e, c).rule);
  return d;
}

const char* kRules = R"(
  rule transient when code == TRANSIENT and retryable -> retry
  rule late      when attempt >= 2 -> stop "late"
  rule other     when code == TRANSIENT -> replace "t.other"
  rule fallback  when code == TRANSIENT -> degrade "cached"
  default -> escalate
})";

}  // namespace

TEST_CASE("hit: first match in file order, by default", "[hit]") {
  const auto p = test::policy(std::string("policy \"h\" {") + kRules);
  CHECK_THAT(p.dump(), Catch::Contains("\nhit first\n"));
  CHECK(
      decide(p, R"({"code":"TRANSIENT","retryable":true})", R"({"sideEffect":"none","attempt":2})")
          .rule == "transient");
}

TEST_CASE("hit: safest lets a later stop overrule an earlier retry", "[hit]") {
  const auto p = test::policy(std::string("policy \"h\" {\n  hit safest") + kRules);
  CHECK_THAT(p.dump(), Catch::Contains("\nhit safest\n"));
  auto d =
      decide(p, R"({"code":"TRANSIENT","retryable":true})", R"({"sideEffect":"none","attempt":2})");
  CHECK(d.rule == "late");
  CHECK(d.route == Route::Stop);
  // Without the stop, replace and degrade rank alike: the earlier rule wins; both beat retry.
  d = decide(p, R"({"code":"TRANSIENT","retryable":true})", R"({"sideEffect":"none","attempt":1})");
  CHECK(d.rule == "other");
  // Nothing but the default matches: the default decides.
  CHECK(decide(p, R"({"code":"PERMISSION"})", R"({"sideEffect":"none"})").rule == "default");
}

TEST_CASE("hit: unique rejects rules that overlap with different routes", "[hit]") {
  auto d = test::diagnostics(std::string("policy \"h\" {\n  hit unique") + kRules);
  std::vector<std::string> pairs;
  for (const auto& x : d)
    if (x.code == "E106") pairs.push_back(x.message);
  REQUIRE_FALSE(pairs.empty());
  CHECK(pairs.front() ==
        "rules 'transient' (retry) and 'late' (stop) both match some inputs, and `hit unique` "
        "forbids it");
  const auto ok = test::policy(R"(policy "u" {
  hit unique
  rule a when code == TRANSIENT -> retry
  rule b when code in [TRANSIENT, RATE_LIMITED] -> retry
  rule c when code == PERMISSION -> authorize
  default -> stop
})");
  CHECK(decide(ok, R"({"code":"PERMISSION"})", "{}").route == Route::Authorize);
  CHECK(recourse::compile({{"t", "policy \"x\" { hit safer default -> stop }"}})
            .diagnostics()
            .at(0)
            .message == "unknown hit policy 'safer'");
}
