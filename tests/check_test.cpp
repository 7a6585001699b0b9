// Check stage: every diagnostic code, with its exact message and position; all errors of a file
// are reported in one pass; a file with errors yields no bundle.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support.hpp"

namespace {

struct Expected {
  const char* code;
  std::uint32_t line, column;
  const char* message;
  const char* help;  // nullptr: not checked
};

// Compiles `body` inside a policy (line 1 is `policy "p" {`, body starts on line 2).
std::vector<recourse::Diagnostic> in_policy(const std::string& body) {
  return test::diagnostics("policy \"p\" {\n" + body + "\n}\n");
}

void expect_one(const std::vector<recourse::Diagnostic>& diagnostics, const Expected& e) {
  std::string all;
  for (const auto& d : diagnostics) all += recourse::to_text(d);
  INFO(all);
  REQUIRE(diagnostics.size() == 1);
  const auto& d = diagnostics[0];
  CHECK(d.code == e.code);
  CHECK(d.line == e.line);
  CHECK(d.column == e.column);
  CHECK(d.message == e.message);
  if (e.help) CHECK(d.help == e.help);
}

}  // namespace

TEST_CASE("check: unknown language version (E002)", "[check]") {
  expect_one(test::diagnostics("version 2\npolicy \"p\" { default -> stop }"),
             {"E002", 1, 9, "unknown language version 2", "this engine reads version 1"});
}

TEST_CASE("check: unknown attribute (E010) suggests the nearest", "[check]") {
  expect_one(in_policy("  rule r when retryabel -> retry\n  default -> stop"),
             {"E010", 2, 15, "unknown attribute 'retryabel'", "did you mean 'retryable'?"});
}

TEST_CASE("check: unknown code (E011) suggests the nearest", "[check]") {
  expect_one(in_policy("  rule r when code == TRANSIENTT -> retry\n  default -> stop"),
             {"E011", 2, 23, "unknown code 'TRANSIENTT'",
              "did you mean 'TRANSIENT'? (declare it in `codes { }`)"});
}

TEST_CASE("check: help suggests a name only when one is near, never an empty one", "[check]") {
  const auto d = in_policy("  rule r when code == ZZZZZZZZZZZZ -> retry\n  default -> stop");
  expect_one(d, {"E011", 2, 23, "unknown code 'ZZZZZZZZZZZZ'", "declare it in `codes { }`"});
  CHECK_THAT(recourse::to_text(d[0]), Catch::Contains("\n  help: declare it in `codes { }`\n"));
  expect_one(in_policy("  limits { deadline = 5qqqqq }\n  default -> stop"),
             {"E025", 2, 23, "unknown unit 'qqqqq' in 5qqqqq", "durations take ms, s, m or h"});
  expect_one(
      in_policy("  map zzzzzz 409 -> TIMEOUT\n  default -> stop"),
      {"E018", 2, 7, "unknown protocol 'zzzzzz' in map", "map takes http, grpc, jsonrpc or mcp"});
  expect_one(in_policy("  assert sequence zzzzzzzz <= 3\n  default -> stop"),
             {"E032", 2, 19, "unknown sequence metric 'zzzzzzzz'",
              "metrics: total_wait, max_delay, calls, calls_after CODE, repairs"});
  // Every name far from all candidates, in every place a name is looked up: no help is left
  // with an empty suggestion (a leading space or "; ", "''", an empty "did you mean").
  const auto all = test::diagnostics(
      "policy \"p\" {\n"
      "  tool { zzzzzzzz = 1 }\n"
      "  limits { on_exhausted = zzzzzzzz }\n"
      "  backoff zzzzzzzz\n"
      "  hit zzzzzzzz\n"
      "  waive zzzzzzzz \"r\"\n"
      "  map zzzzzzzz 1 -> zzzzzzzz\n"
      "  map grpc zzzzzzzz -> TIMEOUT\n"
      "  assert sequence zzzzzzzz <= 1\n"
      "  rule a when zzzzzzzz -> retry\n"
      "  rule b when side_effect == zzzzzzzz -> zzzzzzzz\n"
      "  rule c when code == zzzzzzzz or retry_after > 1zzzzzzzz -> stop\n"
      "  test \"t\" { envelope {} expect zzzzzzzz rule zzzzzzzz }\n"
      "  default -> stop\n"
      "}\n");
  CHECK(all.size() >= 12);
  for (const auto& x : all) {
    INFO(recourse::to_text(x));
    CHECK(x.help.find("did you mean ''") == std::string::npos);
    CHECK(x.help.find("did you mean") == std::string::npos);  // nothing is near
    CHECK((x.help.empty() || (x.help.front() != ' ' && x.help.front() != ';')));
    CHECK(x.help.find("; ;") == std::string::npos);
    CHECK((x.help.size() < 2 || x.help.substr(x.help.size() - 2) != "; "));
  }
}

TEST_CASE("check: type errors (E012)", "[check]") {
  SECTION("ordering a code") {
    expect_one(in_policy("  rule r when code < 3 -> retry\n  default -> stop"),
               {"E041", 2, 15, "'code' cannot be ordered; use ==, != or in", nullptr});
  }
  SECTION("a bare code") {
    expect_one(in_policy("  rule r when code -> retry\n  default -> stop"),
               {"E041", 2, 15, "'code' alone is not a condition",
                "compare it, or write `code is present`"});
  }
  SECTION("a count with a unit") {
    expect_one(in_policy("  rule r when attempt >= 2s -> retry\n  default -> stop"),
               {"E012", 2, 26, "expected a whole number (a count), got '2s'", nullptr});
  }
  SECTION("a trusted attribute is never absent") {
    expect_one(in_policy("  rule r when idempotent is absent -> retry\n  default -> stop"),
               {"E041", 2, 15, "'idempotent' comes from the host and is never absent", nullptr});
  }
  SECTION("side effect value") {
    expect_one(in_policy("  rule r when side_effect == comitted -> stop\n  default -> stop"),
               {"E012", 2, 30, "side_effect is none, unknown or committed, not 'comitted'",
                "did you mean 'committed'?"});
  }
  SECTION("boolean value") {
    expect_one(in_policy("  rule r when retryable == yes -> retry\n  default -> stop"),
               {"E012", 2, 28, "expected true or false, got 'yes'", nullptr});
  }
  SECTION("empty list") {
    expect_one(in_policy("  rule r when code in [] -> retry\n  default -> stop"),
               {"E042", 2, 15, "empty list after 'in'", nullptr});
  }
}

TEST_CASE("check: routes (E013, E014)", "[check]") {
  expect_one(in_policy("  rule r when retryable -> retyr\n  default -> stop"),
             {"E013", 2, 28, "unknown route 'retyr'", "did you mean 'retry'?"});
  // With no route near, the help lists them: an unknown route always has help.
  expect_one(in_policy("  default -> frobnicate"),
             {"E013", 2, 14, "unknown route 'frobnicate'",
              "a route is one of retry, repair, authorize, replace, degrade, escalate, stop"});
  expect_one(in_policy("  default -> replace"),
             {"E014", 2, 14, "replace needs the tool to call instead", nullptr});
  expect_one(in_policy("  default -> stop \"a\" \"b\""),
             {"E014", 2, 23, "too many strings after route 'stop'", nullptr});
}

TEST_CASE("check: duplicate rule, missing and repeated default (E015-E017)", "[check]") {
  expect_one(in_policy("  rule r -> stop\n  rule r -> stop\n  default -> stop"),
             {"E015", 3, 3, "rule 'r' is defined twice", "first defined at line 2"});
  // A default is optional when the rules provably decide every input.
  CHECK(in_policy("  rule r -> stop").empty());
  CHECK(in_policy("  rule a when retryable -> escalate\n  rule b when not retryable -> stop")
            .empty());
  // Otherwise E016 names an input no rule decides.
  expect_one(in_policy("  rule r when code == PERMISSION -> authorize"),
             {"E016", 1, 1, "policy 'p' has no default route, and its rules leave inputs undecided",
              nullptr});
  const auto gap = in_policy("  rule r when code == PERMISSION -> authorize").at(0);
  CHECK_THAT(gap.help, Catch::StartsWith("e.g. envelope {"));
  CHECK_THAT(gap.help, !Catch::Contains("PERMISSION"));
  expect_one(in_policy("  default -> stop\n  default -> retry"),
             {"E017", 3, 3, "a policy has one default", nullptr});
}

TEST_CASE("check: settings (E018, E019, E021)", "[check]") {
  expect_one(in_policy("  limits { atempts = 3 }\n  default -> stop"),
             {"E018", 2, 12, "unknown limits setting 'atempts'", "did you mean 'attempts'?"});
  expect_one(in_policy("  limits { attempts = 3 attempts = 4 }\n  default -> stop"),
             {"E021", 2, 25, "limits setting 'attempts' is set twice", nullptr});
  expect_one(in_policy("  tool { arguments = a }\n  default -> stop"),
             {"E037", 2, 10, "'arguments' takes a [list]", nullptr});
  expect_one(in_policy("  backoff exponental base 1s\n  default -> stop"),
             {"E018", 2, 11, "unknown backoff 'exponental'", "did you mean 'exponential'?"});
}

TEST_CASE("check: nonsense limits are rejected (E019)", "[check]") {
  expect_one(in_policy("  limits { attempts = 0 }\n  default -> stop"),
             {"E019", 2, 23, "attempts = 0 is outside [1, 10]", nullptr});
  expect_one(in_policy("  limits { attempts = 11 }\n  default -> stop"),
             {"E019", 2, 23, "attempts = 11 is outside [1, 10]", nullptr});
  expect_one(in_policy("  limits { on_exhausted = retry }\n  default -> stop"),
             {"E035", 2, 27,
              "on_exhausted must be stop, escalate, degrade, authorize or replace, not 'retry'",
              "a spent budget or an open circuit must not lead to another retry or repair"});
  expect_one(in_policy("  limits { on_exhausted = repair }\n  default -> stop"),
             {"E035", 2, 27,
              "on_exhausted must be stop, escalate, degrade, authorize or replace, not 'repair'",
              nullptr});
  expect_one(in_policy("  backoff exponential base 0ms\n  default -> stop"),
             {"E019", 2, 28, "backoff base must be positive", nullptr});
  expect_one(in_policy("  backoff exponential factor 0.5\n  default -> stop"),
             {"E019", 2, 30, "factor must be in [1, 100], got 0.5", nullptr});
  expect_one(in_policy("  backoff exponential base 2s max 1s\n  default -> stop"),
             {"E036", 2, 3, "backoff max (1000ms) is below its base (2000ms)", nullptr});
  expect_one(in_policy("  backoff constant base 1s factor 2\n  default -> stop"),
             {"E036", 2, 28, "factor applies to exponential backoff only", nullptr});
  // Without an explicit max, a base above the default max (20s) is its own cap.
  CHECK(in_policy("  backoff constant base 30s\n  default -> stop").empty());
  expect_one(in_policy("  limits { retry_after_max = 0s }\n  default -> stop"),
             {"E019", 2, 30, "retry_after_max must be positive", nullptr});
}

TEST_CASE("check: codes (E022) and `in arguments` (E024)", "[check]") {
  expect_one(in_policy("  codes { TRANSIENT }\n  default -> stop"),
             {"E022", 2, 11, "code 'TRANSIENT' is already built in", nullptr});
  expect_one(in_policy("  codes { X X }\n  default -> stop"),
             {"E022", 2, 13, "code 'X' is already declared", nullptr});
  expect_one(in_policy("  rule r when suggestion in arguments -> repair\n  default -> stop"),
             {"E024", 2, 15, "only `field in arguments` is allowed, not 'suggestion in arguments'",
              nullptr});
}

TEST_CASE("check: durations (E025)", "[check]") {
  expect_one(in_policy("  rule r when retry_after > 60 -> stop\n  default -> stop"),
             {"E025", 2, 29, "expected a duration such as 250ms, 60s or 2m, got '60'",
              "durations need a unit: ms, s, m or h"});
  expect_one(in_policy("  rule r when retry_after > 0.5ms -> stop\n  default -> stop"),
             {"E025", 2, 29, "duration 0.5ms is not a whole number of milliseconds", nullptr});
  expect_one(in_policy("  limits { deadline = 5sec }\n  default -> stop"),
             {"E025", 2, 23, "unknown unit 'sec' in 5sec",
              "durations take ms, s, m or h; did you mean 's'?"});
  CHECK(test::diagnostics("policy \"p\" { rule r when retry_after > 1.5s -> stop default -> stop }")
            .empty());
}

TEST_CASE("check: a duration is exact as written; more precision than whole ms is E025",
          "[check]") {
  const std::string zeros(10'000, '0');
  for (const std::string& d :
       {std::string("1.00000000000000001ms"), std::string("1.0001ms"), std::string("1.0001s"),
        std::string("0.00001m"), std::string("0.0000001h"), "1." + zeros + "1s"}) {
    INFO(d.substr(0, 30));
    expect_one(in_policy("  limits { deadline = " + d + " }\n  default -> stop"),
               {"E025", 2, 23, ("duration " + d + " is not a whole number of milliseconds").c_str(),
                nullptr});
  }
  const std::pair<std::string, std::int64_t> whole[] = {
      {"1.000s", 1000},  {"1." + zeros + "s", 1000},
      {"1.001s", 1001},  {"0.00005m", 3},
      {"0.000025h", 90}, {"1.5m", 90'000},
      {"007ms", 7},      {"1000000000000000ms", 1'000'000'000'000'000},
  };
  for (const auto& [d, ms] : whole) {
    INFO(d.substr(0, 30));
    const auto p = test::policy("policy \"p\" { limits { deadline = " + d + " } default -> stop }");
    CHECK(recourse::info(p).deadline_ms == ms);
  }
  expect_one(in_policy("  limits { deadline = 1000000000000.001s }\n  default -> stop"),
             {"E025", 2, 23, "duration 1000000000000.001s is out of range", nullptr});
}

TEST_CASE("check: duplicate policy across files (E020)", "[check]") {
  auto r = recourse::compile({{"a.recourse", "policy \"p\" { default -> stop }"},
                              {"b.recourse", "\npolicy \"p\" { default -> stop }"}});
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].code == "E020");
  CHECK(r.diagnostics()[0].file == "b.recourse");
  CHECK(r.diagnostics()[0].line == 2);
  CHECK(r.diagnostics()[0].help == "first defined at a.recourse:1");
}

TEST_CASE("check: W001 warns when a retry matches an absent value only through `not`", "[check]") {
  // Retry rules below also exclude CONTEXT_OVERFLOW, which an invariant forbids retrying.
  auto d = in_policy(
      "  rule r when not retryable == false and code == TRANSIENT -> retry\n  default -> stop");
  REQUIRE(d.size() == 1);
  CHECK(d[0].severity == recourse::Severity::Warning);
  CHECK(d[0].code == "W001");
  CHECK(d[0].line == 2);
  CHECK(d[0].message == "rule 'r' can retry when retryable is absent, only because of `not`");
  CHECK(d[0].help == "add `retryable is present` if an absent value should not match");
  // Stating presence silences it; a stop rule never warns.
  CHECK(in_policy(
            "  rule r when code is present and not code == PERMISSION -> repair\n  default -> stop")
            .empty());
  CHECK(in_policy("  rule r when not code == PERMISSION -> stop\n  default -> stop").empty());
  // A term that accepts absent through `not` warns even when another term tests the attribute.
  auto mixed = in_policy(
      "  rule r when code == TRANSIENT or not code == PERMISSION -> repair\n  default -> stop");
  REQUIRE(mixed.size() == 1);
  CHECK(mixed[0].message == "rule 'r' can repair when code is absent, only because of `not`");
  // `field in arguments` is absent exactly when field is: its help silences it.
  auto args = in_policy(
      "  tool { arguments = [a] }\n  rule s when not field in arguments -> repair\n  default -> "
      "stop");
  REQUIRE(args.size() == 1);
  CHECK(args[0].message == "rule 's' can repair when field is absent, only because of `not`");
  CHECK(in_policy("  tool { arguments = [a] }\n  rule s when field is present and not field in "
                  "arguments -> repair\n  default -> stop")
            .empty());
  // `is absent` states the intent: no warning.
  CHECK(in_policy(
            "  rule r when retry_after is absent and code == TRANSIENT -> retry\n  default -> stop")
            .empty());
  CHECK(in_policy("  rule r when code == VALIDATION -> repair\n  default -> stop").empty());
  // A warning does not stop compilation.
  CHECK(recourse::compile(
            {{"t", "policy \"p\" { rule r when not retryable -> repair default -> stop }"}})
            .ok());
}

TEST_CASE("check: all errors of a file are reported in one pass", "[check]") {
  auto d = in_policy(
      "  limits { attempts = 0 colour = 1 }\n"
      "  rule a when cod == X -> retry\n"
      "  rule a when code == NOPE -> retyr\n");
  std::vector<std::string> codes;
  for (const auto& x : d) codes.push_back(x.code);
  // (A missing default is judged once the rules check: coverage needs the compiled table.)
  CHECK(codes == std::vector<std::string>{"E019", "E018", "E010", "E015", "E011", "E013"});
  CHECK_FALSE(
      recourse::compile({{"t", "policy \"p\" {\n  rule a when cod == X -> retry\n}"}}).ok());
}

TEST_CASE("check: one bad file means no bundle at all", "[check]") {
  auto r = recourse::compile(
      {{"good.recourse", "policy \"a\" { default -> stop }"},
       {"bad.recourse", "policy \"b\" { rule r when x -> stop default -> stop }"}});
  CHECK_FALSE(r.ok());
  CHECK_FALSE(r.ok());
}

TEST_CASE("check: diagnostics render with file:line:col, the line and a caret", "[check]") {
  auto d = in_policy("  rule r when retryabel -> retry\n  default -> stop");
  REQUIRE(d.size() == 1);
  d[0].file = "p.recourse";
  CHECK(recourse::to_text(d[0]) ==
        "p.recourse:2:15: error[E010]: unknown attribute 'retryabel'\n"
        "    rule r when retryabel -> retry\n"
        "                ^\n"
        "  help: did you mean 'retryable'?\n");
  CHECK(recourse::to_json(d) ==
        "[{\"code\":\"E010\",\"column\":15,\"file\":\"p.recourse\",\"help\":\"did you mean "
        "'retryable'?\","
        "\"line\":2,\"message\":\"unknown attribute 'retryabel'\",\"offset\":27,"
        "\"severity\":\"error\"}]");
}

TEST_CASE("check: columns count characters, offsets count bytes; the caret goes by characters",
          "[check]") {
  // "é" takes two bytes and "€" three: `cod` is character 31 of its line, byte 34.
  auto d = in_policy(
      "  rule r when tool == \"\xc3\xa9\xe2\x82\xac\" or cod == X -> stop\n"
      "  default -> stop");
  expect_one(d, {"E010", 2, 31, "unknown attribute 'cod'", "did you mean 'code'?"});
  CHECK(d[0].offset == 13 + 33);
  d[0].file = "p.recourse";
  CHECK(recourse::to_text(d[0]) ==
        "p.recourse:2:31: error[E010]: unknown attribute 'cod'\n"
        "    rule r when tool == \"\xc3\xa9\xe2\x82\xac\" or cod == X -> stop\n"
        "  " +
            std::string(30, ' ') +
            "^\n"
            "  help: did you mean 'code'?\n");
  CHECK_THAT(recourse::to_json(d), Catch::Contains("\"column\":31,") &&
                                       Catch::Contains("\"line\":2,") &&
                                       Catch::Contains("\"offset\":46,"));
}

TEST_CASE("check: a line ends at LF, CR LF or a lone CR, in positions and source lines",
          "[check]") {
  struct Case {
    const char* name;
    std::string line_break;
    std::uint64_t offset;  // of `cod`
  };
  for (const Case& c : {Case{"LF", "\n", 41}, Case{"CR LF", "\r\n", 43}, Case{"CR", "\r", 41}}) {
    INFO(c.name);
    const std::string& br = c.line_break;
    const auto d = test::diagnostics("policy \"p\" {" + br + "  # a comment" + br +
                                     "  rule r when cod == X -> stop" + br + "  default -> stop" +
                                     br + "}" + br);
    expect_one(d, {"E010", 3, 15, "unknown attribute 'cod'", "did you mean 'code'?"});
    CHECK(d[0].offset == c.offset);
    CHECK(d[0].source_line == "  rule r when cod == X -> stop");
  }
  // Mixed in one file, and a syntax error on the last line, which has no line break.
  const auto d = test::diagnostics("# a\r# b\r\n# c\npolicy \"p\" { default -> stop");
  expect_one(d, {"E001", 4, 29,
                 "syntax error: expected a policy item (tool, limits, breaker, "
                 "throttle, backoff, codes, rule, default, assert, waive, map, hit, "
                 "test) or '}'",
                 "the '{' opened at line 4, column 12 is never closed"});
  CHECK(d[0].offset == 13 + 28);
  CHECK(d[0].source_line == "policy \"p\" { default -> stop");
}

TEST_CASE("check: a UTF-8 byte-order mark opens a file; offsets count it, columns do not",
          "[check]") {
  const std::string bom = "\xef\xbb\xbf";
  CHECK(test::diagnostics(bom + "version 1\npolicy \"p\" { default -> stop }\n").empty());
  const auto d =
      test::diagnostics(bom + "policy \"p\" { rule r when cod == X -> stop default -> stop }");
  expect_one(d, {"E010", 1, 26, "unknown attribute 'cod'", "did you mean 'code'?"});
  CHECK(d[0].offset == 3 + 25);
  CHECK(d[0].source_line == "policy \"p\" { rule r when cod == X -> stop default -> stop }");
  // Anywhere else it is no whitespace.
  expect_one(test::diagnostics("policy \"p\" {" + bom + " default -> stop }"),
             {"E001", 1, 13,
              "syntax error: expected a policy item (tool, limits, breaker, throttle, backoff, "
              "codes, rule, default, assert, waive, map, hit, test) or '}'",
              nullptr});
}

TEST_CASE("check: limits of the compiler (E090, E091, E093)", "[check]") {
  recourse::CompileOptions small;
  small.max_source_bytes = 10;
  auto r = recourse::compile({{"t", "policy \"p\" { default -> stop }"}}, small);
  expect_one(r.diagnostics(), {"E090", 1, 1, "file is 30 bytes; the limit is 10",
                               "raise CompileOptions::max_source_bytes"});
  CHECK(r.diagnostics()[0].offset == 0);

  recourse::CompileOptions few;
  few.max_rules = 1;
  r = recourse::compile({{"t", "policy \"p\" { rule a -> stop rule b -> stop default -> stop }"}},
                        few);
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].code == "E091");

  // (a1 or b1) and (a2 or b2) and ... multiplies out to 2^12 non-empty terms.
  std::string cond;
  for (int i = 0; i < 12; ++i)
    cond += std::string(i ? " and " : "") + "(attempt != " + std::to_string(i) +
            " or repairs != " + std::to_string(i) + ")";
  recourse::CompileOptions terms;
  terms.max_terms_per_rule = 1000;
  r = recourse::compile(
      {{"t", "policy \"p\" {\n rule big when " + cond + " -> stop default -> stop }"}}, terms);
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].code == "E093");
  CHECK(r.diagnostics()[0].line == 2);
  CHECK(r.diagnostics()[0].message == "rule 'big' expands to more than 1000 terms");

  // The same condition in an assertion: E093 blames the assertion, not the last rule.
  r = recourse::compile({{"t",
                          "policy \"p\" {\n rule small when attempt > 1 -> stop\n"
                          " default -> stop\n assert never retry when " +
                              cond + "\n}"}},
                        terms);
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].code == "E093");
  CHECK(r.diagnostics()[0].line == 4);
  CHECK(r.diagnostics()[0].column == 2);
  CHECK(r.diagnostics()[0].message ==
        "`assert never retry when ...` expands to more than 1000 terms");
}

TEST_CASE("check: a file beyond the size limit is E090 at 1:1 with its real size", "[check]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("recourse-e090-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string big = (dir / "big.recourse").string();
  const std::string child = (dir / "child.recourse").string();
  std::ofstream(big) << "policy \"big\" { default -> stop }\n" << std::string(3'000'000, '#');
  std::ofstream(child) << "policy \"child\" extends \"big\" { default -> stop }\n";
  const std::string message = "file is 3000033 bytes; the limit is 1048576";
  SECTION("named") {
    const auto r = recourse::compile_paths({big});
    expect_one(r.diagnostics(), {"E090", 1, 1, message.c_str(), nullptr});
    CHECK(r.diagnostics()[0].file == big);
    CHECK(recourse::to_json(r.diagnostics()).find("\"column\":1,") != std::string::npos);
  }
  SECTION("read as a base") {
    const auto r = recourse::compile_paths({child});
    REQUIRE_FALSE(r.ok());
    REQUIRE(r.diagnostics().size() >= 1);
    CHECK(r.diagnostics()[0].code == "E090");
    CHECK(r.diagnostics()[0].file == big);
    CHECK(r.diagnostics()[0].line == 1);
    CHECK(r.diagnostics()[0].column == 1);
    CHECK(r.diagnostics()[0].message == message);
  }
  fs::remove_all(dir);
}

TEST_CASE("check: just over a default limit is its diagnostic; at the limit compiles",
          "[check][limits]") {
  const recourse::CompileOptions defaults;
  auto rules = [](std::size_t n) {
    std::string text = "policy \"p\" {\n";
    for (std::size_t i = 0; i < n; ++i) text += "rule r" + std::to_string(i) + " -> stop\n";
    return text + "default -> stop\n}\n";
  };
  CHECK(recourse::compile({{"t", rules(defaults.max_rules)}}).ok());
  auto r = recourse::compile({{"t", rules(defaults.max_rules + 1)}});
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].code == "E091");
  CHECK(r.diagnostics()[0].message == "policy has 20001 rules; the limit is 20000");
  CHECK(r.diagnostics()[0].help ==
        "split the policy, or raise the limit (--max-rules N, CompileOptions::max_rules)");

  auto codes = [](std::size_t n) {
    std::string text = "policy \"p\" {\n  codes { ";
    for (std::size_t i = 0; i < n; ++i) text += (i ? ", C" : "C") + std::to_string(i);
    return text + " }\n  rule r when code == C7 -> stop\n  default -> stop\n}\n";
  };
  CHECK(recourse::compile({{"t", codes(defaults.max_codes)}}).ok());
  r = recourse::compile({{"t", codes(defaults.max_codes + 1)}});
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].code == "E095");
  CHECK(r.diagnostics()[0].line == 1);
  CHECK(r.diagnostics()[0].message == "policy declares 20001 codes; the limit is 20000");
  CHECK(r.diagnostics()[0].help ==
        "split the policy, or raise the limit (--max-codes N, CompileOptions::max_codes)");

  const std::string padding(defaults.max_source_bytes, '#');
  r = recourse::compile({{"t", padding + "\npolicy \"p\" { default -> stop }"}});
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].code == "E090");
}

TEST_CASE("check: names are not strings; out-of-range and negative durations", "[check]") {
  expect_one(in_policy("  rule r when code == \"TIMEOUT\" -> stop\n  default -> stop"),
             {"E039", 2, 23, "code values are names, not strings: write TIMEOUT", nullptr});
  expect_one(in_policy("  limits { deadline = 99999999999999999999h }\n  default -> stop"),
             {"E025", 2, 23, "duration 99999999999999999999h is out of range", nullptr});
  expect_one(in_policy("  limits { min_delay = -5ms }\n  default -> stop"),
             {"E019", 2, 24, "min_delay must not be negative", nullptr});
}

TEST_CASE("check: strings must be valid UTF-8 on one line", "[check]") {
  auto d = test::diagnostics("policy \"p\" { default -> degrade \"bad\xc3\x28\" }");
  REQUIRE(d.size() == 1);
  CHECK(d[0].code == "E001");
  CHECK(d[0].column == 37);
  CHECK(test::diagnostics("policy \"p\" { default -> degrade \"caf\xc3\xa9\" }").empty());
}

TEST_CASE("check: nesting up to max_depth is accepted, one more is E092", "[check]") {
  auto nested = [](int n) {
    return "policy \"p\" { rule r when " + std::string(n, '(') + "retryable" + std::string(n, ')') +
           " -> stop default -> stop }";
  };
  CHECK(test::diagnostics(nested(64)).empty());
  auto d = test::diagnostics(nested(65));
  REQUIRE(d.size() == 1);
  CHECK(d[0].code == "E092");
  auto nots = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "not ";
    return "policy \"p\" { rule r when " + s + "retryable -> stop default -> stop }";
  };
  CHECK(test::diagnostics(nots(64)).empty());
  CHECK(test::diagnostics(nots(65)).at(0).code == "E092");
}

TEST_CASE("check: an `or` over one attribute stays one term, however long", "[check]") {
  // 12 groups of 4096 alternatives: a naive expansion multiplies them out; merging keeps 1 term.
  std::string cond;
  for (int g = 0; g < 12; ++g) {
    cond += g ? " and (" : "(";
    for (int i = 1; i <= 4096; ++i)
      cond += (i > 1 ? " or attempt == " : "attempt == ") + std::to_string(i);
    cond += ")";
  }
  auto r = recourse::compile(
      {{"t", "policy \"p\" { rule r when " + cond + " -> stop default -> stop }"}});
  REQUIRE(r.ok());
  CHECK_THAT(r->policies()[0].dump(), Catch::Contains("r0 r attempt={"));
}

TEST_CASE("check: a table beyond max_table_bytes is E094", "[check]") {
  std::string rules;
  for (int i = 0; i < 2000; ++i)
    rules += "rule r" + std::to_string(i) + " when attempt == " + std::to_string(i) +
             " and elapsed == " + std::to_string(i) + "ms -> retry\n";
  recourse::CompileOptions small;
  small.max_table_bytes = 1 << 20;
  auto r = recourse::compile({{"t", "policy \"p\" {\n" + rules + "default -> stop }"}}, small);
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].code == "E094");
  CHECK_THAT(r.diagnostics()[0].message, Catch::EndsWith("the limit is 1 MiB"));
}

TEST_CASE("check: breaker counts takes a list of known codes (E011, E037)", "[check][breaker]") {
  expect_one(in_policy("  breaker { counts = [TRANSIENT, TIMEOUTT] }\n  default -> stop"),
             {"E011", 2, 34, "unknown code 'TIMEOUTT'",
              "did you mean 'TIMEOUT'? (declare it in `codes { }`)"});
  expect_one(in_policy("  breaker { counts = TRANSIENT }\n  default -> stop"),
             {"E037", 2, 13, "'counts' takes a [list]", nullptr});
  expect_one(in_policy("  breaker { counts = [] }\n  default -> stop"),
             {"E037", 2, 13, "counts needs at least one code", nullptr});
  expect_one(in_policy("  breaker { probe_lease = 0s }\n  default -> stop"),
             {"E019", 2, 27, "probe_lease must be positive", nullptr});
  // A declared code may be counted; a code listed twice counts once.
  const auto p = test::policy(
      "policy \"p\" {\n  codes { UPSTREAM_DOWN }\n"
      "  breaker { counts = [UPSTREAM_DOWN, TIMEOUT, TIMEOUT] }\n  default -> stop\n}\n");
  CHECK_THAT(p.dump(), Catch::Contains("counts=[TIMEOUT,UPSTREAM_DOWN]"));
}

TEST_CASE("check: a fallback chain and a named degrade (E014, E021, E036, E037)",
          "[check][fallback]") {
  CHECK(in_policy("  tool { fallback = [\"a\", \"b\"] }\n  default -> stop").empty());
  CHECK(in_policy("  limits { on_exhausted = degrade \"cache\" }\n  default -> stop").empty());
  expect_one(in_policy("  tool { fallback = [\"a\", \"a\"] }\n  default -> stop"),
             {"E021", 2, 27, "fallback names 'a' twice", nullptr});
  expect_one(in_policy("  tool { fallback = [\"a\", b] }\n  default -> stop"),
             {"E037", 2, 27, "fallback names a tool as a \"string\"", nullptr});
  expect_one(in_policy("  tool { fallback = [] }\n  default -> stop"),
             {"E037", 2, 10, "fallback names at least one tool", nullptr});
  expect_one(
      in_policy("  limits { on_exhausted = stop \"cache\" }\n  default -> stop"),
      {"E014", 2, 32, "on_exhausted = stop takes no target", "only degrade names a target here"});
  expect_one(in_policy("  tool { fallback = \"a\" }\n  limits { on_open = replace \"b\" }\n"
                       "  default -> stop"),
             {"E014", 3, 30, "on_open = replace takes no target",
              "replace goes to the tool's fallback chain"});
  expect_one(in_policy("  limits { attempts = 2 \"x\" }\n  default -> stop"),
             {"E037", 2, 25, "'attempts' takes no string after its value",
              "only on_exhausted and on_open name a target: on_exhausted = degrade \"tool\""});
  expect_one(in_policy("  limits { on_open = replace }\n  default -> stop"),
             {"E036", 2, 22, "on_open = replace needs the tool's fallback",
              "declare it: tool { fallback = \"other.tool\" }"});
}
