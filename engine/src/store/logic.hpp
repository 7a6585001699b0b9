// The one-step operations of recourse::Store as pure functions on one record, shared by the
// memory and SQLite stores (which load the record, apply, and save it in one transaction). The
// Redis store runs the same rules as Lua scripts (redis.cpp); the conformance suite
// (tests/store_test.cpp) holds all three to them. Also the shapes of the stored records, their
// format version and their one reader.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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
/// The longest wait Store::hold() records, in ms: 10^15 (about 31,700 years, the bound of the
/// context's times), so that now + wait neither overflows nor leaves the integers a Redis
/// script's doubles hold exactly. Every store holds a longer wait to it.
constexpr std::int64_t kMaxHoldMs = 1'000'000'000'000'000;
/// Store::hold: opens `h`'s circuit (when closed) and holds it until now_ms + wait_ms at least
/// (wait_ms held to [0, kMaxHoldMs]).
CircuitState apply_hold(ToolHealth& h, std::int64_t wait_ms, std::int64_t now_ms);
/// Store::control: an operator's command on `h`'s breaker.
void apply_control(ToolHealth& h, BreakerCommand command, std::int64_t wait_ms,
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

/// The format of the records today's stores write: "format": 3 in a JSON record (the SQLite
/// store's rows, MemoryStore::to_json()), a field `format` of "3" in a Redis hash. A record of
/// an older format is read (migrated) as it was written: without `format` it is of format 0,
/// written before records had formats; formats 1 and 2 lack the fields added since (format 2:
/// the tool's holdUntilMs, the operation's pushbackAttempt; format 3: the tool's isolated;
/// RecordField::since), which read as their defaults. It is written back as this format on its
/// next change. docs/state.md, "Records".
constexpr std::int64_t kRecordFormat = 3;

/// A stored record that does not read as its documented shape (a field missing, twice, of the
/// wrong type or unknown; not a JSON object), or of a format newer than kRecordFormat. The stores
/// answer std::nullopt for that one call (store_unavailable, so the decision is conservative)
/// without tripping their own breaker: the other records still answer.
struct BadRecord : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a field of a stored record holds, and how JSON and Redis write it (a Redis hash holds
/// text only: numbers are decimal text there).
enum class FieldType : std::uint8_t {
  Count,    ///< a whole number >= 0
  Time,     ///< ms since the epoch: a whole number (negative allowed)
  Tokens,   ///< milli-tokens: a whole number >= -1 (-1: full, never spent)
  Calls,    ///< outcomes in a breaker's window: 0..64
  Hash,     ///< a 64-bit hash: 0..2^64-1
  Flag,     ///< JSON true or false; Redis "0" or "1"
  Text,     ///< a string
  Circuit,  ///< JSON "closed", "open" or "half_open"; Redis 0, 1 or 2
  Window,   ///< the breaker's outcomes: JSON a 64-bit number; Redis a string of <= 64 '0'/'1'
  Ledger,   ///< "pending", "committed" or "released"
};

/// "count", "time", ... (the Redis scripts' names of the types).
const char* to_string(FieldType type) noexcept;

/// One field of a record kind: its name in a JSON record and in a Redis hash (nullptr when that
/// encoding has no such field), and its type.
struct RecordField {
  const char* json;
  const char* redis;
  FieldType type;
  /// The format that added the field: records of an older format have none (it reads as its
  /// type's default, 0 for a count), records of this format and later have it.
  std::int64_t since = 1;
};

/// The record kinds with fixed fields. (A tool's quorum votes are a map, read by votes_from_json
/// and the Redis vote script.)
enum class RecordKind : std::uint8_t { Tool, Operation, Ledger };

/// The fields of `kind`, the one statement of every record's shape: the JSON readers below and
/// the Redis scripts' record check (redis.cpp) are both driven by it.
const std::vector<RecordField>& record_fields(RecordKind kind);

/// Parses a stored record (or MemoryStore::to_json()'s document, up to `max_depth` objects
/// deep): a JSON object with no key twice, no array anywhere and objects nested at most
/// `max_depth` deep; BadRecord otherwise. Bounded work on any input (a 100k-deep array stops at
/// its first bracket past the limit).
nlohmann::json parse_record(std::string_view text, int max_depth = 1);

/// JSON of one record, with "format": kRecordFormat (Health's, Workflow's and the SQLite store's
/// form). The readers take a parsed record (parse_record) of a format up to kRecordFormat that
/// has every field of its kind that format has, each of its type, and no other; they throw
/// BadRecord otherwise.
std::string tool_to_json(const ToolHealth& h);
ToolHealth tool_from_json(const nlohmann::json& record);
/// {"format": 2, "votes": {worker: until ms}} (format 1 the same); format 0 was the bare map.
std::string votes_to_json(const std::map<std::string, std::int64_t>& votes);
std::map<std::string, std::int64_t> votes_from_json(const nlohmann::json& record);
std::string operation_to_json(const OperationState& op);
OperationState operation_from_json(const nlohmann::json& record);
/// A ledger entry from its record {state, idempotencyKey, updatedMs, leaseUntilMs} (the SQLite
/// store builds it from the row's columns with json_object(), types kept).
LedgerEntry ledger_from_json(const nlohmann::json& record);
/// "pending", ... -> the state (throws BadRecord on others).
LedgerState ledger_state(std::string_view name);

}  // namespace recourse::detail
