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

/// An input of the peer bench's policy (bench/peer/policy.mjs): code is an index into its eight
/// codes, side_effect 0..2, attempt and max_attempts 1..10.
struct PeerPlain {
  std::uint8_t code, retryable, idempotent, side_effect, has_field, has_suggestion, attempt,
      max_attempts;
};

/// The peer bench's reference if-chain (policy.mjs route(), cpp/bench.cpp route_if()).
Route peer_if_chain(const PeerPlain& input) noexcept;

/// The peer bench's direct lookup: 768 entries over the whole domain, attempt >= maxAttempts as
/// one bit (cpp/bench.cpp lut), filled from the if-chain.
class PeerLookup {
 public:
  PeerLookup();
  Route route(const PeerPlain& e) const noexcept { return static_cast<Route>(routes_[index(e)]); }

 private:
  static unsigned index(const PeerPlain& e) noexcept {
    unsigned i = e.code;
    i = i * 2 + e.retryable;
    i = i * 2 + e.idempotent;
    i = i * 3 + e.side_effect;
    i = i * 2 + e.has_field;
    i = i * 2 + e.has_suggestion;
    return i * 2 + (e.attempt >= e.max_attempts);
  }
  std::uint8_t routes_[8 * 2 * 2 * 3 * 2 * 2 * 2] = {};
};

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
  std::vector<PeerPlain> peer;  ///< the peer case: the same inputs as the peer bench's structs
  PeerLookup peer_lookup;
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

/// The peer bench's 10-rule policy (bench/peer/recourse/peer.recourse) on inputs drawn
/// uniformly over its domain, with the peer bench's if-chain and direct lookup.
const Case& peer_case();

/// The seed's nextAction() written by hand over the same envelope and context, with the guards
/// the policy's retry and repair take (gates, Retry-After, attempts, repairs).
Route seed_if_chain(const Envelope& envelope, const Context& context) noexcept;

/// What a host acting on the seed policy by hand needs from a decision: the route, the rule or
/// guard that chose it and its reason, the delay with its jitter, and the budgets before and
/// after the call it leads to.
struct SeedDecision {
  Route route = Route::Stop;
  const char* rule = "default";
  const char* reason = "";
  std::int64_t delay_ms = 0, jitter_ms = 0;
  std::int64_t attempts_left = 0, attempts_after = 0;
  std::int64_t repairs_left = 0, repairs_after = 0;
};

/// seed_if_chain() and the rest of a full decision written by hand: guard names and reasons,
/// exponential backoff (250 ms doubling, capped at 20 s) with full jitter from the same keyed
/// hash as the engine's (docs/language.md, backoff), the 50 ms floor and the server's
/// Retry-After, and the attempt and repair budgets. The baseline for the full decide().
SeedDecision seed_full_chain(const Envelope& envelope, const Context& context) noexcept;

/// The .recourse files of rules/examples, by file name.
std::vector<std::string> example_files();
/// The repository's root (for rules/).
std::string source_dir();

}  // namespace recourse::bench
