// The store operations (recourse::Store) and their answers as JSON, the npm package's form of
// them (js/src/store.js; docs/javascript.md, "State"): what the package's stores take and give,
// what the staged store journals, and what the module applies to a memory store.
#pragma once

#include <optional>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "recourse/store.hpp"

namespace recourse::js {

using json = nlohmann::json;

/// "closed", "open" or "half_open".
std::string circuit_name(CircuitState circuit);

/// {circuit ("closed", "open", "half_open"), consecutiveFailures, window (the last outcomes as
/// '0'/'1' text, newest first: the Redis store's form, as a number would lose bits past 2^53),
/// windowCalls, openedMs, probeOperation, probeUntilMs (0: no probe out), holdUntilMs,
/// milliTokens (-1: full, never spent), isolated}.
json to_json(const ToolHealth& h);
/// to_json(ToolHealth)'s form back; std::invalid_argument names a field that does not read.
ToolHealth tool_health(const json& j);
/// {attempts, repairs, repeats, cost, startedMs, lastFailure (the 64-bit hash as decimal text),
/// repairPending, pushbackAttempt}.
json to_json(const OperationState& op);
OperationState operation_state(const json& j);
/// {operation, state ("absent", "pending", "committed", "released", "unknown"), idempotencyKey,
/// updatedMs, leaseUntilMs, claimed}.
json to_json(const LedgerEntry& e);
/// An entry as stored: a state "unknown" (a pending whose lease ran out) reads as pending with
/// that lease, which view() reads as unknown again.
LedgerEntry ledger_entry(const json& j);

/// An operation's answer as JSON: null when the store could not answer, a circuit's name, a
/// number, or one of the records above.
template <typename T>
json answer(const std::optional<T>& value) {
  if (!value) return nullptr;
  if constexpr (std::is_same_v<T, CircuitState>)
    return circuit_name(*value);
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return *value;
  else
    return js::to_json(*value);
}

/// One operation as JSON, {"op": its Store function's name, its arguments}: what the staged
/// store journals and apply() takes. Times and waits in ms; specs as BucketSpec and BreakerSpec
/// with camelCase keys ({maxMilli, ratioMilli}; {failures, ratioMilli, window, minCalls,
/// cooldownMs, probeLeaseMs}).
json bucket_op(std::string_view tool, BucketEvent event, const BucketSpec& spec, std::int64_t now);
json outcome_op(std::string_view tool, std::string_view operation, bool failed,
                const BreakerSpec& spec, std::int64_t now);
json probe_op(std::string_view tool, std::string_view operation, const BreakerSpec& spec,
              std::int64_t now);
json hold_op(std::string_view tool, std::int64_t wait_ms, std::int64_t now);
json control_op(std::string_view tool, BreakerCommand command, std::int64_t wait_ms,
                std::int64_t now);
json vote_op(std::string_view tool, std::string_view worker, bool open, std::int64_t vote_ms,
             std::int64_t now);
json count_op(std::string_view operation, const CountEvent& event, std::int64_t now);
json claim_op(std::string_view operation, std::string_view key, std::int64_t lease_ms,
              std::int64_t now);
json transition_op(std::string_view operation, LedgerState to, std::int64_t now);

/// Applies `op` to `store`: one of the forms above (a count's event needs only its kind: cost
/// 0, failure "0", repair false and pushback 0 by default; control's waitMs defaults to 0), or
/// {"op": "tool", tool, nowMs}, {"op": "read", operation, nowMs}, {"op": "entries", limit,
/// nowMs}. Returns its answer as JSON (a number, a circuit's name, one of the records above, an
/// array of entries), null when the store could not answer; std::invalid_argument, naming what
/// is wrong, for an op that does not read.
json apply(Store& store, const json& op);

}  // namespace recourse::js
