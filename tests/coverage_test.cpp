// `recourse test --coverage`: which rules, defaults and guards each policy's tests reach, per
// file, in text and JSON, and `--threshold PERCENT`.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.hpp"

namespace {

namespace fs = std::filesystem;

// A base with a rule and the default, and a policy extending it with a retry rule and two tests:
// one decided by its rule, one by the attempts guard over that rule.
struct Policies {
  fs::path dir;
  Policies() {
    const char* tmp = std::getenv("TMPDIR");
    dir = fs::path(tmp ? tmp : "/tmp") / ("recourse-coverage-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "orders.base.recourse")
        << "version 1\n"
           "policy \"orders.base\" {\n"
           "  rule denied when code == PERMISSION -> authorize\n"
           "  default -> stop\n"
           "}\n";
    std::ofstream(dir / "orders.get.recourse")
        << "version 1\n"
           "policy \"orders.get\" extends \"orders.base\" {\n"
           "  tool { idempotent = true }\n"
           "  rule transient when code == TIMEOUT -> retry\n"
           "  test \"a timeout is retried\" {\n"
           "    envelope {\"code\": \"TIMEOUT\"}\n"
           "    context {\"sideEffect\": \"none\"}\n"
           "    expect retry rule transient\n"
           "  }\n"
           "  test \"the last call stops\" {\n"
           "    envelope {\"code\": \"TIMEOUT\"}\n"
           "    context {\"sideEffect\": \"none\", \"attempt\": 3}\n"
           "    expect stop rule \"budget:attempts\"\n"
           "  }\n"
           "}\n";
  }
  ~Policies() { fs::remove_all(dir); }
  test::Run run(const std::string& args) const {
    return test::run(test::cli() + " test " + args + " " + dir.string() + " 2>&1");
  }
};

}  // namespace

TEST_CASE("test --coverage: the rules, defaults and guards each policy's tests reach",
          "[cli][coverage]") {
  const Policies p;
  const std::string d = p.dir.string();
  const test::Run r = p.run("--coverage");
  CHECK(r.status == 0);
  CHECK(r.out == "PASS " + d +
                     "/orders.get.recourse:5:3 orders.get: a timeout is retried\n"
                     "PASS " +
                     d +
                     "/orders.get.recourse:10:3 orders.get: the last call stops\n"
                     "2 passed, 0 failed\n"
                     "coverage " +
                     d +
                     "/orders.base.recourse \"orders.base\": 0 of 2 (0.0%)\n"
                     "  not reached: rule denied (line 3)\n"
                     "  not reached: default (line 4)\n"
                     "coverage " +
                     d +
                     "/orders.get.recourse \"orders.get\": 2 of 8 (25.0%)\n"
                     "  not reached: rule denied (inherited)\n"
                     "  not reached: default (inherited)\n"
                     "  not reached: guard gate:committed\n"
                     "  not reached: guard gate:unknown_outcome\n"
                     "  not reached: guard budget:retry_after\n"
                     "  not reached: guard budget:deadline\n"
                     "coverage: 2 of 10 rules, defaults and guards reached (20.0%)\n");
  // Without --coverage, nothing of it.
  const std::string plain = p.run("").out;
  CHECK(plain.find("not reached") == std::string::npos);
  CHECK_THAT(plain, Catch::EndsWith("2 passed, 0 failed\n"));
}

TEST_CASE("test --threshold: exit 1 below the share, 0 at it", "[cli][coverage]") {
  const Policies p;
  const test::Run at = p.run("--threshold 20");
  CHECK(at.status == 0);
  CHECK_THAT(at.out, Catch::EndsWith("reached (20.0%), at least 20%\n"));
  const test::Run below = p.run("--threshold 20.5");
  CHECK(below.status == 1);
  CHECK_THAT(below.out, Catch::EndsWith("reached (20.0%), below the threshold 20.5%\n"));
  CHECK(p.run("--threshold 101").status == 2);  // a usage error
}

TEST_CASE("test --coverage --format json: one object with the diagnostics and the coverage",
          "[cli][coverage]") {
  const Policies p;
  const test::Run r = p.run("--coverage --format json --threshold 50");
  CHECK(r.status == 1);
  const auto out = nlohmann::json::parse(r.out);
  CHECK(out["diagnostics"] == nlohmann::json::array());
  const auto& c = out["coverage"];
  CHECK(c["reached"] == 2);
  CHECK(c["total"] == 10);
  CHECK(c["percent"] == 20.0);
  CHECK(c["threshold"] == 50.0);
  REQUIRE(c["policies"].size() == 2);
  const auto& get = c["policies"][1];
  CHECK(get["file"] == (p.dir / "orders.get.recourse").string());
  CHECK(get["policy"] == "orders.get");
  CHECK(get["reached"] == 2);
  CHECK(get["total"] == 8);
  CHECK(get["targets"][0] == nlohmann::json{{"kind", "rule"},
                                            {"name", "transient"},
                                            {"tests", 2},
                                            {"line", 4},
                                            {"column", 3},
                                            {"inherited", false}});
  CHECK(get["targets"][2]["kind"] == "default");
  CHECK(get["targets"][2]["inherited"] == true);
  CHECK(get["targets"][6] ==
        nlohmann::json{{"kind", "guard"}, {"name", "budget:attempts"}, {"tests", 1}});
}
