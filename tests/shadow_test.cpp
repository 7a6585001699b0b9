// Shadow policies (engine.hpp): a candidate decides beside the live bundle, read-only, and its
// disagreements are what `recourse diff` names; `recourse replay --shadow` tabulates them.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "support.hpp"

namespace {

namespace fs = std::filesystem;

// A directory of this test's files, removed at the end.
struct Dir {
  const fs::path root =
      fs::temp_directory_path() / ("recourse-shadow-" + std::to_string(::getpid()));
  Dir() { fs::create_directories(root); }
  ~Dir() { fs::remove_all(root); }
  std::string path(const std::string& name) const { return (root / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    fs::create_directories((root / name).parent_path());
    std::ofstream(root / name, std::ios::binary) << text;
    return path(name);
  }
};

// `recourse ARGS...` with stderr dropped.
test::Run cli(const std::vector<std::string>& args) {
  std::string command = test::cli();
  for (const auto& a : args) command += " '" + a + "'";
  return test::run(command + " 2>/dev/null");
}

const char* kLive = R"(policy "p" {
  tool { idempotent = true }
  limits { attempts = 3 }
  rule t when code == TRANSIENT -> retry
  rule a when code == PERMISSION -> authorize
  default -> stop
})";

// One rule changed: rate limits are retried too, and permission errors escalated.
const char* kCandidate = R"(policy "p" {
  tool { idempotent = true }
  limits { attempts = 3 }
  rule t when code in [TRANSIENT, RATE_LIMITED] -> retry
  rule a when code == PERMISSION -> escalate
  default -> stop
})";

recourse::Bundle bundle(const char* text) {
  auto r = recourse::compile({{"p.recourse", text}});
  REQUIRE(r.ok());
  return std::move(*r);
}

}  // namespace

TEST_CASE("shadow: a candidate disagrees on exactly the inputs recourse diff names", "[shadow]") {
  const auto changes = recourse::diff({"live", kLive}, {"candidate", kCandidate});
  REQUIRE(changes.ok());
  std::set<std::string> named;  // "live rule -> candidate rule"
  for (const auto& c : changes->changes) named.insert(c.before_rule + " -> " + c.after_rule);
  REQUIRE(named.size() == 7);

  recourse::Engine engine(bundle(kLive));
  engine.set_candidate(bundle(kCandidate));
  std::vector<std::string> logged;
  engine.set_log(
      [&](const recourse::DecisionRecord& r) { logged.push_back(recourse::to_json(r)); });

  // Inputs across the live table's domain, and each of diff's examples.
  const recourse::Bundle live = bundle(kLive), candidate = bundle(kCandidate);
  std::vector<recourse::Sample> inputs = recourse::sample_inputs(*live.find("p"), 4000, 7);
  for (const auto& c : changes->changes) {
    const auto ctx_at = c.example.find(" context ");
    inputs.push_back({test::envelope(c.example.substr(9, ctx_at - 9)),
                      test::context(c.example.substr(ctx_at + 9))});
  }
  std::map<std::string, std::uint64_t> expected;
  std::uint64_t disagreements = 0, routes = 0;
  std::set<std::string> seen;
  for (const auto& [envelope, context] : inputs) {
    logged.clear();
    const recourse::Decision d = engine.decide(envelope, context);
    const recourse::Decision c = candidate.decide(envelope, context);
    const std::string pair = std::string(d.rule) + " -> " + std::string(c.rule);
    const bool differs = recourse::shadow_differences(d, c) != 0;
    INFO(pair << " on " << recourse::to_json(envelope) << " " << recourse::to_json(context));
    // Where the two disagree, diff names the pair of rules, and nowhere else.
    CHECK(differs == (named.count(pair) == 1));
    REQUIRE(logged.size() == 1);
    const auto record = nlohmann::json::parse(logged[0]);
    CHECK(record.contains("shadow") == differs);
    if (differs) {
      ++disagreements;
      routes += d.route != c.route;
      ++expected[pair];
      seen.insert(pair);
      CHECK(record["shadow"]["result"]["rule"] == std::string(c.rule));
      CHECK(record["shadow"]["result"]["route"] == recourse::to_string(c.route));
      CHECK(record["route"] == recourse::to_string(d.route));
    }
  }
  CHECK(seen == named);  // every region was reached
  const recourse::ShadowCounters counted = engine.shadow_counters();
  CHECK(counted.decisions == inputs.size());
  CHECK(counted.disagreements == disagreements);
  CHECK(counted.rules.at("p") == expected);
  CHECK(counted.differences.at("route") == routes);
  CHECK(routes >= expected.at("a -> a") + expected.at("default -> t"));
}

TEST_CASE("shadow: the live decisions and the log are the same with and without a candidate",
          "[shadow]") {
  recourse::Engine plain(bundle(kLive)), shadowed(bundle(kLive));
  shadowed.set_candidate(bundle(kLive));  // the same policy: it never disagrees
  std::vector<std::string> a, b;
  plain.set_log([&](const recourse::DecisionRecord& r) { a.push_back(recourse::to_json(r)); });
  shadowed.set_log([&](const recourse::DecisionRecord& r) { b.push_back(recourse::to_json(r)); });
  recourse::Engine disagreeing(bundle(kLive));
  disagreeing.set_candidate(bundle(kCandidate));
  const recourse::Bundle live = bundle(kLive);
  for (const auto& [envelope, context] : recourse::sample_inputs(*live.find("p"), 500, 3)) {
    const recourse::Decision x = plain.decide(envelope, context);
    const recourse::Decision y = shadowed.decide(envelope, context);
    const recourse::Decision z = disagreeing.decide(envelope, context);
    CHECK(recourse::to_json(x, envelope) == recourse::to_json(y, envelope));
    CHECK(recourse::to_json(x, envelope) == recourse::to_json(z, envelope));
  }
  CHECK(a == b);
  CHECK(shadowed.shadow_counters().disagreements == 0);
  CHECK(shadowed.shadow_counters().decisions == 500);
  CHECK(plain.shadow_counters().decisions == 0);
}

TEST_CASE("shadow: a candidate that fails to compile changes neither bundle; drop ends it",
          "[shadow]") {
  recourse::Engine engine(bundle(kLive));
  CHECK(engine.candidate() == nullptr);
  const auto set = engine.reload_candidate({{"p.recourse", kCandidate}});
  REQUIRE(set.ok());
  CHECK(*set == engine.generation());
  const auto candidate = engine.candidate();
  REQUIRE(candidate != nullptr);

  const auto bad = engine.reload_candidate({{"p.recourse", "policy \"p\" { default -> nope }"}});
  CHECK_FALSE(bad.ok());
  CHECK(recourse::has_errors(bad.diagnostics()));
  const auto empty = engine.reload_candidate({});
  CHECK_FALSE(empty.ok());
  CHECK(empty.diagnostics().back().code == "E004");
  CHECK(engine.candidate() == candidate);
  CHECK(engine.bundle()->find("p")->hash() == bundle(kLive).find("p")->hash());

  const auto permission = test::envelope(R"({"code":"PERMISSION"})");
  const auto context = test::context(R"({"tool":"p","sideEffect":"none"})");
  CHECK(engine.decide(permission, context).route == recourse::Route::Authorize);
  CHECK(engine.shadow_counters().disagreements == 1);
  engine.drop_candidate();
  CHECK(engine.candidate() == nullptr);
  CHECK(engine.decide(permission, context).route == recourse::Route::Authorize);
  CHECK(engine.shadow_counters().disagreements == 1);
  CHECK(engine.shadow_counters().decisions == 1);
  CHECK(recourse::to_json(engine.shadow_counters()) ==
        R"({"decisions":1,"disagreements":1,"rules":{"p":{"a -> a":1}},)"
        R"("differences":{"route":1}})");
}

TEST_CASE("shadow: differences name what a host would do differently", "[shadow]") {
  recourse::Decision a, b;
  CHECK(recourse::shadow_differences(a, b) == 0);
  b.route = recourse::Route::Retry;
  b.delay_ms = 250;
  b.rule = "t";
  CHECK(recourse::shadow_differences(a, b) ==
        (recourse::kShadowRoute | recourse::kShadowDelay | recourse::kShadowRule));
  a = b;
  b.idempotency_key = recourse::KeyDirective::Reuse;
  b.exhausted = "attempts";
  b.reason = "another reason";  // follows from the rule: not compared
  CHECK(recourse::shadow_differences(a, b) == (recourse::kShadowKey | recourse::kShadowExhausted));
  a = b;
  b.target = "payments.lookup";
  CHECK(recourse::shadow_differences(a, b) == recourse::kShadowTarget);
}

TEST_CASE("cli: replay --shadow tabulates the disagreements by rule pair", "[shadow][cli]") {
  const Dir dir;
  const std::string live = dir.write("live/p.recourse", kLive);
  const std::string candidate = dir.write("candidate/p.recourse", kCandidate);
  const std::string trace =
      dir.write("trace.jsonl",
                R"({"tool":"p","envelope":{"code":"TRANSIENT"},"context":{"sideEffect":"none"}}
{"tool":"p","envelope":{"code":"RATE_LIMITED"},"context":{"sideEffect":"none"}}
{"tool":"p","envelope":{"code":"RATE_LIMITED"},"context":{"sideEffect":"none","attempt":2}}
{"tool":"p","envelope":{"code":"PERMISSION"},"context":{"sideEffect":"none"}}
)");
  const std::string log = dir.path("decisions.jsonl");
  const auto r = cli({"replay", "--policy", dir.path("live"), "--shadow", dir.path("candidate"),
                      "--log", log, "--format", "json", trace});
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  const auto& shadow = out["summary"]["shadow"];
  CHECK(shadow["decisions"] == 4);
  CHECK(shadow["disagreements"] == 3);
  REQUIRE(shadow["rules"].size() == 2);
  CHECK(shadow["rules"][0]["liveRule"] == "a");
  CHECK(shadow["rules"][0]["candidateRule"] == "a");
  CHECK(shadow["rules"][0]["count"] == 1);
  CHECK(shadow["rules"][0]["differences"] == "route");
  CHECK(shadow["rules"][1]["liveRule"] == "default");
  CHECK(shadow["rules"][1]["candidateRule"] == "t");
  CHECK(shadow["rules"][1]["count"] == 2);
  CHECK(shadow["rules"][1]["differences"] == "route,rule,delay");
  CHECK(shadow["rules"][1]["example"]["line"] == 2);

  // The example reproduces the candidate's decision with `recourse decide`.
  const auto& example = shadow["rules"][1]["example"];
  const std::string envelope = dir.write("example-envelope.json", example["envelope"].dump());
  const std::string context = dir.write("example-context.json", example["context"].dump());
  const auto decided = cli(
      {"decide", "--policy", dir.path("candidate"), "--envelope", envelope, "--context", context});
  REQUIRE(decided.status == 0);
  CHECK(nlohmann::json::parse(decided.out)["route"] == example["candidateRoute"]);
  CHECK(example["candidateRoute"] == "retry");
  CHECK(example["liveRoute"] == "stop");

  // The log carries the candidate where it disagreed, and replays as input: the same table.
  std::ifstream in(log);
  int with_shadow = 0, lines = 0;
  for (std::string line; std::getline(in, line); ++lines)
    with_shadow += nlohmann::json::parse(line).contains("shadow");
  CHECK(lines == 4);
  CHECK(with_shadow == 3);
  const auto again = cli({"replay", "--policy", dir.path("live"), "--shadow", dir.path("candidate"),
                          "--format", "json", log});
  REQUIRE(again.status == 0);
  const auto replayed = nlohmann::json::parse(again.out)["summary"];
  CHECK(replayed["logRecords"] == 4);
  CHECK(replayed["shadow"]["disagreements"] == 3);
  CHECK(replayed["shadow"]["rules"] == shadow["rules"]);
}
