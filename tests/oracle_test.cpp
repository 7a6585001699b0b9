// The oracle (tests/oracle.hpp), a model of the whole decision written from docs/language.md,
// against Policy::decide(): every bundled policy (rules/, tests/cases/, examples/,
// bench/peer/, the ```recourse blocks of docs/), policies of the benchmarks' generator, and a
// matrix of backoff kinds, jitters and limits, on inputs drawn around each policy's constants
// (fuzz/fuzz.hpp), some with the deadline placed one ms either side of the retry's delay; and
// bundles, which pick a policy by tool or make the decision themselves.
#include <filesystem>

#include "../bench/generate.cpp"  // the benchmarks' policy generator (not part of the library)
#include "../fuzz/fuzz.hpp"
#include "model/fields.hpp"
#include "oracle.hpp"
#include "support.hpp"

namespace {

namespace fs = std::filesystem;

// Draws `inputs` inputs for `policy` and checks each decision against the oracle; reports the
// first few disagreements. Returns how many there were.
std::size_t agree(const recourse::Policy& policy, std::size_t inputs, const std::string& where,
                  std::int64_t attempt_ceiling = recourse::CompileOptions{}.attempt_ceiling) {
  const auto compiled = fuzz::compiled_of(policy);
  const recourse::detail::PolicySpec& spec = compiled->spec;
  const fuzz::Pools pools = fuzz::pools_of(spec);
  const std::uint64_t seed = recourse::detail::fnv1a(where + "/" + spec.name);
  std::uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<std::uint8_t>(seed >> (8 * i));
  fuzz::Source src(bytes, sizeof bytes);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < inputs; ++i) {
    recourse::Envelope e;
    recourse::Context c;
    fuzz::draw_input(src, pools, spec, e, c);
    if (src.below(8) == 0) c.store_unavailable = true;
    if (src.below(6) == 0) {  // far beyond the attempt budget: the backoff's caps
      static const std::vector<std::int64_t> many = {13, 31, 63, 64, 65, 1000, 1'000'000'000};
      c.attempt = src.pick(many);
    }
    if (src.below(3) == 0) {
      // The deadline one ms either side of what a retry would wait: the check after the lookup.
      const auto backoff = documented::naive::backoff(spec, spec.backoff, c.attempt,
                                                      documented::naive::key_source(e, c));
      // Capped at kMaxMs first: a server's wait may be INT64_MAX, and elapsed + wait must not
      // overflow (UBSan found it).
      const std::int64_t wait =
          std::min(std::max({backoff.delay, spec.min_delay_ms, e.retry_after_ms.value_or(0)}),
                   recourse::detail::kMaxMs);
      c.deadline_ms = std::clamp<std::int64_t>(
          c.elapsed_ms + wait - 1 + static_cast<std::int64_t>(src.below(3)), 0,
          recourse::detail::kMaxMs);
    }
    const std::string diff = documented::differences(
        documented::decide(spec, e, c, attempt_ceiling), policy.decide(e, c));
    if (!diff.empty() && ++mismatches <= 5) {
      INFO(where << ": policy " << spec.name << ", input " << i << "\n"
                 << fuzz::describe(e, c) << "\n"
                 << diff);
      CHECK(diff.empty());
    }
  }
  return mismatches;
}

// Every policy `path` (a file or a directory) compiles to, each checked on `inputs` inputs.
std::size_t agree_on_paths(const std::string& path, std::size_t inputs) {
  auto r = recourse::compile_paths({path});
  INFO(path);
  REQUIRE(r.ok());
  for (const auto& p : r->policies()) CHECK(agree(p, inputs, path) == 0);
  return r->policies().size();
}

// The text of every ```recourse block of a markdown file (each compiles alone: docs_test.cpp).
std::vector<std::string> recourse_blocks(const std::string& markdown) {
  std::vector<std::string> out;
  const std::string open = "```recourse\n";
  for (std::size_t at = markdown.find(open); at != std::string::npos;
       at = markdown.find(open, at)) {
    at += open.size();
    const std::size_t end = markdown.find("\n```", at);
    REQUIRE(end != std::string::npos);
    out.push_back(markdown.substr(at, end - at + 1));
  }
  return out;
}

}  // namespace

TEST_CASE("oracle: every bundled policy decides as docs/language.md says", "[oracle]") {
  std::size_t policies = 0;
  for (const char* dir : {"rules", "tests/cases", "examples", "bench/peer/recourse"})
    for (const auto& entry : fs::recursive_directory_iterator(test::source_dir() + "/" + dir))
      if (entry.path().extension() == ".recourse")
        policies += agree_on_paths(entry.path().string(), 20000);
  CHECK(policies >= 20);
}

TEST_CASE("oracle: the policies of docs/ decide as they say", "[oracle]") {
  std::size_t policies = 0;
  for (const auto& entry : fs::directory_iterator(test::source_dir() + "/docs")) {
    if (entry.path().extension() != ".md") continue;
    const auto blocks = recourse_blocks(test::read_file(entry.path().string()));
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const std::string where = entry.path().filename().string() + " block " + std::to_string(i);
      auto r = recourse::compile({{where, blocks[i]}});
      INFO(where);
      REQUIRE(r.ok());
      for (const auto& p : r->policies()) {
        CHECK(agree(p, 5000, where) == 0);
        ++policies;
      }
    }
  }
  CHECK(policies >= 15);
}

TEST_CASE("oracle: generated benchmark policies decide as documented", "[oracle]") {
  for (std::size_t rules : {10, 100, 1000}) {
    INFO(rules << " rules");
    const auto p = test::policy(recourse::bench::generate(rules, 8).text);
    CHECK(agree(p, rules == 1000 ? 5000 : 20000, "gen" + std::to_string(rules)) == 0);
  }
}

TEST_CASE("oracle: every backoff kind and jitter, limits and hit policies", "[oracle]") {
  const char* backoffs[] = {"constant base 300ms jitter none",
                            "constant base 1s jitter full",
                            "linear base 200ms max 2s jitter equal",
                            "linear base 7ms max 5s jitter decorrelated",
                            "exponential base 100ms factor 1.5 max 30s jitter equal",
                            "exponential base 250ms factor 3 max 4s jitter decorrelated",
                            "exponential base 1ms factor 100 max 1h jitter full",
                            "exponential base 2s jitter none"};
  const char* limits[] = {
      "limits { attempts = 10  deadline = 30s  min_delay = 0ms }",
      "limits { attempts = 4  repairs = 2  repeats = 2  cost = 10  retry_after_max = 20s  "
      "deadline = 1m  try_timeout = 5s  min_delay = 500ms  on_exhausted = escalate  "
      "on_open = degrade }",
      "limits { attempts = 6  cost = 3  on_exhausted = replace }"};
  const char* hits[] = {"first", "safest", "unique"};
  std::size_t n = 0;
  for (const char* backoff : backoffs)
    for (const char* limit : limits) {
      const char* hit = hits[n % 3];
      const std::string text =
          std::string("policy \"matrix.") + std::to_string(n++) + "\" {\n" +
          "  tool { idempotent = false  idempotency_keys = true  cost = 2  " +
          "arguments = [a, b]  verify = \"check\"  fallback = [\"other\", \"second\"] }\n  " +
          limit + "\n  backoff " + backoff +
          "\n  breaker { failures = 2 }\n  throttle { max_tokens = 4 }\n" + "  hit " + hit + "\n" +
          "  rule fix when code == VALIDATION and field in arguments -> repair\n"
          "  rule odd when code == VALIDATION and not field in arguments "
          "-> degrade \"cache\" \"no such argument\"\n"
          "  rule again when code in [TRANSIENT, TIMEOUT, RATE_LIMITED] and "
          "not retry_after > 10s -> retry\n"
          "  rule wait when code == RATE_LIMITED and retry_after > 10s -> "
          "escalate\n"
          "  default -> stop\n}\n";
      INFO(text);
      CHECK(agree(test::policy(text), 10000, "matrix") == 0);
    }
}

TEST_CASE("oracle: a lower attempt ceiling clamps the host's maxAttempts", "[oracle]") {
  recourse::CompileOptions options;
  options.attempt_ceiling = 4;
  auto r = recourse::compile({{"ceiling.recourse", R"(policy "ceiling" {
    limits { attempts = 3  deadline = 10s }
    backoff linear base 100ms jitter equal
    rule again when code in [TRANSIENT, TIMEOUT] -> retry
    default -> stop })"}},
                             options);
  REQUIRE(r.ok());
  CHECK(agree(r->policies().front(), 5000, "ceiling", 4) == 0);
}

TEST_CASE("oracle: a bundle picks the tool's policy, else \"*\", else decides no_policy",
          "[oracle]") {
  const std::string dir = test::source_dir() + "/rules/examples";
  std::vector<std::string> all, without_star;
  for (const auto& entry : fs::directory_iterator(dir)) {
    all.push_back(entry.path().string());
    if (entry.path().filename() != "fallback.recourse") without_star.push_back(all.back());
  }
  for (const auto& paths : {all, without_star}) {
    auto r = recourse::compile_paths(paths);
    REQUIRE(r.ok());
    std::vector<const recourse::detail::PolicySpec*> specs;
    std::vector<const recourse::detail::Compiled*> compiled;
    std::vector<fuzz::Pools> pools;
    for (const auto& p : r->policies()) {
      compiled.push_back(fuzz::compiled_of(p));
      specs.push_back(&compiled.back()->spec);
      pools.push_back(fuzz::pools_of(*specs.back()));
    }
    std::uint8_t bytes[] = {static_cast<std::uint8_t>(paths.size())};
    fuzz::Source src(bytes, sizeof bytes);
    std::size_t mismatches = 0;
    for (int i = 0; i < 20000; ++i) {
      const std::size_t k = src.below(specs.size());
      recourse::Envelope e;
      recourse::Context c;
      fuzz::draw_input(src, pools[k], *specs[k], e, c);
      if (src.below(4) == 0) c.tool = src.coin() ? "no.such.tool" : "*";
      if (src.below(8) == 0) c.store_unavailable = true;
      const bool unreadable = src.below(8) == 0;
      const std::string diff =
          unreadable ? documented::differences(documented::unreadable(specs, c), r->unreadable(c))
                     : documented::differences(documented::decide(specs, e, c), r->decide(e, c));
      if (!diff.empty() && ++mismatches <= 5) {
        INFO((unreadable ? "unreadable envelope\n" : "") << fuzz::describe(e, c) << "\n" << diff);
        CHECK(diff.empty());
      }
    }
    CHECK(mismatches == 0);
  }
}
