// recourse diff: every region whose decision changes, with examples both versions reproduce.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

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

// Decides every example of `r` with both versions and requires what the change reports: the
// same route, rule, target, spent budget and key directive, a delay within the reported range,
// and two decisions that differ. Returns the changes as `before-rule->after-rule` pairs.
std::vector<std::string> reproduce(const recourse::Result<recourse::PolicyDiff>& r,
                                   const std::string& before_text, const std::string& after_text) {
  const auto before = compiled(before_text), after = compiled(after_text);
  std::vector<std::string> pairs;
  for (const auto& c : r->changes) {
    pairs.push_back(c.before_rule + "->" + c.after_rule);
    INFO(pairs.back() << " e.g. " << c.example);
    REQUIRE_FALSE(c.example.empty());
    const recourse::Decision x = decide(before, c.example), y = decide(after, c.example);
    CHECK(x.route == c.before_route);
    CHECK(y.route == c.after_route);
    CHECK(x.rule == c.before_rule);
    CHECK(y.rule == c.after_rule);
    CHECK(x.target == c.before_target);
    CHECK(y.target == c.after_target);
    CHECK(x.exhausted == c.before_exhausted);
    CHECK(y.exhausted == c.after_exhausted);
    CHECK(x.idempotency_key == c.before_key);
    CHECK(y.idempotency_key == c.after_key);
    CHECK(x.delay_ms >= c.before_delay_min_ms);
    CHECK(x.delay_ms <= c.before_delay_max_ms);
    CHECK(y.delay_ms >= c.after_delay_min_ms);
    CHECK(y.delay_ms <= c.after_delay_max_ms);
    const bool differ = x.route != y.route || x.rule != y.rule || x.target != y.target ||
                        x.exhausted != y.exhausted || x.idempotency_key != y.idempotency_key ||
                        c.before_delay_min_ms != c.after_delay_min_ms ||
                        c.before_delay_max_ms != c.after_delay_max_ms;
    CHECK(differ);
  }
  return pairs;
}

// `before` with each of `edits` (text, replacement) made once.
std::string edited(std::string text,
                   const std::vector<std::pair<std::string, std::string>>& edits) {
  for (const auto& [from, to] : edits) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  }
  return text;
}

const char* kLimits = R"(policy "p" {
  tool { idempotent = true }
  limits { attempts = 3 }
  rule t when code == TRANSIENT -> retry
  default -> stop
})";

}  // namespace

TEST_CASE("diff: each changed region once, with an example both versions reproduce", "[diff]") {
  const auto r = recourse::diff({"before.recourse", kBefore}, {"after.recourse", kAfter});
  REQUIRE(r.ok());
  // A rate limit was stopped by the default; now the retry rule takes it, so the guards that
  // watch retries decide it too: the rule (and the budget spent) changes even where the route
  // stays stop.
  CHECK(reproduce(r, kBefore, kAfter) ==
        std::vector<std::string>{"a->a", "default->gate:committed", "default->gate:unknown_outcome",
                                 "default->budget:retry_after", "default->budget:attempts",
                                 "default->budget:deadline", "default->t"});
  CHECK(r->changes.at(0).before_route == recourse::Route::Authorize);
  CHECK(r->changes.at(0).after_route == recourse::Route::Escalate);
  CHECK(r->changes.at(4).after_exhausted == "attempts");
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
  CHECK_THAT(changed.out, Catch::Contains("7 regions of inputs change decision"));
  auto none = test::run(test::cli() + " diff " + a + " " + a);
  CHECK(none.status == 0);
  CHECK_THAT(none.out, Catch::Contains("no decision changes"));
}

TEST_CASE("cli: recourse diff --format json gives each side's whole decision", "[diff][cli]") {
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  const std::string a = dir + "/recourse-diff-json-a.recourse",
                    b = dir + "/recourse-diff-json-b.recourse";
  { std::ofstream(a) << kLimits; }
  { std::ofstream(b) << edited(kLimits, {{"attempts = 3", "attempts = 4"}}); }
  const auto run = test::run(test::cli() + " diff --format json " + a + " " + b);
  CHECK(run.status == 1);
  const auto out = nlohmann::json::parse(run.out);
  REQUIRE(out["changes"].size() == 2);
  const auto& retry = out["changes"][1];
  CHECK(retry["before"] ==
        nlohmann::json::parse(R"({"rule":"budget:attempts","route":"stop","target":"",)"
                              R"("exhausted":"attempts","idempotencyKey":"none",)"
                              R"("delayMs":{"min":0,"max":0}})"));
  CHECK(retry["after"] ==
        nlohmann::json::parse(R"({"rule":"t","route":"retry","target":"","exhausted":"",)"
                              R"("idempotencyKey":"none","delayMs":{"min":50,"max":1000}})"));
  CHECK(out["settings"] ==
        nlohmann::json::parse(R"([{"setting":"limits.attempts","before":"3","after":"4"}])"));
  const auto text = test::run(test::cli() + " diff " + a + " " + b);
  CHECK_THAT(text.out, Catch::Contains("stop (budget:attempts) -> retry (t) delay 50..1000ms\n"));
  CHECK_THAT(text.out, Catch::EndsWith("2 regions of inputs change decision, 1 setting changed\n"));
}

TEST_CASE("diff: a limit that moves a budget changes the decisions it moves", "[diff]") {
  // attempts = 3 -> 4: the third call of a transient failure stopped and now retries, and only
  // there (with maxAttempts sent by the host, both versions read the host's).
  const std::string after = edited(kLimits, {{"attempts = 3", "attempts = 4"}});
  const auto r = recourse::diff({"a.recourse", kLimits}, {"b.recourse", after});
  REQUIRE(r.ok());
  REQUIRE(r->settings.size() == 1);
  CHECK(r->settings[0].setting == "limits.attempts");
  CHECK(r->settings[0].before == "3");
  CHECK(r->settings[0].after == "4");
  // Where the host sends maxAttempts both versions read the host's: the change is where it
  // does not. There the third call also meets a spent deadline before the attempts budget.
  CHECK(reproduce(r, kLimits, after) ==
        std::vector<std::string>{"budget:attempts->budget:deadline", "budget:attempts->t"});
  const auto& c = r->changes.at(1);
  CHECK(c.before_route == recourse::Route::Stop);
  CHECK(c.before_exhausted == "attempts");
  CHECK(c.after_route == recourse::Route::Retry);
  CHECK(c.after_exhausted.empty());
  CHECK(c.example == R"(envelope {"code":"TRANSIENT"} context {"tool":"p","idempotent":true,)"
                     R"("sideEffect":"none","attempt":3,"deadlineMs":3600000})");
  CHECK(c.after_delay_min_ms == 50);    // min_delay
  CHECK(c.after_delay_max_ms == 1000);  // 250ms * 2^(3-1), full jitter
  CHECK(r->changes.at(0).after_exhausted == "deadline");
}

TEST_CASE("diff: a backoff that changes delays names the retries whose range moves", "[diff]") {
  const std::string before = edited(kLimits, {{"limits { attempts = 3 }",
                                               "limits { attempts = 3 }\n  backoff exponential "
                                               "base 100ms max 2s"}});
  const std::string after = edited(before, {{"max 2s", "max 3s"}});
  const auto r = recourse::diff({"a.recourse", before}, {"b.recourse", after});
  REQUIRE(r.ok());
  REQUIRE(r->settings.size() == 1);
  CHECK(r->settings[0].setting == "backoff.max");
  CHECK(r->settings[0].before == "2000ms");
  CHECK(r->settings[0].after == "3000ms");
  // 100ms * 2^(n-1) passes 2s at the sixth call: only a host that allows six calls sees it.
  CHECK(reproduce(r, before, after) == std::vector<std::string>{"t->t"});
  const auto& c = r->changes.at(0);
  CHECK(c.before_delay_min_ms == 50);
  CHECK(c.before_delay_max_ms == 2000);
  CHECK(c.after_delay_min_ms == 50);
  CHECK(c.after_delay_max_ms == 3000);
  CHECK_THAT(c.example, Catch::Contains(R"("attempt":6)"));
  CHECK_THAT(c.example, Catch::Contains(R"("maxAttempts":)"));
}

TEST_CASE("diff: every setting that moves a decision, one at a time", "[diff]") {
  using Pairs = std::vector<std::string>;
  struct Case {
    const char* name;
    std::vector<std::pair<std::string, std::string>> edits;
    Pairs pairs;
  };
  const std::vector<Case> cases = {
      // A deadline: a call 10 s into its operation stops (unless the host sends deadlineMs).
      {"deadline", {{"attempts = 3", "attempts = 3 deadline = 10s"}}, {"t->budget:deadline"}},
      // A cost limit: spent, it stops retries, and comes before the deadline among the budgets.
      {"cost",
       {{"attempts = 3", "attempts = 3 cost = 5"}},
       {"budget:deadline->budget:cost", "t->budget:cost"}},
      // Not idempotent: an unknown outcome may not be resent, and the gate comes before every
      // budget (unless the host says the call is idempotent).
      {"idempotent",
       {{"idempotent = true", "idempotent = false"}},
       {"budget:retry_after->gate:unknown_outcome", "budget:attempts->gate:unknown_outcome",
        "budget:deadline->gate:unknown_outcome", "t->gate:unknown_outcome"}},
      // Keys honoured: a retry reuses the key, and a pinned key may resend an unknown outcome
      // (for a host that says the call is not idempotent), where the budgets then decide.
      {"keys",
       {{"idempotent = true", "idempotent = true idempotency_keys = true"}},
       {"gate:unknown_outcome->budget:retry_after", "gate:unknown_outcome->budget:attempts",
        "gate:unknown_outcome->budget:deadline", "gate:unknown_outcome->t", "t->t"}},
      {"rule name", {{"rule t when", "rule transient when"}}, {"t->transient"}},
      // A lower Retry-After cap: its guard comes before the attempts and deadline budgets.
      {"retry after cap",
       {{"attempts = 3", "attempts = 3 retry_after_max = 5s"}},
       {"budget:attempts->budget:retry_after", "budget:deadline->budget:retry_after",
        "t->budget:retry_after"}},
  };
  for (const Case& k : cases) {
    SECTION(k.name) {
      const std::string after = edited(kLimits, k.edits);
      const auto r = recourse::diff({"a.recourse", kLimits}, {"b.recourse", after});
      REQUIRE(r.ok());
      CHECK(reproduce(r, kLimits, after) == k.pairs);
    }
  }
}

TEST_CASE("diff: a setting that changes no decision is listed, with no region", "[diff]") {
  // Repairs bound only repair routes; this policy has none.
  const std::string after = edited(kLimits, {{"attempts = 3", "attempts = 3 repairs = 2"}});
  const auto r = recourse::diff({"a.recourse", kLimits}, {"b.recourse", after});
  REQUIRE(r.ok());
  CHECK(r->changes.empty());
  REQUIRE(r->settings.size() == 1);
  CHECK(r->settings[0].setting == "limits.repairs");
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

TEST_CASE("diff: a tool's argument list moves `field in arguments`", "[diff]") {
  const std::string before = R"(policy "p" {
  tool { arguments = [to] }
  rule fix when code == VALIDATION and field in arguments -> repair
  default -> stop
})";
  const std::string after = edited(before, {{"[to]", "[to, cc]"}});
  const auto r = recourse::diff({"a.recourse", before}, {"b.recourse", after});
  REQUIRE(r.ok());
  // `cc` is an argument now, unless the host sends its own list; the repair's guards follow.
  const auto pairs = reproduce(r, before, after);
  CHECK(std::find(pairs.begin(), pairs.end(), "default->fix") != pairs.end());
  for (const auto& c : r->changes) {
    CHECK_THAT(c.example, Catch::Contains(R"("field":"cc")"));
    CHECK_THAT(c.example, !Catch::Contains(R"("arguments")"));
  }
}

TEST_CASE("diff: every example over the bundled policies and their settings reproduces", "[diff]") {
  // Each bundled policy against itself with one setting edited: every region printed has an
  // example, and both versions decide it as reported.
  const std::vector<std::pair<std::regex, std::string>> edits = {
      // A block's settings one a line are aligned on `=` (fmt): any run of spaces before it.
      {std::regex("attempts +=  *[0-9]+"), "attempts = 7"},
      {std::regex("deadline +=  *[0-9a-z]+"), "deadline = 5s"},
      {std::regex("\\{ idempotent = true"), "{ idempotent = false"},
      {std::regex("    idempotent += false"), "    idempotent = true"},
      {std::regex("idempotency_keys += false"), "idempotency_keys = true"},
      {std::regex("arguments += \\[[a-z]+"), "arguments = [subject_line"},
      {std::regex("max [0-9]+s"), "max 1s"},
      {std::regex("base [0-9]+m?s"), "base 1s"},
  };
  std::size_t compared = 0, regions = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(test::source_dir() + "/rules/examples")) {
    const std::string path = entry.path().string();
    const std::string text = test::read_file(path);
    for (const auto& [pattern, replacement] : edits) {
      if (!std::regex_search(text, pattern)) continue;
      const std::string after = std::regex_replace(text, pattern, replacement);
      INFO(path << ": " << replacement);
      const auto r = recourse::diff({path, text}, {path, after});
      REQUIRE(r.ok());
      CHECK_FALSE(r->settings.empty());
      reproduce(r, text, after);
      ++compared;
      regions += r->changes.size();
    }
  }
  CHECK(compared >= 20);
  CHECK(regions >= compared);
}

TEST_CASE("diff: the breaker's counts and probe_lease are setting changes, not decision changes",
          "[diff][breaker]") {
  // They change what the breaker records, never a decision over the table: diff names them
  // (the policy hash changes with them) and finds no region of inputs that decides otherwise.
  const std::string before =
      edited(kLimits, {{"limits { attempts = 3 }", "limits { attempts = 3 }\n  breaker { }"}});
  const std::string after =
      edited(before, {{"breaker { }", "breaker { probe_lease = 5s  counts = [VALIDATION] }"}});
  const auto r = recourse::diff({"a.recourse", before}, {"b.recourse", after});
  REQUIRE(r.ok());
  REQUIRE(r->settings.size() == 2);
  CHECK(r->settings[0].setting == "breaker.probe_lease");
  CHECK(r->settings[0].before == "30000ms");
  CHECK(r->settings[0].after == "5000ms");
  CHECK(r->settings[1].setting == "breaker.counts");
  CHECK(r->settings[1].before == "[TRANSIENT,RATE_LIMITED,TIMEOUT,PENDING]");
  CHECK(r->settings[1].after == "[VALIDATION]");
  CHECK(r->changes.empty());
}
