// The recovery loop as a library: recourse::Runner runs one operation (one logical tool call,
// retried, repaired or replaced until it ends) under an Engine, a Workflow, a Health and a store.
//
// Its core is a step machine that never reads a clock and never blocks: next(now_ms) says what
// the host should do (call a tool with these arguments and this idempotency key; wait; ask for a
// repair, an authorization or a person; done), the host does it and report()s the outcome
// (success; a failure as an Envelope or a protocol's raw form, read through the adapters; the
// side effect it had; after an ask, resume or abandon). The runner reads the failure, fills the
// context (attempt, repairs, elapsed_ms from the start, the idempotency key, the deadline),
// records the failure and the decision in the Workflow and the Health, decides with the Engine
// (so its decision log and counters see every decision), records side effects in the store's
// ledger, and turns the decision into the next action.
//
// Time belongs to the host: every call takes now_ms (ms since the epoch), and a wait is an
// action the host performs. run() is the blocking form over the same step machine, with host
// callbacks, an injectable clock and an injectable sleeper; cancel() ends a wait.
//
// Actions and outcomes are plain data and have a JSON form (to_json(Action), read_outcome()), so
// other languages drive the same machine through the C API (recourse.h, recourse_runner_*).
//
// Thread rules: one Runner per operation, used by one thread at a time (cancel() excepted, which
// any thread may call). Many runners in parallel may share the Engine, the Health and the store;
// each needs a Workflow of its own (Workflow is not thread-safe). docs/embedding.md, section 5,
// has the contract.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "recourse/engine.hpp"
#include "recourse/state.hpp"
#include "recourse/store.hpp"

namespace recourse {

/// What the host should do next.
enum class Step : std::uint8_t {
  Call,       ///< call Action::tool with Action::arguments and Action::idempotency_key, report
  Wait,       ///< wait Action::wait_ms, then ask next() again (a backoff or a server's hint)
  Repair,     ///< change an argument (the decision's envelope field and suggestion), report
  Authorize,  ///< obtain a credential or an approval, report
  Escalate,   ///< hand the failure to a person, report
  Done        ///< the operation has ended: Action::ending says how
};

/// "call", "wait", "repair", "authorize", "escalate", "done".
const char* to_string(Step step) noexcept;

/// How an operation ended.
enum class Ending : std::uint8_t {
  None,       ///< not ended (every action but Done)
  Success,    ///< a call succeeded (Action::tool names the tool that did)
  Decided,    ///< the last decision ends it: stop, degrade, or an ask the host abandoned
  Committed,  ///< the ledger says the side effect already happened: nothing was called
  Deadline,   ///< the runner's deadline passed, or the next call would start past it
  Cancelled   ///< cancel() was called
};

/// "none", "success", "decided", "committed", "deadline", "cancelled".
const char* to_string(Ending ending) noexcept;

/// What to do next. A plain value, but `decision`'s strings view the bundle the runner holds:
/// valid while the Runner lives, until it decides with a bundle an Engine reload swapped in.
struct Action {
  Step step = Step::Done;
  Ending ending = Ending::None;  ///< Done only
  /// Call: the tool to call (the original, or the replacement a decision named). Other steps:
  /// the tool the last call went to.
  std::string tool;
  /// Call: the arguments to send, as the host gave them (JSON text by convention; the runner
  /// compares and hashes their canonical JSON, sorted members and integral numbers as integers,
  /// or the bytes of a text that is not JSON). Repair: the arguments to change.
  std::string arguments;
  /// Call: the idempotency key to send (an Idempotency-Key header, Stripe's, Square's field):
  /// the previous call's on a retry, a new one after a repair, a replacement or a change of
  /// the arguments' value (not of their spelling: {"a":1,"b":2} and { "b": 2.0, "a": 1 } are
  /// one value). Empty when the tool's policy does not say `idempotency_keys = true`.
  std::string idempotency_key;
  std::optional<std::int64_t> timeout_ms;  ///< Call: per-try timeout, ms (policy, deadline)
  std::int64_t wait_ms = 0;                ///< Wait: ms to wait from the now_ms given to next()
  std::int64_t attempt = 0;          ///< Call: this call's number for its tool (1 for the first)
  std::int64_t elapsed_ms = 0;       ///< ms since the operation's first next()
  std::optional<Decision> decision;  ///< the last decision (none before the first failure)
  Envelope envelope;                 ///< the failure that decision read (field, suggestion)
};

/// The action as one JSON object: {"step", "tool", "attempt", "elapsedMs", and per step
/// "arguments" (as given when it is JSON, else a string), "idempotencyKey", "timeoutMs",
/// "waitMs", "ending", "decision" (to_json(decision, envelope)), "envelope"}.
std::string to_json(const Action& action);

/// What the host reports after a Call (Success, Failure) or an ask (Resume, Abandon).
struct Outcome {
  enum class Kind : std::uint8_t {
    Success,  ///< the call did what it was asked
    Failure,  ///< the call failed: `envelope`, else `raw` read through the adapters
    Resume,   ///< after Repair, Authorize or Escalate: call again (with `arguments` if given)
    Abandon   ///< after Repair, Authorize or Escalate: end here (Ending::Decided)
  };
  Kind kind = Kind::Failure;
  /// Failure: the envelope, already read. Takes precedence over `raw`.
  std::optional<Envelope> envelope;
  /// Failure without an envelope: the protocol's raw form as JSON (adapters.hpp, from_raw:
  /// {"status": 429, "headers": {...}, "body": ...}, {"transportError": "timeout"}, ...),
  /// read with the policy's `map` lines; unreadable, the decision is Bundle::unreadable()'s.
  std::string raw;
  std::optional<Protocol> protocol;  ///< raw's protocol; nullopt: its "protocol" or its shape
  /// Failure: what the call did downstream, if the host knows. Absent, the ledger answers for a
  /// tool that is not idempotent (pending: unknown), else it reads as unknown.
  std::optional<SideEffect> side_effect;
  std::optional<std::string> arguments;  ///< Resume: new arguments (a changed body: a new key)
};

/// Reads an outcome from JSON: {"outcome": "success" | "failure" | "resume" | "abandon",
/// "envelope": {...}, "raw": {...}, "protocol": "http", "sideEffect": "none" | "unknown" |
/// "committed", "arguments": <any JSON>}. Failure R001 for a text that is not a JSON object, an
/// unknown outcome or protocol, or a member of the wrong type; an envelope is read with
/// read_envelope() (malformed fields dropped with warnings). Never throws.
Result<Outcome> read_outcome(std::string_view json) noexcept;

/// One operation for a Runner.
struct RunnerSpec {
  std::string tool;          ///< the tool to call first (its policy, or "*", decides)
  std::string arguments;     ///< the first call's arguments (JSON text by convention)
  std::string operation_id;  ///< the ledger's and the Workflow's key; jitter's seed. Required.
  std::string workflow_id;   ///< Context::workflow_id
  /// The whole operation's time from the first next(), ms; the decisions see it as
  /// Context::deadline_ms. nullopt: the policies' own `limits.deadline`.
  std::optional<std::int64_t> deadline_ms;
  /// Replacements (a decision's `target`) one operation may follow; one more ends it (Decided).
  std::int64_t max_replacements = 4;
  /// Lease of the ledger's claim before a call of a tool that is not idempotent, ms (the claim
  /// reads as unknown once it expires without a report: the worker may have died mid-call).
  std::int64_t ledger_lease_ms = 60'000;
  /// What the host knows of `tool`'s idempotence (e.g. from a trusted MCP server's tool
  /// annotations: idempotent_from_annotations(), adapters.hpp): Context::idempotent of its calls'
  /// decisions, which outranks the policy's `tool { idempotent }` as any context's does, and
  /// whether its calls claim the ledger. nullopt: the policy's. Replacement tools keep their
  /// policies'.
  std::optional<bool> idempotent;
  /// Makes a new idempotency key. Default: 128 random bits as 32 hex digits. Tests pass a
  /// counter.
  std::function<std::string()> new_key;
};

/// The host's side of run(): the callbacks that perform the actions, and the time.
struct RunnerHost {
  /// Performs a Call; returns Success or Failure. Required.
  std::function<Outcome(const Action&)> call;
  /// Answers Repair, Authorize or Escalate with Resume or Abandon. Default: Abandon.
  std::function<Outcome(const Action&)> ask;
  /// ms since the epoch. Default: the system clock.
  std::function<std::int64_t()> clock;
  /// Waits `ms`. Default: a wait on the runner that cancel() ends early. A test's sleeper
  /// advances its own clock instead.
  std::function<void(std::int64_t ms)> sleep;
};

/// Runs one operation. Not copyable; not movable (cancel() may be called from other threads).
class Runner {
 public:
  /// A runner deciding with `engine`, counting in `workflow`, reading and recording tool health
  /// in `health` and side effects in `store`'s ledger (the store `health` was made with;
  /// nullptr: no ledger). All must outlive the runner. Fails with R002 when spec.tool or
  /// spec.operation_id is empty or a number of the spec is negative.
  static Result<std::unique_ptr<Runner>> make(const Engine& engine, Workflow& workflow,
                                              Health& health, std::shared_ptr<Store> store,
                                              RunnerSpec spec);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  /// The next action at now_ms. Before each call the tool's breaker admits it
  /// (Health::admit(), which takes a half-open probe's lease; the report records the probe's
  /// outcome): a call whose circuit is open is not made, the Engine decides with the circuit open
  /// and the runner follows where the policy sends an open circuit (`on_open`: the fallback, a
  /// stop). A `replace` decision, and a `degrade` that names a target, call that tool next.
  /// Asked again without a report, it gives the same step (a Wait with the time left). After a Call
  /// or an ask the runner waits for report(): next() repeats that action. Once Done, always Done.
  /// Never throws.
  Action next(std::int64_t now_ms);
  /// Reports the outcome of the action next() gave: Success or Failure after a Call, Resume or
  /// Abandon after an ask. Fails with R003 (and changes nothing) for an outcome that does not
  /// answer the pending action, or when no action is pending. Never throws.
  Status report(const Outcome& outcome, std::int64_t now_ms);
  /// Changes the arguments of the next call (a body that changed between attempts: resolved
  /// placeholders, a refreshed token): that call takes a new idempotency key unless the value
  /// is the same (canonical JSON; the bytes of a text that is not JSON). Only while no call or
  /// question is out (before a call, during a wait); R003 otherwise. Never throws.
  Status set_arguments(std::string arguments);
  /// Ends the operation: the next next() is Done (Cancelled), and a wait in run() ends now.
  /// Thread-safe; may be called at any time, also before run() starts.
  void cancel() noexcept;
  /// Runs the step machine to its end with the host's callbacks and returns the Done action.
  /// An exception from a callback is reported as a failure of the call (transport error
  /// "host callback failed"); run() never throws.
  Action run(const RunnerHost& host);

 private:
  struct State;
  Runner(const Engine& engine, Workflow& workflow, Health& health, std::shared_ptr<Store> store,
         RunnerSpec spec);
  std::unique_ptr<State> state_;
  std::atomic<bool> cancelled_{false};
  std::mutex wait_mutex_;
  std::condition_variable wait_cv_;
};

}  // namespace recourse
