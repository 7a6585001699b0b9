// What the benchmarks run on: a compiled policy, inputs already read, and the baselines that
// decide the same inputs without the engine. Each case checks, once, that the engine and its
// baselines agree on every input; a disagreement is counted and fails the benchmark run.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "generate.hpp"
#include "recourse/recourse.hpp"

namespace recourse::bench {

/// Disagreements found by every case so far; main() exits 1 when any.
extern std::atomic<int> g_disagreements;

/// One policy to benchmark.
struct Case {
  std::string name;
  Bundle bundle;
  const Policy* policy = nullptr;
  std::vector<Envelope> envelopes;  ///< inputs, already read
  std::vector<Context> contexts;
  std::vector<Plain> plain;  ///< generated cases: the same inputs as plain values
  GenPolicy gen;             ///< generated cases: the rules
  std::unique_ptr<DirectLookup> lookup;
};

/// Number of inputs each case cycles through.
inline constexpr std::size_t kInputs = 4096;

/// The seed's four-route policy (rules/bench/actionable.recourse), on inputs that vary code,
/// retryable, field, suggestion, side effect, attempt and repairs.
const Case& seed_case();
/// A policy of rules/examples by file name, on generated inputs with its tool name.
const Case& example_case(const std::string& file);
/// A generated policy of `rules` rules (seed 8), with its if-chain and lookup baselines.
const Case& generated_case(std::size_t rules);

/// The seed's nextAction() written by hand over the same envelope and context, with the guards
/// the policy's retry and repair take (gates, Retry-After, attempts, repairs).
Route seed_if_chain(const Envelope& envelope, const Context& context) noexcept;

/// The .recourse files of rules/examples, by file name.
std::vector<std::string> example_files();
/// The repository's root (for rules/).
std::string source_dir();

}  // namespace recourse::bench
