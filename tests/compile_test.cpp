// Compile stage: the dump of every bundled example is a golden file; the strategy follows the
// domain's size; conditions become DNF rows with guard rows before retry and repair rows.
//
// RECOURSE_UPDATE_GOLDEN=1 rewrites the golden files for review instead of comparing.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Compares `actual` with tests/golden/NAME.dump (or rewrites it under RECOURSE_UPDATE_GOLDEN).
void check_golden(const std::string& name, const std::string& actual) {
  const std::string golden = test::source_dir() + "/tests/golden/" + name + ".dump";
  if (std::getenv("RECOURSE_UPDATE_GOLDEN")) {
    std::ofstream(golden, std::ios::binary) << actual;
    return;
  }
  INFO("golden file " << golden << " differs; actual dump:\n" << actual);
  CHECK(actual == read_file(golden));
}

}  // namespace

TEST_CASE("compile: golden dumps of the example policies", "[compile]") {
  namespace fs = std::filesystem;
  const std::string root = test::source_dir();
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(root + "/rules/examples"))
    if (e.path().extension() == ".recourse") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 5);
  for (const auto& file : files) {
    const std::string relative = "rules/examples/" + file.filename().string();
    auto r = recourse::compile({{relative, read_file(file.string())}});
    REQUIRE(r.ok());
    std::string dump;
    for (const auto& p : r->policies()) dump += p.dump();
    check_golden(file.stem().string(), dump);
  }
}

TEST_CASE("compile: a small domain gets a direct table, a large one bitsets", "[compile]") {
  const auto small = test::policy(
      R"(policy "s" { rule r when code == TRANSIENT and retryable -> retry default -> stop })");
  CHECK_THAT(small.dump(), Catch::Contains("strategy direct"));
  recourse::CompileOptions no_direct;
  no_direct.direct_table_max_entries = 1;
  auto r = recourse::compile(
      {{"t",
        R"(policy "s" { rule r when code == TRANSIENT and retryable -> retry default -> stop })"}},
      no_direct);
  REQUIRE(r.ok());
  CHECK_THAT(r->policies()[0].dump(), Catch::Contains("strategy bitset"));
  // A table without columns has one entry, still more than a limit of none.
  recourse::CompileOptions none;
  none.direct_table_max_entries = 0;
  auto bare = recourse::compile({{"t", R"(policy "b" { default -> stop })"}}, none);
  REQUIRE(bare.ok());
  CHECK_THAT(bare->policies()[0].dump(), Catch::Contains("strategy bitset"));
  // Both strategies decide alike.
  const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  CHECK(small.decide(e, {}).rule == r->policies()[0].decide(e, {}).rule);
}

TEST_CASE(
    "compile: rows are DNF terms (merged per column); negation is the complement, absent included",
    "[compile]") {
  const auto p = test::policy(R"(policy "d" {
  limits { attempts = 2 }
  rule a when not (code == PERMISSION or retryable) -> degrade
  rule b when attempt > 2 or attempt <= 1 -> stop
  default -> stop
})",
                              "d.recourse");
  check_golden("dnf", p.dump());
}

TEST_CASE("compile: a dump writes a run of more than 64 cells as first..last", "[compile]") {
  // `attempt != 7` among many cuts is all but one cell: two runs, not 40,000 names (the dump is
  // also the text the policy hash is taken of).
  std::string text = "policy \"p\" {\n";
  for (int i = 1; i <= 200; ++i)
    text += "  rule r" + std::to_string(i) + " when attempt == " + std::to_string(i) + " -> stop\n";
  text += "  rule wide when attempt != 100 -> stop\n  rule few when attempt < 60 -> stop\n";
  const auto p = test::policy(text + "  default -> stop\n}\n");
  const std::string dump = p.dump();
  CHECK_THAT(dump,
             Catch::Contains(" wide attempt={[-inf,1)..[99,100),[101,102)..[201,+inf)} -> stop"));
  CHECK_THAT(dump, Catch::Contains(" few attempt={[-inf,1),[1,2),[2,3),"));
  CHECK_THAT(dump, Catch::Contains(",[58,59),[59,60)} -> stop"));
}

TEST_CASE("compile: guard rows precede each retry term, in precedence order", "[compile]") {
  const auto p = test::policy(
      "policy \"g\" {\n  rule r when retryable and code != CONTEXT_OVERFLOW -> retry\n  default -> "
      "stop\n}\n",
      "g.recourse");
  check_golden("guards", p.dump());
  // A stop rule gets no guard rows.
  const auto s = test::policy(R"(policy "s" { rule r when retryable -> stop default -> stop })");
  CHECK_THAT(s.dump(), !Catch::Contains("budget:"));
}

TEST_CASE("compile: keys, cost, throttle and breaker add their guards", "[compile]") {
  const auto p = test::policy(R"(policy "k" {
  tool { idempotency_keys = true  verify = "k.lookup"  fallback = "k.other"  cost = 2 }
  limits { cost = 10  on_open = degrade }
  throttle { max_tokens = 10  token_ratio = 0.1 }
  breaker { failures = 3  cooldown = 10s }
  rule r when retryable and code != CONTEXT_OVERFLOW -> retry
  default -> stop
})");
  const std::string dump = p.dump();
  CHECK_THAT(dump,
             Catch::Contains("idempotent={false} side_effect={unknown} idempotency_key={none} -> "
                             "replace \"k.lookup\""));
  CHECK_THAT(dump,
             Catch::Contains("cost_left={[-inf,2)} -> replace \"k.other\" \"cost budget spent\""));
  CHECK_THAT(dump, Catch::Contains("retry_throttled={true} -> replace \"k.other\""));
  CHECK_THAT(dump, Catch::Contains("circuit={open} -> degrade \"circuit open for this tool\""));
  // Precedence: gates, Retry-After cap, budgets, circuit.
  CHECK(dump.find("gate:committed") < dump.find("budget:retry_after"));
  CHECK(dump.find("budget:retry_after") < dump.find("budget:attempts"));
  CHECK(dump.find("budget:retry_tokens") < dump.find("circuit:open"));
  CHECK(dump.find("circuit:open") < dump.find(" r code="));
}

TEST_CASE("compile: the hash names the table, not the formatting", "[compile]") {
  const auto a = test::policy(
      "policy \"h\" { rule r when retryable and code != CONTEXT_OVERFLOW -> retry default -> stop "
      "}");
  const auto b = test::policy(
      "# comment\npolicy \"h\" {\n  rule r when retryable and code != CONTEXT_OVERFLOW\n    -> "
      "retry\n  default -> stop\n}\n");
  const auto c = test::policy("policy \"h\" { rule r when retryable -> escalate default -> stop }");
  CHECK(a.hash() == b.hash());
  CHECK(a.hash() != c.hash());
  CHECK(a.hash().size() == 7 + 64);
}

TEST_CASE("compile: every setting that changes a decision changes the hash", "[compile]") {
  const std::string base =
      "policy \"h\" { %s rule r when retryable and code != CONTEXT_OVERFLOW -> retry default -> "
      "degrade \"a\" }";
  auto hash_of = [&](const std::string& extra, const std::string& tail = "") {
    std::string text = base;
    text.replace(text.find("%s"), 2, extra);
    if (!tail.empty()) text.replace(text.find("degrade \"a\""), 11, tail);
    return std::string(test::policy(text).hash());
  };
  const std::string plain = hash_of("");
  CHECK(hash_of("backoff constant base 9s") != plain);
  CHECK(hash_of("limits { min_delay = 10ms }") != plain);
  CHECK(hash_of("tool { idempotency_keys = true }") != plain);
  CHECK(hash_of("tool { arguments = [a] }") != plain);
  CHECK(hash_of("throttle { max_tokens = 5 }") != plain);
  // Declared codes, even when no rule tests `code`: an envelope naming one is no longer UNKNOWN.
  const auto no_code = [](const std::string& codes) {
    return test::policy("policy \"h\" { " + codes +
                        " rule r when retryable -> escalate default -> stop }");
  };
  const auto without = no_code(""), with = no_code("codes { FOO }");
  const auto e = test::envelope(R"({"code": "FOO"})");
  const auto c = test::context(R"({"tool": "h", "sideEffect": "none"})");
  REQUIRE(without.decide(e, c).warnings != with.decide(e, c).warnings);
  CHECK(without.hash() != with.hash());
  CHECK(no_code("codes { FOO }").hash() != no_code("codes { FOO, BAR }").hash());
  // A reason that looks like two strings is not a target and a reason.
  CHECK(hash_of("", "degrade \"a\\\" \\\"b\"") != hash_of("", "degrade \"a\" \"b\""));
}
