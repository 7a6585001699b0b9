// Generated policies for the benchmarks, and the two baselines that decide the same rules
// without the engine: a chain of compares over plain values (what a hand-written if-chain of
// these rules compiles to) and a direct-indexed lookup over the whole input domain.
//
// A generated rule tests 2 to 4 distinct attributes, each against constants drawn from a small
// set (codes, booleans, side effects, `attempt` and `repeats` thresholds, `retry_after`
// thresholds in ms, field names, circuit states). Retry rules always name retry-safe codes (so
// the policy keeps the built-in invariants) and every route that leads to another call passes
// the engine's guards (gates, then the attempt, repair and Retry-After budgets), which the
// baselines apply too. Same (rules, seed), same policy text and inputs, on every machine.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "recourse/recourse.hpp"

namespace recourse::bench {

/// The attributes a generated rule tests; each is one dimension of the plain domain.
enum class GenAttr : std::uint8_t {
  Code,        ///< 0..10 built-in codes, 11 absent
  Retryable,   ///< 0 false, 1 true, 2 absent
  SideEffect,  ///< 0 none, 1 unknown, 2 committed
  Idempotent,  ///< 0 false, 1 true
  Attempt,     ///< attempt - 1, attempt in 1..6
  RetryAfter,  ///< index into kRetryAfterMs; 0 absent
  Field,       ///< 0 absent, then kFields
  Circuit,     ///< 0 closed, 1 open, 2 half_open
  Repeats,     ///< 0..3
  kCount
};
inline constexpr std::size_t kGenAttrs = static_cast<std::size_t>(GenAttr::kCount);

/// How many values each dimension of the plain domain has.
inline constexpr std::array<std::uint8_t, kGenAttrs> kDomain = {12, 3, 3, 2, 6, 5, 6, 3, 4};
/// retry_after values of the domain, ms (index 0 is absent).
inline constexpr std::array<std::int64_t, 5> kRetryAfterMs = {-1, 0, 2000, 10000, 60000};
/// field values of the domain (index 0 is absent); the tool's arguments are the first three.
inline constexpr std::array<const char*, 6> kFields = {"",     "amount", "currency",
                                                       "date", "query",  "other"};

/// One input as plain values, one per dimension (see GenAttr).
using Plain = std::array<std::uint8_t, kGenAttrs>;

/// One test: the attribute's plain value lies in [lo, hi] (codes: one of `codes`).
struct GenTest {
  GenAttr attr = GenAttr::Code;
  std::uint8_t lo = 0, hi = 0;
  std::uint16_t codes = 0;  ///< Code: bit per built-in code
};

struct GenRule {
  std::vector<GenTest> tests;  ///< all must hold
  Route route = Route::Stop;
};

/// A generated policy: its source and the rules it was generated from.
struct GenPolicy {
  std::string text;
  std::vector<GenRule> rules;
};

/// `rules` rules (plus the default) from `seed`, as the policy "gen".
GenPolicy generate(std::size_t rules, std::uint64_t seed);

/// `n` plain inputs drawn uniformly across the domain from `seed`.
std::vector<Plain> draw_inputs(std::size_t n, std::uint64_t seed);

/// The envelope and context of a plain input (traceId and operationId set).
void to_engine(const Plain& plain, Envelope& envelope, Context& context);

/// The route of the if-chain baseline: the first rule whose tests all hold, then the guards of
/// a retry or repair (gate:committed, gate:unknown_outcome, budget:retry_after at 60 s,
/// budget:attempts at 10, budget:repairs at 1). `rule` is the rule index (rules.size() for the
/// default).
Route if_chain(const GenPolicy& policy, const Plain& input, std::size_t& rule) noexcept;

/// The direct-indexed baseline: the if-chain's route for every point of the plain domain.
class DirectLookup {
 public:
  explicit DirectLookup(const GenPolicy& policy);
  Route route(const Plain& input) const noexcept {
    std::size_t index = 0;
    for (std::size_t a = 0; a < kGenAttrs; ++a) index = index * kDomain[a] + input[a];
    return static_cast<Route>(routes_[index]);
  }
  std::size_t bytes() const noexcept { return routes_.size(); }

 private:
  std::vector<std::uint8_t> routes_;
};

}  // namespace recourse::bench
