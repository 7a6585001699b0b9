// `recourse simulate` (issue 6): the seed's benchmark (000_fee13e691e1c696a) reproduced through
// the real engine, pinned for seed 1 and checked against the published figures' tolerances;
// common random numbers across strategies; determinism; the hostile scenario's ordering.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support.hpp"

namespace {

using json = nlohmann::json;

std::string bench(const std::string& name) {
  return test::source_dir() + "/rules/bench/" + name + ".recourse";
}

std::string simulate(const std::string& args) {
  return test::cli() + " simulate " + args;
}

json run_json(const std::string& args) {
  const auto r = test::run(simulate(args + " --format json"));
  INFO(args << "\n" << r.out);
  REQUIRE(r.status == 0);
  return json::parse(r.out);
}

std::map<std::string, json> by_name(const json& out) {
  std::map<std::string, json> rows;
  for (const auto& s : out["strategies"]) rows[s["name"].get<std::string>()] = s;
  return rows;
}

std::string seed_trio() {
  return bench("generic") + " " + bench("code-only") + " " + bench("actionable");
}

struct Published {
  double resolution, attempts_per_op;
  long failed, permanent;
};

}  // namespace

TEST_CASE("simulate: the seed's table for seed 1, pinned and within the tolerances", "[simulate]") {
  const json out = run_json("--runs 60 --ops 200 --seed 1 " + seed_trio());
  CHECK(out["operations"] == 12000);
  CHECK(out["comparedWithPublished"] == true);
  auto rows = by_name(out);
  REQUIRE(rows.size() == 3);

  // Pinned: these change only when the model, the generator or the policies change.
  struct Pin {
    const char* name;
    long resolved, attempts, failed, permanent;
  };
  const Pin pins[] = {{"generic", 8013, 16806, 3987, 2366},
                      {"code-only", 8565, 14440, 1069, 0},
                      {"actionable", 9135, 14440, 499, 0}};
  for (const auto& p : pins) {
    INFO(p.name);
    const json& s = rows.at(p.name);
    CHECK(s["resolved"] == p.resolved);
    CHECK(s["attempts"] == p.attempts);
    CHECK(s["failedRetries"] == p.failed);
    CHECK(s["permanentFailureRetries"] == p.permanent);
    CHECK(s["sideEffectViolations"] == 0);
  }

  // The seed's published table; tolerances of issue 6, computed here, not taken from the output.
  const std::map<std::string, Published> published = {{"generic", {0.671, 1.402, 3953, 2449}},
                                                      {"code-only", {0.712, 1.198, 1005, 0}},
                                                      {"actionable", {0.755, 1.198, 487, 0}}};
  for (const auto& [name, p] : published) {
    INFO(name);
    const json& s = rows.at(name);
    CHECK(std::abs(100 * (s["resolution"].get<double>() - p.resolution)) <= 1.5);
    CHECK(std::abs(s["attemptsPerOp"].get<double>() - p.attempts_per_op) <= 0.02);
    CHECK(std::abs(s["failedRetries"].get<long>() - p.failed) <= 0.10 * p.failed);
    CHECK(std::abs(s["permanentFailureRetries"].get<long>() - p.permanent) <= 0.10 * p.permanent);
    CHECK(s["published"]["withinTolerance"] == true);
    CHECK(s["published"]["resolution"].get<double>() == p.resolution);
  }
  CHECK(rows.at("generic")["envelope"] == "generic");
  CHECK(rows.at("code-only")["envelope"] == "code");
  CHECK(rows.at("actionable")["envelope"] == "full");
}

TEST_CASE("simulate: the issue's command prints the table, the distances and the assumptions",
          "[simulate]") {
  const auto r =
      test::run(simulate("--policy " + bench("generic") + " --runs 60 --ops 200 --seed 1"));
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("60 runs x 200 operations = 12,000 operations, seed 1"));
  CHECK_THAT(r.out, Catch::Contains("generic     generic        66.8%        1.401           "
                                    "3,987                      2,366"));
  CHECK_THAT(r.out, Catch::Contains("  published                67.1%        1.402           "
                                    "3,953                      2,449  seed: generic message"));
  CHECK_THAT(r.out, Catch::Contains("-0.3 pp       -0.001     +34 (+0.9%)                -83 "
                                    "(-3.4%)  within tolerance"));
  CHECK_THAT(r.out, Catch::Contains("assumptions (scenario flags: synthetic inputs, not "
                                    "measurements):"));
  CHECK_THAT(r.out, Catch::Contains("  --failure-rate        0.4 "));
  CHECK_THAT(r.out, Catch::Contains("  --repair-hint         0.9 "));
  CHECK_THAT(r.out, Catch::Contains("a blind retry of a validation failure never succeeds"));
  CHECK_THAT(r.out, Catch::Contains("failed retries count failed retries and failed repairs"));
}

TEST_CASE("simulate: common random numbers across strategies", "[simulate]") {
  const json out =
      run_json(seed_trio() + " " + bench("hardened") + " @retry-all generic:@retry-all @retryable");
  auto rows = by_name(out);
  REQUIRE(rows.size() == 7);
  const json& generic = rows.at("generic");
  // The same operations: the same tools, the same first-call failures, class by class.
  for (const auto& [name, s] : rows) {
    INFO(name);
    CHECK(s["operationsDigest"] == generic["operationsDigest"]);
    CHECK(s["firstCallFailures"] == generic["firstCallFailures"]);
  }
  // The same rolls: every strategy that retries a transient failure once resolves the same
  // transient failures; a better repair hint resolves a superset of the validation failures.
  for (const char* name : {"code-only", "actionable", "hardened", "retry-all", "retryable"})
    CHECK(rows.at(name)["resolvedAfter"]["TRANSIENT"] == generic["resolvedAfter"]["TRANSIENT"]);
  CHECK(rows.at("actionable")["resolvedAfter"]["VALIDATION"].get<long>() >
        rows.at("code-only")["resolvedAfter"]["VALIDATION"].get<long>());
  // A naive retry-every-failure controller on generic envelopes is the seed's generic strategy:
  // through the engine or not, the same operations and rolls give the same counts.
  const json& naive = rows.at("generic:retry-all");
  for (const char* key :
       {"resolved", "attempts", "failedRetries", "permanentFailureRetries", "wastedAttempts"})
    CHECK(naive[key] == generic[key]);

  // With the hint no better than the code, the actionable strategy resolves exactly what the
  // code-only one does: the repair rolls are shared.
  auto same = by_name(run_json(seed_trio() + " --repair-hint 0.45"));
  CHECK(same.at("actionable")["resolved"] == same.at("code-only")["resolved"]);
  CHECK(same.at("actionable")["failedRetries"] == same.at("code-only")["failedRetries"]);

  // Another seed: other operations.
  auto other = by_name(run_json(seed_trio() + " --seed 2"));
  CHECK(other.at("generic")["operationsDigest"] != generic["operationsDigest"]);
}

TEST_CASE("simulate: the same command prints the same bytes", "[simulate]") {
  const std::string args = "--scenario hostile " + seed_trio() + " " + bench("hardened") +
                           " @retry-all @retryable --seed 7 --runs 20 --ops 150";
  const auto a = test::run(simulate(args));
  const auto b = test::run(simulate(args));
  REQUIRE(a.status == 0);
  CHECK(a.out == b.out);
  const auto ja = test::run(simulate(args + " --format json"));
  const auto jb = test::run(simulate(args + " --format json"));
  CHECK(ja.out == jb.out);

  const std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  const std::string svg1 = dir + "/recourse-simulate-test-1.svg";
  const std::string svg2 = dir + "/recourse-simulate-test-2.svg";
  REQUIRE(test::run(simulate(args + " --plot " + svg1 + " >/dev/null")).status == 0);
  REQUIRE(test::run(simulate(args + " --plot " + svg2 + " >/dev/null")).status == 0);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string plot = slurp(svg1);
  CHECK(plot == slurp(svg2));
  CHECK(plot.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(plot.size() > 1000);
  CHECK(plot.substr(plot.size() - 7) == "</svg>\n");
  for (const char* name : {"hardened", "retry-all", "retryable", "side-effect violations",
                           "wasted attempts", "resolution"})
    CHECK_THAT(plot, Catch::Contains(name));
  std::remove(svg1.c_str());
  std::remove(svg2.c_str());
}

TEST_CASE(
    "simulate: under hostile servers, hardened keeps resolution and cuts waste and "
    "violations",
    "[simulate]") {
  const json out = run_json("--scenario hostile " + bench("actionable") + " " + bench("hardened") +
                            " @retry-all @retryable");
  CHECK(out["comparedWithPublished"] == false);
  CHECK(out["assumptions"]["recoveries"] == 3);
  CHECK(out["assumptions"]["all-retryable"] == 0.2);
  auto rows = by_name(out);
  const json& hardened = rows.at("hardened");
  CHECK(hardened["sideEffectViolations"] == 0);
  CHECK(hardened["duplicateEffects"] == 0);
  CHECK(hardened["wastedAttempts"] == 0);
  CHECK(hardened["lateCalls"] == 0);
  CHECK(hardened["verifications"].get<long>() > 0);  // unknown outcomes were verified
  CHECK(hardened["rules"]["made_up_field"].get<long>() > 0);
  CHECK(hardened["rules"]["budget:retry_after"].get<long>() > 0);
  CHECK(hardened["warnings"]["trace_id_minted"].get<long>() > 0);
  for (const char* naive : {"retry-all", "retryable"}) {
    INFO(naive);
    const json& n = rows.at(naive);
    CHECK(n["sideEffectViolations"].get<long>() > hardened["sideEffectViolations"].get<long>());
    CHECK(n["duplicateEffects"].get<long>() > 0);
    CHECK(n["wastedAttempts"].get<long>() > hardened["wastedAttempts"].get<long>());
    CHECK(n["lateCalls"].get<long>() > 0);  // they wait out an absurd Retry-After
    CHECK(hardened["resolution"].get<double>() >= n["resolution"].get<double>());
  }
  // The seed's actionable policy is safe (the engine's side-effect gate) but follows made-up
  // fields and believes `retryable`; hardened resolves more and wastes nothing.
  const json& actionable = rows.at("actionable");
  CHECK(actionable["sideEffectViolations"] == 0);
  CHECK(actionable["wastedAttempts"].get<long>() > 0);
  CHECK(hardened["resolution"].get<double>() > actionable["resolution"].get<double>());

  // Multi-attempt: with more recovery attempts allowed than the policies' budgets, the budgets
  // decide (the scenario's cap refuses nothing).
  const json more = run_json("--scenario hostile --recoveries 10 " + bench("hardened") + " " +
                             bench("actionable"));
  REQUIRE(more["strategies"].size() == 2);
  for (const auto& s : more["strategies"]) {
    CHECK(s["refusedByRecoveryCap"] == 0);
    CHECK(s["rules"]["budget:attempts"].get<long>() > 0);
  }
}

TEST_CASE("simulate: flags, presets and usage errors", "[simulate]") {
  const json out = run_json("--policy " + bench("actionable") +
                            " --runs 3 --ops 50 --failure-rate 1 --mix 0,1,0,0 --repair-hint 1");
  const json& s = out["strategies"][0];
  CHECK(out["operations"] == 150);
  CHECK(out["comparedWithPublished"] == false);
  CHECK(s.find("published") == s.end());
  CHECK(s["firstCallFailures"]["VALIDATION"] == 150);
  CHECK(s["resolved"] == 150);  // every validation failure repaired with a perfect hint
  CHECK(s["attempts"] == 300);
  CHECK(out["assumptions"]["mix"] == json::array({0, 1, 0, 0}));

  // An explicit envelope kind overrides the file name.
  const json code = run_json("--policy code:" + bench("actionable") + " --runs 2 --ops 50");
  CHECK(code["strategies"][0]["envelope"] == "code");
  CHECK(code["strategies"][0]["name"] == "code:actionable");

  CHECK(test::run(simulate("2>/dev/null")).status == 2);
  CHECK(test::run(simulate("--policy @nope 2>/dev/null")).status == 2);
  CHECK(test::run(simulate("--policy @retryable --failure-rate 2 2>/dev/null")).status == 2);
  CHECK(test::run(simulate("--policy @retryable --scenario wild 2>/dev/null")).status == 2);
  CHECK(test::run(simulate("--policy @retryable --mix 1,2 2>/dev/null")).status == 2);
  CHECK(test::run(simulate("--policy /nonexistent.recourse 2>/dev/null")).status == 1);
}
