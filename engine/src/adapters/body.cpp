// Adapters, provider bodies; see body.hpp.
#include "adapters/body.hpp"

#include <iterator>
#include <utility>

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

// What a long-running operation's body says of work not done yet: Google's
// google.longrunning.Operation `done: false` (AIP-151); a top-level `status` of Azure's
// long-running operations (`NotStarted`, `Running`, `InProgress`; Azure REST API guidelines,
// "Long-running operations"), OpenAI's batches and responses (`queued`, `in_progress`,
// `validating`, `finalizing`) or ACME's orders and authorizations (`pending`, `processing`; RFC
// 8555 section 7.1.6), compared ASCII case-insensitively. nullopt for any other body.
std::optional<std::string> pending_of(const json& body) {
  if (const auto done = body.find("done"); done != body.end() && done->is_boolean() && !*done)
    return std::string("done false");
  const std::string* status = str(body, "status");
  if (status == nullptr) return std::nullopt;
  for (std::string_view word : {"pending", "processing", "queued", "in_progress", "validating",
                                "finalizing", "running", "inprogress", "notstarted"})
    if (iequals(*status, word)) return "status \"" + *status + "\"";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> aws_error_code(std::string_view raw) {
  raw = trim(raw.substr(0, raw.find(':')));
  if (const std::size_t hash = raw.rfind('#'); hash != std::string_view::npos)
    raw.remove_prefix(hash + 1);
  if (raw.empty()) return std::nullopt;
  return std::string(raw);
}

std::optional<std::string> quota_window(std::string_view name) {
  std::string squeezed;
  for (char c : lower(name))
    if (c != '_' && c != '-') squeezed += c;
  // Longest first; "per100seconds" is Google's older per-minute-class window.
  for (auto [word, window] : {std::pair<std::string_view, std::string_view>{"permonth", "month"},
                              {"perday", "day"},
                              {"perhour", "hour"},
                              {"perminute", "minute"},
                              {"per100seconds", "minute"},
                              {"persecond", "minute"}})
    if (has(squeezed, word)) return std::string(window);
  return std::nullopt;
}

namespace {

// Keeps the longer of two windows.
void keep_window(std::optional<std::string>& into, std::optional<std::string> window) {
  constexpr std::string_view kOrder[] = {"minute", "hour", "day", "month"};
  auto rank = [&](const std::optional<std::string>& w) {
    for (std::size_t i = 0; i < std::size(kOrder); ++i)
      if (w == kOrder[i]) return static_cast<int>(i);
    return -1;
  };
  if (rank(window) > rank(into)) into = std::move(window);
}

}  // namespace

void apply_google_details(const GoogleDetails& details, BodyInfo& info) {
  if (details.retry_delay_ms) info.retry_delay_ms = details.retry_delay_ms;
  if (!details.field_violations.empty()) {
    const auto& v = details.field_violations.front();
    if (!v.field.empty() && !info.field) info.field = v.field;
    if (!v.description.empty() && !info.suggestion) info.suggestion = v.description;
  }
  for (const auto& reason : details.reasons)
    if (!reason.empty()) info.types.push_back(reason);
  for (const auto& [key, value] : details.metadata)
    if (key == "quota_limit" || key == "quota_id" || key == "quota_metric")
      keep_window(info.quota_window, quota_window(value));
  for (const auto& v : details.quota_violations)
    for (const std::string* q : {&v.quota_id, &v.quota_metric})
      keep_window(info.quota_window, quota_window(*q));
}

void read_google_details(const json& details, BodyInfo& info) {
  if (!details.is_array()) return;
  GoogleDetails g;
  auto text = [](const json& object, const char* key) {
    const std::string* s = str(object, key);
    return s ? *s : std::string();
  };
  for (const auto& d : details) {
    const std::string* type = str(d, "@type");
    if (type == nullptr) continue;
    if (has(*type, "google.rpc.RetryInfo")) {
      if (const std::string* delay = str(d, "retryDelay"))
        if (auto ms = duration_ms(*delay)) g.retry_delay_ms = ms;
    } else if (has(*type, "google.rpc.BadRequest")) {
      const auto it = d.find("fieldViolations");
      if (it != d.end() && it->is_array() && !it->empty())
        g.field_violations.push_back(
            {text(it->front(), "field"), text(it->front(), "description")});
    } else if (has(*type, "google.rpc.ErrorInfo")) {
      g.reasons.push_back(text(d, "reason"));
      if (const auto md = d.find("metadata"); md != d.end() && md->is_object())
        for (const auto& [key, value] : md->items())
          if (value.is_string() && !is_marker(value))
            g.metadata.emplace_back(key, value.get<std::string>());
    } else if (has(*type, "google.rpc.QuotaFailure")) {
      const auto it = d.find("violations");
      if (it == d.end() || !it->is_array()) continue;
      for (const auto& v : *it)
        g.quota_violations.push_back({text(v, "quotaMetric"), text(v, "quotaId")});
    }
  }
  apply_google_details(g, info);
}

BodyInfo read_body(const json& body) {
  BodyInfo info;
  if (!body.is_object()) return info;
  if (carries_envelope(body)) info.envelope = &body;
  info.pending = pending_of(body);
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
  // Square: "errors": [{"category", "code", "detail", "field"}] (Square API reference,
  // "Handling errors"): the first error's code and category are the body's types, its detail
  // the message.
  if (const auto it = body.find("errors"); it != body.end() && it->is_array() && !it->empty())
    if (const std::string* category = str(it->front(), "category")) {
      if (const std::string* code = str(it->front(), "code")) info.types.push_back(*code);
      info.types.push_back(*category);
      if (const std::string* d = str(it->front(), "detail"); d && !info.message) info.message = *d;
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
      // OpenRouter relays the upstream's rate-limit headers: error.metadata.headers.
      if (const auto md = err.find("metadata"); md != err.end() && md->is_object())
        if (const auto h = md->find("headers"); h != md->end() && h->is_object())
          for (const auto& [name, value] : h->items()) {
            if (!value.is_string()) continue;
            const auto& v = value.get_ref<const std::string&>();
            info.headers.emplace_back(name, v);
            if (v == kDuplicate) info.headers.emplace_back(name, v);  // a repeated field
          }
    } else if (it->is_string() && !is_marker(*it)) {  // OAuth 2.0 (RFC 6749 section 5.2)
      info.types.push_back(it->get<std::string>());
      info.oauth_error = it->get<std::string>();
      if (const std::string* d = str(body, "error_description"))
        info.message = *d;
      else if (!info.message)
        info.message = it->get<std::string>();
    }
  }
  // AWS JSON protocols: {"__type": "...#ThrottlingException", "message" or "Message"}; the
  // REST JSON protocols' `code` or `Code` (botocore parsers.py).
  for (const char* key : {"__type", "Code"})
    if (const std::string* t = str(body, key); t && !info.aws_code)
      if ((info.aws_code = aws_error_code(*t))) info.types.push_back(*info.aws_code);
  for (const char* key : {"message", "Message"})
    if (const std::string* m = str(body, key); m && !info.message) info.message = *m;
  if (const std::string* c = str(body, "code"); c && !info.envelope) info.types.push_back(*c);
  return info;
}

bool long_quota(const BodyInfo& info) {
  return info.quota_window == "day" || info.quota_window == "month";
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
