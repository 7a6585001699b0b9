// Shared state: one interface of one-step operations, each atomic in its store.
//
// Workflow and Health (state.hpp) keep their state in a Store. Every operation reads, changes
// and writes one record in one step, so processes sharing a store never lose an update:
//  - bucket:     a gRFC A6 retry-token event on a tool (integer milli-tokens);
//  - outcome:    a call's success or failure on a tool's circuit breaker;
//  - hold:       a server's wait beyond what the policy waits: the circuit open until then;
//  - control:    an operator's command on a tool's breaker: isolate, open, reset;
//  - vote:       one worker's view of its own breaker, for breakers of scope quorum(N);
//  - probe:      the circuit as one operation sees it, taking the half-open probe (a lease that
//                expires after probe_lease_ms, so only one worker probes and a lost probe is
//                replaced);
//  - count:      an attempt, failure, decision or success of one operation (attempts, repairs,
//                repeats, cost);
//  - claim, transition, read: the side-effect ledger (claim `pending` before the side effect,
//                `committed` after; a pending whose lease expired reads as `unknown`).
// Stores: MemoryStore (this process; the default), SQLite (one host, many processes) and Redis (a
// fleet), opened by open_store(). Every operation returns std::nullopt when the store could not
// answer (unreachable, timed out, busy past its timeout); the callers then fall back to local,
// conservative state (state.hpp). Times are ms since the epoch; the Redis store ignores the
// caller's now_ms and reads the server's clock, so a fleet shares one clock. Docs: docs/state.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recourse/envelope.hpp"
#include "recourse/result.hpp"

namespace recourse {

/// gRFC A6 retry tokens of one tool, in milli-tokens (integers: Redis truncates Lua numbers).
/// The bucket starts full; a failure A6 counts takes 1000 (BucketEvent::Retry), a success gives
/// ratio_milli back (capped at max_milli); retries are allowed while tokens > max_milli / 2.
struct BucketSpec {
  std::int64_t max_milli = 10000;  ///< max_tokens x 1000
  std::int64_t ratio_milli = 100;  ///< token_ratio x 1000
};

/// A token-bucket event: Read changes nothing; Retry takes a token (a failure gRFC A6 counts,
/// retried or not); Success gives token_ratio back.
enum class BucketEvent : std::uint8_t { Read, Retry, Success };

/// Circuit breaker settings: open after `failures` consecutive failures, or when at least
/// `min_calls` of the last `window` (<= 64) calls ended and failed*1000 >= ratio_milli*calls;
/// stay open for cooldown_ms, then let one probe through, whose lease lasts probe_lease_ms.
struct BreakerSpec {
  std::int64_t failures = 5;
  std::int64_t ratio_milli = 0;  ///< 0: the ratio rule is off
  std::int64_t window = 20;
  std::int64_t min_calls = 10;
  std::int64_t cooldown_ms = 30000;
  /// How long a half-open probe holds its lease: a probe whose outcome is not recorded by then
  /// is lost, and the next caller probes (the policy's default: its cooldown).
  std::int64_t probe_lease_ms = 30000;
};

/// One tool's health: breaker and retry tokens.
struct ToolHealth {
  CircuitState circuit = CircuitState::Closed;
  std::int64_t consecutive_failures = 0;
  std::uint64_t window = 0;         ///< the last outcomes, newest in bit 0 (1 = failure)
  std::int64_t window_calls = 0;    ///< outcomes in `window` (at most the breaker's window)
  std::int64_t opened_ms = 0;       ///< when the circuit last opened
  bool probe_taken = false;         ///< half-open: the one probe is out
  std::string probe_operation;      ///< half-open: the operation whose next call is the probe
  std::int64_t probe_until_ms = 0;  ///< the probe's lease ends (then another caller may probe)
  /// No half-open probe before then: the server asked for a wait beyond the policy's
  /// retry_after_max (Store::hold); 0: none.
  std::int64_t hold_until_ms = 0;
  std::int64_t milli_tokens = -1;  ///< retry tokens x 1000; -1: full (never spent)
  /// An operator isolated the circuit (BreakerCommand::Isolate): open, with no half-open probe
  /// and no outcome closing it, until a Reset.
  bool isolated = false;
};

/// An operator's command on one tool's circuit breaker (Store::control, Health::control, the
/// `recourse breaker` command), the manual controls of Polly (ManualControl), resilience4j and
/// cockatiel.
enum class BreakerCommand : std::uint8_t {
  /// Open until a Reset: no half-open probe is taken and no recorded outcome closes it (Polly's
  /// IsolateAsync, resilience4j's FORCED_OPEN, cockatiel's isolate()).
  Isolate,
  /// Open now, as if it had just tripped (openedMs = now), and held open for the command's
  /// wait_ms (as Store::hold: no probe before the hold and the cooldown both end); then the
  /// usual half-open probe, and a success closes it (resilience4j's transitionToOpenState).
  Open,
  /// Closed, with its consecutive failures and window cleared and its probe, hold and isolation
  /// dropped (Polly's CloseAsync, resilience4j's reset()); the retry tokens are kept.
  Reset
};

/// "isolate", "open", "reset".
const char* to_string(BreakerCommand command) noexcept;

/// One tool's health as its stored JSON record (docs/state.md, "Records"): {"format", "circuit",
/// "consecutiveFailures", "window", "windowCalls", "openedMs", "probeTaken", "probeOperation",
/// "probeUntilMs", "milliTokens", "holdUntilMs", "isolated"}.
std::string to_json(const ToolHealth& health);

/// The command named `name` ("isolate", "open", "reset"), or nullopt.
std::optional<BreakerCommand> breaker_command(std::string_view name) noexcept;

/// Counters of one operation (a logical call, retried or repaired until it ends).
struct OperationState {
  std::int64_t attempts = 0;       ///< calls made, the first included
  std::int64_t repairs = 0;        ///< calls made after a repair decision
  std::int64_t repeats = 0;        ///< consecutive identical failures, the last included
  std::int64_t cost = 0;           ///< cost units charged
  std::int64_t started_ms = 0;     ///< now_ms of the first call
  std::uint64_t last_failure = 0;  ///< hash of (tool, code, field; args hash without a field)
  bool repair_pending = false;     ///< the last decision was a repair
  /// The last attempt whose failure the server answered with a pushback that set the retry's
  /// delay (a retry decided on an envelope with retryAfterMs); 0: none. The backoff of later
  /// retries restarts from it (gRFC A6; docs/language.md section 12).
  std::int64_t pushback_attempt = 0;
  /// False for an operation never recorded (or dropped after its success).
  bool recorded() const noexcept { return attempts > 0 || repeats > 0; }
};

/// A counting event of one operation. Read changes nothing; Success drops the counters.
struct CountEvent {
  enum Kind : std::uint8_t { Read, Attempt, Failure, Decision, Success } kind = Read;
  std::int64_t cost = 0;      ///< Attempt: cost units charged
  std::uint64_t failure = 0;  ///< Failure: its hash (repeats grow while it stays the same)
  bool repair = false;        ///< Decision: the decision was a repair
  /// Decision: a retry on the server's pushback after this attempt (sets
  /// OperationState::pushback_attempt); 0: none (it keeps its value).
  std::int64_t pushback = 0;
};

/// A side-effect ledger entry's state. Unknown is never stored: it is how a Pending entry whose
/// lease has expired reads (the worker may have died before or after the side effect).
enum class LedgerState : std::uint8_t { Absent, Pending, Committed, Released, Unknown };

/// "absent", "pending", "committed", "released", "unknown".
const char* to_string(LedgerState state) noexcept;

/// What the ledger says about the side effect, for Context::side_effect: committed ->
/// Committed, released -> None, pending or unknown -> Unknown, absent -> nullopt.
std::optional<SideEffect> side_effect_of(LedgerState state) noexcept;

/// One operation's ledger entry. The idempotency key is pinned at the first claim and kept by
/// every later one, so the host sends the same key downstream on every resend.
struct LedgerEntry {
  std::string operation;
  LedgerState state = LedgerState::Absent;
  std::string idempotency_key;
  std::int64_t updated_ms = 0;      ///< last claim or transition
  std::int64_t lease_until_ms = 0;  ///< pending: the claim's lease ends
  bool claimed = false;             ///< claim(): this call took the claim
};

/// Limits every store applies.
struct StoreOptions {
  std::int64_t state_ttl_ms = 24 * 3600 * 1000;       ///< tool and operation state, after a change
  std::int64_t ledger_ttl_ms = 7 * 24 * 3600 * 1000;  ///< ledger entries, after a change
  std::int64_t timeout_ms = 50;                       ///< Redis: connect and each command
  std::int64_t busy_ms = 200;   ///< SQLite: busy timeout (waits for another writer)
  std::int64_t down_ms = 1000;  ///< the store's own breaker: after a failed call, fail fast
};

/// A state store. Implementations are thread-safe; every operation is atomic in the store and
/// never throws: std::nullopt means the store could not answer.
class Store {
 public:
  virtual ~Store() = default;
  /// Applies a token-bucket event to `tool`; returns the milli-tokens after it.
  virtual std::optional<std::int64_t> bucket(std::string_view tool, BucketEvent event,
                                             const BucketSpec& spec,
                                             std::int64_t now_ms) noexcept = 0;
  /// Records a call's outcome on `tool`'s breaker: a failure counts while closed (and may open
  /// it); the failure of the probe's operation while open reopens it for another cooldown; other
  /// failures while open change nothing (they were in flight). A success closes it. Returns the
  /// circuit after.
  virtual std::optional<CircuitState> outcome(std::string_view tool, std::string_view operation,
                                              bool failed, const BreakerSpec& spec,
                                              std::int64_t now_ms) noexcept = 0;
  /// The circuit as `operation` sees it: HalfOpen when it holds the probe, or takes it now (the
  /// cooldown has passed and no live lease is out); Open for everyone else while open.
  virtual std::optional<CircuitState> probe(std::string_view tool, std::string_view operation,
                                            const BreakerSpec& spec,
                                            std::int64_t now_ms) noexcept = 0;
  /// Holds `tool`'s circuit open for wait_ms from now, a server's wait beyond the policy's
  /// retry_after_max: a closed circuit opens (opened now), and no half-open probe is taken
  /// before the hold ends (nor before the cooldown); a hold ending before the one kept changes
  /// nothing. A success clears it. Returns the circuit after (open).
  virtual std::optional<CircuitState> hold(std::string_view tool, std::int64_t wait_ms,
                                           std::int64_t now_ms) noexcept = 0;
  /// Applies an operator's `command` to `tool`'s breaker (wait_ms: how long Open holds it, held
  /// to [0, 10^15]; ignored by the others). Returns the tool's health after it.
  virtual std::optional<ToolHealth> control(std::string_view tool, BreakerCommand command,
                                            std::int64_t wait_ms, std::int64_t now_ms) noexcept = 0;
  /// Records whether `worker`'s own breaker for `tool` is open (a vote that lasts vote_ms, or
  /// withdrawn) and returns how many workers' votes are live: open and not expired.
  virtual std::optional<std::int64_t> vote(std::string_view tool, std::string_view worker,
                                           bool open, std::int64_t vote_ms,
                                           std::int64_t now_ms) noexcept = 0;
  /// A copy of one tool's health (default when never recorded or expired).
  virtual std::optional<ToolHealth> tool(std::string_view tool, std::int64_t now_ms) noexcept = 0;
  /// Applies a counting event to `operation`; returns its counters after (not recorded() when
  /// absent, expired or just dropped).
  virtual std::optional<OperationState> count(std::string_view operation, const CountEvent& event,
                                              std::int64_t now_ms) noexcept = 0;
  /// Claims `operation` before its side effect: an absent or released entry becomes pending with
  /// a lease of lease_ms (claimed = true; the key given pins unless one is pinned already). Any
  /// other entry is returned as it reads (claimed = false).
  virtual std::optional<LedgerEntry> claim(std::string_view operation,
                                           std::string_view idempotency_key, std::int64_t lease_ms,
                                           std::int64_t now_ms) noexcept = 0;
  /// Moves a pending (or unknown) entry to committed or released; other entries are returned
  /// unchanged. `to` must be Committed or Released.
  virtual std::optional<LedgerEntry> transition(std::string_view operation, LedgerState to,
                                                std::int64_t now_ms) noexcept = 0;
  /// The entry as it reads now (state Absent when there is none).
  virtual std::optional<LedgerEntry> read(std::string_view operation,
                                          std::int64_t now_ms) noexcept = 0;
  /// Up to `limit` entries, as they read now, by operation.
  virtual std::optional<std::vector<LedgerEntry>> entries(std::size_t limit,
                                                          std::int64_t now_ms) noexcept = 0;
  /// "memory", "sqlite:PATH", "redis://HOST:PORT".
  virtual std::string name() const = 0;
};

/// The in-memory store: this process only; the default of Workflow and Health.
class MemoryStore final : public Store {
 public:
  explicit MemoryStore(StoreOptions options = {}) : options_(options) {}
  std::optional<std::int64_t> bucket(std::string_view tool, BucketEvent event,
                                     const BucketSpec& spec, std::int64_t now_ms) noexcept override;
  std::optional<CircuitState> outcome(std::string_view tool, std::string_view operation,
                                      bool failed, const BreakerSpec& spec,
                                      std::int64_t now_ms) noexcept override;
  std::optional<CircuitState> probe(std::string_view tool, std::string_view operation,
                                    const BreakerSpec& spec, std::int64_t now_ms) noexcept override;
  std::optional<CircuitState> hold(std::string_view tool, std::int64_t wait_ms,
                                   std::int64_t now_ms) noexcept override;
  std::optional<ToolHealth> control(std::string_view tool, BreakerCommand command,
                                    std::int64_t wait_ms, std::int64_t now_ms) noexcept override;
  std::optional<std::int64_t> vote(std::string_view tool, std::string_view worker, bool open,
                                   std::int64_t vote_ms, std::int64_t now_ms) noexcept override;
  std::optional<ToolHealth> tool(std::string_view tool, std::int64_t now_ms) noexcept override;
  std::optional<OperationState> count(std::string_view operation, const CountEvent& event,
                                      std::int64_t now_ms) noexcept override;
  std::optional<LedgerEntry> claim(std::string_view operation, std::string_view idempotency_key,
                                   std::int64_t lease_ms, std::int64_t now_ms) noexcept override;
  std::optional<LedgerEntry> transition(std::string_view operation, LedgerState to,
                                        std::int64_t now_ms) noexcept override;
  std::optional<LedgerEntry> read(std::string_view operation,
                                  std::int64_t now_ms) noexcept override;
  std::optional<std::vector<LedgerEntry>> entries(std::size_t limit,
                                                  std::int64_t now_ms) noexcept override;
  std::string name() const override { return "memory"; }

  /// {"tools": {name: {...}}, "operations": {id: {...}}}, each record with "format": 3 (the
  /// ledger is not included).
  std::string to_json() const;
  /// Restores to_json()'s form (either member may be absent; records of formats 0 to 2 are
  /// migrated). Fails with S004, naming the record, on malformed input or a record that does not
  /// read as its shape (docs/state.md, "Records"), leaving the store as it was. Never throws.
  Status from_json(std::string_view json) noexcept;

 private:
  template <typename T>
  struct Expiring {
    T value;
    std::int64_t expires_ms = 0;
  };
  StoreOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, Expiring<ToolHealth>, std::less<>> tools_;
  std::map<std::string, Expiring<OperationState>, std::less<>> operations_;
  std::map<std::string, Expiring<LedgerEntry>, std::less<>> ledger_;
  std::map<std::string, Expiring<std::map<std::string, std::int64_t>>, std::less<>> votes_;
};

/// A store spec, read: which store, and where.
struct StoreSpec {
  enum class Kind : std::uint8_t { Memory, Sqlite, Redis, RedisUnix };
  Kind kind = Kind::Memory;
  std::string path;  ///< sqlite:PATH and redis+unix://PATH
  std::string host;  ///< redis://HOST:PORT
  int port = 6379;   ///< redis://HOST:PORT: 1..65535; 6379 when the spec gives none
};

/// Reads a store spec without opening anything: "memory", "sqlite:PATH", "redis://HOST:PORT"
/// ("redis://HOST": port 6379) or "redis+unix://PATH". An unknown kind, an empty PATH or HOST,
/// and a PORT that is not a number in 1..65535 are malformed: failure S001, one line naming the
/// spec. Never throws.
Result<StoreSpec> read_store_spec(std::string_view spec) noexcept;

/// Opens a store from its spec (read_store_spec): "memory", "sqlite:PATH" (created when missing),
/// "redis://HOST:PORT" or "redis+unix://PATH". A malformed spec, a store the build left out
/// (CMake options RECOURSE_SQLITE, RECOURSE_REDIS) is failure S001; a store that cannot be opened
/// or reached is S002, naming it. A store that opens may come with warnings: S003 when a Redis
/// server's persistence is too weak for the side-effect ledger, which is then refused
/// (docs/state.md). Never throws.
Result<std::shared_ptr<Store>> open_store(std::string_view spec,
                                          const StoreOptions& options = {}) noexcept;

}  // namespace recourse
