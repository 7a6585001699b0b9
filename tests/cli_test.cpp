// The `recourse` command: exit codes (0 ok, 1 errors, 2 usage), output formats, and each
// subcommand on the bundled policies and trace.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.hpp"

namespace {

std::string cmd(const std::string& args) {
  return test::cli() + " " + args;
}
std::string examples() {
  return test::source_dir() + "/rules/examples";
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           "/recourse-cli-test-" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A policy whose rule b is shadowed by rule a (W101 when the analysis decides it).
constexpr const char* kShadowed =
    "policy \"p\" {\n  rule a when code == TIMEOUT -> escalate\n"
    "  rule b when code == TIMEOUT -> stop\n  default -> stop\n}\n";

}  // namespace

TEST_CASE("cli: usage errors exit 2", "[cli]") {
  CHECK(test::run(cmd("2>/dev/null")).status == 2);
  CHECK(test::run(cmd("frobnicate 2>/dev/null")).status == 2);
  CHECK(test::run(cmd("check 2>/dev/null")).status == 2);
  CHECK(test::run(cmd("decide --envelope x.json 2>/dev/null")).status == 2);
  CHECK(test::run(cmd("check --format yaml x 2>/dev/null")).status == 2);
  CHECK(test::run(cmd("--help")).status == 0);
}

TEST_CASE("cli: a malformed --state spec is a usage error naming it", "[cli][state]") {
  auto state = [](const std::string& command, const std::string& spec) {
    return test::run(cmd(command + " --state '" + spec + "' 2>&1"));
  };
  const std::string decide =
      "decide -e " + temp_file("state-envelope.json", R"({"code":"TIMEOUT"})") + " -c " +
      temp_file("state-context.json", R"({"tool":"search.query"})") + " -p " + examples();
  const std::string replay = "replay nonexistent.jsonl -p " + examples();
  const std::string port = "is not a number in 1..65535";
  const std::string unknown = "expected memory, sqlite:PATH or redis://HOST:PORT";
  const struct {
    std::string command, spec, error;
  } malformed[] = {
      {decide, "redis://host:abc", R"(state store "redis://host:abc": port "abc" )" + port},
      {replay, "redis://host:65536", R"(state store "redis://host:65536": port "65536" )" + port},
      {"ledger", "redis://:6379", R"(state store "redis://:6379": no HOST after redis://)"},
      {decide, "sqlite:", R"(state store "sqlite:": no PATH after sqlite:)"},
      {"simulate --policy x", "redis+unix://",
       R"(state store "redis+unix://": no PATH after redis+unix://)"},
      {decide, "mongo://x", R"(unknown state store "mongo://x": )" + unknown},
      {"ledger", "", R"(unknown state store "": )" + unknown},
      {"breaker show search.query", "sqlite:", R"(state store "sqlite:": no PATH after sqlite:)"},
      // Empty is no spec, not the default store (which is leaving --state out).
      {decide, "", R"(unknown state store "": )" + unknown},
      {replay, "", R"(unknown state store "": )" + unknown},
      {"simulate --policy x", "", R"(unknown state store "": )" + unknown},
  };
  for (const auto& m : malformed) {
    INFO(m.command << " --state '" << m.spec << "'");
    auto r = state(m.command, m.spec);
    CHECK(r.status == 2);
    CHECK(r.out == "error: --state: " + m.error + "\n");
  }
  auto memory = state(decide, "memory");  // well formed: decides
  CHECK(memory.status == 0);
  CHECK(memory.out.find("\"policy\":\"search.query\"") != std::string::npos);
}

TEST_CASE(
    "cli: check --analysis-work and --max-cover-splits bound the analysis; a bad value is a "
    "usage error",
    "[cli]") {
  const auto shadowed = temp_file("shadowed.recourse", kShadowed);
  auto decided = test::run(cmd("check " + shadowed));
  CHECK(decided.status == 0);
  CHECK_THAT(decided.out, Catch::Contains("warning[W101]: rule 'b' is never reached"));
  auto open = test::run(cmd("check --analysis-work 0 " + shadowed));
  CHECK(open.status == 0);
  CHECK_THAT(open.out, Catch::Contains("warning[W109]: reachability not decided"));
  CHECK_THAT(open.out,
             Catch::Contains("raise the analysis budget (recourse check --analysis-work"));
  auto splits = test::run(cmd("check --max-cover-splits 0 " + shadowed));
  CHECK(splits.status == 0);
  CHECK_THAT(splits.out, Catch::Contains("warning[W109]: reachability not decided"));
  CHECK_THAT(splits.out, Catch::Contains("(recourse check --max-cover-splits N"));
  for (const char* bad : {"-1", "abc", "1e9", "99999999999999999999"}) {
    INFO(bad);
    auto r = test::run(cmd("check --analysis-work " + std::string(bad) + " " + shadowed + " 2>&1"));
    CHECK(r.status == 2);
    CHECK_THAT(r.out,
               Catch::Contains("expected a whole number of row tests, got " + std::string(bad)));
  }
}

TEST_CASE("cli: the compiler's limits are flags of every command that compiles", "[cli][limits]") {
  const auto three = temp_file("three.recourse",
                               "policy \"search.query\" {\n  codes { A, B, C }\n"
                               "  rule a when code == A -> stop\n  rule b when code == B -> stop\n"
                               "  default -> stop\n}\n");
  const auto envelope = temp_file("a.json", R"({"code":"A"})");
  CHECK(test::run(cmd("check " + three)).status == 0);
  // The flags come first: --policy takes every value up to the next flag.
  for (const auto& [command, inputs] : std::vector<std::pair<std::string, std::string>>{
           {"check", three},
           {"compile", three},
           {"test", three},
           {"decide", "--policy " + three + " --envelope " + envelope},
           {"replay", "--policy " + three + " " + envelope}}) {
    INFO(command);
    auto codes = test::run(cmd(command + " --max-codes 2 " + inputs + " 2>&1"));
    CHECK(codes.status == 1);
    CHECK_THAT(codes.out, Catch::Contains("error[E095]: policy declares 3 codes; the limit is 2"));
    CHECK_THAT(codes.out, Catch::Contains("(--max-codes N, CompileOptions::max_codes)"));
    auto rules = test::run(cmd(command + " --max-rules 1 " + inputs + " 2>&1"));
    CHECK(rules.status == 1);
    CHECK_THAT(rules.out, Catch::Contains("error[E091]: policy has 2 rules; the limit is 1"));
  }
  const auto before = temp_file("diff-before.recourse",
                                "policy \"p\" {\n  rule t when code == TRANSIENT -> retry\n"
                                "  rule a when code == PERMISSION -> authorize\n"
                                "  default -> stop\n}\n");
  const auto after = temp_file("diff-after.recourse",
                               "policy \"p\" {\n  rule t when code in [TRANSIENT, RATE_LIMITED] -> "
                               "retry\n  rule a when code == PERMISSION -> escalate\n"
                               "  default -> stop\n}\n");
  auto diff = test::run(cmd("diff --max-cover-splits 0 " + before + " " + after + " 2>&1"));
  CHECK(diff.status == 1);
  CHECK_THAT(diff.out, Catch::Contains("recourse diff --max-cover-splits N"));
  for (const char* flag : {"--max-codes", "--max-rules", "--max-cover-splits"}) {
    INFO(flag);
    auto bad = test::run(cmd("check " + std::string(flag) + " -1 " + three + " 2>&1"));
    CHECK(bad.status == 2);
    CHECK_THAT(bad.out, Catch::Contains("expected a whole number of"));
    CHECK_THAT(bad.out, Catch::Contains("got -1"));
  }
}

TEST_CASE("cli: check reports diagnostics with caret; exit 1 on errors", "[cli]") {
  auto ok = test::run(cmd("check " + examples()));
  CHECK(ok.status == 0);
  CHECK_THAT(ok.out, Catch::Contains("6 policies checked: 0 errors, 0 warnings"));
  const auto one =
      temp_file("one.recourse", "policy \"p\" { rule r when nope -> stop default -> stop }");
  CHECK_THAT(test::run(cmd("check " + one)).out,
             Catch::Contains("nothing compiled: 1 error, 0 warnings"));

  const auto bad = temp_file(
      "bad.recourse",
      "policy \"p\" {\n  rule r when code == TRANSIENTT -> retry\n  default -> stop\n}\n");
  auto r = test::run(cmd("check " + bad));
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains(bad + ":2:23: error[E011]: unknown code 'TRANSIENTT'\n"
                                          "    rule r when code == TRANSIENTT -> retry\n"
                                          "                        ^\n"));
  auto j = test::run(cmd("check --format json " + bad));
  CHECK(j.status == 1);
  const auto diagnostics = nlohmann::json::parse(j.out);
  REQUIRE(diagnostics.size() == 1);
  CHECK(diagnostics[0]["code"] == "E011");
  CHECK(diagnostics[0]["line"] == 2);
  CHECK(diagnostics[0]["column"] == 23);

  const auto warn = temp_file(
      "warn.recourse", "policy \"p\" { rule r when not retryable -> repair default -> stop }");
  CHECK(test::run(cmd("check " + warn)).status == 0);
  CHECK(test::run(cmd("check --strict " + warn)).status == 1);
  CHECK(test::run(cmd("check /nonexistent/dir")).status == 1);
}

TEST_CASE("cli: decide prints one decision; envelope on stdin", "[cli]") {
  const auto env = temp_file(
      "env.json", R"({"code":"RATE_LIMITED","retryable":true,"retryAfterMs":412,"traceId":"t-1"})");
  const auto ctx =
      temp_file("ctx.json", R"({"tool":"payments.create","sideEffect":"none","attempt":2})");
  auto r =
      test::run(cmd("decide --policy " + examples() + " --envelope " + env + " --context " + ctx));
  REQUIRE(r.status == 0);
  const auto d = nlohmann::json::parse(r.out);
  CHECK(d["route"] == "retry");
  CHECK(d["rule"] == "throttled");
  CHECK(d["policy"] == "payments.create");
  CHECK(d["attempt"] == 2);
  CHECK(d["attemptsLeft"] == 1);
  CHECK(d["idempotencyKey"] == "reuse");
  CHECK(d["traceId"] == "t-1");
  CHECK(d["delayMs"].get<int>() >= 412);

  auto piped =
      test::run("cat " + env + " | " + cmd("decide --policy " + examples() + " --context " + ctx));
  CHECK(piped.status == 0);
  CHECK(nlohmann::json::parse(piped.out) == d);

  const auto broken = temp_file("broken.json", R"({"code": TRANSIENT})");
  auto b = test::run(cmd("decide --policy " + examples() + " --envelope " + broken + " 2>&1"));
  CHECK(b.status == 1);
  CHECK_THAT(b.out, Catch::StartsWith("error: envelope: invalid JSON at byte"));
  const auto bad_ctx = temp_file("badctx.json", R"({"attempt":0})");
  auto c = test::run(cmd("decide --policy " + examples() + " --envelope " + env + " --context " +
                         bad_ctx + " 2>&1"));
  CHECK(c.status == 1);
  CHECK_THAT(c.out, Catch::Contains("context.attempt must be an integer in [1, 1000000000]"));
}

TEST_CASE("cli: explain shows the tests of each rule up to the match", "[cli]") {
  const auto env =
      temp_file("env2.json", R"({"code":"PERMISSION","retryable":true,"traceId":"t"})");
  const auto ctx = temp_file("ctx2.json", R"({"tool":"payments.create","sideEffect":"none"})");
  auto r =
      test::run(cmd("explain --policy " + examples() + " --envelope " + env + " --context " + ctx));
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("no    rule already_charged (line 21)"));
  CHECK_THAT(r.out, Catch::Contains("false side_effect == committed   [none]"));
  CHECK_THAT(r.out, Catch::Contains("MATCH rule needs_approval (line 30)"));
  CHECK_THAT(r.out, Catch::Contains("true  code == PERMISSION   [PERMISSION]"));
  auto j = test::run(cmd("explain --format json --policy " + examples() + " --envelope " + env +
                         " --context " + ctx));
  const auto x = nlohmann::json::parse(j.out);
  CHECK(x["decision"]["route"] == "authorize");
  CHECK(x["rules"].back()["matched"] == true);
}

TEST_CASE("cli: replay reads a trace line after a byte-order mark as the JSON parser does",
          "[cli]") {
  // fuzz_context: a line starting with EF BB BF parsed as JSON, but its members were not found,
  // so the line was refused as "not a trace line".
  const std::string line =
      R"({"tool": "search.query", "raw": {"protocol": "http", "status": 503, "headers": )"
      R"({"Retry-After": "3"}}, "context": {"sideEffect": "none", "attempt": 2, )"
      R"("operationId": "op-bom"}})";
  const auto plain = test::run(cmd("replay --format json --policy " + examples() + " " +
                                   temp_file("plain.jsonl", line + "\n")));
  const auto bom = test::run(cmd("replay --format json --policy " + examples() + " " +
                                 temp_file("bom.jsonl", "\xEF\xBB\xBF" + line + "\n")));
  REQUIRE(plain.status == 0);
  CHECK(bom.status == 0);
  const auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(bom.out);
  CHECK(b["summary"]["badLines"] == 0);
  CHECK(b["decisions"] == a["decisions"]);
  CHECK(a["decisions"].at(0)["decision"]["route"] == "retry");
}

TEST_CASE("cli: replay: filling in the line's tool never mends a malformed context", "[cli]") {
  // fuzz_context: "context": {, "operationId": ...} had no member the walk could find, so the
  // line's tool was filled in without its comma and the context read as well formed.
  const std::string head =
      R"({"tool": "search.query", "now": 5, "envelope": {"code": "TRANSIENT"}, )";
  std::string lines;
  for (const char* context : {R"({, "operationId": "op"})", "{ }", R"({"operationId": "op"})"})
    lines += head + R"("context": )" + context + "}\n";
  const auto file = temp_file("fill.jsonl", lines);
  const auto text = test::run(cmd("replay --policy " + examples() + " " + file + " 2>&1"));
  CHECK(text.status == 1);
  CHECK_THAT(text.out, Catch::Contains(file + ":1: error"));
  const auto r =
      test::run(cmd("replay --format json --policy " + examples() + " " + file + " 2>/dev/null"));
  CHECK(r.status == 1);
  const auto out = nlohmann::json::parse(r.out);
  CHECK(out["summary"]["badLines"] == 1);
  REQUIRE(out["decisions"].size() == 2);
  CHECK(out["decisions"][0]["line"] == 2);
  CHECK(out["decisions"][1]["line"] == 3);
}

TEST_CASE("cli: replay the bundled trace", "[cli]") {
  const std::string trace = test::source_dir() + "/rules/traces/sample.jsonl";
  auto r = test::run(cmd("replay --policy " + examples() + " " + trace));
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("decisions, 0 successes, 0 bad lines"));
  auto j = test::run(cmd("replay --format json --policy " + examples() + " " + trace));
  REQUIRE(j.status == 0);
  const auto out = nlohmann::json::parse(j.out);
  CHECK(out["summary"]["decisions"].get<int>() >= 40);
  CHECK(out["decisions"].size() == out["summary"]["decisions"].get<std::size_t>());
  int total = 0;
  for (const auto& [route, n] : out["summary"]["routes"].items()) total += n.get<int>();
  CHECK(total == out["summary"]["decisions"].get<int>());
  // Hostile lines: PERMISSION marked retryable is never retried (line 49 also gives `code` twice,
  // which the reader drops).
  std::map<int, std::string> route_of;
  for (const auto& d : out["decisions"])
    route_of[d["line"].get<int>()] = d["decision"]["route"].get<std::string>();
  std::istringstream lines(test::read_file(trace));
  std::vector<int> permission_retryable;
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line).value("envelope", nlohmann::json::object());
    ++number;
    if (e.value("code", "") != "PERMISSION" || e.value("retryable", false) != true) continue;
    permission_retryable.push_back(number);
    INFO("line " << number);
    CHECK(route_of.at(number) != "retry");
  }
  CHECK(permission_retryable == std::vector<int>{9, 44, 49, 55, 73});

  const auto bad = temp_file("bad.jsonl",
                             "{\"tool\":\"payments.create\",\"envelope\":{}}\nnot json\n"
                             "{\"envelope\":{},\"context\":{\"attempt\":0}}\n");
  auto b = test::run(cmd("replay --policy " + examples() + " " + bad + " 2>&1"));
  CHECK(b.status == 1);
  CHECK_THAT(b.out, Catch::Contains(bad + ":2: error: not a trace line"));
  CHECK_THAT(b.out,
             Catch::Contains(
                 bad + ":3: error[C001]: context.attempt must be an integer in [1, 1000000000]"));
  CHECK_THAT(b.out, Catch::Contains("1 decisions, 0 successes, 2 bad lines"));

  // The envelope reaches the reader as written: a duplicate key and a number beyond a double's
  // range are dropped fields, not a rejected line.
  const auto raw =
      temp_file("raw.jsonl",
                "{\"tool\":\"t\",\"envelope\":{\"code\":\"TRANSIENT\",\"code\":\"PERMISSION\","
                "\"retryAfterMs\":1e999},\"context\":{\"tool\":\"t\"}}\n");
  auto rj = test::run(cmd("replay --format json --policy " + examples() + " " + raw));
  REQUIRE(rj.status == 0);
  const auto kinds = nlohmann::json::parse(rj.out)["summary"]["warnings"];
  CHECK(kinds["duplicate"] == 1);
  CHECK(kinds["malformed"] == 1);
}

TEST_CASE("cli: replay: a key given twice in a trace line or its context makes a bad line",
          "[cli]") {
  const std::string env = R"({"code":"TRANSIENT","retryable":true})";
  const std::string ctx = R"({"sideEffect":"none"})";
  const std::vector<std::string> bad = {
      // The first envelope and the last tool were used.
      R"({"tool":"payments.create","envelope":)" + env +
          R"(,"tool":"search.query","envelope":{"code":"PERMISSION"},"context":)" + ctx + "}",
      R"({"tool":"payments.create","envelope":)" + env + R"(,"envel\u006fpe":)" + env +
          R"(,"context":)" + ctx + "}",
      R"({"tool":"payments.create","envelope":)" + env + R"(,"context":)" + ctx + R"(,"context":)" +
          ctx + "}",
      R"({"tool":"payments.create","outcome":"success","outcome":"success"})",
      // The context is trusted: read as read_context() reads it (the last value won).
      R"({"tool":"payments.create","envelope":)" + env +
          R"(,"context":{"sideEffect":"committed","sideEffect":"none"}})",
      R"({"tool":"payments.create","envelope":)" + env +
          R"(,"context":{"tool":"payments.create","sideEffect":"committed","side\u0045ffect":"none"}})",
      // Not a string outcome: a bad line, not an aborted replay.
      R"({"tool":"payments.create","outcome":5})",
  };
  std::string text;
  for (const auto& line : bad) text += line + "\n";
  // An escaped key is the key it spells; the line's tool still fills the context's.
  text +=
      R"({"tool":"payments.create","envel\u006fpe":)" + env + R"(,"c\u006fntext":)" + ctx + "}\n";
  const auto trace = temp_file("twice.jsonl", text);
  auto r = test::run(cmd("replay --policy " + examples() + " " + trace + " 2>&1"));
  INFO(r.out);
  CHECK(r.status == 1);
  CHECK_THAT(r.out,
             Catch::Contains(trace + ":1: error: trace line key \"tool\" appears more than once"));
  CHECK_THAT(r.out, Catch::Contains(
                        trace + ":2: error: trace line key \"envelope\" appears more than once"));
  CHECK_THAT(r.out, Catch::Contains(
                        trace + ":3: error: trace line key \"context\" appears more than once"));
  CHECK_THAT(r.out, Catch::Contains(
                        trace + ":4: error: trace line key \"outcome\" appears more than once"));
  CHECK_THAT(r.out,
             Catch::Contains(trace + ":5: error[C001]: context.sideEffect appears more than once"));
  CHECK_THAT(r.out,
             Catch::Contains(trace + ":6: error[C001]: context.sideEffect appears more than once"));
  CHECK_THAT(r.out, Catch::Contains(trace + ":7: error: not a trace line"));
  CHECK_THAT(r.out, Catch::Contains("1 decisions, 0 successes, 7 bad lines"));
  CHECK_THAT(r.out, Catch::Contains("payments.create            TRANSIENT"));
  CHECK_THAT(r.out, Catch::Contains("retry"));
}

TEST_CASE("cli: compile --dump prints the tables", "[cli]") {
  auto r = test::run(cmd("compile --dump " + examples() + "/payments.create.recourse"));
  CHECK(r.status == 0);
  CHECK_THAT(r.out,
             Catch::StartsWith("policy \"payments.create\"\nhit first\ntool idempotent=false "));
  auto h = test::run(cmd("compile " + examples()));
  CHECK(h.status == 0);
  CHECK_THAT(h.out, Catch::Contains("policy \"payments.create\" sha256:"));
}

TEST_CASE("cli: hostile inputs get clear errors, bounded memory", "[cli]") {
  // A deeply nested trace line is a bad line, not a stack overflow.
  const std::string deep = "{\"tool\":\"t\",\"envelope\":{\"x\":" + std::string(5000, '[') +
                           std::string(5000, ']') + "},\"context\":{}}\n";
  auto r = test::run(
      cmd("replay --policy " + examples() + " " + temp_file("deep.jsonl", deep) + " 2>&1"));
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("nested deeper than 64 levels"));
  // Endless or oversized input stops at the limit; a device is not a file to read.
  auto z = test::run(cmd("decide --policy " + examples() + " --envelope - < /dev/zero 2>&1"));
  CHECK(z.status == 1);
  CHECK_THAT(z.out, Catch::Contains("stdin is larger than 1048576 bytes"));
  auto zd = test::run(cmd("decide --policy " + examples() + " --envelope /dev/zero 2>&1"));
  CHECK(zd.status == 1);
  CHECK_THAT(zd.out, Catch::Contains("/dev/zero is a character device, not a regular file"));
  auto zc = test::run(cmd("check /dev/zero 2>&1"));
  CHECK(zc.status == 1);
  CHECK_THAT(zc.out, Catch::Contains(
                         "/dev/zero: error[E000]: file is a character device, not a regular file"));
  auto dir = test::run(cmd("decide --policy " + examples() + " --envelope /tmp 2>&1"));
  CHECK(dir.status == 1);
  CHECK_THAT(dir.out, Catch::Contains("/tmp is a directory"));
  // The same file named twice is one source, not a duplicate policy.
  const std::string file = examples() + "/payments.create.recourse";
  CHECK(test::run(cmd("check " + file + " " + file)).status == 0);
}

TEST_CASE("cli: replay streams its trace: memory follows the longest line, not the limits",
          "[cli][limits]") {
  // An empty trace on stdin used to cost an allocation of the whole 1 GiB limit.
  auto e = test::run(test::memory_cap(400) +
                     cmd("replay --format json --policy " + examples() + " - < /dev/null 2>&1"));
  INFO(e.out);
  REQUIRE(e.status == 0);
  const auto empty = nlohmann::json::parse(e.out);
  CHECK(empty["decisions"] == nlohmann::json::array());
  CHECK(empty["summary"]["decisions"] == 0);
  // A line longer than --max-line-bytes is a bad line; the lines after it are decided.
  const std::string ok =
      R"({"tool":"search.query","envelope":{"code":"TIMEOUT"},"context":{"sideEffect":"none"}})";
  const std::string huge =
      R"({"tool":"search.query","envelope":{"message":")" + std::string(5000, 'a') + R"("}})";
  const auto trace = temp_file("long.jsonl", ok + "\n" + huge + "\n" + ok);  // no final newline
  auto r =
      test::run(cmd("replay --max-line-bytes 4096 --policy " + examples() + " " + trace + " 2>&1"));
  INFO(r.out);
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains(trace + ":2: error: trace line is longer than 4096 bytes "
                                            "(--max-line-bytes)"));
  CHECK_THAT(r.out, Catch::Contains("2 decisions, 0 successes, 1 bad lines"));
  CHECK(test::run(cmd("replay --policy " + examples() + " " + trace)).status == 0);
  // A trace larger than --max-trace-bytes: a file is refused before any line, stdin stops there.
  auto big =
      test::run(cmd("replay --max-trace-bytes 100 --policy " + examples() + " " + trace + " 2>&1"));
  CHECK(big.status == 1);
  CHECK_THAT(big.out, Catch::Contains("error: " + trace + " is larger than 100 bytes"));
  CHECK_THAT(big.out, !Catch::Contains("decisions"));
  auto in = test::run(cmd("replay --max-trace-bytes 100 --format json --policy " + examples() +
                          " - < " + trace + " 2>/dev/null"));
  CHECK(in.status == 1);
  CHECK(nlohmann::json::parse(in.out)["summary"]["decisions"] == 0);
}

TEST_CASE("cli: a trace line's context over 1 MiB is a bad line", "[cli][limits]") {
  const std::string note(1 << 20, 'n');
  const auto trace =
      temp_file("big-context.jsonl",
                R"({"tool":"search.query","envelope":{"code":"TIMEOUT"},"context":{"note":")" +
                    note + R"("}})" + "\n");
  auto r = test::run(cmd("replay --policy " + examples() + " " + trace + " 2>&1"));
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains(trace + ":1: error: context is 1048587 bytes; the limit is "
                                            "1048576"));
  CHECK_THAT(r.out, Catch::Contains("0 decisions, 0 successes, 1 bad lines"));
}

TEST_CASE("cli: decide and replay compile the tables only; check proves them", "[cli]") {
  const auto broken = temp_file("overflow.recourse",
                                "policy \"p\" {\n  rule overflow when code == CONTEXT_OVERFLOW -> "
                                "retry\n  default -> stop\n}\n");
  auto c = test::run(cmd("check " + broken + " 2>&1"));
  CHECK(c.status == 1);
  CHECK_THAT(c.out, Catch::Contains("error[E103]"));
  const auto env = temp_file("overflow.json", R"({"code":"CONTEXT_OVERFLOW"})");
  const auto ctx = temp_file("overflow-ctx.json", R"({"tool":"p","sideEffect":"none"})");
  auto d = test::run(
      cmd("decide --policy " + broken + " --envelope " + env + " --context " + ctx + " 2>&1"));
  CHECK(d.status == 0);
  CHECK_THAT(d.out, Catch::Contains(R"("route":"retry")"));
  CHECK_THAT(d.out, !Catch::Contains("E103"));
  const auto trace = temp_file(
      "overflow.jsonl",
      R"({"tool":"p","envelope":{"code":"CONTEXT_OVERFLOW"},"context":{"sideEffect":"none"}})"
      "\n");
  auto t = test::run(cmd("replay --policy " + broken + " " + trace + " 2>&1"));
  CHECK(t.status == 0);
  CHECK_THAT(t.out, Catch::Contains("routes: retry 1"));
}

TEST_CASE("cli: a FIFO where a file is read is refused, never waited on", "[cli]") {
  // Opening a FIFO for reading blocks until a writer comes; `timeout` ends a command that does.
  std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                    "/recourse-cli-fifo-XXXXXX";
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  const std::string fifo = dir + "/base.recourse", data = dir + "/data.json";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE(mkfifo(data.c_str(), 0600) == 0);
  const std::string policy = dir + "/a.recourse";
  std::ofstream(policy) << "policy \"a\" extends \"base\" {\n  default -> stop\n}\n";
  auto limited = [](const std::string& args) {
    return test::run("timeout 5 " + cmd(args) + " 2>&1");
  };
  const auto refused = fifo + ": error[E000]: file is a FIFO, not a regular file";
  // `extends "base"` looks up base.recourse, given or found by a directory scan (which itself
  // skips the FIFO).
  for (const std::string& paths : {policy, dir}) {
    auto r = limited("check " + paths);
    INFO(r.out);
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains(refused));
    CHECK_THAT(r.out, Catch::Contains("E026"));
  }
  auto given = limited("check " + fifo);
  CHECK(given.status == 1);
  CHECK_THAT(given.out, Catch::Contains(refused));
  // diff reads both versions, and the bases of each.
  auto d = limited("diff " + fifo + " " + policy);
  CHECK(d.status == 1);
  CHECK_THAT(d.out, Catch::Contains(fifo + " is a FIFO, not a regular file"));
  const std::string copy = dir + "/b.recourse";
  std::ofstream(copy) << "policy \"a\" extends \"base\" {\n  default -> escalate\n}\n";
  auto bases = limited("diff " + policy + " " + copy);
  CHECK(bases.status == 1);
  CHECK_THAT(bases.out, Catch::Contains(refused));
  auto f = limited("fmt " + fifo);
  CHECK(f.status == 1);
  CHECK_THAT(f.out, Catch::Contains(fifo + " is a FIFO, not a regular file"));
  // Envelopes, contexts and traces named on the command line too ("-" reads stdin).
  for (const std::string& args : {"decide --policy " + examples() + " --envelope " + data,
                                  "decide --policy " + examples() + " --envelope - --context " +
                                      data + " < " + temp_file("fifo-envelope.json", "{}"),
                                  "replay --policy " + examples() + " " + data}) {
    auto r = limited(args);
    INFO(args << "\n" << r.out);
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains(data + " is a FIFO, not a regular file"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: replay carries workflow and tool state across a trace", "[cli][state]") {
  const std::string trace = test::source_dir() + "/rules/traces/workflow.jsonl";
  auto r = test::run(cmd("replay --format json --policy " + examples() + " " + trace));
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  std::map<int, std::string> rule;
  for (const auto& d : out["decisions"])
    rule[d["line"].get<int>()] = d["decision"]["rule"].get<std::string>();
  CHECK(rule[3] == "transient");
  CHECK(rule[4] == "budget:attempts");  // the fourth call of one operation
  CHECK(rule[7] == "circuit:open");     // third failure in a row: recorded, the circuit opens
  CHECK(rule[8] == "circuit:open");
  // gRFC A6: the five TRANSIENT failures of lines 5-9 took five of search.query's ten retry
  // tokens, retried or not: at or below half, no retry, the half-open probe's included; the
  // success at line 11 gives back only 0.5 (and closes the circuit).
  CHECK(rule[9] == "budget:retry_tokens");
  CHECK(rule[10] == "budget:retry_tokens");
  CHECK(rule[12] == "budget:retry_tokens");
  CHECK(rule[13] == "fix_argument");
  CHECK(rule[14] == "budget:repeats");  // the same invalid write again
  CHECK(rule[16] == "budget:deadline");
  CHECK(out["summary"]["successes"] == 1);
  // Deterministic: the same trace gives byte-identical output.
  CHECK(test::run(cmd("replay --format json --policy " + examples() + " " + trace)).out == r.out);
}

TEST_CASE("cli: replay counts an operation's calls per tool", "[cli][state]") {
  // payments.lookup (attempts = 4) fails; search.query succeeds between its failures, under the
  // same workflowId and operationId. The successes reset search.query's counters, not lookup's.
  std::string trace;
  for (int i = 0; i < 6; ++i)
    trace += R"({"tool": "payments.lookup", "now": )" + std::to_string(i * 2000) +
             R"(, "envelope": {"code": "TRANSIENT", "retryable": true, "traceId": "t"}, )"
             R"("context": {"workflowId": "wf", "operationId": "op", "sideEffect": "none"}})"
             "\n"
             R"({"tool": "search.query", "now": )" +
             std::to_string(i * 2000 + 1000) +
             R"(, "outcome": "success", "context": {"workflowId": "wf", "operationId": "op"}})"
             "\n";
  const std::string path = temp_file("per-tool.jsonl", trace);
  auto r = test::run(cmd("replay --format json --policy " + examples() + " " + path));
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  std::vector<std::pair<std::int64_t, std::string>> calls;
  for (const auto& d : out["decisions"])
    calls.emplace_back(d["decision"]["attempt"].get<std::int64_t>(),
                       d["decision"]["rule"].get<std::string>());
  const std::vector<std::pair<std::int64_t, std::string>> expected = {
      {1, "transient"},       {2, "transient"},       {3, "transient"},
      {4, "budget:attempts"}, {5, "budget:attempts"}, {6, "budget:attempts"}};
  CHECK(calls == expected);
  CHECK(out["summary"]["successes"] == 6);
  std::remove(path.c_str());
}

TEST_CASE("cli: every option takes one value per flag, before or after the positionals",
          "[cli][options]") {
  // A list option that took every value up to the next flag swallowed the positionals after it:
  // `replay --policy DIR trace.jsonl --format json` failed with "trace is required".
  const std::string src = test::source_dir();
  const std::string env =
      temp_file("options-envelope.json", R"({"code":"RATE_LIMITED","retryable":true})");
  const std::string ctx =
      temp_file("options-context.json", R"({"tool":"search.query","sideEffect":"none"})");
  const std::string raw = temp_file("options-raw.json", R"({"status":503,"headers":{}})");
  const std::string before =
      temp_file("options-before.recourse",
                "policy \"p\" {\n  limits { attempts = 3 }\n"
                "  rule t when code == TRANSIENT -> retry\n  default -> stop\n}\n");
  const std::string sqlite = temp_file("options-ledger.db", "");
  std::filesystem::remove(sqlite);  // a new store: no entries
  const struct {
    std::string command, options, positionals;
    int status;
    bool same_output = true;  // bench measures time: its output varies
  } documented[] = {
      {"check", "--format json --strict", examples(), 0},
      {"compile", "--dump", examples() + "/payments.create.recourse", 0},
      {"replay", "--policy " + examples() + " --format json", src + "/rules/traces/sample.jsonl",
       0},
      {"replay", "-p " + examples() + " --from auto", src + "/rules/traces/raw.jsonl", 0},
      {"envelope", "--from http --now 1700000000000", raw, 0},
      {"test", "--format json", examples(), 0},
      {"fmt", "--check", examples(), 0},
      {"fuzz", "--sequences 20 --seed 3 --max-length 4", src + "/examples/fuzz", 1},
      {"diff", "--format json --name p", before + " " + before, 0},
      {"bench", "--seconds 0.01 --json", examples() + "/search.query.recourse", 0, false},
      {"simulate", "--runs 2 --ops 20 --format json -p " + src + "/rules/bench/generic.recourse",
       src + "/rules/bench/code-only.recourse @retryable", 0},
      {"ledger", "--state sqlite:" + sqlite + " --limit 5", "op-1", 0},
      {"breaker", "--state sqlite:" + sqlite + " --format json", "show search.query", 0},
  };
  for (const auto& c : documented) {
    const auto first = test::run(cmd(c.command + " " + c.options + " " + c.positionals + " 2>&1"));
    const auto last = test::run(cmd(c.command + " " + c.positionals + " " + c.options + " 2>&1"));
    INFO(c.command << " " << c.options << " | " << c.positionals << "\n"
                   << first.out << "\n---\n"
                   << last.out);
    CHECK(first.status == c.status);
    CHECK(last.status == c.status);
    if (c.same_output) CHECK(first.out == last.out);
  }
  std::filesystem::remove(sqlite);

  // A flag repeats for more values; it never takes two.
  const auto repeated =
      test::run(cmd("decide -p " + examples() + "/payments.create.recourse -p " + examples() +
                    "/search.query.recourse -e " + env + " -c " + ctx));
  REQUIRE(repeated.status == 0);
  CHECK(nlohmann::json::parse(repeated.out)["policy"] == "search.query");
  const auto two = test::run(cmd("decide -p " + examples() + "/payments.create.recourse " +
                                 examples() + "/search.query.recourse -e " + env + " 2>&1"));
  CHECK(two.status == 2);
  CHECK_THAT(two.out, Catch::Contains("search.query.recourse"));
}

TEST_CASE("cli: a diagnostic's counterexample is data that `recourse decide` reproduces",
          "[cli][witness]") {
  // The input a finding shows was only prose in its help ("counterexample: envelope {...}
  // context {...}"); --format json carries it as `envelope`, `context` and `route`.
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                          "/recourse-cli-witness-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const struct {
    std::string name, body, code;
  } policies[] = {
      {"asserted",
       "  rule r when code == PERMISSION -> retry\n  default -> stop\n"
       "  assert never retry when code == PERMISSION\n",
       "E120"},
      {"permanent", "  rule r when attempt <= 2 -> retry\n  default -> stop\n", "W103"},
      {"shadowed",
       "  rule a when code == TIMEOUT -> escalate\n"
       "  rule b when code == TIMEOUT and retryable -> stop\n  default -> stop\n",
       "W101"},
      {"overlap",
       "  hit unique\n  rule a when code == TIMEOUT -> escalate\n"
       "  rule b when retryable -> stop\n  default -> authorize\n",
       "E106"},
      {"tested",
       "  rule r when code == TIMEOUT -> retry\n  default -> stop\n"
       "  test \"a timeout stops\" { envelope {\"code\": \"TIMEOUT\"} expect stop }\n",
       "E130"},
  };
  for (const auto& p : policies) {
    INFO(p.name);
    const std::string file = dir + "/" + p.name + ".recourse";
    std::ofstream(file, std::ios::binary) << "policy \"" << p.name << "\" {\n" << p.body << "}\n";
    const auto r =
        test::run(cmd((p.code == "E130" ? "test --format json " : "check --format json ") + file));
    INFO(r.out);
    const auto records = nlohmann::json::parse(r.out);
    const nlohmann::json* found = nullptr;
    for (const auto& d : records)
      if (d["code"] == p.code) found = &d;
    REQUIRE(found);
    const nlohmann::json& d = *found;
    REQUIRE(d.contains("envelope"));
    REQUIRE(d["envelope"].is_object());
    REQUIRE(d["context"].is_object());
    // The same input as the text shows.
    if (p.code != "E130") {
      const std::string help = d["help"].get<std::string>();
      const auto envelope = help.find("envelope ") + 9, context = help.find(" context ");
      REQUIRE(context != std::string::npos);
      CHECK(nlohmann::json::parse(help.substr(envelope, context - envelope)) == d["envelope"]);
      std::size_t end = 0;
      const std::string rest = help.substr(context + 9);
      for (int depth = 0; end < rest.size(); ++end) {
        depth += rest[end] == '{' ? 1 : rest[end] == '}' ? -1 : 0;
        if (depth == 0) break;
      }
      CHECK(nlohmann::json::parse(rest.substr(0, end + 1)) == d["context"]);
    }
    const auto decided = test::run(cmd(
        "decide -p " + file + " -e " + temp_file("witness-envelope.json", d["envelope"].dump()) +
        " -c " + temp_file("witness-context.json", d["context"].dump())));
    REQUIRE(decided.status == 0);
    CHECK(nlohmann::json::parse(decided.out)["route"] == d["route"]);
  }
  // A diagnostic without an input has none of the three.
  const auto plain = test::run(
      cmd("check --format json " +
          temp_file("witness-none.recourse",
                    "policy \"p\" {\n  rule r when retryable -> retry\n  default -> stop\n}\n")));
  std::size_t without = 0;
  for (const auto& d : nlohmann::json::parse(plain.out)) {
    if (d["code"] != "W104") continue;
    ++without;
    CHECK_FALSE(d.contains("envelope"));
    CHECK_FALSE(d.contains("context"));
    CHECK_FALSE(d.contains("route"));
  }
  CHECK(without == 1);
  std::filesystem::remove_all(dir);
}
