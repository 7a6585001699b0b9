// Trace lines and the state a trace carries: what `recourse replay` reads and `recourse fuzz`
// writes (docs/language.md, section 11).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "cli.hpp"
#include "recourse/state.hpp"

namespace recourse::cli {

/// One line of a trace, read: a failure (its envelope, read as written or by a raw form's
/// adapter) or a success, with its context and the line's time (ms).
struct TraceLine {
  Envelope envelope;
  bool envelope_ok = true;  ///< false: the envelope (or raw form) could not be read
  Context context;
  bool success = false;
  /// A decision-log record (engine.hpp's to_json(DecisionRecord)) rather than a trace line: its
  /// context is the one the engine decided with, state already filled in, so it is decided as
  /// it is.
  bool record = false;
  /// A decision-log record whose message or suggestion the log redacted (its "input.redacted"
  /// note, LogText::Redact): the envelope holds the redacted texts and, in Envelope::steering,
  /// what the steering detector found in them as received, so it decides as logged.
  bool redacted = false;
  /// An operator's breaker command as `recourse breaker --log` writes it ({"breaker", "tool",
  /// ...}): no decision; replay counts and skips it.
  bool command = false;
  std::int64_t now_ms = 0;
};

/// Parses one trace line, or one decision-log record ({"input": {"envelope", "context"}, ...}).
/// A line that is neither (or has an invalid context) is reported on stderr, prefixed with
/// `where`, and gives nullopt. A line's "envelope" is read as
/// `from` says (read_failure(): "" an envelope, "auto" a raw form when it looks like one).
std::optional<TraceLine> parse_trace_line(const std::string& text, const std::string& where,
                                          const Bundle& bundle, const std::string& from = "");

/// The state of one trace: a Workflow per workflowId and one Health for the run.
class TraceState {
 public:
  /// `store` keeps the workflows' counters and the tools' health (nullptr: this process's own
  /// memory).
  explicit TraceState(const Bundle& bundle, std::shared_ptr<Store> store = nullptr);
  /// Decides a failure line with the state filled in and records it (section 11's order); a
  /// success line is recorded and gives nullopt. Lines without a workflowId, and decision-log
  /// records, neither read nor change the state. The line's context is updated to what the decision
  /// saw.
  std::optional<Decision> step(TraceLine& line);

 private:
  const Bundle& bundle_;
  std::shared_ptr<Store> store_;
  std::map<std::string, Workflow> workflows_;
  Health health_;
};

}  // namespace recourse::cli
