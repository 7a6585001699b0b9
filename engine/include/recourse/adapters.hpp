// Adapters: what a failed tool call actually returned (an HTTP response, a transport error, a
// gRPC status, an MCP CallToolResult, a JSON-RPC error) -> the envelope a policy decides on; and
// the text about a failure that may reach the next model turn.
//
// Most tools never send the seed's envelope. An adapter reads the protocol's own error form and
// fills the envelope's fields, with the same hardening as read_envelope(): a malformed value
// (a garbled status, a Retry-After of "nan", "-1" or "1e999", a duplicated singleton header, a
// string over its ReaderLimits cap) is read as absent with an EnvelopeWarning, never as another
// valid value; unknown or garbled input maps to UNKNOWN, never to TRANSIENT. An adapter never
// throws and never sets anything the context owns (idempotent, sideEffect): an absent sideEffect
// already reads as unknown, which is what a timeout of a non-idempotent call needs.
//
// The full tables, with examples, are in docs/adapters.md. In short (the code is the envelope's
// `code`; "retry" is its `retryable`; "-" leaves it absent):
//
// HTTP (RFC 9110 section 15 unless noted)
//   status                               code            retry  source
//   202 Accepted                         PENDING         true   15.3.3 (not yet processed)
//   400 Bad Request                      VALIDATION      false  15.5.1 (field, suggestion: body)
//   401 Unauthorized                     PERMISSION      false  15.5.2; WWW-Authenticate (11.6.1)
//   402 Payment Required                 QUOTA_EXCEEDED  false  15.5.3
//   403 Forbidden                        PERMISSION      false  15.5.4 (see "body outranks")
//   404 Not Found, 410 Gone              NOT_FOUND       false  15.5.5, 15.5.11
//   405 Method Not Allowed               NOT_FOUND       false  15.5.6 (no such operation)
//   408 Request Timeout                  TIMEOUT         true   15.5.9 (request never arrived)
//   409 Conflict                         CONFLICT        false  15.5.10
//   412 Precondition Failed              CONFLICT        false  15.5.13 (a lost update)
//   413 Content Too Large                VALIDATION      false  15.5.14 (Retry-After: TRANSIENT)
//   406 411 414-417 421 422              VALIDATION      false  15.5.7-15.5.21 (422: field)
//   428 Precondition Required            VALIDATION      false  RFC 6585 section 3
//   429 Too Many Requests                RATE_LIMITED    true   RFC 6585 section 4
//   431 Request Header Fields Too Large  VALIDATION      false  RFC 6585 section 5
//   500 502 503                          TRANSIENT       true   15.6.1, 15.6.3, 15.6.4
//   501 Not Implemented                  NOT_FOUND       false  15.6.2
//   504 Gateway Timeout                  TIMEOUT         true   15.6.5
//   505 HTTP Version Not Supported       UNKNOWN         false  15.6.6
//   511 Network Authentication Required  PERMISSION      false  RFC 6585 section 6
//   529 (Anthropic: overloaded)          TRANSIENT       true   provider documented
//   a 2xx with a valid Retry-After (10.2.3) or a body that says the work is not done (Google
//     `done: false`; `status` NotStarted, Running, InProgress (Azure), queued, in_progress,
//     validating, finalizing (OpenAI), pending, processing (ACME, RFC 8555 section 7.1.6))
//                                        PENDING         true
//   any other status                     UNKNOWN         -      (RFC 9110 section 15 reads an
//                                                               unknown 5xx as 500; here unknown
//                                                               input is never TRANSIENT)
//   Retry-After (10.2.3): delay-seconds or an HTTP-date (5.6.7: IMF-fixdate, RFC 850, asctime)
//   against now_ms (else the response's Date header); a past date is 0; a fraction ("0.503") is
//   rounded up to whole seconds; anything else is absent with a warning. Also retry-after-ms
//   (OpenAI, Anthropic). On a rate limit, also the resets of the limits that are spent:
//   RateLimit's `t` where `r=0` (draft-ietf-httpapi-ratelimit-headers-10 section 4, a List of
//   RFC 9651 parsed strictly, a malformed field ignored whole; also on an exhausted quota),
//   RateLimit-Reset (delta seconds), X-RateLimit-Reset (delta seconds, epoch seconds or epoch ms
//   by magnitude), OpenAI's x-ratelimit-reset-* (Go durations, "6m0s"), Anthropic's
//   anthropic-ratelimit-*-reset (RFC 3339), and those OpenRouter relays in the body
//   (error.metadata.headers); the longest valid hint wins.
//   x-should-retry and Stripe-Should-Retry ("true" / "false") are the server's claim on
//   `retryable`: false always holds, true overrides the status table only; a contradiction warns.
//   Body (RFC 9457 problem details, or a provider's JSON): message from detail/title/message;
//   field and suggestion from `errors` [{pointer, detail}] (RFC 9457 section 3), `invalid-params`
//   [{name, reason}] (RFC 7807 section 3), OpenAI's `param`, or google.rpc.BadRequest field
//   violations; google.rpc.RetryInfo's delay.
//   The body outranks the status where the provider documents it:
//     error type/code insufficient_quota, billing_hard_limit_reached  -> QUOTA_EXCEEDED, false
//     error type/code context_length_exceeded, or a 400/413/422 whose message says the context
//       or prompt is too long                                         -> CONTEXT_OVERFLOW, false
//     error type overloaded_error                                      -> TRANSIENT, true
//     error type/code rate_limit_error, rate_limit_exceeded (4xx)      -> RATE_LIMITED, true
//     403 with a rate-limit message, X-RateLimit-Remaining: 0 or Retry-After (GitHub)
//                                                                      -> RATE_LIMITED, true;
//       a "secondary rate limit" waits at least secondary_rate_limit_min_ms (60 s)
//     409 with code idempotency_key_in_use (Stripe: resend the same key) -> CONFLICT, true
//     4xx with type idempotency_error (Stripe) or code IDEMPOTENCY_KEY_REUSED (Square)
//                                                 -> VALIDATION, false, field idempotency_key
//     4xx with an OAuth 2.0 error (the body's `error` string, else WWW-Authenticate's error
//       parameter; RFC 6749 5.2, RFC 6750 3.1, RFC 8628 3.5): invalid_grant, invalid_token,
//       invalid_client, insufficient_scope ... -> PERMISSION, false; invalid_request ->
//       VALIDATION, false (not on a 401 or 403); temporarily_unavailable -> TRANSIENT, true
//     an AWS code (__type, Code, x-amzn-ErrorType) on botocore's standard-mode throttling
//       list -> RATE_LIMITED, true; RequestTimeout(Exception) -> TIMEOUT, true
//     4xx whose google.rpc details (AIP-193 QuotaFailure quotaId or quotaMetric, ErrorInfo
//       metadata quota_limit) name a per-day or per-month quota       -> QUOTA_EXCEEDED, false
//     problem type ...http-problem-types#quota-exceeded                -> QUOTA_EXCEEDED, false
//     problem type ...#abnormal-usage-detected                         -> PERMISSION, false
//     problem type ...#temporary-reduced-capacity                      -> RATE_LIMITED, true
//   An event stream (Content-Type text/event-stream; HTML Living Standard section 9.2.6) is read
//   for its first error event, whose JSON is read as the body above; none: a warning.
//   A body that is itself an envelope (a string `code` naming a built-in code, or a `retryable`
//   key) is read with read_envelope() and its fields win over the status's.
//   traceId from the envelope body, else traceparent's trace-id, X-Request-Id, Request-Id,
//   X-GitHub-Request-Id, X-Amzn-RequestId.
//
// Transport errors (no HTTP status): "timeout", "timed out", ETIMEDOUT, "no response" ->
//   TIMEOUT, true; ECONNRESET, "socket hang up", EPIPE, ECONNREFUSED, ENOTFOUND, EAI_AGAIN,
//   ECONNABORTED, EHOSTUNREACH, ENETUNREACH -> TRANSIENT, true; anything else UNKNOWN, -.
//
// gRPC (status codes doc; gRFC A6 for pushback), by name or number
//   UNAVAILABLE 14 TRANSIENT true         RESOURCE_EXHAUSTED 8 RATE_LIMITED true
//   DEADLINE_EXCEEDED 4 TIMEOUT true      ABORTED 10 CONFLICT true
//   INVALID_ARGUMENT 3, OUT_OF_RANGE 11 VALIDATION false
//   FAILED_PRECONDITION 9, ALREADY_EXISTS 6 CONFLICT false
//   PERMISSION_DENIED 7, UNAUTHENTICATED 16 PERMISSION false
//   NOT_FOUND 5, UNIMPLEMENTED 12 NOT_FOUND false
//   INTERNAL 13, DATA_LOSS 15, CANCELLED 1 UNKNOWN false      UNKNOWN 2 UNKNOWN -
//   OK 0, or anything else: UNKNOWN - with a warning
//   RESOURCE_EXHAUSTED whose details name a per-day or per-month quota: QUOTA_EXCEEDED false
//   google.rpc details in JSON (a raw form's `details`) or in the grpc-status-details-bin
//   trailer (a base64 google.rpc.Status, read within AdapterOptions::status_details; a code
//   that differs from the status, or malformed bytes: ignored with a warning)
//   grpc-retry-pushback-ms: a non-negative integer is retryAfterMs; a negative or malformed one
//   means "do not retry" (gRFC A6): retryable false, with a warning of kind "pushback", by which
//   recourse::Health counts the failure for retry throttling whatever its code.
//
// JSON-RPC 2.0 (section 5.1) and MCP protocol errors (revisions 2025-11-25, 2026-07-28)
//   -32700 Parse error, -32600 Invalid Request, -32602 Invalid params  VALIDATION false
//   -32602 naming an unknown tool or a missing resource ("Unknown tool: x", data exactly {uri})
//                                                                      NOT_FOUND false
//   -32601 Method not found                                            NOT_FOUND false
//   -32002 Resource not found (MCP resources up to 2025-11-25)         NOT_FOUND false
//   -32042 URL elicitation required (2025-11-25)                       PERMISSION false
//   -32001 the SDKs' request timeout                                   TIMEOUT -
//     ("Session not found", a 2025 TypeScript server's, is NOT_FOUND false)
//   -32020 HeaderMismatch, -32022 UnsupportedProtocolVersion (2026-07-28) UNKNOWN false
//   -32021 MissingRequiredClientCapability (2026-07-28)                NOT_FOUND false
//   -32603 Internal error, any other code                              UNKNOWN -
//
// MCP tool-execution errors (CallToolResult with isError true; the spec keeps them apart from
// protocol errors): structuredContent carrying an envelope is that envelope; text content that
// is itself a JSON error object (an envelope, or an error body) gives its message, field and
// suggestion, and its code only when that code is a built-in one no policy retries by itself
// (VALIDATION, PERMISSION, NOT_FOUND, CONFLICT, QUOTA_EXCEEDED, CONTEXT_OVERFLOW) with
// retryable only when false; otherwise UNKNOWN with the text content as the message. Text
// never unlocks a riskier route: the other reclassification is UNKNOWN -> PERMISSION when the
// text reports an expired or invalid
// credential (a 401, "unauthorized", "invalid_token", "token expired"), because authorize is
// the safer, human-gated route. A transport-level HTTP status that is not 2xx goes through the
// HTTP table (a 401 with WWW-Authenticate is PERMISSION). Tool annotations (idempotentHint,
// readOnlyHint, destructiveHint) come from an untrusted server: they set
// Result<Adapted>::idempotent only when AdapterOptions::trusted_server is true.
//
// Per-tool overrides: AdapterOptions::mappings replace a table's code (HTTP status, gRPC status,
// JSON-RPC code) for one tool; a policy's `map` lines (Policy::mappings()) are such mappings. An
// HTTP mapping keyed by a string matches the body's error type or code (a problem `type` URI, an
// OpenAI or Anthropic error type, a Google error status) and outranks everything; a numeric one
// replaces the status row but not a body's documented reclassification. A mapping changes the
// code only; retryable stays what the protocol says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "recourse/envelope.hpp"

namespace recourse {

/// The protocol named by `name`'s first word (up to a space or a '+'), case-insensitively ("mcp
/// over streamable http" is Mcp, "http+sse" Http); also "json-rpc". nullopt for anything else.
std::optional<Protocol> protocol_of(std::string_view name) noexcept;

/// Header (or gRPC metadata) fields in order, names as received; lookups ignore case. A field
/// given twice is two entries.
using Headers = std::vector<std::pair<std::string, std::string>>;

/// How much of the untrusted text an adapter composes itself (not a body's JSON fields, which
/// `ReaderLimits` caps) it copies into an envelope, in bytes; longer text is cut there, then
/// made valid UTF-8. Each cap keeps a hostile header or body from filling `message` or
/// `suggestion` with text nobody wrote as an error message.
struct AdapterTextLimits {
  std::size_t auth_scheme_bytes = 32;  ///< WWW-Authenticate's scheme, in a 401's suggestion
  std::size_t auth_error_bytes = 64;   ///< its `error="..."` parameter (RFC 6750 section 3)
  std::size_t html_sniff_bytes = 512;  ///< body bytes searched for `<html` or `<!doctype`
  std::size_t plain_body_bytes = 200;  ///< a plain-text body's first line after the status line
  std::size_t transport_error_bytes = 1024;  ///< a transport error's text in `message`
};

/// Limits of gRPC's `grpc-status-details-bin` trailer: a binary google.rpc.Status (base64,
/// padded or not), read by a bounded protobuf wire-format reader of the few messages AIP-193
/// names (RetryInfo, BadRequest, ErrorInfo, QuotaFailure). A trailer over max_bytes, or whose
/// Status is not well-formed protobuf, is ignored whole with a warning; a detail past
/// max_details, a detail that is not well-formed, or a string over max_string_bytes is skipped
/// alone with one warning. Nothing is allocated before the length is checked.
struct StatusDetailsLimits {
  std::size_t max_bytes = 8192;  ///< the decoded Status, in bytes
  /// Messages nested deeper are skipped unread. The reader needs 4: Status > Any > a detail
  /// (QuotaFailure) > its part (a violation, a metadata entry, RetryInfo's Duration).
  std::size_t max_depth = 4;
  std::size_t max_details = 16;        ///< google.protobuf.Any details read, in order
  std::size_t max_string_bytes = 512;  ///< one string: a message, reason, field, quota id, ...
};

/// Options of every adapter.
struct AdapterOptions {
  ReaderLimits limits;     ///< the envelope reader's limits; a body beyond max_bytes is ignored
  AdapterTextLimits text;  ///< caps on text the adapter composes from headers and bodies
  StatusDetailsLimits status_details;   ///< gRPC's grpc-status-details-bin trailer
  std::size_t max_raw_bytes = 1 << 20;  ///< a whole raw form (from_raw); beyond it: not ok
  std::vector<CodeMapping> mappings;    ///< per-tool overrides, first match wins
  bool trusted_server = false;          ///< MCP: honour the tool's annotations
  std::int64_t secondary_rate_limit_min_ms = 60'000;  ///< GitHub: "wait at least one minute"
};

/// What an adapter read: the envelope and how it was made.
struct Adapted {
  Envelope envelope;
  std::string mapping;  ///< the table row that gave the code, e.g. "http 429", "grpc UNAVAILABLE"
  std::optional<bool> idempotent;  ///< MCP annotations of a trusted server; else nullopt
};

/// Each adapter returns the envelope it read, or a failure N001 when a raw JSON form (from_raw,
/// from_mcp) is not a JSON object, breaks a whole-input limit or names no protocol, or when the
/// adapter itself failed (out of memory). The typed entry points (from_http, from_grpc, ...)
/// fail only so.

/// An HTTP response: status (100..599; anything else is garbled), header fields, the body as
/// received (JSON is read when it is a JSON object; other text is kept out of `message` except a
/// short plain-text line). A body whose Content-Type is text/event-stream is parsed as
/// server-sent events (HTML Living Standard section 9.2.6) and its first error event (Anthropic's
/// `event: error`, OpenAI's `{"error": ...}` data, `type: "error"` or `response.failed`) is read
/// as that provider's JSON error body; without one, the body is text, with a `no_error_event`
/// warning. `now_ms` (ms since the epoch) turns HTTP-dates and epoch resets into delays; without
/// it the response's Date header is the clock.
Result<Adapted> from_http(int status, const Headers& headers, std::string_view body,
                          std::optional<std::int64_t> now_ms,
                          const AdapterOptions& options = {}) noexcept;

/// A failure below HTTP: the client library's error text ("ECONNRESET", "read timeout").
Result<Adapted> from_transport_error(std::string_view error,
                                     const AdapterOptions& options = {}) noexcept;

/// A gRPC status: its name ("UNAVAILABLE") or number ("14"), message and trailing metadata.
Result<Adapted> from_grpc(std::string_view status, std::string_view message,
                          const Headers& metadata, const AdapterOptions& options = {}) noexcept;

/// A JSON-RPC error object's members; `data_json` is the `data` member as JSON text (or empty).
Result<Adapted> from_jsonrpc(std::int64_t code, std::string_view message,
                             std::string_view data_json,
                             const AdapterOptions& options = {}) noexcept;

/// An MCP tools/call reply as JSON text: a JSON-RPC response ({"result": ...} or
/// {"error": ...}) or a bare CallToolResult ({"content": [...], "isError": true}).
Result<Adapted> from_mcp(std::string_view reply_json, const AdapterOptions& options = {}) noexcept;

/// The raw form as one JSON object (the CLI's and the trace's input), per protocol:
///   http:    {"status": 429, "headers": {"Retry-After": "5"}, "body": {...} | "text",
///             "transportError": "ECONNRESET"}        (status null: transportError is read)
///   grpc:    {"status": "UNAVAILABLE" | 14, "message": "...", "metadata": {...},
///             "details": [google.rpc detail objects]} ("code" is read when "status" is absent)
///   mcp:     {"result": CallToolResult} | {"error": {code, message, data}}, optionally with
///            "httpStatus" and "headers" (streamable HTTP) and "annotations" (the tool's)
///   jsonrpc: {"error": {"code": -32602, "message": "...", "data": ...}} or the error object
/// Header and metadata values are strings (a list of strings for a repeated field). Other keys
/// are ignored. `protocol` nullopt: the object's "protocol" member (see protocol_of) decides.
Result<Adapted> from_raw(std::optional<Protocol> protocol, std::string_view raw_json,
                         std::optional<std::int64_t> now_ms,
                         const AdapterOptions& options = {}) noexcept;

/// The protocol of a raw form, for a host (or `--from auto`) that does not know it: the object's
/// "protocol" member when it names one, else its shape: an integer "status" or a
/// "transportError" is http; a string "status", "metadata" or "details" is grpc; "result",
/// "isError", "content", "structuredContent" or "httpStatus" is mcp; an "error" object with an
/// integer "code" is jsonrpc. nullopt when `raw_json` is no JSON object, or an envelope (its
/// "code" is a string), or none of these shapes.
std::optional<Protocol> raw_form_protocol(std::string_view raw_json) noexcept;

/// MCP tool annotations ({"idempotentHint": true, "readOnlyHint": false, ...}) as the
/// `idempotent` they imply: nullopt unless `trusted` (readOnlyHint or idempotentHint true: true;
/// destructiveHint true with neither: false).
std::optional<bool> idempotent_from_annotations(std::string_view annotations_json,
                                                bool trusted) noexcept;

/// Limits of the model-facing text.
struct ModelTextOptions {
  std::size_t max_bytes = 400;  ///< UTF-8 bytes, the ellipsis included
  SteeringLimits steering;      ///< the steering detector's limits
};

/// What the next model turn may read about a failure.
struct ModelText {
  std::string text;
  bool stripped = false;          ///< control characters, ANSI escapes or HTML were removed
  bool redacted = false;          ///< likely secrets were replaced by [redacted]
  bool instruction_like = false;  ///< the text reads like instructions to the model (flagged)
  bool truncated = false;         ///< cut at max_bytes
  /// The steering categories found in the message, field or suggestion (bits as in
  /// Decision::steering's low half); instruction_like is `steering != 0`.
  std::uint32_t steering = 0;
};

/// The model-facing text of an envelope, derived from message, field and suggestion (or the
/// code alone): control characters, ANSI escapes, invisible Unicode and HTML stripped, bearer
/// tokens, API keys (sk-..., ghp_..., AKIA..., JWTs), passwords in URLs and secret=value pairs
/// redacted, instruction-like text (the steering detector's categories, docs/language.md section
/// 4, found in the message, field or suggestion as received) marked with a leading "[flagged:
/// instruction-like text from the tool: CATEGORIES]", and the whole cut at max_bytes on a
/// character boundary. Deterministic; never throws on any input.
ModelText model_text(const Envelope& envelope, const ModelTextOptions& options = {});

}  // namespace recourse
