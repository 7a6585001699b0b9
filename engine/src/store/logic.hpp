// The one-step operations of recourse::Store as pure functions on one record, shared by the
// memory and SQLite stores (which load the record, apply, and save it in one transaction). The
// Redis store runs the same rules as Lua scripts (store_redis.cpp); the conformance suite
// (tests/store_test.cpp) holds all three to them.
#pragma once

#include <string>
#include <string_view>

#include "recourse/store.hpp"

namespace recourse::detail {

/// Applies `event` to `h`'s tokens; returns the milli-tokens after (full when never spent).
std::int64_t apply_bucket(ToolHealth& h, BucketEvent event, const BucketSpec& spec);
/// Records a call's outcome on `h`'s breaker (Store::outcome); returns the circuit after.
CircuitState apply_outcome(ToolHealth& h, std::string_view operation, bool failed,
                           const BreakerSpec& spec, std::int64_t now_ms);
/// The circuit as `operation` sees it, taking the half-open lease when it is free (Store::probe).
CircuitState apply_probe(ToolHealth& h, std::string_view operation, const BreakerSpec& spec,
                         std::int64_t now_ms);
/// Store::vote on one tool's votes (worker -> until ms): returns the live ones, dropping others.
std::int64_t apply_vote(std::map<std::string, std::int64_t>& votes, std::string_view worker,
                        bool open, std::int64_t vote_ms, std::int64_t now_ms);
/// Applies a counting event (Success resets `op` to a default, unrecorded state).
void apply_count(OperationState& op, const CountEvent& event, std::int64_t now_ms);
/// Store::claim on `e` (state Absent when there is none): true when the entry changed.
bool apply_claim(LedgerEntry& e, std::string_view key, std::int64_t lease_ms, std::int64_t now_ms);
/// Store::transition on `e`: true when the entry changed.
bool apply_transition(LedgerEntry& e, LedgerState to, std::int64_t now_ms);
/// How a stored entry reads at now_ms (an expired pending lease reads as Unknown).
LedgerEntry view(LedgerEntry e, std::int64_t now_ms);

/// JSON of one record (Health's and the SQLite store's format); the readers throw on bad input.
std::string tool_to_json(const ToolHealth& h);
ToolHealth tool_from_json(std::string_view json);
std::string votes_to_json(const std::map<std::string, std::int64_t>& votes);
std::map<std::string, std::int64_t> votes_from_json(std::string_view json);
std::string operation_to_json(const OperationState& op);
OperationState operation_from_json(std::string_view json);
/// "pending", ... -> the state (throws std::invalid_argument on others).
LedgerState ledger_state(std::string_view name);

}  // namespace recourse::detail
