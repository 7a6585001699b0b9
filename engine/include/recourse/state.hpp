// Budget state: what decide() needs to know about earlier calls, kept outside the policy.
//
// decide() itself is pure: everything stateful reaches it through the Context. These two objects
// keep that state and fill the Context from it:
//  - Workflow: per workflow (one agent loop; not thread-safe). Per operation it counts attempts,
//    repairs, consecutive identical failures (repeats), cost units and the time since the first
//    call, so a policy's budgets see the whole operation.
//  - Health: per process, shared by workflows and thread-safe. Per tool, a circuit breaker
//    (consecutive failures or a failure ratio over a window; open for a cooldown; then one
//    half-open probe) and a retry token bucket with gRFC A6 arithmetic.
// Time is always a parameter (now_ms, ms since the epoch), never read from a clock, so a replay
// gives the same decisions. Both serialise to JSON and restore.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "recourse/policy.hpp"

namespace recourse {

/// Counters of one operation (a logical call, retried or repaired until it ends).
struct OperationState {
  std::int64_t attempts = 0;       ///< calls made, the first included
  std::int64_t repairs = 0;        ///< calls made after a repair decision
  std::int64_t repeats = 0;        ///< consecutive identical failures, the last included
  std::int64_t cost = 0;           ///< cost units charged
  std::int64_t started_ms = 0;     ///< now_ms of the first call
  std::uint64_t last_failure = 0;  ///< hash of (tool, code, field, args hash) of the last failure
  bool repair_pending = false;     ///< the last decision was a repair
};

/// Per-workflow budget state. Not thread-safe: one workflow is one loop.
class Workflow {
 public:
  /// Records a call of `context.operation_id` (made now): counts the attempt (a repair when the
  /// previous decision said repair), charges `cost` units, starts the clock at the first call.
  void record_attempt(const Context& context, std::int64_t cost, std::int64_t now_ms);
  /// Records that the call failed with `envelope`. repeats grows when the failure matches the
  /// previous one (same tool, code and field, and the same Context::args_hash the host computes
  /// over the call's arguments), else restarts at 1.
  void record_failure(const Context& context, const Envelope& envelope);
  /// Records the decision taken on the failure (a repair makes the next call a repaired one).
  void record_decision(const Context& context, const Decision& decision);
  /// Records that the operation succeeded: its counters are dropped.
  void record_success(const Context& context);
  /// Raises `context`'s counters to the operation's: attempt, repairs, repeats, cost_spent and
  /// elapsed_ms (now_ms - first call). A count the host already gave higher is kept (it may have
  /// counted calls this workflow never saw). An operation never recorded changes nothing.
  void apply(Context& context, std::int64_t now_ms) const;
  /// The counters of an operation, if recorded.
  const OperationState* find(std::string_view operation_id) const;

  /// {"operations": {id: {attempts, repairs, repeats, cost, startedMs, lastFailure,
  /// repairPending}}}
  std::string to_json() const;
  /// Restores from to_json()'s form; false (and `error`) on malformed input, leaving *this as is.
  bool from_json(std::string_view json, std::string& error);

 private:
  std::map<std::string, OperationState, std::less<>> operations_;
};

/// One tool's health: breaker and retry tokens.
struct ToolHealth {
  CircuitState circuit = CircuitState::Closed;
  std::int64_t consecutive_failures = 0;
  std::uint64_t window = 0;       ///< the last outcomes, newest in bit 0 (1 = failure)
  std::int64_t window_calls = 0;  ///< outcomes in `window` (at most the breaker's window)
  std::int64_t opened_ms = 0;     ///< when the circuit last opened
  bool probe_taken = false;       ///< half-open: the one probe is out
  std::string probe_operation;    ///< half-open: the operation whose next call is the probe
  /// Retry tokens x 1000 (integers, as a shared store keeps them); -1: full.
  std::int64_t milli_tokens = -1;
};

/// Per-process tool health, shared between threads (a mutex; never on the decide() path).
class Health {
 public:
  /// Records that a call of context.tool failed. A closed circuit counts it and may open; the
  /// failure of the half-open probe (a call of the operation that took it) reopens the circuit
  /// for another cooldown; other failures while open change nothing (they were in flight).
  void record_failure(const Policy& policy, const Context& context, std::int64_t now_ms);
  /// Fills context.circuit and context.retry_throttled for the decision about the next call.
  /// When an open circuit's cooldown has passed, the first caller takes the one half-open probe
  /// (its context says half_open; others still see open until the probe's outcome is recorded).
  void prepare(const Policy& policy, Context& context, std::int64_t now_ms);
  /// Records the decision taken: a retry costs one retry token (gRFC A6's bucket, with tokens
  /// following the decided route, never the envelope's `retryable`).
  void record_decision(const Policy& policy, const Context& context, const Decision& decision);
  /// Records a success: gives token_ratio tokens back (up to max_tokens) and closes the circuit.
  void record_success(const Policy& policy, const Context& context, std::int64_t now_ms);
  /// A copy of one tool's health (default when never recorded).
  ToolHealth get(std::string_view tool) const;

  /// {"tools": {name: {circuit, consecutiveFailures, window, windowCalls, openedMs, probeTaken,
  /// probeOperation, milliTokens}}}
  std::string to_json() const;
  /// Restores from to_json()'s form; false (and `error`) on malformed input, leaving *this as is.
  bool from_json(std::string_view json, std::string& error);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, ToolHealth, std::less<>> tools_;
};

}  // namespace recourse
