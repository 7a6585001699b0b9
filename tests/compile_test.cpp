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

}  // namespace

TEST_CASE("compile: golden dumps of the example policies", "[compile]") {
  namespace fs = std::filesystem;
  const std::string root = test::source_dir();
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(root + "/rules/examples"))
    if (e.path().extension() == ".recourse") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 5);
  const bool update = std::getenv("RECOURSE_UPDATE_GOLDEN") != nullptr;
  for (const auto& file : files) {
    const std::string relative = "rules/examples/" + file.filename().string();
    auto r = recourse::compile({{relative, read_file(file.string())}});
    REQUIRE(r.ok());
    std::string dump;
    for (const auto& p : r.bundle->policies()) dump += p.dump();
    const std::string golden = root + "/tests/golden/" + file.stem().string() + ".dump";
    if (update) {
      std::ofstream(golden, std::ios::binary) << dump;
      continue;
    }
    INFO("golden file " << golden << " differs; actual dump:\n" << dump);
    CHECK(dump == read_file(golden));
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
  CHECK_THAT(r.bundle->policies()[0].dump(), Catch::Contains("strategy bitset"));
  // Both strategies decide alike.
  const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
  CHECK(small.decide(e, {}).rule == r.bundle->policies()[0].decide(e, {}).rule);
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
  CHECK(
      p.dump() ==
      "policy \"d\"\n"
      "hit first\n"
      "tool idempotent=false idempotency_keys=false cost=1 arguments=[] verify=\"\" fallback=\"\"\n"
      "limits attempts=2 repairs=1 retry_after_max=60000ms deadline=none min_delay=50ms cost=none "
      "repeats=3 try_timeout=none on_exhausted=stop on_open=stop\n"
      "backoff exponential base=250ms factor=2 max=20000ms jitter=full\n"
      "strategy direct 11x3x3 = 99 entries\n"
      "columns\n"
      "  c0 code: TRANSIENT RATE_LIMITED TIMEOUT VALIDATION PERMISSION NOT_FOUND CONFLICT "
      "QUOTA_EXCEEDED CONTEXT_OVERFLOW UNKNOWN absent\n"
      "  c1 retryable: false true absent\n"
      "  c2 attempt: [-inf,2) [2,3) [3,+inf)\n"
      "rows\n"
      "  r0 a "
      "code={TRANSIENT,RATE_LIMITED,TIMEOUT,VALIDATION,NOT_FOUND,CONFLICT,QUOTA_EXCEEDED,CONTEXT_"
      "OVERFLOW,UNKNOWN,absent} retryable={false,absent} -> degrade  @d.recourse:3:3\n"
      "  r1 b attempt={[-inf,2),[3,+inf)} -> stop  @d.recourse:4:3\n"
      "  r2 default * -> stop  @d.recourse:5:3\n");
}

TEST_CASE("compile: guard rows precede each retry term, in precedence order", "[compile]") {
  const auto p = test::policy(
      "policy \"g\" {\n  rule r when retryable -> retry\n  default -> stop\n}\n", "g.recourse");
  CHECK(
      p.dump() ==
      "policy \"g\"\n"
      "hit first\n"
      "tool idempotent=false idempotency_keys=false cost=1 arguments=[] verify=\"\" fallback=\"\"\n"
      "limits attempts=3 repairs=1 retry_after_max=60000ms deadline=none min_delay=50ms cost=none "
      "repeats=3 try_timeout=none on_exhausted=stop on_open=stop\n"
      "backoff exponential base=250ms factor=2 max=20000ms jitter=full\n"
      "strategy direct 3x3x2x3x2x2x2x3 = 1296 entries\n"
      "columns\n"
      "  c0 retryable: false true absent\n"
      "  c1 retry_after: [-inf,60001) [60001,+inf) absent\n"
      "  c2 idempotent: false true\n"
      "  c3 side_effect: none unknown committed\n"
      "  c4 repeats: [-inf,3) [3,+inf)\n"
      "  c5 attempts_left: [-inf,1) [1,+inf)\n"
      "  c6 time_left: [-inf,1) [1,+inf)\n"
      "  c7 deadline_slack: [-inf,0) [0,+inf) absent\n"
      "rows\n"
      "  r0 gate:committed retryable={true} side_effect={committed} -> stop \"side effect "
      "already committed\"  @g.recourse:2:3\n"
      "  r1 gate:unknown_outcome retryable={true} idempotent={false} side_effect={unknown} -> "
      "escalate \"outcome unknown; verify before resending\"  @g.recourse:2:3\n"
      "  r2 budget:retry_after retryable={true} retry_after={[60001,+inf)} -> stop \"server "
      "asked to wait longer than retry_after_max\"  @g.recourse:2:3\n"
      "  r3 budget:attempts retryable={true} attempts_left={[-inf,1)} -> stop \"attempt budget "
      "spent\"  @g.recourse:2:3\n"
      "  r4 budget:deadline retryable={true} time_left={[-inf,1)} -> stop \"operation deadline "
      "passed\"  @g.recourse:2:3\n"
      "  r5 budget:deadline retryable={true} deadline_slack={[-inf,0)} -> stop \"server asked to "
      "wait beyond the deadline\"  @g.recourse:2:3\n"
      "  r6 budget:repeats retryable={true} repeats={[3,+inf)} -> stop \"the same call failed "
      "the same way too often; change approach\"  @g.recourse:2:3\n"
      "  r7 r retryable={true} -> retry  @g.recourse:2:3\n"
      "  r8 default * -> stop  @g.recourse:3:3\n");
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
  rule r when retryable -> retry
  default -> stop
})");
  const std::string dump = p.dump();
  CHECK_THAT(dump, Catch::Contains(
                       "gate:unknown_outcome retryable={true} idempotent={false} "
                       "side_effect={unknown} idempotency_key={none} -> replace \"k.lookup\""));
  CHECK_THAT(dump, Catch::Contains("budget:cost retryable={true} cost_left={[-inf,2)} -> replace "
                                   "\"k.other\" \"cost budget spent\""));
  CHECK_THAT(
      dump,
      Catch::Contains(
          "budget:retry_tokens retryable={true} retry_throttled={true} -> replace \"k.other\""));
  CHECK_THAT(dump, Catch::Contains("circuit:open retryable={true} circuit={open} -> degrade "
                                   "\"circuit open for this tool\""));
  // Precedence: gates, Retry-After cap, budgets, circuit.
  CHECK(dump.find("gate:committed") < dump.find("budget:retry_after"));
  CHECK(dump.find("budget:retry_after") < dump.find("budget:attempts"));
  CHECK(dump.find("budget:retry_tokens") < dump.find("circuit:open"));
  CHECK(dump.find("circuit:open") < dump.find(" r retryable={true} -> retry"));
}

TEST_CASE("compile: the hash names the table, not the formatting", "[compile]") {
  const auto a = test::policy("policy \"h\" { rule r when retryable -> retry default -> stop }");
  const auto b = test::policy(
      "# comment\npolicy \"h\" {\n  rule r when retryable\n    -> retry\n  default -> stop\n}\n");
  const auto c = test::policy("policy \"h\" { rule r when retryable -> escalate default -> stop }");
  CHECK(a.hash() == b.hash());
  CHECK(a.hash() != c.hash());
  CHECK(a.hash().size() == 7 + 64);
}

TEST_CASE("compile: every setting that changes a decision changes the hash", "[compile]") {
  const std::string base =
      "policy \"h\" { %s rule r when retryable -> retry default -> degrade \"a\" }";
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
  // A reason that looks like two strings is not a target and a reason.
  CHECK(hash_of("", "degrade \"a\\\" \\\"b\"") != hash_of("", "degrade \"a\" \"b\""));
}
