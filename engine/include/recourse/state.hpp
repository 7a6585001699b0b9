// Budget state: what decide() needs to know about earlier calls, kept outside the policy.
//
// decide() itself is pure: everything stateful reaches it through the Context. These two objects
// keep that state in a Store (store.hpp; default: a MemoryStore of their own) and fill the
// Context from it:
//  - Workflow: per workflow (one agent loop, one run; not thread-safe). Per operation and tool it
//    counts attempts, repairs, consecutive identical failures (repeats), cost units and the time
//    since the first call, so a policy's budgets see every call of its tool for the operation;
//    per run (every operation) it counts calls, cost units and failures, per tool and in all.
//  - Health: per process, shared by workflows and thread-safe. Per tool (and per endpoint, when
//    the host names the call's target in Context::endpoint), a circuit breaker
//    (consecutive failures or a failure ratio over a window; open for a cooldown; then one
//    half-open probe), a retry token bucket with gRFC A6 arithmetic, and the side-effect ledger's
//    answer when the host gives no side effect.
// A shared store (SQLite, Redis) shares the counters, the retry tokens, the ledger and, for
// policies whose breaker says `scope = shared`, the breaker; other breakers stay in the process
// (`scope = quorum`: each process's breaker votes, and the circuit opens for all while `quorum`
// processes see their own open).
// When the store cannot answer (down, slow, or holding a record that does not read as its
// shape), both fall back to this process's own state, conservatively: counters to what this
// process recorded, retry tokens to a local bucket of HealthOptions::fallback_tokens (default 0:
// no retries) whenever any of the decision's state could not be read, breakers to local ones,
// the ledger to "unknown"; the context then says store_unavailable and the decision carries that
// warning.
// Time is always a parameter (now_ms, ms since the epoch), never read from a clock, so a replay
// gives the same decisions (a Redis store reads its server's clock instead). The local state
// serialises to JSON and restores.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "recourse/policy.hpp"
#include "recourse/store.hpp"

namespace recourse {

/// Per-workflow budget state. Not thread-safe: one workflow is one loop.
///
/// Counters are kept per (operation, tool): the calls of one tool for one operation. A success
/// of one tool drops that tool's counters only, and failures of one tool never count against
/// another's attempts, repairs, repeats or cost, even under the same operation id. The run's
/// counters (the workflow is the run: every operation of it) are kept beside them, per tool and
/// in all: calls, cost units and failed calls, never dropped by a success; the `limits` run
/// budgets read them (docs/language.md section 10). The side-effect ledger (Health, store.hpp)
/// stays per operation: whether a payment happened does not depend on which tool asks.
class Workflow {
 public:
  /// Counters kept in `store` (nullptr: a MemoryStore of its own) under the key
  /// "<scope>/<operation id>/<tool>" ("<operation id>/<tool>" when scope is empty), the
  /// operation id and the tool with '%' and '/' escaped as %25 and %2F so no two (operation,
  /// tool) pairs share a key; mirrored in a local MemoryStore for outages.
  explicit Workflow(std::shared_ptr<Store> store = nullptr, std::string scope = {});
  /// Records a call of `context.tool` for `context.operation_id` (made now): counts the attempt
  /// (a repair when the previous decision on that tool said repair), charges `cost` units,
  /// starts the clock at the first call; counts the call and its cost for the run too.
  void record_attempt(const Context& context, std::int64_t cost, std::int64_t now_ms);
  /// Records that the call failed with `envelope`. repeats grows when the failure matches the
  /// previous one of the same operation and tool (same code and field; for a failure without
  /// a field, also the same Context::args_hash the host computes over the call's arguments),
  /// else restarts at 1: a rejected field repeats however the other arguments change. Counts
  /// the failure for the run too.
  void record_failure(const Context& context, const Envelope& envelope);
  /// Records the decision taken on the failure (a repair makes the next call a repaired one; a
  /// retry on the server's pushback, a decision with retry_after_ms, restarts the backoff of the
  /// retries after it: gRFC A6, docs/language.md section 12).
  void record_decision(const Context& context, const Decision& decision);
  /// Records that the call of `context.tool` for `context.operation_id` succeeded: that tool's
  /// counters for the operation are dropped; other tools' counters for it are kept.
  void record_success(const Context& context);
  /// Raises `context`'s counters to those of (context.operation_id, context.tool): attempt,
  /// repairs, repeats, cost_spent, elapsed_ms (now_ms - first call) and pushback_attempt; and
  /// the run's: run_calls, run_cost, run_failures (every tool) and run_tool_calls, run_tool_cost,
  /// run_tool_failures (context.tool). A count
  /// the host already gave higher is kept (it may have counted calls this workflow never saw). A
  /// pair never recorded changes nothing. When the store cannot answer, or could not take one of
  /// the pair's events (a write that failed while reads work: a locked SQLite file, a read-only
  /// Redis), the local counts apply (the larger of each) and context.store_unavailable is set,
  /// until the operation succeeds.
  void apply(Context& context, std::int64_t now_ms) const;
  /// apply(context, now_ms), then lists in context.unavailable_tools each tool of `policy`'s
  /// fallback chain (`tool { fallback }`) this operation has called (its counters are recorded
  /// for context.operation_id), and the policy's own tool: a chain never goes back to a tool the
  /// operation tried (docs/language.md section 10).
  void apply(const Policy& policy, Context& context, std::int64_t now_ms) const;
  /// The counters of `tool`'s calls for an operation, if recorded (nullopt also when the store
  /// cannot answer).
  std::optional<OperationState> find(std::string_view operation_id, std::string_view tool) const;

  /// The local counters: {"version": 2, "operations": {operation id: {tool: {format, attempts,
  /// repairs, repeats, cost, startedMs, lastFailure, repairPending, pushbackAttempt}}}, "run":
  /// {"all": record, "tools": {tool: record}}} (format: the record format, 2; a run record's
  /// attempts are the run's calls, its repeats its failures). "run" is left out while nothing
  /// was counted. The scope is not part of it.
  std::string to_json() const;
  /// Restores the local counters from to_json()'s form, under this workflow's scope (records of
  /// formats 0, without `format`, and 1, without pushbackAttempt, too). Fails with S004 (naming the
  /// record) on malformed input or a record that does not read as its shape (docs/state.md,
  /// "Records"), leaving *this as is. The form without "version" (before 2, counters per operation
  /// alone) is refused unless it holds no counters: which tool counted them was not recorded. Never
  /// throws.
  Status from_json(std::string_view json) noexcept;

 private:
  std::string key(std::string_view operation_id, std::string_view tool) const;
  /// The key of the run's counters of `tool` ("" for every tool's).
  std::string run_key(std::string_view tool) const;
  void apply_run(Context& context, std::int64_t now_ms) const;
  std::optional<OperationState> count(const std::string& key, const CountEvent& event,
                                      std::int64_t now_ms) const;
  std::shared_ptr<MemoryStore> local_;
  std::shared_ptr<Store> store_;
  std::string scope_;
  mutable std::int64_t now_ms_ = 0;       ///< the latest time seen (for events that carry none)
  mutable std::set<std::string> missed_;  ///< operations with an event the store did not take
};

/// The key of a tool's circuit breaker in Health and the Store: `tool` alone without an
/// endpoint, else "TOOL@ENDPOINT" (Context::endpoint), one circuit per target. A tool whose own
/// name is such a string shares its key. Retry tokens stay per tool.
std::string circuit_key(std::string_view tool, std::string_view endpoint);

/// What Health does while its store cannot answer.
struct HealthOptions {
  /// Retries this process may still make during an outage, from a local bucket refilled when
  /// the store answers again. 0 (the default): none.
  std::int64_t fallback_tokens = 0;
  /// Opt-in: during an outage retry tokens do not throttle at all.
  bool fail_open = false;
  /// This worker's name in quorum votes (breakers of scope quorum); empty: host, pid, instance.
  std::string worker;
};

/// Per-process tool health, shared between threads (never on the decide() path).
class Health {
 public:
  /// Shared state in `store` (nullptr: one MemoryStore for everything); local breakers in a
  /// MemoryStore of its own.
  explicit Health(std::shared_ptr<Store> store = nullptr, HealthOptions options = {});
  /// Records that a call of context.tool failed, before prepare() for the next decision. A
  /// failure whose envelope has a code the policy's `breaker { counts }` leaves out is recorded
  /// on the breaker as a success (the tool answered); one without an envelope (nullptr) or
  /// without a code counts, the conservative reading. A closed circuit counts it and may open; the
  /// failure of the half-open probe (a call of the operation that took it) reopens the circuit for
  /// another cooldown; other failures while open change nothing (they were in flight). A failure
  /// whose envelope asks for a wait beyond the policy's retry_after_max (retryAfterMs) opens the
  /// circuit until that wait ends (Store::hold): no operation calls the tool before the server's
  /// time, across the fleet with `scope = shared`. With `throttle`, a failure gRFC A6 counts takes
  /// one retry token, whether it is then retried or not, so the check in prepare() follows the
  /// decrement: one whose `envelope` has a code the policy retries (docs/language.md, section
  /// 10, "Retry tokens"); without an envelope (nullptr) every failure counts, the conservative
  /// reading.
  void record_failure(const Policy& policy, const Context& context, std::int64_t now_ms,
                      const Envelope* envelope = nullptr);
  /// Fills context.circuit and context.retry_throttled for the decision about the next call, and
  /// context.side_effect from the ledger when the host gave none and the ledger has an entry.
  /// When an open circuit's cooldown has passed, the first caller takes the one half-open probe
  /// (its context says half_open; others still see open until the probe's outcome is recorded
  /// or its lease, the breaker's probe_lease, ends). Sets context.store_unavailable when the store
  /// could not answer (and counts the decision, with one Workflow::apply already set it); a context
  /// so flagged takes its retry tokens from the fallback bucket (HealthOptions). Lists in
  /// context.unavailable_tools each tool of the policy's fallback chain whose circuit this
  /// process or the store records as open (its half-open probe is taken by its own callers).
  void prepare(const Policy& policy, Context& context, std::int64_t now_ms);
  /// The breaker's admission of the next call of context.tool for context.operation_id, before
  /// it is made: fills context.circuit as prepare() does (taking the half-open probe's lease
  /// when the cooldown has passed and no live lease is out; the call's outcome, recorded with
  /// record_success() or record_failure(), reports it) and returns it. Closed and HalfOpen let
  /// the call through; Open refuses it: the host decides instead, with the circuit open, and
  /// goes where the policy sends an open circuit (`on_open`). Closed for a policy without a
  /// breaker. Sets context.store_unavailable when the store could not answer (this process's
  /// breaker then decides); counts nothing (prepare() counts the decision).
  CircuitState admit(const Policy& policy, Context& context, std::int64_t now_ms);
  /// Records the decision taken. Retry tokens were taken by record_failure(); a retry decided
  /// while the store could not answer takes one from the fallback bucket (HealthOptions).
  void record_decision(const Policy& policy, const Context& context, const Decision& decision);
  /// Records a success: gives token_ratio tokens back (up to max_tokens) and closes the circuit.
  void record_success(const Policy& policy, const Context& context, std::int64_t now_ms);
  /// An operator's command on `tool`'s breaker, the circuit of `endpoint` when one is named
  /// (circuit_key()) (BreakerCommand: isolate; open, held for wait_ms; reset) where `policy` keeps
  /// it: in the store with `scope = shared`, so every process sharing it follows (as `recourse
  /// breaker --state` does), else this process's breaker
  /// (`local`, and the vote of `quorum`). Returns the tool's health after it; nullopt when the
  /// store could not answer (this process's breaker takes the command all the same, as it takes
  /// every outcome, for the outages it decides through). Thread-safe.
  std::optional<ToolHealth> control(const Policy& policy, std::string_view tool,
                                    BreakerCommand command, std::int64_t now_ms,
                                    std::int64_t wait_ms = 0, std::string_view endpoint = {});
  /// One tool's health: its breaker (the circuit of `endpoint`, circuit_key(); empty: the
  /// tool's own) from this process's breakers, its tokens from the store (default when never
  /// recorded or when the store cannot answer).
  ToolHealth get(std::string_view tool, std::string_view endpoint = {}) const;
  /// Decisions prepared while the store could not answer (store_unavailable).
  std::int64_t store_unavailable() const noexcept { return unavailable_.load(); }

  /// The local state: {"tools": {name: {format, circuit, consecutiveFailures, window,
  /// windowCalls, openedMs, probeTaken, probeOperation, probeUntilMs, milliTokens,
  /// holdUntilMs, isolated}}, "operations": {}} (format: the record format, 3).
  std::string to_json() const;
  /// Restores the local state from to_json()'s form (records of formats 0 to 2 too). Fails with
  /// S004 (naming the record) on malformed input or a record that does not read as its shape,
  /// leaving *this as is. Never throws.
  Status from_json(std::string_view json) noexcept;

 private:
  Store& breakers(const Policy& policy) const;
  std::shared_ptr<MemoryStore> local_;
  std::shared_ptr<Store> store_;
  HealthOptions options_;
  std::atomic<std::int64_t> unavailable_{0};
  std::atomic<std::int64_t> fallback_milli_;
  std::atomic<std::int64_t> now_ms_{0};
};

}  // namespace recourse
