// Adapters: raw protocol errors (HTTP, transport, gRPC, JSON-RPC, MCP) -> Envelope. The public
// entry points of recourse/adapters.hpp, the raw forms, and to_json(Envelope).
//
// Input: what a tool call returned, typed or as one raw JSON object. Output: the envelope a
// policy decides on, with a warning for every value that was read as absent. The mapping tables
// and their sources (RFC 9110, RFC 6585, RFC 9457, gRFC A6, JSON-RPC 2.0, the MCP spec) are in
// the public header and docs/adapters.md; the steps that implement them, in the same order, are
// in this folder, behind internal headers (namespace recourse::detail::adapt):
//   text.hpp       small text helpers
//   http_date.hpp  HTTP-dates (RFC 9110 section 5.6.7)
//   json.hpp       the hardened DOM and its markers
//   builder.hpp    the envelope under construction
//   body.hpp       provider error bodies
//   protocols.hpp  the protocol steps: http.cpp (headers, status table, HTTP, transport),
//                  grpc.cpp (gRPC) and mcp.cpp (JSON-RPC and MCP)
#include <algorithm>

#include "adapters/builder.hpp"
#include "adapters/json.hpp"
#include "adapters/protocols.hpp"
#include "adapters/text.hpp"
#include "model/names.hpp"
#include "recourse/adapters.hpp"

namespace recourse {

using namespace detail::adapt;

namespace {

constexpr std::string_view kNotText = "\x01recourse:not-text";  // a header value not a string

// Headers from a raw form's object: string values, or lists of strings for a repeated field.
Headers headers_of(Builder& b, const json& object, const char* key) {
  Headers out;
  const json* h = b.member(object, key, "message");
  if (h == nullptr || !h->is_object()) return out;
  for (const auto& [name, value] : h->items()) {
    if (value.is_string() && value.get_ref<const std::string&>() == kDuplicate) {
      out.emplace_back(name, "");  // a duplicated key is a repeated field
      out.emplace_back(name, "");
    } else if (value.is_array()) {
      for (const auto& v : value)
        out.emplace_back(name, v.is_string() ? v.get<std::string>() : std::string(kNotText));
    } else if (value.is_string()) {
      out.emplace_back(name, value.get<std::string>());
    } else {
      out.emplace_back(name, std::string(kNotText));
    }
  }
  return out;
}

// A body received as text, as the HTTP adapter reads it: nothing past ReaderLimits::max_bytes
// (an `oversized` warning); an event stream's error event (stream_error()); else a JSON object,
// else text. `parsed` holds the DOM the result may point into.
struct TextBody {
  Parsed parsed;
  std::string_view text;
  const json* object() const {
    return parsed.ok && parsed.value.is_object() ? &parsed.value : nullptr;
  }
};

void read_text_body(Builder& b, const Headers& headers, std::string_view text, TextBody& out) {
  const ReaderLimits& limits = b.options().limits;
  if (text.size() > limits.max_bytes) {
    b.warn("oversized", "message",
           "body is longer than " + std::to_string(limits.max_bytes) + " bytes; ignored");
    text = {};
  }
  if (is_event_stream(headers)) {
    if (auto error = stream_error(b, text)) {
      out.parsed.ok = true;
      out.parsed.value = std::move(*error);
    }
  } else if (!trim(text).empty() && trim(text).front() == '{') {
    out.parsed = parse_json(text, limits.max_bytes, limits);  // a JSON body sent as text
  }
  out.text = out.object() ? std::string_view() : text;
}

void http_raw(Builder& b, const json& raw, std::optional<std::int64_t> now_ms) {
  const Headers headers = headers_of(b, raw, "headers");
  const json* body = b.member(raw, "body", "message");
  TextBody text;
  if (body && body->is_string()) {
    read_text_body(b, headers, body->get_ref<const std::string&>(), text);
    body = text.object();
  }
  const json* status = b.member(raw, "status", "code");
  if (status && status->is_number_integer()) {
    const std::int64_t s = status->get<std::int64_t>();
    const bool json_body = body && body->is_object();
    return http(b, static_cast<int>(std::clamp<std::int64_t>(s, -1, 1000)), headers,
                json_body ? body : nullptr, json_body ? std::string_view() : text.text, now_ms);
  }
  if (status == nullptr || status->is_null()) {
    if (const auto error = b.text(raw, "transportError", "code")) return transport(b, *error);
    b.warn("malformed", "code", "neither an HTTP status nor a transportError; read as UNKNOWN");
  } else {
    b.warn("malformed", "code", "status is not an integer; read as UNKNOWN");
  }
  b.set_code("UNKNOWN", std::nullopt, "http garbled status");
}

void grpc_raw(Builder& b, const json& raw) {
  const json* status = b.member(raw, "status", "code");
  if (status == nullptr || status->is_null()) status = b.member(raw, "code", "code");
  std::optional<std::string> name;
  if (status && status->is_string())
    name = status->get<std::string>();
  else if (status && status->is_number_integer())
    name = std::to_string(status->get<std::int64_t>());
  const auto message = b.text(raw, "message", "message");
  grpc(b, name, message.value_or(""), headers_of(b, raw, "metadata"),
       b.member(raw, "details", "message"));
}

// Runs one adapter. Any exception (out of memory) fails it with N001; without memory even for
// that, the envelope is empty (every field absent: the policy's conservative reading).
template <typename F>
Result<Adapted> guarded(const AdapterOptions& options, F&& run) noexcept {
  std::string why;
  try {
    Adapted r;
    Builder b(r, options);
    run(b);
    if (!b.failure()) {
      b.finish();
      return r;
    }
    why = *b.failure();
  } catch (const std::exception& e) {
    why = std::string("raw form could not be read: ") + e.what();
  } catch (...) {
    why = "raw form could not be read";
  }
  try {
    return Result<Adapted>::failure(error_diagnostic("N001", std::move(why)));
  } catch (...) {
    return Adapted{};
  }
}

}  // namespace

const char* to_string(Protocol protocol) noexcept {
  return detail::name_of(protocol).data();
}

// The names table's spellings, and the aliases https and json-rpc. The first word counts, up to
// a space or a '+' ("http+sse (litellm streaming)" is http).
std::optional<Protocol> protocol_of(std::string_view name) noexcept {
  name = trim(name);
  const std::string_view word = name.substr(0, std::min(name.find_first_of(" +"), name.size()));
  if (iequals(word, "https")) return Protocol::Http;
  if (iequals(word, "json-rpc")) return Protocol::JsonRpc;
  const auto& names = detail::Names<Protocol>::kValues;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (iequals(word, names[i])) return static_cast<Protocol>(i);
  return std::nullopt;
}

Result<Adapted> from_http(int status, const Headers& headers, std::string_view body,
                          std::optional<std::int64_t> now_ms,
                          const AdapterOptions& options) noexcept {
  return guarded(options, [&](Builder& b) {
    TextBody text;
    read_text_body(b, headers, body, text);
    http(b, status, headers, text.object(), text.text, now_ms);
  });
}

Result<Adapted> from_transport_error(std::string_view error,
                                     const AdapterOptions& options) noexcept {
  return guarded(options, [&](Builder& b) { transport(b, error); });
}

Result<Adapted> from_grpc(std::string_view status, std::string_view message,
                          const Headers& metadata, const AdapterOptions& options) noexcept {
  return guarded(options,
                 [&](Builder& b) { grpc(b, std::string(status), message, metadata, nullptr); });
}

Result<Adapted> from_jsonrpc(std::int64_t code, std::string_view message,
                             std::string_view data_json, const AdapterOptions& options) noexcept {
  return guarded(options, [&](Builder& b) {
    Parsed data;
    if (!trim(data_json).empty()) {
      data = parse_json(data_json, options.limits.max_bytes, options.limits);
      if (!data.ok) b.warn("malformed", "field", "JSON-RPC error data is not JSON; ignored");
    }
    jsonrpc(b, code, std::string(message), data.ok ? &data.value : nullptr, "jsonrpc");
  });
}

Result<Adapted> from_mcp(std::string_view reply_json, const AdapterOptions& options) noexcept {
  return from_raw(Protocol::Mcp, reply_json, std::nullopt, options);
}

Result<Adapted> from_raw(std::optional<Protocol> protocol, std::string_view raw_json,
                         std::optional<std::int64_t> now_ms,
                         const AdapterOptions& options) noexcept {
  return guarded(options, [&](Builder& b) {
    Parsed parsed = parse_json(raw_json, options.max_raw_bytes, options.limits);
    if (!parsed.ok || !parsed.value.is_object())
      return b.fail(parsed.ok ? "a raw form is a JSON object" : parsed.error);
    const json& raw = parsed.value;
    std::optional<Protocol> named;
    if (const std::string* p = str(raw, "protocol")) named = protocol_of(*p);
    if (!protocol) protocol = named;
    if (!protocol) return b.fail("the raw form names no protocol (http, grpc, mcp or jsonrpc)");
    if (named && *named != *protocol)
      b.warn("malformed", "code",
             std::string("the raw form says protocol ") + to_string(*named) + "; read as " +
                 to_string(*protocol));
    switch (*protocol) {
      case Protocol::Http:
        http_raw(b, raw, now_ms);
        break;
      case Protocol::Grpc:
        grpc_raw(b, raw);
        break;
      case Protocol::JsonRpc: {
        const json* error = b.member(raw, "error", "code");
        jsonrpc_object(b, error && error->is_object() ? *error : raw, "jsonrpc");
        break;
      }
      case Protocol::Mcp:
        mcp(b, raw, now_ms);
        if (const json* a = b.member(raw, "annotations", "code"); a && a->is_object()) {
          if (options.trusted_server)
            b.result().idempotent = idempotent_of(*a);
          else if (idempotent_of(*a))
            b.warn("ignored", "idempotent",
                   "tool annotations come from an untrusted server; idempotent not set");
        }
        break;
    }
  });
}

std::optional<Protocol> raw_form_protocol(std::string_view raw_json) noexcept {
  try {
    const AdapterOptions options;
    const Parsed parsed = parse_json(raw_json, options.max_raw_bytes, options.limits);
    if (!parsed.ok || !parsed.value.is_object()) return std::nullopt;
    const json& raw = parsed.value;
    if (str(raw, "code")) return std::nullopt;  // an envelope
    if (const std::string* p = str(raw, "protocol"))
      if (auto named = protocol_of(*p)) return named;
    auto is = [&](const char* key, auto test) {
      const auto it = raw.find(key);
      return it != raw.end() && test(*it);
    };
    auto any = [](const json&) { return true; };
    auto integer = [](const json& v) { return v.is_number_integer(); };
    if (is("status", integer) || is("transportError", any)) return Protocol::Http;
    if (is("status", [](const json& v) { return v.is_string(); }) || is("metadata", any) ||
        is("details", any))
      return Protocol::Grpc;
    for (const char* key : {"result", "isError", "content", "structuredContent", "httpStatus"})
      if (is(key, any)) return Protocol::Mcp;
    if (is("error", [](const json& v) {
          const auto code = v.find("code");  // end() for a non-object
          return code != v.end() && code->is_number_integer();
        }))
      return Protocol::JsonRpc;
    return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<bool> idempotent_from_annotations(std::string_view annotations_json,
                                                bool trusted) noexcept {
  if (!trusted) return std::nullopt;
  try {
    const ReaderLimits limits;  // annotations are an envelope's size at most
    const Parsed parsed = parse_json(annotations_json, limits.max_bytes, limits);
    if (!parsed.ok) return std::nullopt;
    return idempotent_of(parsed.value);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace recourse
