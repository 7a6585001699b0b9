// Adapters, the protocol steps: each reads one protocol's failure into the envelope under
// construction (builder.hpp), in the order of the tables in recourse/adapters.hpp and
// docs/adapters.md. The typed entry points and the raw forms (adapters.cpp) call them.
//
//   http.cpp  header fields, the status table (RFC 9110 section 15, RFC 6585), Retry-After (RFC
//             9110 section 10.2.3) and rate-limit resets, the HTTP adapter, transport errors
//   sse.cpp   the error event of a text/event-stream body (HTML Living Standard, section 9.2.6)
//   grpc.cpp  the status table (grpc/doc/statuscodes.md) and grpc-retry-pushback-ms (gRFC A6)
//   mcp.cpp   JSON-RPC 2.0 errors (section 5.1) and MCP replies (specification revisions
//             2025-06-18, 2025-11-25, 2026-07-28: error codes, CallToolResult,
//             structuredContent, tool annotations, streamable HTTP)
//
// Input: the typed values, or members of a raw form's DOM (json.hpp). Output: the Builder's
// envelope, mapping label and warnings; nothing throws but allocation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/builder.hpp"
#include "adapters/json.hpp"
#include "recourse/adapters.hpp"

namespace recourse::detail::adapt {

/// One header field by name (ASCII case-insensitive): the last value, and whether the field
/// appears more than once (a repeated field is read as absent by the hints that use it).
struct HeaderValue {
  bool present = false;
  bool repeated = false;
  std::string value;
};
HeaderValue header(const Headers& headers, std::string_view name);

/// traceparent's trace-id (W3C Trace Context), else the first request-id header.
std::optional<std::string> trace_id_of(const Headers& headers);

/// A table's retryable column: 1 true, 0 false, -1 absent.
inline std::optional<bool> tri(int v) {
  return v < 0 ? std::nullopt : std::optional<bool>(v == 1);
}

/// Raises `into` to `hint` when there is one: the longest hint wins (never retry earlier than
/// any hint asked).
inline void keep_longest(std::optional<std::int64_t>& into, std::optional<std::int64_t> hint) {
  if (hint) into = std::max(into.value_or(0), *hint);
}

/// The HTTP adapter. `body_json` is the body when it is JSON; `body_text` otherwise.
void http(Builder& b, int status, const Headers& headers, const json* body_json,
          std::string_view body_text, std::optional<std::int64_t> now_ms);

/// True when the response's Content-Type (given once) is text/event-stream, parameters aside.
bool is_event_stream(const Headers& headers);

/// The error event of an event stream (sse.cpp): the JSON error body its data carries (an
/// Anthropic or OpenAI error, read by read_body() as that provider's body), or nullopt with a
/// `no_error_event` warning on `code` when the stream has none. An error event whose data is no
/// JSON object warns `malformed` on `message` and is skipped.
std::optional<json> stream_error(Builder& b, std::string_view stream);

/// A transport error's text (a Node or libcurl error, "ECONNRESET", "timed out"): TIMEOUT,
/// TRANSIENT for a connection-level failure, else UNKNOWN.
void transport(Builder& b, std::string_view error);

/// The gRPC adapter: a status by name or number (nullopt: none), its message, the trailing
/// metadata and google.rpc details (nullptr: none).
void grpc(Builder& b, std::optional<std::string> status, std::string_view message,
          const Headers& metadata, const json* details);

/// A JSON-RPC error: its integer code (nullopt: missing or not an integer), message and data
/// (nullptr: none); `label` starts the mapping ("jsonrpc", "mcp protocol error").
void jsonrpc(Builder& b, std::optional<std::int64_t> code, std::optional<std::string> message,
             const json* data, const char* label);

/// The JSON-RPC error object's members, read with warnings.
void jsonrpc_object(Builder& b, const json& error, const char* label);

/// What MCP tool annotations say about repeating the call: true, false or nullopt (unsaid).
std::optional<bool> idempotent_of(const json& annotations);

/// An MCP reply: a JSON-RPC error, a CallToolResult (or a reply that is one), or a streamable
/// HTTP failure (httpStatus not 2xx, read by http()).
void mcp(Builder& b, const json& reply, std::optional<std::int64_t> now_ms);

}  // namespace recourse::detail::adapt
