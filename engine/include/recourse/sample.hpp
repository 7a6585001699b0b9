// Inputs spread over a policy's input domain, for benchmarks (`recourse bench`) and smoke tests.
#pragma once

#include <cstdint>
#include <vector>

#include "recourse/envelope.hpp"
#include "recourse/policy.hpp"

namespace recourse {

/// One input of a decision.
struct Sample {
  Envelope envelope;
  Context context;  ///< its tool is the policy's name
};

/// Up to `n` inputs drawn from `seed` across the compiled table: each picks a row, then one cell
/// of every column in the part of that row no earlier row takes, and realizes that cell combination
/// as a concrete envelope and context (as the analysis prints counterexamples). Combinations no
/// concrete input reaches (derived attributes) are skipped, so fewer than `n` may come back, never
/// none: an empty envelope is the fallback. Same (policy, n, seed), same inputs. Never throws but
/// on std::bad_alloc.
std::vector<Sample> sample_inputs(const Policy& policy, std::size_t n, std::uint64_t seed);

}  // namespace recourse
