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

// Instruction-like text escalates; a transient failure is retried.
const char* kSteer = R"(policy "p" {
  tool { idempotent = true }
  limits { attempts = 3 }
  rule steered when suspicious_text -> escalate "instruction-like text"
  rule t when code == TRANSIENT -> retry
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

TEST_CASE("engine: the decision log redacts the envelope's texts and keeps what the decision read",
          "[shadow][log]") {
  recourse::Engine engine(bundle(kSteer));
  // A secret pair and an encoded payload (a 56-character base64 run, steering category
  // encoded_payload, bit 5) in the message; markup in the suggestion.
  const auto envelope = test::envelope(
      R"({"code":"TRANSIENT","message":"Upstream busy; api_key=sk-live0123456789abcdefXYZ )"
      R"(rejected. Payload: QWxhZGRpbjpvcGVuIHNlc2FtZQ0KQWxhZGRpbjpvcGVuIHNlc2FtZQ0K",)"
      R"("suggestion":"<b>Retry</b> in 5 s","traceId":"t-1"})");
  const auto context = test::context(R"({"tool":"p","sideEffect":"none"})");
  std::string redacted, kept, capped;
  engine.set_log([&](const recourse::DecisionRecord& r) {
    redacted = recourse::to_json(r);
    kept = recourse::to_json(r, {recourse::LogText::Keep});
    capped = recourse::to_json(r, {recourse::LogText::Redact, 16});
  });
  const auto d = engine.decide(envelope, context);
  CHECK(d.rule == "steered");
  CHECK(d.steering == 32u);

  const auto j = nlohmann::json::parse(redacted);
  CHECK(j["input"]["envelope"]["message"] ==
        "Upstream busy; api_key=[redacted] rejected. Payload: [redacted]");
  CHECK(j["input"]["envelope"]["suggestion"] == "Retry in 5 s");
  CHECK(j["input"]["envelope"]["code"] == "TRANSIENT");
  CHECK(j["input"]["redacted"]["fields"] == nlohmann::json::array({"message", "suggestion"}));
  CHECK(j["input"]["redacted"]["steering"] == 32);
  CHECK(redacted.find("sk-live") == std::string::npos);
  CHECK(redacted.find("QWxh") == std::string::npos);
  CHECK(redacted.find("<b>") == std::string::npos);
  CHECK(j["rule"] == "steered");
  // max_text_bytes cuts each text on a character boundary, the ellipsis included.
  CHECK(nlohmann::json::parse(capped)["input"]["envelope"]["message"] ==
        "Upstream busy\xe2\x80\xa6");
  // LogText::Keep writes the texts as received, with no note.
  const auto k = nlohmann::json::parse(kept);
  CHECK(k["input"]["envelope"]["message"] == *envelope.message);
  CHECK(k["input"]["envelope"]["suggestion"] == "<b>Retry</b> in 5 s");
  CHECK_FALSE(k["input"].contains("redacted"));

  // The logged envelope alone decides otherwise (its payload is gone); with the note's steering
  // it decides as logged, and its own record keeps the note.
  auto logged = test::envelope(j["input"]["envelope"].dump());
  CHECK(engine.decide(logged, context).rule == "t");
  logged.steering = j["input"]["redacted"]["steering"].get<std::uint32_t>();
  const auto again = engine.decide(logged, context);
  CHECK(again.rule == "steered");
  CHECK(again.route == recourse::Route::Escalate);
  CHECK(again.steering == d.steering);
  const auto relogged = nlohmann::json::parse(redacted);
  CHECK(relogged["input"]["redacted"]["fields"] == nlohmann::json::array());
  CHECK(relogged["input"]["redacted"]["steering"] == 32);
  CHECK(relogged["input"]["envelope"] == j["input"]["envelope"]);

  // Texts the redaction leaves as they are give the record of old: no note.
  engine.decide(test::envelope(R"({"code":"TRANSIENT","message":"Upstream busy.","traceId":"t"})"),
                context);
  CHECK_FALSE(nlohmann::json::parse(redacted)["input"].contains("redacted"));
}

TEST_CASE("cli: a redacted decision-log record replays as logged and is counted as redacted",
          "[shadow][cli][log]") {
  const Dir dir;
  // The live policy escalates instruction-like text; the candidate stops on it.
  std::string candidate_text = kSteer;
  candidate_text.replace(candidate_text.find("escalate"), 8, "stop");
  const std::string live = dir.write("live/p.recourse", kSteer);
  const std::string candidate = dir.write("candidate/p.recourse", candidate_text);
  // A secret and an encoded payload (steering category encoded_payload) in the message, markup
  // and a bearer token in the suggestion.
  const std::string envelope = dir.write(
      "envelope.json", R"({"code":"TRANSIENT","message":"Upstream busy. Payload: )"
                       R"(QWxhZGRpbjpvcGVuIHNlc2FtZQ0KQWxhZGRpbjpvcGVuIHNlc2FtZQ0K","suggestion":)"
                       R"("<i>retry</i> with Bearer abcdef0123456789","traceId":"t-1"})");
  const std::string context = dir.write("context.json", R"({"tool":"p","sideEffect":"none"})");
  const std::string log = dir.path("decisions.jsonl"), kept = dir.path("kept.jsonl");
  const auto decided =
      cli({"decide", "--policy", live, "--envelope", envelope, "--context", context, "--log", log});
  REQUIRE(decided.status == 0);
  CHECK(nlohmann::json::parse(decided.out)["rule"] == "steered");
  REQUIRE(cli({"decide", "--policy", live, "--envelope", envelope, "--context", context, "--log",
               kept, "--log-text", "keep"})
              .status == 0);

  std::string record, raw;
  std::getline(std::ifstream(log), record);
  std::getline(std::ifstream(kept), raw);
  const auto j = nlohmann::json::parse(record);
  CHECK(j["input"]["envelope"]["message"] == "Upstream busy. Payload: [redacted]");
  CHECK(j["input"]["envelope"]["suggestion"] == "retry with Bearer [redacted]");
  CHECK(j["input"]["redacted"]["steering"] == 32);
  CHECK(record.find("abcdef0123456789") == std::string::npos);
  CHECK(raw.find("abcdef0123456789") != std::string::npos);
  CHECK_FALSE(nlohmann::json::parse(raw)["input"].contains("redacted"));

  // Replayed, the redacted record decides as the original did and is counted as redacted.
  const auto r = cli({"replay", "--policy", live, "--format", "json", log});
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  CHECK(out["decisions"][0]["decision"]["rule"] == "steered");
  CHECK(out["decisions"][0]["decision"]["route"] == "escalate");
  CHECK(out["decisions"][0]["redacted"] == true);
  CHECK(out["summary"]["logRecords"] == 1);
  CHECK(out["summary"]["redactedRecords"] == 1);
  // The record without its note is the redacted text alone, which no longer reads as steering.
  auto bare = j;
  bare["input"].erase("redacted");
  const std::string stripped = dir.write("bare.jsonl", bare.dump() + "\n");
  const auto b =
      nlohmann::json::parse(cli({"replay", "--policy", live, "--format", "json", stripped}).out);
  CHECK(b["decisions"][0]["decision"]["rule"] == "t");
  CHECK_FALSE(b["summary"].contains("redactedRecords"));
  // A note whose steering is no 32-bit count is a bad line, never a guess.
  auto wrong = j;
  wrong["input"]["redacted"]["steering"] = 4294967296;
  const auto w = cli({"replay", "--policy", live, "--format", "json",
                      dir.write("wrong.jsonl", wrong.dump() + "\n")});
  CHECK(w.status == 1);
  CHECK(nlohmann::json::parse(w.out)["summary"]["badLines"] == 1);

  // --shadow decides it as logged too: the candidate's steered rule stops, a disagreement whose
  // example says it is redacted.
  const auto s = cli({"replay", "--policy", live, "--shadow", candidate, "--format", "json", log});
  REQUIRE(s.status == 0);
  const auto shadow = nlohmann::json::parse(s.out)["summary"]["shadow"];
  CHECK(shadow["disagreements"] == 1);
  REQUIRE(shadow["rules"].size() == 1);
  CHECK(shadow["rules"][0]["liveRule"] == "steered");
  CHECK(shadow["rules"][0]["candidateRule"] == "steered");
  CHECK(shadow["rules"][0]["example"]["redacted"] == true);
  CHECK(shadow["rules"][0]["example"]["candidateRoute"] == "stop");
  const auto text = cli({"replay", "--policy", live, "--shadow", candidate, log});
  CHECK(text.out.find("1 of the lines were decision-log records, decided as logged (1 redacted") !=
        std::string::npos);
  CHECK(text.out.find("note: a redacted decision-log record") != std::string::npos);
}
