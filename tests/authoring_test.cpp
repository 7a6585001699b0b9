// Authoring: `test` blocks (parsed, checked, run by Policy::run_tests and `recourse test`) and
// `extends` (inheritance of a base policy's items, with diagnostics pointing into the file each
// item came from).
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "recourse/tooling.hpp"
#include "support.hpp"

namespace {

namespace fs = std::filesystem;

const char* const kRetrying = R"(policy "api" {
  limits { attempts = 3 }
  backoff constant base 200ms jitter none
  rule transient when code == TRANSIENT and retryable -> retry
  rule perm when code == PERMISSION -> authorize "ask the owner"
  default -> stop
)";

std::string with_tests(const std::string& tests) {
  return std::string(kRetrying) + tests + "}\n";
}

const recourse::Diagnostic* find(const std::vector<recourse::Diagnostic>& ds, const char* code) {
  for (const auto& d : ds)
    if (d.code == code) return &d;
  return nullptr;
}

// A fresh directory under the system's temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("recourse-authoring-" + std::to_string(::getpid()) + "-" + std::to_string(++count()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
  static int& count() {
    static int n = 0;
    return n;
  }
};

}  // namespace

TEST_CASE("test blocks: passing and failing expectations, with every mismatch named", "[test]") {
  const auto p = test::policy(with_tests(R"(
  test "transient is retried" {
    envelope {"code": "TRANSIENT", "retryable": true, "message": "a } and a { in a string"}
    context {"attempt": 1, "sideEffect": "none"}
    expect retry rule transient delay 200ms
  }
  test "wrong on purpose" {
    envelope {"code": "PERMISSION", "nested": {"deep": [{"x": 1}]}}
    expect replace "elsewhere" rule transient delay 1s..2s exhausted attempts
  }
)"));
  const auto results = recourse::run_tests(p);
  REQUIRE(results.size() == 2);
  CHECK(results[0].passed);
  CHECK(results[0].name == "transient is retried");
  CHECK(results[0].policy == "api");
  CHECK(results[0].line == 8);
  CHECK(results[0].column == 3);
  CHECK(results[0].actual == "retry rule transient delay 200ms");
  CHECK(results[0].expected == "retry rule transient delay 200ms");

  const auto& failed = results[1];
  CHECK_FALSE(failed.passed);
  CHECK(failed.expected == "replace \"elsewhere\" rule transient delay 1s..2s exhausted attempts");
  CHECK(failed.actual == "authorize rule perm");
  CHECK(failed.mismatches == std::vector<std::string>{"route: expected replace, got authorize",
                                                      "target: expected \"elsewhere\", got \"\"",
                                                      "rule: expected transient, got perm",
                                                      "delay: expected 1000ms..2000ms, got 0ms",
                                                      "exhausted: expected attempts, got none"});
  CHECK(failed.decision_json.find("\"route\":\"authorize\"") != std::string::npos);
}

TEST_CASE("test blocks: the context defaults to the policy's tool and reads strictly", "[test]") {
  // Without a context the call is attempt 1 with an unknown side effect: the gate for unknown
  // outcomes keeps a non-idempotent tool from being called again.
  const auto p = test::policy(with_tests(R"(
  test "no context" {
    envelope {"code": "TRANSIENT", "retryable": true}
    expect escalate rule "gate:unknown_outcome"
  }
  test "guards decide too" {
    envelope {"code": "TRANSIENT", "retryable": true}
    context {"attempt": 3, "sideEffect": "none"}
    expect stop rule "budget:attempts" exhausted attempts
  }
)"));
  const auto results = recourse::run_tests(p);
  REQUIRE(results.size() == 2);
  CHECK(results[0].name == "no context");
  CHECK(results[1].name == "guards decide too");
  for (const auto& r : results) {
    INFO(r.name << ": " << r.actual);
    CHECK(r.passed);
  }
}

TEST_CASE("test blocks: mistakes are checker errors at the right place", "[test]") {
  SECTION("a context that does not read") {
    const auto ds = test::diagnostics(with_tests(R"(
  test "t" {
    envelope {"code": "TRANSIENT"}
    context {"attempt": "two"}
    expect retry
  }
)"));
    const auto* d = find(ds, "E028");
    REQUIRE(d);
    CHECK(d->line == 10);
    CHECK(d->column == 13);
    CHECK(d->message.rfind("the test's context does not read: ", 0) == 0);
  }
  SECTION("an envelope that is not JSON") {
    const auto ds = test::diagnostics(with_tests(R"(
  test "t" {
    envelope {code: TRANSIENT}
    expect retry
  }
)"));
    const auto* d = find(ds, "E028");
    REQUIRE(d);
    CHECK(d->message.rfind("the test's envelope does not read: invalid JSON", 0) == 0);
  }
  SECTION("a rule that does not exist, with the nearest name") {
    const auto ds = test::diagnostics(with_tests(R"(
  test "t" {
    envelope {"code": "TRANSIENT"}
    expect retry rule transiant
  }
)"));
    const auto* d = find(ds, "E029");
    REQUIRE(d);
    CHECK(d->message == "no rule or guard 'transiant' decides here");
    CHECK(d->help == "did you mean 'transient'?");
    CHECK(d->column == 23);
  }
  SECTION("a budget the policy does not have, a backwards range and an unknown route") {
    const auto ds = test::diagnostics(with_tests(R"(
  test "t" {
    envelope {"code": "TRANSIENT"}
    expect retri delay 2s..1s exhausted cost
  }
)"));
    std::vector<std::string> codes;
    for (const auto& d : ds) codes.push_back(d.code + ":" + d.message);
    CHECK(codes == std::vector<std::string>{"E013:unknown route 'retri'",
                                            "E029:the delay range ends before it starts",
                                            "E029:no budget 'cost' in this policy"});
  }
  SECTION("a repeated clause, a target on a route without one, another tool, a negative delay") {
    const auto ds = test::diagnostics(with_tests(R"(
  test "t" {
    envelope {"code": "PERMISSION"}
    context {"tool": "elsewhere"}
    expect authorize "ask the owner" rule perm rule transient
  }
  test "u" {
    envelope {"code": "TRANSIENT"}
    expect retry delay -1ms
  }
)"));
    std::vector<std::string> codes;
    for (const auto& d : ds) codes.push_back(d.code + ":" + d.message);
    CHECK(codes ==
          std::vector<std::string>{
              "E028:the test's context names tool \"elsewhere\"; a test decides with its own "
              "policy, \"api\"",
              "E029:this clause is given twice in the expectation",
              "E029:only replace and degrade have a target to expect",
              "E029:a delay is never negative"});
  }
  SECTION("an unterminated JSON object is a syntax error naming what was expected") {
    const auto ds = test::diagnostics(std::string(kRetrying) + R"(
  test "t" {
    envelope {"code": "TRANSIENT", "message": "an unbalanced } in a string"
)");
    REQUIRE(ds.size() == 1);
    CHECK(ds[0].code == "E001");
    CHECK(ds[0].message == "syntax error: expected a JSON object {...} with balanced braces");
  }
}

TEST_CASE("extends: own rules first, settings key by key, the base's assertions hold",
          "[extends]") {
  const std::string base = R"(policy "base" {
  limits { attempts = 4  repairs = 2 }
  codes { BUSY }
  rule transient when code in [TRANSIENT, BUSY] and retryable -> retry
  assert never retry when code == PERMISSION
  default -> escalate
}
)";
  SECTION("inherits and overrides") {
    auto r = recourse::compile(
        {{"base.recourse", base}, {"child.recourse", R"(policy "child" extends "base" {
  limits { attempts = 2 }
  rule busy when code == BUSY -> stop "busy means busy here"
}
)"}});
    INFO((r.diagnostics().empty() ? "" : recourse::to_text(r.diagnostics()[0])));
    REQUIRE(r.ok());
    const auto* child = r->find("child");
    REQUIRE(child);
    const auto busy = child->decide(test::envelope(R"({"code":"BUSY","retryable":true})"),
                                    test::context(R"({"tool":"child","sideEffect":"none"})"));
    CHECK(busy.rule == "busy");  // the child's own rule comes first
    const auto transient =
        child->decide(test::envelope(R"({"code":"TRANSIENT","retryable":true})"),
                      test::context(R"({"tool":"child","sideEffect":"none","attempt":1})"));
    CHECK(transient.rule == "transient");
    CHECK(transient.attempts.before == 1);  // attempts = 2 from the child, not 4 from the base
    CHECK(transient.repairs.before == 2);   // repairs = 2 from the base
    const auto other = child->decide(test::envelope(R"({"code":"NOT_FOUND"})"),
                                     test::context(R"({"tool":"child","sideEffect":"none"})"));
    CHECK(other.route == recourse::Route::Escalate);  // the base's default
  }
  SECTION("a base assertion broken by the child points at the assertion in the base's file") {
    auto r = recourse::compile(
        {{"base.recourse", base}, {"child.recourse", R"(policy "child" extends "base" {
  rule perm when code == PERMISSION -> retry
}
)"}});
    CHECK_FALSE(r.ok());
    const auto* d = find(r.diagnostics(), "E120");
    REQUIRE(d);
    CHECK(d->file == "base.recourse");
    CHECK(d->line == 5);
    CHECK(d->source_line == "  assert never retry when code == PERMISSION");
    CHECK(d->message.find("'perm'") != std::string::npos);
  }
  SECTION("a base rule the child shadows is W101 in the base's file, naming the child") {
    auto r = recourse::compile(
        {{"base.recourse", base}, {"child.recourse", R"(policy "child" extends "base" {
  rule everything when code in [TRANSIENT, BUSY] -> stop
}
)"}});
    REQUIRE(r.ok());
    const auto* d = find(r.diagnostics(), "W101");
    REQUIRE(d);
    CHECK(d->file == "base.recourse");
    CHECK(d->line == 4);
    CHECK(d->message ==
          "rule 'transient' is never reached: 'everything' decides every input it matches (in "
          "policy \"child\", which extends this one)");
  }
  SECTION("a rule defined in both is an error at the base's copy") {
    auto r = recourse::compile(
        {{"base.recourse", base}, {"child.recourse", R"(policy "child" extends "base" {
  rule transient when code == TRANSIENT -> stop
}
)"}});
    const auto* d = find(r.diagnostics(), "E015");
    REQUIRE(d);
    CHECK(d->file == "base.recourse");
    CHECK(d->line == 4);
  }
}

TEST_CASE("extends: a missing base and a cycle are errors at the extends clause", "[extends]") {
  auto missing = recourse::compile({{"c.recourse", "policy \"c\" extends \"nowhere\" {\n}\n"}});
  CHECK_FALSE(missing.ok());
  REQUIRE(missing.diagnostics().size() == 1);
  CHECK(missing.diagnostics()[0].code == "E026");
  CHECK(missing.diagnostics()[0].message == "no policy \"nowhere\" to extend");
  CHECK(missing.diagnostics()[0].line == 1);
  CHECK(missing.diagnostics()[0].column == 20);

  auto cycle = recourse::compile({{"a.recourse", "policy \"a\" extends \"b\" {\n}\n"},
                                  {"b.recourse", "policy \"b\" extends \"a\" {\n}\n"}});
  CHECK_FALSE(cycle.ok());
  REQUIRE(cycle.diagnostics().size() == 2);
  CHECK(cycle.diagnostics()[0].code == "E027");
  CHECK(cycle.diagnostics()[0].file == "a.recourse");
  CHECK(cycle.diagnostics()[0].message == "policy \"a\" extends itself: \"a\" -> \"b\" -> \"a\"");
  CHECK(cycle.diagnostics()[1].file == "b.recourse");
}

TEST_CASE("extends: chains longer than max_extends_depth are E033", "[extends]") {
  std::string text;
  for (int i = 0; i < 40; ++i)
    text +=
        "policy \"c" + std::to_string(i) + "\" extends \"c" + std::to_string(i + 1) + "\" {\n}\n";
  text += "policy \"c40\" {\n  default -> stop\n}\n";
  const auto r = recourse::compile({{"chain.recourse", text}});
  CHECK_FALSE(r.ok());
  const auto* d = find(r.diagnostics(), "E033");
  REQUIRE(d);
  CHECK(d->message == "policy \"c0\" has more than 16 bases along `extends`");
  recourse::CompileOptions deep;
  deep.max_extends_depth = 64;
  CHECK(recourse::compile({{"chain.recourse", text}}, deep).ok());
}

TEST_CASE("extends: compile_paths finds NAME.recourse beside the file, and nothing else",
          "[extends]") {
  TempDir dir;
  dir.write("shared.base.recourse", "policy \"shared.base\" {\n  default -> escalate\n}\n");
  const auto child = dir.write("child.recourse", "policy \"child\" extends \"shared.base\" {\n}\n");
  auto r = recourse::compile_paths({child});
  REQUIRE(r.ok());
  CHECK(r->find("child"));
  CHECK(r->policies().size() == 2);

  // A name that would leave the directory is never looked up.
  fs::create_directories(dir.path / "sub");
  const auto escape = dir.write("sub/x.recourse", "policy \"x\" extends \"../shared.base\" {\n}\n");
  auto e = recourse::compile_paths({escape});
  REQUIRE_FALSE(e.ok());
  CHECK(e.diagnostics().at(0).code == "E026");
  CHECK(e.diagnostics().at(0).help.find("never looked up as a file") != std::string::npos);
}

TEST_CASE("fmt keeps test blocks and extends, and puts tests after the default", "[test]") {
  const std::string text = R"(policy "api" extends "base" {
  test "first" {
    envelope {"code": "TRANSIENT",
              "retryable": true}   # the JSON keeps its own layout
    expect retry   rule transient
  }
  rule transient when code == TRANSIENT -> retry
  default -> stop
}
)";
  const auto out = recourse::format(text);
  INFO((out.diagnostics().empty() ? "" : recourse::to_text(out.diagnostics()[0])));
  REQUIRE(out.ok());
  CHECK(*out == R"(policy "api" extends "base" {
  rule transient when code == TRANSIENT -> retry
  default -> stop
  test "first" {
    envelope {"code": "TRANSIENT",
              "retryable": true}  # the JSON keeps its own layout
    expect retry rule transient
  }
}
)");
  std::vector<recourse::Diagnostic> again;
  CHECK(test::format_into(*out, again) == *out);
}

TEST_CASE("recourse test: PASS and FAIL lines, the diff, exit codes, JSON records", "[test][cli]") {
  TempDir dir;
  dir.write("api.recourse", with_tests(R"(
  test "passes" {
    envelope {"code": "TRANSIENT", "retryable": true}
    context {"sideEffect": "none"}
    expect retry
  }
)"));
  const auto ok = test::run(test::cli() + " test " + dir.path.string() + " 2>&1");
  CHECK(ok.status == 0);
  CHECK(ok.out.find("PASS " + (dir.path / "api.recourse").string() + ":8:3 api: passes\n") !=
        std::string::npos);
  CHECK(ok.out.find("1 passed, 0 failed\n") != std::string::npos);

  dir.write("broken.recourse", with_tests(R"(
  test "fails" {
    envelope {"code": "PERMISSION"}
    expect retry
  }
)"));
  const auto bad = test::run(test::cli() + " test " + dir.path.string() + " 2>&1");
  CHECK(bad.status == 1);
  CHECK(bad.out.find("FAIL " + (dir.path / "broken.recourse").string() +
                     ":8:3 api: fails\n"
                     "  expected: retry\n"
                     "  actual:   authorize rule perm\n"
                     "  - route: expected retry, got authorize\n") != std::string::npos);
  CHECK(bad.out.find("1 passed, 1 failed\n") != std::string::npos);

  const auto json = test::run(test::cli() + " test --format json " + dir.path.string());
  CHECK(json.status == 1);
  CHECK(json.out.find("\"code\":\"E130\"") != std::string::npos);
  CHECK(json.out.find("\"line\":8") != std::string::npos);
}

TEST_CASE("recourse test: control characters in names are escaped in text output", "[test][cli]") {
  TempDir dir;
  // A raw ESC starting a colour sequence, and \t (a tab once the string is read).
  dir.write("api.recourse",
            with_tests("  test \"red \x1b[31m\\tdone\" {\n"
                       "    envelope {\"code\": \"TRANSIENT\", \"retryable\": true}\n"
                       "    context {\"sideEffect\": \"none\"}\n"
                       "    expect retry\n"
                       "  }\n"
                       "  test \"bell \x07\" {\n"
                       "    envelope {\"code\": \"PERMISSION\"}\n"
                       "    expect retry\n"
                       "  }\n"));
  const auto text = test::run(test::cli() + " test " + dir.path.string() + " 2>&1");
  CHECK(text.status == 1);
  const std::string file = (dir.path / "api.recourse").string();
  CHECK(text.out.find("PASS " + file + ":7:3 api: red \\u001b[31m\\tdone\n") != std::string::npos);
  CHECK(text.out.find("FAIL " + file + ":12:3 api: bell \\u0007\n") != std::string::npos);
  CHECK(text.out.find('\x1b') == std::string::npos);
  CHECK(text.out.find('\x07') == std::string::npos);
  CHECK(text.out.find('\t') == std::string::npos);
}

TEST_CASE("test blocks: a name given twice in one policy is E034 at the second", "[test]") {
  const auto ds = test::diagnostics(with_tests(R"(
  test "stops" {
    envelope {"code": "NOT_FOUND"}
    expect stop
  }
  test "retries" {
    envelope {"code": "TRANSIENT", "retryable": true}
    expect retry
  }
  test "stops" {
    envelope {"code": "TIMEOUT"}
    expect stop
  }
)"));
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].code == "E034");
  CHECK(ds[0].severity == recourse::Severity::Error);
  CHECK(ds[0].line == 16);
  CHECK(ds[0].column == 8);
  CHECK(ds[0].message == "test \"stops\" is defined twice in the policy");
  CHECK(ds[0].help == "first defined at line 8");
  // The same name in two policies of one file is no conflict.
  const std::string two = with_tests(R"(
  test "stops" {
    envelope {"code": "NOT_FOUND"}
    expect stop
  }
)") + R"(policy "other" {
  default -> stop
  test "stops" {
    envelope {"code": "NOT_FOUND"}
    expect stop
  }
}
)";
  CHECK(test::diagnostics(two).empty());
}

TEST_CASE("recourse test: every bundled policy file has tests, and they pass", "[test][cli]") {
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(test::source_dir() + "/rules")) {
    if (!e.is_regular_file() || e.path().extension() != ".recourse") continue;
    ++files;
    auto r = recourse::compile_paths({e.path().string()});
    INFO(e.path().string());
    REQUIRE(r.ok());
    std::size_t own = 0;
    for (const auto& p : r->policies())
      for (const auto& t : recourse::run_tests(p)) {
        if (t.file != e.path().string()) continue;
        ++own;
        INFO(t.name << ": expected " << t.expected << ", got " << t.actual);
        CHECK(t.passed);
      }
    CHECK(own >= 3);
  }
  CHECK(files >= 10);
}
