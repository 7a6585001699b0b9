// Inputs of a decision: the error envelope (untrusted, from the tool's server) and the call
// context (trusted, from the host).
//
// The envelope is the seed's ToolError JSON in camelCase: {code, message, retryable, field,
// suggestion, retryAfterMs, traceId}. read_envelope() reads it with a streaming (SAX) reader and
// never trusts it: a malformed field (wrong type, negative or non-finite number, a duplicate
// key, over a size limit) is read as absent with a warning, never as another valid value. A
// valid but extreme value is kept (a retryAfterMs of years stays years) so the policy's limits
// act on it. Unknown keys are ignored.
//
// The context is the host's own knowledge and is read strictly: a malformed context is an
// error, since guessing a trusted fact (was the payment committed?) would be unsafe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recourse/diagnostic.hpp"
#include "recourse/result.hpp"

namespace recourse {

/// A field the envelope reader dropped or changed, e.g. {"malformed", "retryAfterMs",
/// "expected a finite number >= 0, got a string"}.
struct EnvelopeWarning {
  std::string kind;     ///< "malformed", "duplicate", "oversized", "null"; adapters also
                        ///< "ignored", "contradiction", "no_error_event" and "pushback" (a
                        ///< server's don't-retry pushback, gRFC A6); the CLI "raw_form"
  std::string field;    ///< the envelope key, camelCase
  std::string message;  ///< one sentence for people
};

/// A tool error, read. Every field may be absent (std::nullopt). Strings are kept as received,
/// within ReaderLimits; the code string is matched against a policy's codes only at decide time.
struct Envelope {
  std::optional<std::string> code;
  std::optional<std::string> message;
  std::optional<bool> retryable;
  std::optional<std::string> field;
  std::optional<std::string> suggestion;
  std::optional<std::int64_t>
      retry_after_ms;  ///< ms, >= 0; fractions rounded up (by the written value: 1e-400 is 1,
                       ///< -1e-400 negative, -0 is 0); saturates at INT64_MAX
  std::optional<std::string> trace_id;
  std::vector<EnvelopeWarning> warnings;  ///< what the reader dropped, in input order
  /// The steering detector's categories as a decision already found them in the texts as
  /// received (Decision::steering's layout: the message's in bits 0-15, the suggestion's in
  /// 16-31), for an envelope read back from a decision log whose texts were redacted
  /// (LogOptions): decide() and model_text() use it instead of scanning the redacted texts, so
  /// the record decides as logged. Never read from an envelope's JSON or an adapter (the
  /// server's text cannot vouch for itself); only a reader of the host's own log sets it.
  std::optional<std::uint32_t> steering;
};

/// Limits of the envelope reader. Input beyond max_bytes or max_depth is an error; a string
/// field beyond its limit is dropped with a warning.
struct ReaderLimits {
  std::size_t max_bytes = 64 * 1024;     ///< whole envelope
  std::size_t max_depth = 32;            ///< nesting of objects and arrays (unknown keys included)
  std::size_t max_code_bytes = 64;       ///< code
  std::size_t max_field_bytes = 256;     ///< field and traceId
  std::size_t max_text_bytes = 8192;     ///< message and suggestion
  std::size_t max_overflow_numbers = 8;  ///< numbers beyond a double's range (1e999), each dropped
  /// Envelopes up to this many bytes are read by the SIMD reader where the build has one
  /// (simdjson; about ten times faster, same result), larger ones by the portable reader. Its
  /// buffers are kept per thread and grow to the largest envelope it read there (in powers of
  /// two from 1 KiB), about 15 bytes per byte (120 KiB per thread at this default); 0 turns it
  /// off.
  std::size_t max_simd_bytes = 8 * 1024;
};

/// The largest SteeringLimits::max_scan_bytes: the detector normalizes text into a buffer of
/// this size on the stack.
inline constexpr std::size_t kMaxSteeringScanBytes = 16384;

/// Limits of the steering detector, which reads an envelope's message and suggestion for
/// instructions aimed at the agent (the `suspicious_text` attribute, docs/language.md section 4).
struct SteeringLimits {
  /// Bytes scanned of each text (message, suggestion), from its start; text past it is not
  /// read. Values above kMaxSteeringScanBytes read as kMaxSteeringScanBytes.
  std::size_t max_scan_bytes = 8192;
  /// Shortest run of base64 characters (mixing upper case, lower case and digits) that is an
  /// encoded payload.
  std::size_t min_encoded_chars = 40;
};

/// Reads one envelope from JSON text: the envelope (malformed fields dropped, each with a
/// warning in Envelope::warnings), or a failure N001 when the input is not a JSON object or breaks
/// a whole-input limit (max_bytes, max_depth). Never throws.
Result<Envelope> read_envelope(std::string_view json, const ReaderLimits& limits = {}) noexcept;

/// The envelope as canonical JSON: the seed's keys in order, absent fields left out. read_envelope
/// reads it back to the same envelope (warnings aside).
std::string to_json(const Envelope& envelope);

/// Side-effect state of the call that failed, as the host knows it.
enum class SideEffect : std::uint8_t {
  None,      ///< nothing happened downstream
  Unknown,   ///< the request may have been applied (e.g. a timeout after it was sent)
  Committed  ///< the side effect happened
};

/// A circuit breaker's state for one tool (see recourse::Health).
enum class CircuitState : std::uint8_t { Closed, Open, HalfOpen };

/// What the host knows about the failed call. Durations in ms, counts in calls.
struct Context {
  std::string tool;                       ///< selects the policy in a bundle
  std::optional<bool> idempotent;         ///< per-call override of the tool block's default
  std::optional<SideEffect> side_effect;  ///< absent reads as Unknown (the conservative state)
  std::int64_t attempt = 1;               ///< calls made for this operation at our layer, >= 1
  std::int64_t repairs = 0;               ///< repaired calls made so far, >= 0
  std::int64_t elapsed_ms = 0;            ///< time spent on the operation so far
  std::optional<std::vector<std::string>>
      arguments;  ///< the call's argument names; wins over the tool block
  std::optional<std::int64_t> max_attempts;  ///< per-call override of limits.attempts
  std::optional<std::int64_t>
      deadline_ms;           ///< per-call override of limits.deadline (whole operation)
  std::string operation_id;  ///< keys jitter; falls back to the trace id
  std::string workflow_id;
  std::int64_t lower_retries = 0;  ///< retries a lower layer (an SDK) made; they count as attempts
  std::int64_t repeats = 0;     ///< consecutive identical failures (same tool, code, field, args)
  std::int64_t cost_spent = 0;  ///< cost units this operation has charged so far
  bool idempotency_key_pinned = false;          ///< the call carries a key pinned to the operation
  std::string idempotency_key;                  ///< that key, when the host shares it
  CircuitState circuit = CircuitState::Closed;  ///< this tool's circuit (recourse::Health fills it)
  bool retry_throttled = false;        ///< this tool's retry tokens are at or below half (gRFC A6)
  std::optional<std::int64_t> now_ms;  ///< wall clock, ms since the epoch; gives retry_at_ms
  std::string
      args_hash;  ///< the host's hash of the call's arguments (Workflow counts repeats by it)
  /// The target the call went to (a region, a deployment, a host: the URL authority, say), for
  /// a tool served by several: Health keeps one circuit per tool and endpoint
  /// (circuit_key(), state.hpp), so one failing target does not open the tool's circuit for the
  /// others. Empty: one circuit for the tool.
  std::string endpoint;
  /// A streamed call handed part of its output to the caller before it failed. Unless the host
  /// can take that output back (stream_discard_supported), a resend delivers it twice: the call
  /// reads as side_effect committed (docs/language.md section 13).
  bool stream_output_emitted = false;
  bool stream_discard_supported = false;  ///< the host can discard or supersede partial output
  bool store_unavailable = false;         ///< the state store could not answer (state.hpp): flagged
  /// The last attempt whose retry waited on the server's pushback (a retry decided on an
  /// envelope with retryAfterMs; recourse::Workflow records it): gRFC A6 restarts the backoff
  /// after it, so a retry after attempt n waits the backoff of n - pushback_attempt. 0 (none), or
  /// one at or after `attempt`, changes nothing. docs/language.md section 12.
  std::int64_t pushback_attempt = 0;
  /// Tools a fallback chain passes over for this operation: those the operation has already
  /// called and those whose circuit is open (Workflow::apply(policy, ...) and Health::prepare
  /// add the policy's chain's). A `replace` to the tool's fallback (`tool { fallback = [...] }`)
  /// goes to the chain's first tool not listed; with every one listed, to `stop`.
  /// docs/language.md section 10.
  std::optional<std::vector<std::string>> unavailable_tools;
  /// Retries an outer layer (a wrapper that retries this whole operation, each time running
  /// this layer's attempts again) has made: they count as attempts, as lower_retries do.
  std::int64_t outer_retries = 0;
  /// The run's (the workflow's, a workflowId's) calls, cost units and failed calls so far, of
  /// every tool (run_*) and of this tool (run_tool_*), the failed call included: the `limits`
  /// run budgets (run_calls, run_cost, run_failures and their run_tool_ forms) compare them.
  /// recourse::Workflow counts them across the run's operations (docs/language.md section 10).
  std::int64_t run_calls = 0;
  std::int64_t run_cost = 0;           ///< cost units the run has charged, every tool
  std::int64_t run_failures = 0;       ///< failed calls of the run, every tool
  std::int64_t run_tool_calls = 0;     ///< calls of this tool in the run
  std::int64_t run_tool_cost = 0;      ///< cost units this tool has charged in the run
  std::int64_t run_tool_failures = 0;  ///< failed calls of this tool in the run
};

/// Limits of read_context(). The context is the host's own account of the call, but it travels
/// through files, traces and other languages' bindings, so its size is bounded like any input;
/// past a limit the context is refused (C001) and no decision is made.
struct ContextLimits {
  std::size_t max_bytes = 1 << 20;    ///< the whole JSON text
  std::size_t max_depth = 32;         ///< nesting of objects and arrays, unknown keys' included
  std::size_t max_text_bytes = 4096;  ///< each string: tool, ids, keys, argsHash, each argument
  std::size_t max_arguments = 1024;   ///< names in `arguments`
};

/// Reads a context from JSON with camelCase keys: each Context member's (docs/language.md section
/// 13 lists them with their ranges; docs/schema/context.schema.json is the schema), and
/// nextAttemptIdempotencyKey. `idempotencyKey` is the key string the call carried (null:
/// none); it counts as pinned unless `nextAttemptIdempotencyKey` names a different key (a
/// rotating key makes a resend a new operation); `idempotencyKeyPinned`, when given, says so
/// outright (the decision log writes it). Unknown keys are ignored; a known key with a wrong
/// type or range is an error (C001), and so is a key given twice in any object of the context
/// (keys compared as unescaped), since either value would be a guess; so is a context past
/// `limits`. The errors are diagnostics C001 with no position. Never throws.
Result<Context> read_context(std::string_view json, const ContextLimits& limits = {}) noexcept;

/// The context as JSON with read_context()'s camelCase keys (absent optionals left out), plus
/// "idempotencyKeyPinned"; read_context() reads it back to an equal context.
std::string to_json(const Context& context);

/// A source format of the adapters (adapters.hpp) and of a policy's `map` lines.
enum class Protocol : std::uint8_t { Http, Grpc, Mcp, JsonRpc };

/// "http", "grpc", "mcp", "jsonrpc".
const char* to_string(Protocol protocol) noexcept;

/// One per-tool override of an adapter's table: a policy's `map` line (Policy::mappings()), for
/// AdapterOptions::mappings.
struct CodeMapping {
  Protocol protocol = Protocol::Http;  ///< Mcp and JsonRpc mappings both apply to JSON-RPC errors
  std::string key;   ///< "409"; "ALREADY_EXISTS" or "6"; "-32001"; or an HTTP body error type
  std::string code;  ///< the envelope code to give instead
};

}  // namespace recourse
