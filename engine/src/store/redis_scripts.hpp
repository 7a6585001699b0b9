// The Redis store's Lua scripts (redis.cpp runs them over hiredis; the npm package's Redis store,
// js/src/redis.js, runs the same text over a Node client, exported by the WebAssembly module).
// One script per store operation, each over one key, so each is atomic; the rules are those of
// logic.cpp, the record shapes those of record_fields(). docs/state.md, "Redis".
#pragma once

#include <string>

namespace recourse::detail {

/// The scripts, one per Store operation (`entries` is a SCAN over the ledger's keys, no script).
/// ARGV per script (KEYS[1] the record's key, recourse:{<tool or operation>}:<kind> with kind
/// tool, quorum, op or ledger; ttl in ms):
///  - bucket (event 0 read|1 retry|2 success, max milli-tokens, ratio milli-tokens, ttl): the
///    milli-tokens after;
///  - outcome (operation, failed 0|1, failures, ratio milli, window, min_calls, ttl): the
///    circuit after (0 closed, 1 open, 2 half-open);
///  - probe (operation, cooldown ms, probe lease ms, ttl): the circuit as the operation sees it;
///  - vote (worker, open 0|1, vote ms, ttl): the live votes;
///  - tool (): the tool's health {circuit, consecutive, window ('0'/'1', newest first), calls,
///    opened, probe operation, probe until, milli-tokens (-1: full), hold until, isolated 0|1};
///  - hold (wait ms, ttl): 1 (open);
///  - control (command 0 isolate|1 open|2 reset, wait ms, ttl): the tool's health, as tool;
///  - count (kind 0 read|1 attempt|2 failure|3 decision|4 success, cost, failure hash (decimal),
///    repair 0|1, ttl, pushback attempt or 0): {attempts, repairs, repeats, cost, started,
///    last failure (decimal text), repair pending 0|1, pushback attempt};
///  - claim (idempotency key, lease ms, ttl), transition (committed|released, ttl), read (): the
///    entry {state (absent, pending, committed, released, unknown), key, updated, lease until,
///    claimed 0|1}.
/// Every script reads the server's clock (TIME). A stored record that does not read as its shape
/// fails the script with an error reply starting "BADRECORD ".
enum RedisScript : int {
  kBucket,
  kOutcome,
  kProbe,
  kVote,
  kTool,
  kHold,
  kControl,
  kCount,
  kClaim,
  kTransition,
  kRead,
  kRedisScripts
};

/// The script's name: "bucket", "outcome", ... (the operation it implements).
const char* redis_script_name(int script) noexcept;

/// The full Lua source of `script` (0 <= script < kRedisScripts): the record shapes and format,
/// the shared prelude and the script's body.
std::string redis_script_source(int script);

}  // namespace recourse::detail
