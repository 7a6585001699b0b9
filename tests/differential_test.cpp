// Differential test: the compiled decision table and the reference interpreter agree on
// generated inputs, for every bundled policy (at least 100,000 inputs each).
//
// Inputs are drawn around the table's own cut points: the generator reads the policy's dump
// (its columns list the numeric cuts, string constants and codes), so every elementary
// interval and its edges are hit, not only random values far from any boundary.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "eval/backoff.hpp"
#include "recourse/tooling.hpp"
#include "support.hpp"

namespace {

struct Pools {
  std::vector<std::int64_t> numbers;
  std::vector<std::string> strings;
  std::vector<std::string> codes;
};

Pools pools_from_dump(const std::string& dump) {
  Pools p;
  std::set<std::int64_t> numbers = {0,  1,    2,      3,
                                    50, 1000, 120000, std::numeric_limits<std::int64_t>::max()};
  std::set<std::string> strings = {"amount", "currency", "to", "path", "x", "t-1"};
  std::set<std::string> codes = {"TRANSIENT",        "RATE_LIMITED", "TIMEOUT",  "VALIDATION",
                                 "PERMISSION",       "NOT_FOUND",    "CONFLICT", "QUOTA_EXCEEDED",
                                 "CONTEXT_OVERFLOW", "UNKNOWN",      "PENDING",  "WEIRD",
                                 "transient"};
  std::istringstream in(dump);
  std::string line;
  const std::regex cut(R"(\[(-?\d+|-inf),(-?\d+|\+inf)\))"), quoted("\"([^\"]*)\"");
  bool in_columns = false;
  while (std::getline(in, line)) {
    if (line == "columns") in_columns = true;
    if (line == "rows") in_columns = false;
    if (!in_columns) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), cut), end; it != end; ++it)
      for (int g = 1; g <= 2; ++g)
        if (std::isdigit(static_cast<unsigned char>((*it)[g].str().back()))) {
          const std::int64_t c = std::stoll((*it)[g].str());
          for (std::int64_t d = -1; d <= 1; ++d) numbers.insert(c + d);
        }
    for (std::sregex_iterator it(line.begin(), line.end(), quoted), end; it != end; ++it)
      strings.insert((*it)[1]);
    if (line.rfind("  c", 0) == 0 && line.find(" code:") != std::string::npos) {
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;)
        if (w != "absent") codes.insert(w);
    }
  }
  p.numbers.assign(numbers.begin(), numbers.end());
  p.strings.assign(strings.begin(), strings.end());
  p.codes.assign(codes.begin(), codes.end());
  return p;
}

struct Gen {
  std::uint64_t state;
  std::uint64_t next() { return recourse::detail::splitmix64(state++); }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  bool coin() { return next() & 1; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }
  std::int64_t number(const Pools& p) {
    return below(4) == 0 ? static_cast<std::int64_t>(below(200000)) : pick(p.numbers);
  }
};

void agree(const recourse::Policy& policy, std::size_t inputs) {
  const Pools pools = pools_from_dump(policy.dump());
  Gen g{recourse::detail::fnv1a(policy.name())};
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < inputs; ++i) {
    recourse::Envelope e;
    recourse::Context c;
    if (g.below(8)) e.code = g.pick(pools.codes);
    if (g.below(3)) e.retryable = g.coin();
    if (g.coin()) e.field = g.pick(pools.strings);
    if (g.coin()) e.suggestion = g.pick(pools.strings);
    if (g.coin()) e.retry_after_ms = std::max<std::int64_t>(0, g.number(pools));
    if (g.coin()) e.trace_id = g.pick(pools.strings);
    c.tool = std::string(policy.name());
    if (g.below(3)) c.idempotent = g.coin();
    if (g.below(4)) c.side_effect = static_cast<recourse::SideEffect>(g.below(3));
    c.attempt = 1 + static_cast<std::int64_t>(g.below(12));
    c.repairs = static_cast<std::int64_t>(g.below(5));
    c.elapsed_ms = std::max<std::int64_t>(0, g.number(pools));
    if (g.coin()) c.max_attempts = 1 + static_cast<std::int64_t>(g.below(12));
    if (g.coin())  // around the time spent, one ms either side; elapsed may be INT64_MAX
      c.deadline_ms = std::max<std::int64_t>(
          0, g.coin() ? g.number(pools)
                      : std::min(c.elapsed_ms, std::numeric_limits<std::int64_t>::max() - 1) - 1 +
                            g.number(pools) % 3);
    if (g.coin()) {
      std::vector<std::string> args;
      for (std::size_t k = g.below(4); k > 0; --k) args.push_back(g.pick(pools.strings));
      c.arguments = args;
    }
    if (g.coin()) c.operation_id = "op-" + std::to_string(g.below(100));
    const auto table = policy.decide(e, c);
    const auto reference = recourse::interpret(policy, e, c);
    const bool same =
        table.route == reference.route && table.rule == reference.rule &&
        table.reason == reference.reason && table.target == reference.target &&
        table.exhausted == reference.exhausted && table.delay_ms == reference.delay_ms &&
        table.attempts.before == reference.attempts.before &&
        table.warnings == reference.warnings && table.cost.after == reference.cost.after &&
        table.time_ms.after == reference.time_ms.after && table.timeout_ms == reference.timeout_ms;
    if (!same && ++mismatches <= 5) {
      INFO("policy " << policy.name() << " input " << i << ": table " << recourse::to_json(table, e)
                     << "\nreference " << recourse::to_json(reference, e));
      CHECK(same);
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("differential: compiled table == reference interpreter on every bundled policy",
          "[differential]") {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  for (const char* d : {"rules", "tests/cases"})
    if (fs::exists(test::source_dir() + "/" + d)) dirs.push_back(test::source_dir() + "/" + d);
  std::size_t policies = 0;
  for (const auto& dir : dirs) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.path().extension() != ".recourse") continue;
      auto r = recourse::compile_paths({entry.path().string()});
      INFO(entry.path().string());
      REQUIRE(r.ok());
      for (const auto& p : r->policies()) {
        agree(p, 100000);
        ++policies;
      }
    }
  }
  CHECK(policies >= 6);
}

TEST_CASE("differential: nested and negated conditions, many columns", "[differential]") {
  const auto p = test::policy(R"(policy "mix" {
    tool { arguments = [a, b] idempotency_keys = true verify = "v" fallback = "f" cost = 3 }
    limits { attempts = 5 repairs = 2 retry_after_max = 30s deadline = 1m cost = 12 repeats = 2 on_open = degrade }
    throttle { max_tokens = 4 token_ratio = 0.5 }
    breaker { failures = 2 }
    codes { X }
    rule r1 when not (code in [TRANSIENT, X] or (retryable and retry_after > 5s)) and side_effect != committed and not code == CONTEXT_OVERFLOW -> retry
    rule r2 when (field in arguments or field == "c") and not suggestion is absent and attempt < 3 -> repair
    rule r3 when not (not trace_id is present and (elapsed >= 10s or attempts_left <= 1)) -> degrade "d"
    rule r4 when time_left < 20s or repairs > 1 or tool != "mix" -> escalate
    rule r5 when circuit == half_open and idempotency_key == pinned and not retry_throttled and code != CONTEXT_OVERFLOW -> retry
    rule r6 when cost_left >= 6 and repeats < 2 -> repair
    default -> stop })");
  agree(p, 200000);
}

TEST_CASE("differential: hit safest, table == interpreter", "[differential]") {
  const auto p = test::policy(R"(policy "safe" {
    hit safest
    tool { arguments = [a] }
    rule r1 when code in [TRANSIENT, RATE_LIMITED] and retryable -> retry
    rule r2 when field in arguments and suggestion -> repair
    rule r3 when attempt >= 3 or side_effect == committed -> stop
    rule r4 when code == PERMISSION or retry_after > 10s -> escalate
    rule r5 when code == NOT_FOUND -> replace "x"
    rule r6 when code is absent -> degrade
    default -> stop })");
  agree(p, 100000);
}

TEST_CASE("differential: the direct table and the bitset matcher agree, with one policy hash",
          "[differential]") {
  // The direct table is indexed by classes of cells (cells the same rows accept); the bitset
  // matcher reads every cell. Both must pick the same row for every input, and the hash must not
  // depend on which one the compiler chose.
  namespace fs = std::filesystem;
  recourse::CompileOptions bitset_only;
  bitset_only.direct_table_max_entries = 0;
  std::size_t direct = 0;
  for (const auto& entry : fs::recursive_directory_iterator(test::source_dir() + "/rules")) {
    if (entry.path().extension() != ".recourse") continue;
    INFO(entry.path().string());
    auto a = recourse::compile_paths({entry.path().string()});
    auto b = recourse::compile_paths({entry.path().string()}, bitset_only);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    for (std::size_t i = 0; i < a->policies().size(); ++i) {
      const recourse::Policy& x = a->policies()[i];
      const recourse::Policy& y = b->policies()[i];
      CHECK_THAT(y.dump(), Catch::Contains("strategy bitset"));
      if (x.dump().find("strategy direct") == std::string::npos) continue;
      ++direct;
      CHECK(x.hash() == y.hash());
      for (const auto& s : recourse::sample_inputs(x, 2000, 7)) {
        const auto dx = x.decide(s.envelope, s.context);
        const auto dy = y.decide(s.envelope, s.context);
        CHECK(recourse::to_json(dx, s.envelope) == recourse::to_json(dy, s.envelope));
      }
    }
  }
  CHECK(direct >= 6);
}
