// Adapters, the envelope under construction; see builder.hpp.
#include "adapters/builder.hpp"

#include <algorithm>

#include "model/model.hpp"
#include "source/utf8.hpp"

namespace recourse::detail::adapt {

const json* Builder::member(const json& object, std::string_view key, const char* field) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  if (it == object.end()) return nullptr;
  if (!it->is_string()) return &*it;
  const auto& s = it->get_ref<const std::string&>();
  const std::string where(key);
  if (s == kDuplicate)
    warn("duplicate", field, where + " appears more than once; read as absent");
  else if (s == kTooDeep)
    warn("oversized", field,
         where + " is nested deeper than " + std::to_string(o_.limits.max_depth) +
             " levels; read as absent");
  else if (s == kOverflowMarker)
    warn("malformed", field, where + " is a number beyond the range of a double; read as absent");
  else
    return &*it;
  return nullptr;
}

std::optional<std::string> Builder::text(const json& object, std::string_view key,
                                         const char* field) {
  const json* v = member(object, key, field);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  warn("malformed", field, std::string(key) + " is not a string; read as absent");
  return std::nullopt;
}

void Builder::finish() {
  Envelope& e = r_.envelope;
  for (auto* v : {&e.code, &e.message, &e.field, &e.suggestion, &e.trace_id})
    if (*v) **v = valid_utf8(**v);
  e = read_fields(std::move(e), o_.limits);
}

const CodeMapping* Builder::mapping_for(Protocol protocol, std::string_view key) const {
  auto same = [](Protocol a, Protocol b) {
    auto rpc = [](Protocol p) { return p == Protocol::JsonRpc || p == Protocol::Mcp; };
    return a == b || (rpc(a) && rpc(b));
  };
  for (const auto& m : o_.mappings)
    if (same(m.protocol, protocol) && m.key == key && !m.code.empty()) return &m;
  return nullptr;
}

bool Builder::overlay(const json& object, const char* where) {
  std::string text = "{";
  for (const auto& [key, value] : object.items()) {
    if (text.size() > 1) text += ',';
    const std::string k = json(key).dump();
    if (value.is_string() && value.get_ref<const std::string&>() == kDuplicate)
      text += k + ":null," + k + ":null";
    else if (value.is_string() && value.get_ref<const std::string&>() == kOverflowMarker)
      text += k + ":1e999";
    else if (value.is_string() && value.get_ref<const std::string&>() == kTooDeep)
      text += k + ":{}";
    else
      text += k + ":" + value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  text += "}";
  const Result<Envelope> inner = read_envelope(text, o_.limits);
  if (!inner.ok()) {
    warn("malformed", "code",
         std::string(where) + " looks like an envelope but cannot be read: " + inner.message());
    return false;
  }
  Envelope& e = r_.envelope;
  const Envelope& in = *inner;
  if (in.code) e.code = in.code;
  if (in.message) e.message = in.message;
  if (in.retryable) e.retryable = in.retryable;
  if (in.field) e.field = in.field;
  if (in.suggestion) e.suggestion = in.suggestion;
  if (in.retry_after_ms)
    e.retry_after_ms = std::max(e.retry_after_ms.value_or(0), *in.retry_after_ms);
  if (in.trace_id) e.trace_id = in.trace_id;
  for (const auto& w : in.warnings) e.warnings.push_back(w);
  r_.mapping = std::string(where) + " envelope";
  return true;
}

bool carries_envelope(const json& v) {
  if (!v.is_object()) return false;
  const auto code = v.find("code");
  if (code == v.end() || !code->is_string()) return false;
  const auto& s = code->get_ref<const std::string&>();
  return v.contains("retryable") ||
         std::find(kBuiltinCodes.begin(), kBuiltinCodes.end(), s) != kBuiltinCodes.end();
}

}  // namespace recourse::detail::adapt
