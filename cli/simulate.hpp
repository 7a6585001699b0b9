// `recourse simulate`: the seed's 12,000-operation benchmark (000_fee13e691e1c696a), run through
// the real engine, and its extension to hostile servers and non-idempotent tools.
//
// A run is a workflow of `ops` operations against `tools` simulated tools. Each operation's first
// call fails or not, fails in one of four classes, and every recovery call succeeds or not, by
// rolls of the simulator's own counter-based generator: splitmix64 over (seed, run, op, step,
// lane), never the standard library's. Every strategy sees the same operations and the same rolls
// (common random numbers); what differs is the envelope the tool returns (generic, code or full)
// and the controller that routes it: a .recourse policy deciding through Bundle::decide() with a
// recourse::Workflow keeping its budgets, or a built-in naive controller (a baseline no policy
// can express). docs/simulate.md states the model, the flags and the metrics.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "recourse/recourse.hpp"

namespace CLI {
class App;
}

namespace recourse::sim {

/// The seed's four failure classes, in the order of --mix.
enum class Failure : std::uint8_t { Transient, Validation, Permission, NotFound };
inline constexpr std::array<const char*, 4> kFailureCodes = {"TRANSIENT", "VALIDATION",
                                                             "PERMISSION", "NOT_FOUND"};

/// What the simulated tool puts in its error envelope.
enum class EnvelopeKind : std::uint8_t {
  Generic,  ///< message (and traceId) only: "Something went wrong"
  Code,     ///< code, message, retryable, traceId
  Full      ///< code, message, retryable, field, suggestion, retryAfterMs, traceId
};
const char* to_string(EnvelopeKind kind) noexcept;

/// Who routes a failure.
enum class Controller : std::uint8_t {
  Policy,    ///< a compiled .recourse bundle, through Bundle::decide()
  RetryAll,  ///< naive: retry every failure, up to --naive-retries times
  Retryable  ///< naive: retry whenever the envelope says retryable, up to --naive-retries times
};

/// The scenario: every assumption of the model, as flags. Defaults are the seed's.
struct Scenario {
  std::uint64_t seed = 1;
  std::int64_t runs = 60;
  std::int64_t ops = 200;
  std::int64_t tools = 10;  ///< simulated tools per run (hostile traits are per tool)
  double failure_rate = 0.4;
  std::array<double, 4> mix{1, 1, 1,
                            1};       ///< weights of TRANSIENT, VALIDATION, PERMISSION, NOT_FOUND
  double transient_success = 0.7;     ///< a new call after a transient failure succeeds
  double repair_code = 0.45;          ///< a repair guided by the code alone succeeds
  double repair_hint = 0.9;           ///< a repair guided by a real field and a suggestion succeeds
  std::int64_t recoveries = 1;        ///< recovery calls (retries, repairs) per operation at most
  std::int64_t deadline_ms = 300000;  ///< calls started later than this after the first are late
  std::int64_t naive_retries = 3;     ///< the naive controllers' own retry cap
  // Hostile servers: the fraction of tools with each trait.
  double all_retryable = 0;       ///< mark every error retryable
  double mismatched = 0;          ///< retryable contradicts the code
  double absurd_retry_after = 0;  ///< transient errors ask for a 30-day Retry-After
  double no_trace_id = 0;         ///< omit traceId
  double bogus_field = 0;         ///< validation errors name a field the tool does not have
  // Side effects.
  double non_idempotent = 0;  ///< fraction of tools whose calls are not idempotent
  double timeouts = 0;        ///< share of transient failures that are timeouts (outcome unknown)
  double timeout_applied = 0.5;  ///< a timed-out call was in fact applied

  /// True when every modelling assumption is the seed's (runs, ops, seed and tools aside).
  bool is_seed() const noexcept;
};

/// The `hostile` preset: the seed's scenario with every hostile trait, non-idempotent tools with
/// timeouts, and three recovery attempts.
Scenario hostile_preset();

/// One strategy: an envelope kind and a controller.
struct Strategy {
  std::string name;    ///< the policy file's stem, or the built-in's name
  std::string source;  ///< the path, or "@retry-all" / "@retryable"
  EnvelopeKind envelope = EnvelopeKind::Full;
  Controller controller = Controller::Policy;
  std::optional<Bundle> bundle;  ///< with Controller::Policy
  std::shared_ptr<Store> store;  ///< --state: where the workflows count (null: in memory)
  std::string scope;             ///< with a store: the prefix of this strategy's operation keys
};

/// Parses "[generic:|code:|full:]PATH" or "[KIND:]@retry-all" / "@retryable" (the bundle is
/// loaded by the caller). Without a prefix a policy's envelope comes from its file name:
/// generic* -> generic, code* -> code, anything else -> full; the built-ins default to full.
std::optional<Strategy> parse_strategy(const std::string& spec, std::string& error);

/// What one strategy did, summed over every operation.
struct Metrics {
  std::int64_t operations = 0;
  std::int64_t resolved = 0;  ///< ended with a successful call (or a verified effect)
  std::int64_t attempts = 0;  ///< calls of the tool: first calls + retries + repairs
  std::int64_t retries = 0, repairs = 0;
  std::int64_t failed_retries = 0;     ///< retries and repairs that failed
  std::int64_t permanent_retries = 0;  ///< retries and repairs of PERMISSION / NOT_FOUND failures
  std::int64_t wasted = 0;             ///< recovery calls that could not succeed
  std::int64_t violations = 0;     ///< recovery calls of a non-idempotent tool after an unknown or
                                   ///< committed side effect
  std::int64_t duplicates = 0;     ///< violations where the earlier call had in fact been applied
  std::int64_t verifications = 0;  ///< verify calls after an unknown outcome (route replace)
  std::int64_t late = 0;           ///< recovery calls started past the scenario's deadline
  std::int64_t horizon = 0;        ///< retries/repairs the scenario's recovery cap refused
  std::array<std::int64_t, 4> failures{};        ///< first-call failures by class
  std::array<std::int64_t, 4> resolved_after{};  ///< resolved operations by first failure class
  std::map<std::string, std::int64_t> routes;    ///< every decision, by route
  std::map<std::string, std::int64_t> rules;     ///< policy decisions, by rule
  std::map<std::string, std::int64_t> warnings;  ///< policy decision warnings, by kind
  std::uint64_t operations_digest = 0;  ///< hash of each operation's tool and first-call outcome

  double resolution() const noexcept;
  double attempts_per_op() const noexcept;
};

/// The generator: a uniform double in [0, 1) for (seed, run, op, step, lane).
double roll(std::uint64_t seed, std::uint64_t run, std::uint64_t op, std::uint64_t step,
            std::uint64_t lane) noexcept;

/// Runs every operation of the scenario under one strategy.
Metrics simulate(const Scenario& scenario, const Strategy& strategy);

/// A row of the seed's published table.
struct Published {
  const char* label;
  double resolution;  ///< fraction
  double attempts_per_op;
  std::int64_t failed_retries;
  std::int64_t permanent_retries;
};
/// The seed's row for an envelope kind (generic message, error code only, actionable envelope).
const Published& published(EnvelopeKind kind) noexcept;
inline constexpr std::int64_t kPublishedOperations = 12000;

}  // namespace recourse::sim

namespace recourse::cli {
struct Options;
/// Adds the `simulate` subcommand's own options to `command` (--format comes from main).
void add_simulate_options(CLI::App& command, Options& options);
int run_simulate(const Options& options);
}  // namespace recourse::cli
