// Adapters, provider bodies; see body.hpp.
#include "adapters/body.hpp"

#include "adapters/builder.hpp"
#include "adapters/text.hpp"

namespace recourse::detail::adapt {
namespace {

// "#/profile/color" or "/age" -> the first segment, unescaped (RFC 6901): the argument to
// repair.
std::optional<std::string> pointer_argument(std::string_view pointer) {
  if (!pointer.empty() && pointer[0] == '#') pointer.remove_prefix(1);
  if (pointer.empty() || pointer[0] != '/') return std::nullopt;
  pointer.remove_prefix(1);
  std::string out;
  for (std::size_t i = 0; i < pointer.size() && pointer[i] != '/'; ++i) {
    if (pointer[i] == '~' && i + 1 < pointer.size() &&
        (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
      out += pointer[++i] == '0' ? '~' : '/';
    } else {
      out += pointer[i];
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// "30s", "1.5s" (google.protobuf.Duration in JSON) -> ms, rounded up.
std::optional<std::int64_t> duration_ms(std::string_view s) {
  if (s.size() < 2 || s.back() != 's') return std::nullopt;
  s.remove_suffix(1);
  const std::size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  if (!all_digits(whole)) return std::nullopt;
  std::int64_t ms = saturating_ms(digits_value(whole));
  if (dot != std::string_view::npos) {
    std::string_view fraction = s.substr(dot + 1);
    if (!all_digits(fraction)) return std::nullopt;
    const std::string padded = std::string(fraction) + "000";
    std::int64_t part = static_cast<std::int64_t>(digits_value(padded.substr(0, 3)));
    if (fraction.size() > 3 && fraction.substr(3).find_first_not_of('0') != std::string_view::npos)
      ++part;
    ms = ms > kSaturatedMs - part ? kSaturatedMs : ms + part;
  }
  return ms;
}

}  // namespace

void read_google_details(const json& details, BodyInfo& info) {
  if (!details.is_array()) return;
  for (const auto& d : details) {
    const std::string* type = str(d, "@type");
    if (type == nullptr) continue;
    if (has(*type, "google.rpc.RetryInfo")) {
      if (const std::string* delay = str(d, "retryDelay"))
        if (auto ms = duration_ms(*delay)) info.retry_delay_ms = ms;
    } else if (has(*type, "google.rpc.BadRequest")) {
      const auto it = d.find("fieldViolations");
      if (it != d.end() && it->is_array() && !it->empty()) {
        const json& v = it->front();
        if (const std::string* f = str(v, "field"); f && !info.field) info.field = *f;
        if (const std::string* s = str(v, "description"); s && !info.suggestion)
          info.suggestion = *s;
      }
    } else if (has(*type, "google.rpc.ErrorInfo")) {
      if (const std::string* reason = str(d, "reason")) info.types.push_back(*reason);
    }
  }
}

BodyInfo read_body(const json& body) {
  BodyInfo info;
  if (!body.is_object()) return info;
  if (carries_envelope(body)) info.envelope = &body;
  // RFC 9457 section 3.1: type, title, detail (status is advisory only).
  if (const std::string* detail = str(body, "detail"))
    info.message = *detail;
  else if (const std::string* title = str(body, "title"))
    info.message = *title;
  if (const std::string* type = str(body, "type"); type && *type != "error")
    info.types.push_back(*type);
  // RFC 9457 section 3: "errors": [{"detail", "pointer"}]; RFC 7807 section 3 (which 9457
  // obsoletes): "invalid-params": [{"name", "reason"}], "invalid_params" after erratum 6178.
  for (const char* member : {"invalid-params", "invalid_params"}) {
    const auto it = body.find(member);
    if (it == body.end() || !it->is_array() || info.field) continue;
    for (const auto& p : *it) {
      const std::string* name = str(p, "name");
      if (name == nullptr) continue;
      info.field = *name;
      if (const std::string* reason = str(p, "reason")) info.suggestion = *reason;
      break;
    }
  }
  if (const auto it = body.find("errors"); it != body.end() && it->is_array() && !info.field) {
    for (const auto& p : *it) {
      std::optional<std::string> field;
      if (const std::string* ptr = str(p, "pointer")) field = pointer_argument(*ptr);
      for (const char* key : {"field", "param", "name"})
        if (!field)
          if (const std::string* f = str(p, key)) field = *f;
      if (!field) continue;
      info.field = field;
      for (const char* key : {"detail", "message", "reason"})
        if (const std::string* s = str(p, key)) {
          info.suggestion = *s;
          break;
        }
      break;
    }
  }
  // {"error": {...}}: OpenAI (message, type, param, code), Anthropic (type, message), Google
  // (code, message, status, details), Stripe (type, code, param, message).
  if (const auto it = body.find("error"); it != body.end()) {
    if (it->is_object()) {
      const json& err = *it;
      if (const std::string* m = str(err, "message")) info.message = *m;
      for (const char* key : {"type", "code", "status"})
        if (const std::string* t = str(err, key)) info.types.push_back(*t);
      if (const std::string* p = str(err, "param"); p && !info.field) info.field = *p;
      if (const auto d = err.find("details"); d != err.end()) read_google_details(*d, info);
    } else if (it->is_string() && !is_marker(*it)) {  // OAuth 2.0 (RFC 6749 section 5.2)
      info.types.push_back(it->get<std::string>());
      if (const std::string* d = str(body, "error_description"))
        info.message = *d;
      else if (!info.message)
        info.message = it->get<std::string>();
    }
  }
  if (const std::string* m = str(body, "message"); m && !info.message) info.message = *m;
  if (const std::string* c = str(body, "code"); c && !info.envelope) info.types.push_back(*c);
  return info;
}

bool has_type(const BodyInfo& info, std::initializer_list<std::string_view> wanted) {
  for (const auto& t : info.types)
    for (auto w : wanted)
      if (iequals(t, w)) return true;
  return false;
}

bool says_context_overflow(std::string_view message) {
  const std::string m = lower(message);
  for (std::string_view phrase : {"context length", "context_length", "context window",
                                  "maximum context", "prompt is too long", "too many tokens",
                                  "token limit", "input is too long", "maximum number of tokens"})
    if (has(m, phrase)) return true;
  return false;
}

bool says_rate_limit(std::string_view message) {
  const std::string m = lower(message);
  return has(m, "rate limit") || has(m, "rate-limit") || has(m, "ratelimit") ||
         has(m, "too many requests");
}

}  // namespace recourse::detail::adapt
