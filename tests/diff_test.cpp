// recourse diff: every region whose decision changes, with examples both versions reproduce.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support.hpp"

namespace {

recourse::Policy compiled(const std::string& text) {
  return test::policy(text);
}

const char* kBefore = R"(policy "p" {
  rule t when code == TRANSIENT -> retry
  rule a when code == PERMISSION -> authorize
  default -> stop
})";

const char* kAfter = R"(policy "p" {
  rule t when code in [TRANSIENT, RATE_LIMITED] -> retry
  rule a when code == PERMISSION -> escalate
  default -> stop
})";

// Decides the example of a change with a policy.
recourse::Decision decide(const recourse::Policy& p, const std::string& example) {
  const auto env_at = example.find("envelope ");
  const auto ctx_at = example.find(" context ");
  REQUIRE(env_at == 0);
  REQUIRE(ctx_at != std::string::npos);
  return p.decide(test::envelope(example.substr(9, ctx_at - 9)),
                  test::context(example.substr(ctx_at + 9)));
}

}  // namespace

TEST_CASE("diff: each changed region once, with an example both versions reproduce", "[diff]") {
  const auto r = recourse::diff({"before.recourse", kBefore}, {"after.recourse", kAfter});
  REQUIRE(r.ok());
  REQUIRE(r->changes.size() == 3);
  const auto before = compiled(kBefore), after = compiled(kAfter);
  std::vector<std::string> pairs;
  for (const auto& c : r->changes) {
    pairs.push_back(c.before_rule + "->" + c.after_rule);
    INFO(c.example);
    REQUIRE_FALSE(c.example.empty());
    CHECK(decide(before, c.example).route == c.before_route);
    CHECK(decide(after, c.example).route == c.after_route);
    CHECK(decide(before, c.example).rule == c.before_rule);
    CHECK(decide(after, c.example).rule == c.after_rule);
  }
  CHECK(pairs == std::vector<std::string>{"a->a", "default->gate:unknown_outcome", "default->t"});
}

TEST_CASE("diff: a comparison past CompileOptions::max_cover_splits is W109 naming the option",
          "[diff][limits]") {
  recourse::CompileOptions none;
  none.max_cover_splits = 0;
  const auto r = recourse::diff({"before.recourse", kBefore}, {"after.recourse", kAfter}, {}, none);
  CHECK_FALSE(r.ok());
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].code == "W109");
  CHECK(r.diagnostics()[0].message == "diff not decided: the tables are too large to compare");
  CHECK(r.diagnostics()[0].help ==
        "raise the splits one comparison may make (recourse diff --max-cover-splits N, "
        "CompileOptions::max_cover_splits)");
}

TEST_CASE("diff: no change, and what cannot be compared", "[diff]") {
  auto same = recourse::diff({"a", kBefore}, {"b", std::string("# reformatted\n") + kBefore});
  REQUIRE(same.ok());
  CHECK(same->changes.empty());
  auto codes =
      recourse::diff({"a", kBefore}, {"b", R"(policy "p" { codes { X } default -> stop })"});
  CHECK_FALSE(codes.ok());
  CHECK(codes.diagnostics().at(0).code == "E040");
  CHECK(codes.diagnostics().at(0).file == "b");  // at the after version's policy
  CHECK(codes.diagnostics().at(0).line == 1);
  CHECK_THAT(codes.diagnostics().at(0).message,
             Catch::Contains("only before: none; only after: X"));
  auto broken = recourse::diff({"a", kBefore}, {"b", "policy \"p\" {"});
  CHECK_FALSE(broken.ok());
  CHECK(broken.diagnostics().at(0).code == "E001");
}

TEST_CASE("cli: recourse diff exits 1 when decisions change, 0 when none do", "[diff][cli]") {
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  const std::string a = dir + "/recourse-diff-before.recourse",
                    b = dir + "/recourse-diff-after.recourse";
  { std::ofstream(a) << kBefore; }
  { std::ofstream(b) << kAfter; }
  auto changed = test::run(test::cli() + " diff " + a + " " + b);
  CHECK(changed.status == 1);
  CHECK_THAT(changed.out, Catch::Contains("authorize (a) -> escalate (a)"));
  CHECK_THAT(changed.out, Catch::Contains("3 regions of inputs change decision"));
  auto none = test::run(test::cli() + " diff " + a + " " + a);
  CHECK(none.status == 0);
  CHECK_THAT(none.out, Catch::Contains("no decision changes"));
}

TEST_CASE("diff: settings that move budgets and delays are named", "[diff]") {
  const std::string before = R"(policy "p" {
  limits { attempts = 3 }
  backoff exponential base 100ms max 2s
  rule t when code == TRANSIENT -> retry
  default -> stop
})";
  std::string after = before;
  after.replace(after.find("attempts = 3"), 12, "attempts = 4");
  after.replace(after.find("max 2s"), 6, "max 3s");
  const auto r = recourse::diff({"a.recourse", before}, {"b.recourse", after});
  REQUIRE(r.ok());
  // No route changes in the table, yet the third call of a transient failure now retries.
  CHECK(r->changes.empty());
  REQUIRE(r->settings.size() == 2);
  CHECK(r->settings[0].setting == "limits.attempts");
  CHECK(r->settings[0].before == "3");
  CHECK(r->settings[0].after == "4");
  CHECK(r->settings[1].setting == "backoff.max");
  CHECK(r->settings[1].before == "2000ms");
  CHECK(r->settings[1].after == "3000ms");
  const auto third =
      test::context(R"({"tool":"p","sideEffect":"none","idempotent":true,"attempt":3})");
  const auto transient = test::envelope(R"({"code":"TRANSIENT"})");
  CHECK(test::policy(before).decide(transient, third).route == recourse::Route::Stop);
  CHECK(test::policy(after).decide(transient, third).route == recourse::Route::Retry);
}

TEST_CASE("diff: a version that extends a base is compared with its base", "[diff]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("recourse-diff-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "base.recourse") << "policy \"base\" {\n  rule transient when code == "
                                          "TIMEOUT -> retry\n  default -> stop\n}\n";
  const std::string own = "policy \"c\" extends \"base\" {\n  tool { idempotent = true }\n";
  const auto r = recourse::diff(
      {(dir / "c.recourse").string(), own + "  rule slow when code == TIMEOUT -> escalate\n}\n"},
      {(dir / "c.recourse").string(), own + "}\n"});
  REQUIRE(r.ok());
  bool to_base_rule = false;
  for (const auto& c : r->changes)
    to_base_rule = to_base_rule || (c.before_rule == "slow" && c.after_rule == "transient" &&
                                    c.after_route == recourse::Route::Retry);
  CHECK(to_base_rule);

  const auto missing =
      recourse::diff({(dir / "c.recourse").string(), "policy \"c\" extends \"nope\" {\n}\n"},
                     {(dir / "c.recourse").string(), own + "}\n"});
  CHECK_FALSE(missing.ok());
  REQUIRE_FALSE(missing.diagnostics().empty());
  CHECK(missing.diagnostics()[0].code == "E026");
  fs::remove_all(dir);
}
