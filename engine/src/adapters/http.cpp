// Adapters, HTTP and transport errors: header fields, the status table (RFC 9110 section 15;
// RFC 6585 for 428, 429, 431, 511), the body rules that outrank the status, the retry hints
// (Retry-After, RFC 9110 section 10.2.3; RateLimit-Reset and X-RateLimit-Reset), the 401
// challenge (WWW-Authenticate, RFC 9110 section 11.6.1; RFC 6750 section 3) and the message.
//
// Input: a status, header fields, and the body as a DOM (json.hpp) or as text; a transport
// error's text. Output: the Builder's envelope (protocols.hpp). The tables are in
// recourse/adapters.hpp and docs/adapters.md, "HTTP".
#include <cctype>

#include "adapters/body.hpp"
#include "adapters/http_date.hpp"
#include "adapters/protocols.hpp"
#include "adapters/text.hpp"
#include "source/utf8.hpp"

namespace recourse::detail::adapt {

// ---- headers ---------------------------------------------------------------------------------

HeaderValue header(const Headers& headers, std::string_view name) {
  HeaderValue out;
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) {
      out.repeated = out.present;
      out.present = true;
      out.value = v;
    }
  return out;
}

std::optional<std::string> trace_id_of(const Headers& headers) {
  const HeaderValue tp = header(headers, "traceparent");
  if (tp.present && !tp.repeated) {
    const std::string_view v = trim(tp.value);
    // version "-" trace-id (32 hex) "-" parent-id (16 hex) "-" flags
    if (v.size() >= 55 && v[2] == '-' && v[35] == '-') {
      const std::string_view id = v.substr(3, 32);
      const bool hex = std::all_of(id.begin(), id.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
      });
      if (hex && id.find_first_not_of('0') != std::string_view::npos) return std::string(id);
    }
  }
  for (const char* name : {"X-Request-Id", "Request-Id", "X-GitHub-Request-Id", "X-Amzn-RequestId",
                           "X-Amz-Request-Id"}) {
    const HeaderValue h = header(headers, name);
    if (!h.present || h.repeated) continue;
    const std::string_view v = trim(h.value);
    const bool printable =
        !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (printable) return std::string(v);
  }
  return std::nullopt;
}

// ---- HTTP ------------------------------------------------------------------------------------

namespace {

struct StatusRow {
  int status;
  const char* code;
  int retryable;  // 1 true, 0 false, -1 absent
  const char* reason;
};

// RFC 9110 section 15 (6585 for 428, 429, 431, 511); see the table in adapters.hpp.
constexpr StatusRow kHttpStatus[] = {
    {400, "VALIDATION", 0, "Bad Request"},
    {401, "PERMISSION", 0, "Unauthorized"},
    {402, "QUOTA_EXCEEDED", 0, "Payment Required"},
    {403, "PERMISSION", 0, "Forbidden"},
    {404, "NOT_FOUND", 0, "Not Found"},
    {405, "NOT_FOUND", 0, "Method Not Allowed"},
    {406, "VALIDATION", 0, "Not Acceptable"},
    {408, "TIMEOUT", 1, "Request Timeout"},
    {409, "CONFLICT", 0, "Conflict"},
    {410, "NOT_FOUND", 0, "Gone"},
    {411, "VALIDATION", 0, "Length Required"},
    {412, "CONFLICT", 0, "Precondition Failed"},
    {413, "VALIDATION", 0, "Content Too Large"},
    {414, "VALIDATION", 0, "URI Too Long"},
    {415, "VALIDATION", 0, "Unsupported Media Type"},
    {416, "VALIDATION", 0, "Range Not Satisfiable"},
    {417, "VALIDATION", 0, "Expectation Failed"},
    {421, "VALIDATION", 0, "Misdirected Request"},
    {422, "VALIDATION", 0, "Unprocessable Content"},
    {428, "VALIDATION", 0, "Precondition Required"},
    {429, "RATE_LIMITED", 1, "Too Many Requests"},
    {431, "VALIDATION", 0, "Request Header Fields Too Large"},
    {500, "TRANSIENT", 1, "Internal Server Error"},
    {501, "NOT_FOUND", 0, "Not Implemented"},
    {502, "TRANSIENT", 1, "Bad Gateway"},
    {503, "TRANSIENT", 1, "Service Unavailable"},
    {504, "TIMEOUT", 1, "Gateway Timeout"},
    {505, "UNKNOWN", 0, "HTTP Version Not Supported"},
    {511, "PERMISSION", 0, "Network Authentication Required"},
    {529, "TRANSIENT", 1, "Overloaded"},
};

// Retry-After (RFC 9110 section 10.2.3) as ms.
std::optional<std::int64_t> retry_after_ms(Builder& b, const Headers& headers,
                                           std::optional<std::int64_t> clock) {
  const HeaderValue h = header(headers, "Retry-After");
  if (!h.present) return std::nullopt;
  if (h.repeated) {
    b.warn("duplicate", "retryAfterMs", "Retry-After appears more than once; read as absent");
    return std::nullopt;
  }
  const std::string_view v = trim(h.value);
  if (auto s = whole_seconds_up(v)) return saturating_ms(*s);
  if (auto date = http_date_ms(v, clock)) {
    if (!clock) {
      b.warn("malformed", "retryAfterMs",
             "Retry-After is an HTTP-date but there is no clock (now or a Date header); read as "
             "absent");
      return std::nullopt;
    }
    return std::max<std::int64_t>(0, *date - *clock);
  }
  b.warn("malformed", "retryAfterMs",
         "Retry-After " + excerpt(h.value) +
             " is neither delay-seconds nor an HTTP-date; read as absent");
  return std::nullopt;
}

// RateLimit-Reset (delta seconds) or X-RateLimit-Reset (epoch seconds when >= 1e9, else delta).
std::optional<std::int64_t> reset_ms(Builder& b, const Headers& headers, const char* name,
                                     std::optional<std::int64_t> clock) {
  const HeaderValue h = header(headers, name);
  if (!h.present) return std::nullopt;
  auto bad = [&](const std::string& why) {
    b.warn("malformed", "retryAfterMs",
           std::string(name) + " " + excerpt(h.value) + " " + why + "; read as absent");
    return std::nullopt;
  };
  if (h.repeated) return bad("appears more than once");
  const auto seconds = whole_seconds_up(trim(h.value));
  if (!seconds) return bad("is not a number of seconds");
  if (*seconds < 1'000'000'000) return saturating_ms(*seconds);
  if (!clock) return bad("is an epoch time but there is no clock");
  return std::max<std::int64_t>(0, saturating_ms(*seconds) - *clock);
}

// The clock for absolute times: the host's now, else the response's Date header.
std::optional<std::int64_t> clock_of(const Headers& headers, std::optional<std::int64_t> now_ms) {
  std::optional<std::int64_t> clock = now_ms;
  if (!clock) {
    const HeaderValue date = header(headers, "Date");
    if (date.present && !date.repeated) clock = http_date_ms(trim(date.value), std::nullopt);
  }
  return clock;
}

// The status table's code for `status` (a warning when it is no status code); returns the row,
// nullptr for a status the table does not name.
const StatusRow* status_row(Builder& b, int status, const std::string& label) {
  const StatusRow* row = nullptr;
  for (const auto& r : kHttpStatus)
    if (r.status == status) row = &r;
  if (status < 100 || status > 599) {
    b.warn("malformed", "code",
           "HTTP status " + std::to_string(status) + " is not a status code; read as UNKNOWN");
    b.set_code("UNKNOWN", std::nullopt, "http garbled status");
  } else if (row) {
    b.set_code(row->code, tri(row->retryable), label);
  } else {
    b.set_code("UNKNOWN", std::nullopt, label);
  }
  return row;
}

// X-RateLimit-Remaining (GitHub and others): whether it is sent, and whether it says none left.
struct Remaining {
  bool present = false;
  bool exhausted = false;
};

Remaining remaining_of(const Headers& headers) {
  const HeaderValue remaining = header(headers, "X-RateLimit-Remaining");
  return {remaining.present, remaining.present && trim(remaining.value) == "0"};
}

// The body outranks the status where the provider documents it; else a policy's override of
// the status. Returns whether the body says GitHub's secondary rate limit.
bool body_signals(Builder& b, int status, const Headers& headers, const BodyInfo& info,
                  const Remaining& remaining, const std::string& label) {
  const bool client_error = status >= 400 && status < 500;
  const bool retry_after_given = header(headers, "Retry-After").present;
  const std::string message = info.message.value_or("");
  bool secondary = false;
  if (client_error &&
      has_type(info, {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})) {
    b.set_code("QUOTA_EXCEEDED", false, label + " body: quota or billing exhausted");
  } else if (has_type(info, {"context_length_exceeded"}) ||
             ((status == 400 || status == 413 || status == 422) &&
              says_context_overflow(message))) {
    b.set_code("CONTEXT_OVERFLOW", false, label + " body: context length exceeded");
  } else if (has_type(info, {"overloaded_error"})) {
    b.set_code("TRANSIENT", true, label + " body: overloaded");
  } else if (client_error && has_type(info, {"rate_limit_error", "rate_limit_exceeded"})) {
    b.set_code("RATE_LIMITED", true, label + " body: rate limit");
  } else if (status == 403 &&
             (says_rate_limit(message) || remaining.exhausted || retry_after_given)) {
    secondary = has(lower(message), "secondary rate limit");
    b.set_code("RATE_LIMITED", true,
               label + (secondary ? " body: secondary rate limit" : " rate limit"));
  } else if (status == 409 && has_type(info, {"idempotency_key_in_use"})) {
    b.set_code("CONFLICT", true, label + " body: idempotency key in use");
  } else if (status == 413 && retry_after_given) {
    b.set_code("TRANSIENT", true, label + " with Retry-After (temporary)");
  } else if (const CodeMapping* m = b.mapping_for(Protocol::Http, std::to_string(status))) {
    b.set_code_only(m->code, "override http " + m->key);
  }
  return secondary;
}

// A policy's override of a body error type (the first of the body's types that has one).
void type_override(Builder& b, const BodyInfo& info) {
  for (const auto& t : info.types)
    if (const CodeMapping* m = b.mapping_for(Protocol::Http, t); m && !all_digits(m->key)) {
      b.set_code_only(m->code, "override http \"" + m->key + "\"");
      break;
    }
}

// Retry hints: the longest valid one (never retry earlier than any hint asked).
std::optional<std::int64_t> retry_hint(Builder& b, const Headers& headers,
                                       std::optional<std::int64_t> clock,
                                       const Remaining& remaining, bool secondary,
                                       const BodyInfo& info) {
  std::optional<std::int64_t> wait = retry_after_ms(b, headers, clock);
  if (b.e().code == "RATE_LIMITED") {
    keep_longest(wait, reset_ms(b, headers, "RateLimit-Reset", clock));
    if (!remaining.present || remaining.exhausted || secondary)
      keep_longest(wait, reset_ms(b, headers, "X-RateLimit-Reset", clock));
    if (secondary) keep_longest(wait, b.options().secondary_rate_limit_min_ms);
  }
  keep_longest(wait, info.retry_delay_ms);
  return wait;
}

// A 401's challenge as a suggestion, "authenticate (Bearer, error invalid_token)"; nullopt
// without a WWW-Authenticate header.
std::optional<std::string> authenticate_hint(const Headers& headers,
                                             const AdapterTextLimits& limits) {
  const HeaderValue challenge = header(headers, "WWW-Authenticate");
  if (!challenge.present) return std::nullopt;
  // RFC 9110 section 11.6.1: the scheme first; RFC 6750 section 3: error="invalid_token".
  const std::string_view v = trim(challenge.value);
  std::string scheme(v.substr(0, std::min(v.find(' '), v.size())));
  std::string hint = "authenticate (" + valid_utf8(scheme.substr(0, limits.auth_scheme_bytes));
  const std::size_t at = v.find("error=\"");
  if (at != std::string_view::npos) {
    const std::string_view rest = v.substr(at + 7);
    hint +=
        ", error " + valid_utf8(rest.substr(0, std::min(rest.find('"'), limits.auth_error_bytes)));
  }
  return hint + ")";
}

// The status line, and a short plain-text body (never HTML): "HTTP 502 Bad Gateway: upstream".
std::string status_line(int status, const StatusRow* row, std::string_view body_text,
                        const AdapterTextLimits& limits) {
  std::string line = "HTTP " + std::to_string(status) + (row ? std::string(" ") + row->reason : "");
  const std::string_view text = trim(body_text.substr(0, body_text.find('\n')));
  const std::string head = lower(body_text.substr(0, limits.html_sniff_bytes));
  const bool html =
      has(head, "<html") || has(head, "<!doctype") || (text.size() > 1 && text[0] == '<');
  if (!text.empty() && !html) line += ": " + valid_utf8(text.substr(0, limits.plain_body_bytes));
  return line;
}

}  // namespace

void http(Builder& b, int status, const Headers& headers, const json* body_json,
          std::string_view body_text, std::optional<std::int64_t> now_ms) {
  Envelope& e = b.e();
  const std::optional<std::int64_t> clock = clock_of(headers, now_ms);
  const std::string label = "http " + std::to_string(status);
  const StatusRow* row = status_row(b, status, label);

  BodyInfo info;
  if (body_json) info = read_body(*body_json);
  const Remaining remaining = remaining_of(headers);
  const bool secondary = body_signals(b, status, headers, info, remaining, label);
  type_override(b, info);

  e.retry_after_ms = retry_hint(b, headers, clock, remaining, secondary, info);
  e.field = info.field;
  e.suggestion = info.suggestion;
  if (status == 401)
    if (auto hint = authenticate_hint(headers, b.options().text)) e.suggestion = std::move(hint);

  // The message: the body's, else the status line (and a short plain-text body, never HTML).
  if (info.message)
    e.message = info.message;
  else if (status >= 100 && status <= 599)
    e.message = status_line(status, row, body_text, b.options().text);
  e.trace_id = trace_id_of(headers);
  if (info.envelope) b.overlay(*info.envelope, "http body");
}

// ---- transport -------------------------------------------------------------------------------

void transport(Builder& b, std::string_view error) {
  const std::string t = lower(error);
  if (trim(t).empty()) {
    b.warn("malformed", "code", "transport error is empty; read as UNKNOWN");
    b.set_code("UNKNOWN", std::nullopt, "transport unknown");
    return;
  }
  auto any = [&](std::initializer_list<std::string_view> words) {
    for (auto w : words)
      if (has(t, w)) return true;
    return false;
  };
  if (any({"timeout", "timed out", "etimedout", "esockettimedout", "no response"}))
    b.set_code("TIMEOUT", true, "transport timeout");
  else if (any({"econnreset", "connection reset", "socket hang up", "epipe", "broken pipe",
                "econnrefused", "connection refused", "enotfound", "eai_again", "econnaborted",
                "ehostunreach", "enetunreach"}))
    b.set_code("TRANSIENT", true, "transport connection error");
  else
    b.set_code("UNKNOWN", std::nullopt, "transport unknown");
  b.e().message =
      "transport error: " + valid_utf8(error.substr(0, b.options().text.transport_error_bytes));
}

}  // namespace recourse::detail::adapt
