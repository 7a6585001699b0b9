// Adapters, JSON-RPC and MCP: protocol errors (JSON-RPC error objects) kept apart from tool
// errors (a CallToolResult with isError), as the MCP spec keeps them.
//
// Input: a JSON-RPC error's code, message and data, or an MCP reply's DOM (json.hpp). Output:
// the Builder's envelope (protocols.hpp). Sources: JSON-RPC 2.0 section 5.1 (error codes); the
// MCP specification, revisions 2025-06-18, 2025-11-25 and 2026-07-28: server/tools
// (CallToolResult, content, structuredContent, tool annotations; an unknown tool is -32602),
// server/resources (a missing resource is -32002 up to 2025-11-25, -32602 with data {uri} in
// 2026-07-28), client/elicitation (-32042, 2025-11-25), basic (the error code ranges and the
// codes -32020 to -32022, 2026-07-28; schema.ts HEADER_MISMATCH,
// MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION) and basic/transports
// (streamable HTTP); the SDKs' -32001 request timeout (python-sdk
// mcp_types/jsonrpc.py REQUEST_TIMEOUT) and "Session not found" (typescript-sdk
// server/streamableHttp.ts). The tables are in docs/adapters.md, "JSON-RPC and MCP".
#include <algorithm>

#include "adapters/body.hpp"
#include "adapters/protocols.hpp"
#include "adapters/text.hpp"

namespace recourse::detail::adapt {
namespace {

// Credentials expired or rejected, said in words: the only reading of tool text the adapter
// acts on, because it leads to the human-gated authorize route, never to a retry.
bool says_credential_problem(std::string_view text) {
  const std::string t = lower(text);
  if (has_number(t, "401") || has_number(t, "403")) return true;
  for (std::string_view phrase :
       {"unauthorized", "unauthenticated", "invalid_token", "invalidauthenticationtoken",
        "token expired", "token has expired", "expired token", "token is expired",
        "invalid api key", "invalid_api_key", "forbidden", "permission denied", "access denied"})
    if (has(t, phrase)) return true;
  return false;
}

// -32602 Invalid params that says an unknown tool or a missing resource (MCP 2025-11-25 and
// 2026-07-28 server/tools, "Unknown tool: name"; 2026-07-28 server/resources, data {uri};
// typescript-sdk: "Tool name not found", "Tool name disabled", "Resource uri not found", and a
// data of exactly {uri: string} is a ResourceNotFoundError, types/errors.ts; python-sdk:
// "Unknown resource: uri"). The reading only ever turns a repair into a stop.
bool says_not_found(const std::optional<std::string>& message, const json* data) {
  if (data && data->is_object() && data->size() == 1 && str(*data, "uri")) return true;
  if (!message) return false;
  const std::string m = lower(trim(*message));
  for (std::string_view prefix : {"unknown tool", "unknown resource", "resource not found"})
    if (m.rfind(prefix, 0) == 0) return true;
  auto ends = [&](std::string_view suffix) {
    return m.size() >= suffix.size() &&
           m.compare(m.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return (m.rfind("tool ", 0) == 0 || m.rfind("resource ", 0) == 0) &&
         (ends(" not found") || ends(" disabled"));
}

// The built-in codes a tool's own text may set: none that a policy retries on its own
// (TRANSIENT, RATE_LIMITED, TIMEOUT, PENDING) and no custom code a rule could retry.
bool lowers_risk(const std::optional<std::string>& code) {
  for (std::string_view c :
       {"VALIDATION", "PERMISSION", "NOT_FOUND", "CONFLICT", "QUOTA_EXCEEDED", "CONTEXT_OVERFLOW"})
    if (code == c) return true;
  return false;
}

// A tool execution error whose text content is itself a JSON error object: an envelope, or a
// provider's error body (read_body(); with an integer HTTP status in `status`, `statusCode` or
// Google's `error.code`, read by http() as that response). Kept only where it lowers the risk
// (lowers_risk(); `retryable` only when false): the text is the server's, never trusted to
// unlock a retry. Returns whether it set the code.
bool text_error(Builder& b, std::string_view text) {
  if (trim(text).empty() || trim(text).front() != '{') return false;
  const ReaderLimits& limits = b.options().limits;
  const Parsed parsed = parse_json(text, limits.max_bytes, limits);
  if (!parsed.ok || !parsed.value.is_object()) return false;
  const json& object = parsed.value;
  Adapted inner;
  Builder ib(inner, b.options());
  if (carries_envelope(object)) {
    ib.overlay(object, "mcp isError text");
  } else {
    std::optional<std::int64_t> status;
    const auto error = object.find("error");
    for (const json* v :
         {ib.member(object, "status", "code"), ib.member(object, "statusCode", "code"),
          error != object.end() ? ib.member(*error, "code", "code") : nullptr})
      if (v && v->is_number_integer() && !status) status = v->get<std::int64_t>();
    if (status && *status >= 400 && *status <= 599) {
      http(ib, static_cast<int>(*status), {}, &object, "", std::nullopt);
    } else {
      const BodyInfo info = read_body(object);
      inner.envelope.message = info.message;
      inner.envelope.field = info.field;
      inner.envelope.suggestion = info.suggestion;
    }
  }
  Envelope& e = b.e();
  const Envelope& in = inner.envelope;
  if (in.message) e.message = in.message;
  if (in.field) e.field = in.field;
  if (in.suggestion) e.suggestion = in.suggestion;
  e.warnings.insert(e.warnings.end(), in.warnings.begin(), in.warnings.end());
  if (!lowers_risk(in.code)) return false;
  b.set_code(*in.code, in.retryable == std::optional<bool>(false) ? in.retryable : std::nullopt,
             "mcp isError text: json " + inner.mapping);
  return true;
}

// What the 2026-07-28 errors' data say the client must change (schema.ts:
// MissingRequiredClientCapabilityError's data.requiredCapabilities, an object of capability
// names; UnsupportedProtocolVersionError's data.supported, a list of versions), at most 8 names.
std::optional<std::string> protocol_suggestion(std::int64_t code, const json& data) {
  std::string names;
  auto add = [&](const std::string& name) {
    if (!names.empty()) names += ", ";
    names += name;
  };
  std::size_t n = 0;
  if (const auto it = data.find("requiredCapabilities");
      code == -32021 && it != data.end() && it->is_object()) {
    for (const auto& [name, value] : it->items())
      if (n++ < 8 && !is_marker(value)) add(name);
    if (!names.empty()) return "declare the client capabilities: " + names;
  } else if (const auto it = data.find("supported");
             code == -32022 && it != data.end() && it->is_array()) {
    for (const auto& v : *it)
      if (n++ < 8 && v.is_string() && !is_marker(v)) add(v.get<std::string>());
    if (!names.empty()) return "use a protocol version the server supports: " + names;
  }
  return std::nullopt;
}

}  // namespace

void jsonrpc(Builder& b, std::optional<std::int64_t> code, std::optional<std::string> message,
             const json* data, const char* label) {
  Envelope& e = b.e();
  const std::string prefix(label);
  if (!code) {
    b.warn("malformed", "code", prefix + " error has no integer code; read as UNKNOWN");
    b.set_code("UNKNOWN", std::nullopt, prefix + " garbled code");
  } else {
    // JSON-RPC 2.0 section 5.1; the MCP codes of the file comment (docs/adapters.md).
    const std::int64_t c = *code;
    const std::string l = prefix + " " + std::to_string(c);
    if (c == -32602 && says_not_found(message, data))
      b.set_code("NOT_FOUND", false, l + " (not found)");
    else if (c == -32700 || c == -32600 || c == -32602)
      b.set_code("VALIDATION", false, l);
    else if (c == -32601 || c == -32002)
      b.set_code("NOT_FOUND", false, l);
    else if (c == -32042)
      b.set_code("PERMISSION", false, l);
    else if (c == -32021)  // MissingRequiredClientCapability: -32601's twin for the client side
      b.set_code("NOT_FOUND", false, l);
    else if (c == -32020 || c == -32022)  // HeaderMismatch, UnsupportedProtocolVersion
      b.set_code("UNKNOWN", false, l);
    else if (c == -32001 && message && iequals(trim(*message), "session not found"))
      b.set_code("NOT_FOUND", false, l + " (session not found)");
    else if (c == -32001)
      b.set_code("TIMEOUT", std::nullopt, l);
    else
      b.set_code("UNKNOWN", std::nullopt, l);
    if (const CodeMapping* m = b.mapping_for(Protocol::JsonRpc, std::to_string(c)))
      b.set_code_only(m->code, "override " + prefix + " " + m->key);
  }
  if (message) e.message = std::move(message);
  if (data && data->is_object()) {
    const BodyInfo info = read_body(*data);
    e.field = info.field;
    e.suggestion = info.suggestion;
    if (!e.message && info.message) e.message = info.message;
    if (info.envelope) b.overlay(*info.envelope, "jsonrpc data");
    if (!e.suggestion && code) e.suggestion = protocol_suggestion(*code, *data);
  }
}

void jsonrpc_object(Builder& b, const json& error, const char* label) {
  std::optional<std::int64_t> code;
  if (const json* c = b.member(error, "code", "code"); c && c->is_number_integer())
    code = c->get<std::int64_t>();
  const auto message = b.text(error, "message", "message");
  jsonrpc(b, code, message, b.member(error, "data", "message"), label);
}

std::optional<bool> idempotent_of(const json& annotations) {
  auto flag = [&](const char* key) -> std::optional<bool> {
    const auto it = annotations.find(key);
    if (it == annotations.end() || !it->is_boolean()) return std::nullopt;
    return it->get<bool>();
  };
  if (!annotations.is_object()) return std::nullopt;
  // MCP: readOnlyHint means no side effects at all; idempotentHint is meaningful only for a tool
  // that is not read-only; destructiveHint alone says nothing about repeats but a destructive
  // tool not marked idempotent is treated as not idempotent.
  if (flag("readOnlyHint") == std::optional<bool>(true) ||
      flag("idempotentHint") == std::optional<bool>(true))
    return true;
  if (flag("destructiveHint") == std::optional<bool>(true)) return false;
  return std::nullopt;
}

void mcp(Builder& b, const json& reply, std::optional<std::int64_t> now_ms) {
  // MCP over streamable HTTP: a transport-level error status is an HTTP failure.
  if (const json* status = b.member(reply, "httpStatus", "code");
      status && status->is_number_integer()) {
    const std::int64_t s = status->get<std::int64_t>();
    if (s < 200 || s > 299) {
      Headers headers;
      if (const json* h = b.member(reply, "headers", "message"); h && h->is_object())
        for (const auto& [k, v] : h->items())
          if (v.is_string()) headers.emplace_back(k, v.get<std::string>());
      const json* body = b.member(reply, "body", "message");
      // 2026-07-28 answers its protocol errors (-32020 to -32022, an invalid or unknown -32602)
      // with HTTP 400 and the JSON-RPC error response as the body: the error says more.
      if (const json* error =
              s == 400 && body && body->is_object() ? b.member(*body, "error", "code") : nullptr;
          error && error->is_object() && error->contains("code") &&
          (*error)["code"].is_number_integer()) {
        jsonrpc_object(b, *error, "mcp protocol error");
        b.result().mapping = "mcp transport: http 400 " + b.mapping();
        return;
      }
      http(b, static_cast<int>(std::clamp<std::int64_t>(s, -1, 1000)), headers,
           body && body->is_object() ? body : nullptr,
           body && body->is_string() ? std::string_view(body->get_ref<const std::string&>())
                                     : std::string_view(),
           now_ms);
      b.result().mapping = "mcp transport: " + b.mapping();
      return;
    }
  }
  if (const json* error = b.member(reply, "error", "code"); error && error->is_object())
    return jsonrpc_object(b, *error, "mcp protocol error");
  const json* result = b.member(reply, "result", "code");
  if (result == nullptr && (reply.contains("isError") || reply.contains("content")))
    result = &reply;
  if (result == nullptr || !result->is_object()) {
    b.warn("malformed", "code", "MCP reply has neither a result nor an error; read as UNKNOWN");
    b.set_code("UNKNOWN", std::nullopt, "mcp garbled reply");
    return;
  }
  const json* is_error = b.member(*result, "isError", "code");
  if (is_error == nullptr || !is_error->is_boolean() || !is_error->get<bool>())
    b.warn("malformed", "code",
           std::string("CallToolResult isError is ") +
               (is_error == nullptr      ? "absent"
                : is_error->is_boolean() ? "false"
                                         : "not a boolean") +
               ": not a tool error as sent; read as UNKNOWN");
  // The text content, kept as the message (never as instructions: see model_text()).
  std::string text;
  if (const json* content = b.member(*result, "content", "message");
      content && content->is_array()) {
    for (const auto& item : *content)
      if (const std::string* t = str(item, "text"); t && item.value("type", "") == "text")
        text += (text.empty() ? "" : "\n") + *t;
  } else if (content && !content->is_null()) {
    b.warn("malformed", "message", "CallToolResult content is not a list; read as absent");
  }
  b.set_code("UNKNOWN", std::nullopt, "mcp isError text");
  if (!text.empty()) b.e().message = text;
  const json* structured = b.member(*result, "structuredContent", "code");
  if (structured && carries_envelope(*structured) &&
      b.overlay(*structured, "mcp structuredContent")) {
    if (!b.e().message && !text.empty()) b.e().message = text;
    return;
  }
  if (text_error(b, text)) return;
  if (says_credential_problem(text)) b.set_code_only("PERMISSION", "mcp isError text: credential");
}

}  // namespace recourse::detail::adapt
