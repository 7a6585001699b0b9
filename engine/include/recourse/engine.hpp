// A long-lived host object: the current Bundle, swapped atomically while other threads decide
// (hot reload), with an optional decision log and decision counters.
//
// Reload semantics. reload() compiles first and swaps only a complete bundle: a failed compile
// keeps the bundle in use and returns the diagnostics, and so do sources that hold no policy at
// all (E004: an empty path list or an emptied directory never empties a host). Each thread
// decides with a snapshot of the engine's state it refreshes after every swap; a decision's
// strings stay valid while its thread's snapshot holds the bundle (until that thread's next
// decision after a swap), and pinned() hands the snapshot's bundle to a host that keeps
// decisions longer.
//
// The read path takes no lock and writes nothing shared. A swap bumps an atomic generation
// counter; decide() compares it (one acquire load) with the generation of its thread's cached
// snapshot and uses the snapshot when they agree. Only the first decide() on a thread after a
// swap (or the first ever) takes the engine's mutex, once, to copy the new snapshot. A
// std::atomic_load of a shared_ptr is not used: libstdc++ implements it with a mutex pool. Cost of
// the choice: a thread keeps its last snapshot (and so the previous bundle) alive until it decides
// again or exits, also after the Engine is gone.
//
// Shadow policies. A candidate bundle may sit beside the live one (set_candidate(),
// reload_candidate(), drop_candidate()): every decision for a tool the candidate has a policy
// for is then decided by the candidate too, with the same envelope and the same context, and the
// live decision is what decide() returns. (So a candidate may hold just the policies that change;
// the tools it lacks are not shadowed, and a removed policy is not either.)
// The candidate only decides: Bundle::decide() is pure, and Workflow, Health and the stores are
// filled and recorded by the host around Engine::decide() with the live decision alone, so the
// candidate takes no tokens, probes, ledger claims or counts. Where the two disagree
// (shadow_differences()), the decision log's record carries the candidate's decision too and
// shadow_counters() counts the pair of rules. A candidate is swapped and dropped as a reload is:
// atomically, and a candidate that fails to compile leaves both bundles as they were. The
// pattern is Istio's authorization dry-run and Envoy's shadow rules; `recourse replay --shadow`
// runs it over a trace or a decision log.
//
// Thread-safety: every member function may be called from any thread at any time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "recourse/policy.hpp"

namespace recourse {

/// One decision with its inputs, as the decision log receives it. All three references are
/// valid only during the log callback; copy what must outlive it.
struct DecisionRecord {
  const Envelope& envelope;  ///< as read (malformed fields dropped, their warnings kept)
  const Context& context;    ///< as decided (with whatever Workflow and Health filled in)
  const Decision& decision;  ///< what the engine decided
  /// The candidate bundle's decision when it disagrees with `decision` (Engine::set_candidate),
  /// else nullptr.
  const Decision* candidate = nullptr;
  std::uint32_t differences = 0;  ///< ShadowDifference bits, with `candidate`
};

/// How the decision log writes the envelope's untrusted texts, `message` and `suggestion`.
enum class LogText : std::uint8_t {
  /// Each text as modelMessage's rules leave it (model_text(), adapters.hpp): controls, ANSI
  /// escapes, invisible Unicode and HTML stripped, likely secrets replaced by [redacted], cut at
  /// LogOptions::max_text_bytes; the steering categories found in the texts as received are
  /// written beside them instead of a flag in the text. The default.
  Redact,
  /// Each text as read (within ReaderLimits::max_text_bytes): for a log kept where secrets and
  /// hostile text may rest.
  Keep,
};

/// Options of the decision log's record (to_json(DecisionRecord, LogOptions)).
struct LogOptions {
  LogText text = LogText::Redact;
  /// UTF-8 bytes of each redacted text, the ellipsis of a cut text included (LogText::Redact).
  std::size_t max_text_bytes = 1024;
};

/// The record as one line of JSON (no newline), the decision log's schema (docs/embedding.md,
/// docs/schema/decision-log.schema.json): {"policy", "policyHash", "rule", "route", "traceId",
/// "tool", "input": {"envelope", "context"}, "result": <to_json(decision, envelope)>}, and with a
/// disagreeing candidate "shadow": {"differences": ["route", ...], "result": <the candidate's
/// decision>}. "input.context" uses read_context()'s keys, plus "idempotencyKeyPinned". With
/// LogText::Redact, a record whose message or suggestion the redaction changed has
/// "input.redacted": {"fields": ["message", ...], "steering": <Decision::steering of the texts as
/// received>}, which a reader hands on as Envelope::steering so the record decides as logged.
/// `code`, `field` and `traceId` are written as read: the policy compares them byte for byte
/// (ReaderLimits bounds them to 64, 256 and 256 bytes).
std::string to_json(const DecisionRecord& record, const LogOptions& options = {});

/// What a candidate's decision changes (bits of shadow_differences()).
enum ShadowDifference : std::uint32_t {
  kShadowRoute = 1u << 0,      ///< the route
  kShadowTarget = 1u << 1,     ///< the replace or degrade target
  kShadowRule = 1u << 2,       ///< the rule (or guard) that decided, or the policy
  kShadowDelay = 1u << 3,      ///< delay_ms, retry_at_ms or timeout_ms
  kShadowKey = 1u << 4,        ///< the idempotency-key directive
  kShadowExhausted = 1u << 5,  ///< the budget that ran out
};

/// Each ShadowDifference bit with its name in the log and in `replay --shadow`.
inline constexpr std::pair<std::uint32_t, const char*> kShadowDifferenceNames[] = {
    {kShadowRoute, "route"}, {kShadowTarget, "target"},      {kShadowRule, "rule"},
    {kShadowDelay, "delay"}, {kShadowKey, "idempotencyKey"}, {kShadowExhausted, "exhausted"}};

/// The ShadowDifference bits between two decisions of the same inputs (0: they agree). Reasons,
/// warnings and budgets left are not compared: they follow from the rule and the route.
std::uint32_t shadow_differences(const Decision& live, const Decision& candidate) noexcept;

/// Receives each decision on the thread that made it, before decide() returns. It must be
/// thread-safe when the engine decides on several threads; an exception it throws is caught and
/// dropped (decide() never throws).
using DecisionLog = std::function<void(const DecisionRecord&)>;

/// Decision counts since the engine was made, summed over the threads that decided.
struct DecisionCounters {
  std::uint64_t decisions = 0;                  ///< decide() and unreadable() calls
  std::map<std::string, std::uint64_t> routes;  ///< "retry", "stop", ...
  /// policy name ("" without a policy) -> rule (or "default", or a guard such as
  /// "budget:attempts") -> decisions
  std::map<std::string, std::map<std::string, std::uint64_t>> rules;
  std::map<std::string, std::uint64_t> exhausted;  ///< budget name ("attempts", ...) -> decisions
};

/// The counters as JSON: {"decisions", "routes": {route: n}, "rules": {policy: {rule: n}},
/// "exhausted": {budget: n}}.
std::string to_json(const DecisionCounters& counters);

/// Counts of the candidate's decisions since the engine was made (all zero without a candidate).
struct ShadowCounters {
  std::uint64_t decisions = 0;      ///< decisions the candidate decided too (it had the tool)
  std::uint64_t disagreements = 0;  ///< of them, those where shadow_differences() was not 0
  /// policy -> "live rule -> candidate rule" -> disagreements
  std::map<std::string, std::map<std::string, std::uint64_t>> rules;
  std::map<std::string, std::uint64_t> differences;  ///< difference name -> disagreements
};

/// The counters as JSON: {"decisions", "disagreements", "rules": {policy: {"a -> b": n}},
/// "differences": {name: n}}.
std::string to_json(const ShadowCounters& counters);

/// Options fixed for the engine's life.
struct EngineOptions {
  /// Count decisions per route, rule and exhausted budget (counters()). Opt-in: each count
  /// locks the calling thread's own counter shard, a mutex no other thread takes except
  /// counters() while it reads; off, decide() touches nothing but its snapshot.
  bool count = false;
};

/// The current bundle of a host, reloadable while other threads decide. Not copyable.
class Engine {
 public:
  /// An engine deciding with `bundle` (default: no policies, every decision is stop with
  /// kNoPolicy).
  explicit Engine(Bundle bundle = {}, EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Compiles `sources` and, when they compile to at least one policy, swaps the result in: the
  /// new generation (generation() after the call), with the compile's warnings. A failure keeps
  /// the bundle in use and gives the errors (E004 for sources without a policy). Never throws.
  Result<std::uint64_t> reload(const std::vector<Source>& sources,
                               const CompileOptions& options = {});
  /// Compiles files and directories (as compile_paths()) and swaps the result in, as reload().
  /// Never throws.
  Result<std::uint64_t> reload_paths(const std::vector<std::string>& paths,
                                     const CompileOptions& options = {});
  /// Swaps in an already compiled bundle; returns the new generation.
  std::uint64_t swap(Bundle bundle);
  /// Sets (or, with an empty function, removes) the decision log; takes effect like a swap (and
  /// counts as one in generation()). Returns the new generation.
  std::uint64_t set_log(DecisionLog log);

  /// Compiles `sources` and makes the result the candidate (shadow policies, above); a failure
  /// (or sources without a policy, E004) keeps the bundles as they were. Returns the new
  /// generation. Never throws.
  Result<std::uint64_t> reload_candidate(const std::vector<Source>& sources,
                                         const CompileOptions& options = {});
  /// As reload_candidate(), from files and directories (compile_paths()).
  Result<std::uint64_t> reload_candidate_paths(const std::vector<std::string>& paths,
                                               const CompileOptions& options = {});
  /// Makes `bundle` the candidate; returns the new generation.
  std::uint64_t set_candidate(Bundle bundle);
  /// Drops the candidate (nothing is shadowed any more); returns the new generation.
  std::uint64_t drop_candidate();
  /// The candidate, or nullptr without one.
  std::shared_ptr<const Bundle> candidate() const;
  /// A sum of every thread's shadow counts.
  ShadowCounters shadow_counters() const;

  /// Decides with the current bundle (Bundle::decide), logs and counts; with a candidate, decides
  /// with it too (a second decision's time) and counts and logs a disagreement. Never throws; no
  /// lock and no shared write unless a swap happened since this thread's last call (or `count`,
  /// or a candidate).
  /// The decision's strings view the bundle of this thread's snapshot: valid until this thread's
  /// next decide() or unreadable() after a swap, or its exit; pinned() keeps them longer.
  Decision decide(const Envelope& envelope, const Context& context) const noexcept;
  /// Bundle::unreadable() with the current bundle, logged and counted like decide().
  Decision unreadable(const Context& context) const noexcept;

  /// The bundle in use (for find(), Health, explain()); kept alive by the pointer.
  std::shared_ptr<const Bundle> bundle() const;
  /// The bundle this thread's last decide() or unreadable() used (the bundle in use if it has
  /// not decided yet): holding it keeps that decision's strings valid across reloads.
  std::shared_ptr<const Bundle> pinned() const;
  /// Swaps so far (swap(), successful reloads, set_log(), candidate changes): 0 for the
  /// constructor's state.
  std::uint64_t generation() const noexcept;
  /// A sum of every thread's counters (all zero unless EngineOptions::count).
  DecisionCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace recourse
