// `recourse bench` and the inputs it times (sample_inputs): every policy measured, inputs spread
// across the domain and the same for the same seed, errors and usage exit codes.
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "recourse/tooling.hpp"
#include "support.hpp"

namespace {

std::string bench(const std::string& args) {
  return test::cli() + " bench " + args;
}

}  // namespace

TEST_CASE("sample_inputs: spread over the table's rows, the same for the same seed", "[bench]") {
  const recourse::Policy policy = test::policy(R"(
    policy "p" {
      tool   { idempotent = true }
      limits { attempts = 3 }
      rule transient when code == TRANSIENT and retryable -> retry
      rule fix       when code == VALIDATION and field and suggestion -> repair
      rule approval  when code == PERMISSION -> authorize
      default -> stop
    })");
  const auto a = recourse::sample_inputs(policy, 200, 7);
  const auto b = recourse::sample_inputs(policy, 200, 7);
  REQUIRE(a.size() > 100);
  REQUIRE(a.size() == b.size());
  std::set<std::string> rules;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(recourse::to_json(a[i].envelope) == recourse::to_json(b[i].envelope));
    CHECK(a[i].context.attempt == b[i].context.attempt);
    CHECK(a[i].context.tool == "p");
    rules.insert(std::string(policy.decide(a[i].envelope, a[i].context).rule));
  }
  for (const char* rule : {"transient", "fix", "approval", "default", "budget:attempts"}) {
    INFO(rule);
    CHECK(rules.count(rule) == 1);
  }
}

TEST_CASE("cli: bench prints ns per decision for every policy", "[bench][cli]") {
  const auto text = test::run(bench("--seconds 0.02 " + test::source_dir() + "/rules/examples"));
  CHECK(text.status == 0);
  std::istringstream lines(text.out);
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    CHECK_THAT(line, Catch::Contains(" ns per decision (") && Catch::Contains("strategy "));
  }
  CHECK(n == 6);

  const auto json = test::run(
      bench("--seconds 0.02 --json " + test::source_dir() + "/rules/bench/actionable.recourse"));
  CHECK(json.status == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["policy"] == "*");
  CHECK(j["nsPerDecision"].get<double>() > 0);
  CHECK(j["decisions"].get<std::int64_t>() >= 1024);
  CHECK(j["strategy"].get<std::string>().rfind("direct ", 0) == 0);
}

TEST_CASE("cli: bench errors and usage", "[bench][cli]") {
  CHECK(test::run(bench("/nonexistent.recourse 2>/dev/null")).status == 1);
  CHECK(test::run(bench("2>/dev/null")).status == 2);
  CHECK(test::run(bench("--seconds 0 x.recourse 2>/dev/null")).status == 2);
}
