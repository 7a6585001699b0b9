// Adapters, HTTP and transport errors: header fields, the status table (RFC 9110 section 15;
// RFC 6585 for 428, 429, 431, 511), the body rules that outrank the status, the retry hints
// (Retry-After, RFC 9110 section 10.2.3; RateLimit-Reset and X-RateLimit-Reset), the 401
// challenge (WWW-Authenticate, RFC 9110 section 11.6.1; RFC 6750 section 3) and the message.
//
// Input: a status, header fields, and the body as a DOM (json.hpp) or as text; a transport
// error's text. Output: the Builder's envelope (protocols.hpp). The tables are in
// recourse/adapters.hpp and docs/adapters.md, "HTTP".
#include <algorithm>
#include <cctype>
#include <iterator>

#include "adapters/body.hpp"
#include "adapters/http_date.hpp"
#include "adapters/protocols.hpp"
#include "adapters/structured_field.hpp"
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
    {202, "PENDING", 1, "Accepted"},  // 15.3.3: accepted, the processing not completed
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

// The field an idempotency key reused with another request names: the argument to repair is
// the key itself (a new one, bound to the new body; docs/adapters.md, "Idempotency keys").
constexpr std::string_view kIdempotencyKeyField = "idempotency_key";

// OAuth 2.0 error codes, from a body's `error` string or a challenge's `error` parameter. An
// expired, revoked or invalid grant, client or token asks for authorization (PERMISSION), never
// a repair; a malformed request is VALIDATION. RFC 6749 section 5.2 (token endpoint) and
// 4.1.2.1 (authorization endpoint), RFC 6750 section 3.1 (bearer tokens), RFC 8628 section 3.5
// (device authorization grant).
struct OAuthRow {
  const char* error;
  const char* code;
  int retryable;  // 1 true, 0 false
};
constexpr OAuthRow kOAuthErrors[] = {
    {"invalid_request", "VALIDATION", 0},            // 6749 5.2, 6750 3.1
    {"unsupported_grant_type", "VALIDATION", 0},     // 6749 5.2
    {"unsupported_response_type", "VALIDATION", 0},  // 6749 4.1.2.1
    {"invalid_client", "PERMISSION", 0},             // 6749 5.2: client authentication failed
    {"invalid_grant", "PERMISSION", 0},              // 6749 5.2: expired, revoked, invalid grant
    {"unauthorized_client", "PERMISSION", 0},        // 6749 5.2
    {"invalid_scope", "PERMISSION", 0},              // 6749 5.2: may exceed what was granted
    {"access_denied", "PERMISSION", 0},              // 6749 4.1.2.1, 8628 3.5
    {"invalid_token", "PERMISSION", 0},              // 6750 3.1: expired, revoked, malformed
    {"insufficient_scope", "PERMISSION", 0},         // 6750 3.1
    {"expired_token", "PERMISSION", 0},              // 8628 3.5: the device code expired
    {"server_error", "TRANSIENT", 1},                // 6749 4.1.2.1: a 500 by redirect
    {"temporarily_unavailable", "TRANSIENT", 1},     // 6749 4.1.2.1: a 503 by redirect
    {"authorization_pending", "PENDING", 1},         // 8628 3.5: the user has not acted yet
    {"slow_down", "RATE_LIMITED", 1},                // 8628 3.5: poll less often
};

// botocore's standard retry mode (botocore/retries/standard.py at commit d41c584b):
// ThrottledRetryableChecker._THROTTLED_ERROR_CODES and
// TransientRetryableChecker._TRANSIENT_ERROR_CODES. PriorRequestNotComplete is on both lists;
// it reads as throttling, the first.
constexpr std::string_view kAwsThrottling[] = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
};
constexpr std::string_view kAwsTransient[] = {"RequestTimeout", "RequestTimeoutException"};

// One header field's value, OWS trimmed: nullopt when it is absent, or when it appears more
// than once (a `duplicate` warning on `field`: neither value is read).
std::optional<std::string> single(Builder& b, const Headers& headers, std::string_view name,
                                  const char* field) {
  const HeaderValue h = header(headers, name);
  if (!h.present) return std::nullopt;
  if (h.repeated) {
    b.warn("duplicate", field, std::string(name) + " appears more than once; read as absent");
    return std::nullopt;
  }
  return std::string(trim(h.value));
}

// The lines of the field `name` combined into one value, in order, with ", " (RFC 9110
// section 5.3); nullopt when it is not sent. For the fields defined as lists.
std::optional<std::string> combined(const Headers& headers, std::string_view name) {
  std::optional<std::string> out;
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) out = out ? *out + ", " + v : v;
  return out;
}

// The `error` auth-param of a WWW-Authenticate challenge (RFC 6750 section 3: `Bearer
// realm="x", error="invalid_token"`; RFC 9110 section 11.2: a token or a quoted string), the
// first one the field's lines carry; nullopt when none does. `error_description` and
// `error_uri` are other parameters, not this one.
std::optional<std::string> challenge_error(const Headers& headers) {
  const std::optional<std::string> field = combined(headers, "WWW-Authenticate");
  if (!field) return std::nullopt;
  const std::string l = lower(*field);
  for (std::size_t at = l.find("error"); at != std::string::npos; at = l.find("error", at + 1)) {
    const bool starts = at == 0 || l[at - 1] == ' ' || l[at - 1] == ',' || l[at - 1] == '\t';
    std::size_t i = at + 5;
    while (i < l.size() && (l[i] == ' ' || l[i] == '\t')) ++i;
    if (!starts || i >= l.size() || l[i] != '=') continue;
    ++i;
    while (i < l.size() && (l[i] == ' ' || l[i] == '\t')) ++i;
    const bool quoted = i < l.size() && l[i] == '"';
    const std::size_t from = i + (quoted ? 1 : 0);
    const std::size_t to = quoted ? l.find('"', from) : l.find_first_of(" ,\t", from);
    const std::string value = field->substr(from, to == std::string::npos ? to : to - from);
    if (!value.empty()) return value;
  }
  return std::nullopt;
}

void malformed_hint(Builder& b, std::string_view name, std::string_view value, const char* why) {
  b.warn("malformed", "retryAfterMs",
         std::string(name) + " " + excerpt(value) + " " + why + "; read as absent");
}

// Retry-After (RFC 9110 section 10.2.3) as ms.
std::optional<std::int64_t> retry_after_ms(Builder& b, const Headers& headers,
                                           std::optional<std::int64_t> clock) {
  const auto v = single(b, headers, "Retry-After", "retryAfterMs");
  if (!v) return std::nullopt;
  if (auto s = whole_seconds_up(*v)) return saturating_ms(*s);
  if (auto date = http_date_ms(*v, clock)) {
    if (!clock) {
      b.warn("malformed", "retryAfterMs",
             "Retry-After is an HTTP-date but there is no clock (now or a Date header); read as "
             "absent");
      return std::nullopt;
    }
    return std::max<std::int64_t>(0, *date - *clock);
  }
  malformed_hint(b, "Retry-After", *v, "is neither delay-seconds nor an HTTP-date");
  return std::nullopt;
}

// retry-after-ms (OpenAI's and Anthropic's SDKs read it before Retry-After): ms, a fraction
// rounded up, on any status.
std::optional<std::int64_t> retry_after_ms_field(Builder& b, const Headers& headers) {
  const auto v = single(b, headers, "retry-after-ms", "retryAfterMs");
  if (!v) return std::nullopt;
  if (auto ms = whole_seconds_up(*v))  // the same digits grammar, in ms
    return static_cast<std::int64_t>(std::min<std::uint64_t>(*ms, kSaturatedMs));
  malformed_hint(b, "retry-after-ms", *v, "is not a number of ms");
  return std::nullopt;
}

// How a reset header writes its time.
enum class ResetForm {
  Seconds,   // delta seconds below 1e9, epoch seconds below 1e12, else epoch ms
  Duration,  // a Go duration, "6m0s" (duration_ms())
  Rfc3339,   // an RFC 3339 date-time (rfc3339_ms())
};

// A rate limit's reset header and the remaining count it belongs to (nullptr: none).
struct ResetRow {
  const char* remaining;
  const char* reset;
  ResetForm form;
};

// The rate-limit resets, each read on a rate limit only, and only when its own remaining count
// is 0 or unsent (GitHub and OpenAI send these headers on every response; a spent token limit
// says nothing of the requests' reset). See docs/adapters.md, "Waits".
constexpr ResetRow kResets[] = {
    {nullptr, "RateLimit-Reset", ResetForm::Seconds},  // draft-ietf-httpapi-ratelimit-headers-06
    {"X-RateLimit-Remaining", "X-RateLimit-Reset", ResetForm::Seconds},  // GitHub, OpenRouter
    {"x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
     ResetForm::Duration},  // OpenAI
    {"x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", ResetForm::Duration},
    {"anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset",
     ResetForm::Rfc3339},  // Anthropic
    {"anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset",
     ResetForm::Rfc3339},
    {"anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset",
     ResetForm::Rfc3339},
    {"anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-reset",
     ResetForm::Rfc3339},
};

// One reset header as a delay in ms.
std::optional<std::int64_t> reset_ms(Builder& b, const Headers& headers, const ResetRow& row,
                                     std::optional<std::int64_t> clock) {
  const auto v = single(b, headers, row.reset, "retryAfterMs");
  if (!v) return std::nullopt;
  auto until = [&](std::int64_t at_ms) -> std::optional<std::int64_t> {
    if (!clock) {
      malformed_hint(b, row.reset, *v, "is an absolute time but there is no clock");
      return std::nullopt;
    }
    return std::max<std::int64_t>(0, at_ms - *clock);
  };
  switch (row.form) {
    case ResetForm::Duration:
      if (auto ms = duration_ms(*v)) return ms;
      malformed_hint(b, row.reset, *v, "is not a duration such as 6m0s");
      return std::nullopt;
    case ResetForm::Rfc3339:
      if (auto at = rfc3339_ms(*v)) return until(*at);
      malformed_hint(b, row.reset, *v, "is not an RFC 3339 date-time");
      return std::nullopt;
    case ResetForm::Seconds:
      break;
  }
  const auto n = whole_seconds_up(*v);
  if (!n) {
    malformed_hint(b, row.reset, *v, "is not a number of seconds");
    return std::nullopt;
  }
  if (*n < 1'000'000'000) return saturating_ms(*n);
  if (*n < 1'000'000'000'000) return until(saturating_ms(*n));
  return until(static_cast<std::int64_t>(std::min<std::uint64_t>(*n, kSaturatedMs)));
}

// Whether a remaining count is sent, and whether it says none is left.
struct Remaining {
  bool present = false;
  bool exhausted = false;
};

Remaining remaining_of(const Headers& headers, const char* name) {
  const HeaderValue remaining = header(headers, name);
  return {remaining.present, remaining.present && trim(remaining.value) == "0"};
}

// The resets of kResets in `headers` whose limit is spent, the longest kept. GitHub's
// secondary rate limit (`secondary`) reads X-RateLimit-Reset whatever the remaining count says.
void keep_resets(Builder& b, const Headers& headers, std::optional<std::int64_t> clock,
                 bool secondary, std::optional<std::int64_t>& wait) {
  for (const ResetRow& row : kResets) {
    const Remaining r = row.remaining ? remaining_of(headers, row.remaining) : Remaining{};
    const bool forced = secondary && std::string_view(row.reset) == "X-RateLimit-Reset";
    if (!r.present || r.exhausted || forced) keep_longest(wait, reset_ms(b, headers, row, clock));
  }
}

// The structured RateLimit field (draft-ietf-httpapi-ratelimit-headers-10 section 4): a List
// (RFC 9651) of quota policy names, Strings, each with its remaining quota `r` (section 4.1.1,
// required) and the seconds until more quota is available `t` (section 4.1.2, optional), both
// non-negative Integers. The field may be split over several lines (section 4). A limit with
// nothing left (`r=0`) asks for its `t`. A malformed field is ignored whole (section 7), with a
// warning. RateLimit-Policy's window `w` is informative (section 7) and never read as a wait:
// the quota may come back sooner or later than a window.
void keep_ratelimit(Builder& b, const Headers& headers, std::optional<std::int64_t>& wait) {
  const std::optional<std::string> field = combined(headers, "RateLimit");
  if (!field) return;
  const auto limits = parse_sf_list(*field);
  auto integer = [](const SfMember& m, const char* key) {
    const SfBareItem* p = m.parameter(key);
    return p && p->type == SfType::Integer && p->integer >= 0 ? std::optional(p->integer)
                                                              : std::nullopt;
  };
  const char* why = limits ? nullptr : "is not a Structured Fields list (RFC 9651)";
  for (const SfMember& limit : limits ? *limits : std::vector<SfMember>{}) {
    if (limit.inner_list || limit.item.type != SfType::String)
      why = "names a quota policy with something other than a string";
    else if (!integer(limit, "r"))
      why = "has a limit without its remaining quota r, a non-negative integer";
    else if (limit.parameter("t") && !integer(limit, "t"))
      why = "has a reset t that is not a non-negative integer";
  }
  if (why) return malformed_hint(b, "RateLimit", *field, why);
  for (const SfMember& limit : *limits)
    if (*integer(limit, "r") == 0 && limit.parameter("t"))
      keep_longest(wait, saturating_ms(static_cast<std::uint64_t>(*integer(limit, "t"))));
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

// The OAuth row of the response's OAuth error code (kOAuthErrors), or nullptr.
const OAuthRow* oauth_row(const BodyInfo& info) {
  if (!info.oauth_error) return nullptr;
  for (const OAuthRow& row : kOAuthErrors)
    if (*info.oauth_error == row.error) return &row;
  return nullptr;
}

// True when `code` is one of `list`, exactly (AWS codes are case-sensitive).
template <std::size_t N>
bool listed(const std::string_view (&list)[N], std::string_view code) {
  return std::find(std::begin(list), std::end(list), code) != std::end(list);
}

// The body outranks the status where the provider documents it; a 2xx that says the work is
// not done yet (a valid Retry-After, RFC 9110 section 10.2.3, which any response may carry; or a
// long-running operation's status in the body) is PENDING; else a policy's override of the
// status. `retry_after` is Retry-After's valid value. A reused idempotency key names the key
// as `info.field`. Returns whether the body says GitHub's secondary rate limit.
bool body_signals(Builder& b, int status, const Headers& headers, BodyInfo& info,
                  std::optional<std::int64_t> retry_after, const std::string& label) {
  const bool client_error = status >= 400 && status < 500;
  const bool authorization = status == 401 || status == 403;  // never turned into a repair
  const bool retry_after_given = header(headers, "Retry-After").present;
  const Remaining remaining = remaining_of(headers, "X-RateLimit-Remaining");
  const std::string message = info.message.value_or("");
  bool secondary = false;
  // draft-ietf-httpapi-ratelimit-headers-10 section 5 (registered in section 10.2). The codes
  // and retryable values are recourse's reading: the draft gives no retry guidance.
  constexpr std::string_view kProblems = "https://iana.org/assignments/http-problem-types#";
  auto problem = [&](std::string_view name) {
    for (const auto& t : info.types)
      if (t == std::string(kProblems) + std::string(name)) return true;
    return false;
  };
  if (problem("quota-exceeded")) {
    b.set_code("QUOTA_EXCEEDED", false, label + " body: quota exceeded");
  } else if (problem("abnormal-usage-detected")) {
    b.set_code("PERMISSION", false, label + " body: abnormal usage detected");
  } else if (problem("temporary-reduced-capacity")) {
    b.set_code("RATE_LIMITED", true, label + " body: temporary reduced capacity");
  } else if (client_error && has_type(info, {"insufficient_quota", "billing_hard_limit_reached",
                                             "billing_not_active"})) {
    b.set_code("QUOTA_EXCEEDED", false, label + " body: quota or billing exhausted");
  } else if (client_error && long_quota(info)) {
    b.set_code("QUOTA_EXCEEDED", false, label + " body: per-" + *info.quota_window + " quota");
  } else if (has_type(info, {"context_length_exceeded"}) ||
             ((status == 400 || status == 413 || status == 422) &&
              says_context_overflow(message))) {
    b.set_code("CONTEXT_OVERFLOW", false, label + " body: context length exceeded");
  } else if (has_type(info, {"overloaded_error"})) {
    b.set_code("TRANSIENT", true, label + " body: overloaded");
  } else if (client_error && has_type(info, {"rate_limit_error", "rate_limit_exceeded"})) {
    b.set_code("RATE_LIMITED", true, label + " body: rate limit");
  } else if (const OAuthRow* oauth = oauth_row(info);
             oauth && client_error &&
             !(authorization && oauth->code == std::string_view("VALIDATION"))) {
    b.set_code(oauth->code, oauth->retryable == 1, label + " oauth " + oauth->error);
  } else if (info.aws_code && listed(kAwsThrottling, *info.aws_code)) {
    b.set_code("RATE_LIMITED", true, label + " aws throttling " + *info.aws_code);
  } else if (info.aws_code && listed(kAwsTransient, *info.aws_code)) {
    b.set_code("TIMEOUT", true, label + " aws transient " + *info.aws_code);
  } else if (status == 403 &&
             (says_rate_limit(message) || remaining.exhausted || retry_after_given)) {
    secondary = has(lower(message), "secondary rate limit");
    b.set_code("RATE_LIMITED", true,
               label + (secondary ? " body: secondary rate limit" : " rate limit"));
  } else if (status == 409 && has_type(info, {"idempotency_key_in_use"})) {
    b.set_code("CONFLICT", true, label + " body: idempotency key in use");
  } else if (client_error && has_type(info, {"idempotency_error", "IDEMPOTENCY_KEY_REUSED"})) {
    b.set_code("VALIDATION", false, label + " body: idempotency key reused with another request");
    info.field = std::string(kIdempotencyKeyField);
  } else if (status == 413 && retry_after_given) {
    b.set_code("TRANSIENT", true, label + " with Retry-After (temporary)");
  } else if (status >= 200 && status < 300 && b.e().code != "PENDING" &&
             (info.pending || retry_after)) {
    b.set_code(
        "PENDING", true,
        label + (info.pending ? " body: " + *info.pending : " with Retry-After") + " (pending)");
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

// Retry hints: the longest valid one (never retry earlier than any hint asked), from
// Retry-After's value `retry_after` on. Rate-limit resets count on a rate limit only, in the
// headers and in those the body relays; the structured RateLimit field also on an exhausted
// quota (its `r=0` says which limit is spent, and draft -10's example B.1.4 sends it with
// quota-exceeded).
std::optional<std::int64_t> retry_hint(Builder& b, const Headers& headers,
                                       std::optional<std::int64_t> clock, bool secondary,
                                       const BodyInfo& info,
                                       std::optional<std::int64_t> retry_after) {
  std::optional<std::int64_t> wait = retry_after;
  keep_longest(wait, retry_after_ms_field(b, headers));
  if (b.e().code == "RATE_LIMITED") {
    keep_resets(b, headers, clock, secondary, wait);
    keep_resets(b, info.headers, clock, false, wait);
    if (secondary) keep_longest(wait, b.options().secondary_rate_limit_min_ms);
  }
  if (b.e().code == "RATE_LIMITED" || b.e().code == "QUOTA_EXCEEDED")
    keep_ratelimit(b, headers, wait);
  keep_longest(wait, info.retry_delay_ms);
  return wait;
}

// The server's own retry claim: x-should-retry (read by OpenAI's and Anthropic's SDKs) and
// Stripe-Should-Retry, "true" or "false"; when both are sent and disagree, false. nullopt when
// neither is sent or readable (a value other than true or false warns).
std::optional<bool> retry_claim(Builder& b, const Headers& headers) {
  std::optional<bool> claim;
  for (const char* name : {"x-should-retry", "Stripe-Should-Retry"}) {
    const auto v = single(b, headers, name, "retryable");
    if (!v) continue;
    if (*v != "true" && *v != "false") {
      b.warn("malformed", "retryable",
             std::string(name) + " " + excerpt(*v) + " is neither true nor false; ignored");
      continue;
    }
    claim = claim.value_or(true) && *v == "true";
  }
  return claim;
}

// Applies the claim. False always holds (the safe direction). True overrides the status
// table's false (a 409 the server says to retry), never a body's or an envelope's documented
// reading (an exhausted quota, abnormal usage). A claim against the reading warns.
void apply_retry_claim(Builder& b, std::optional<bool> claim, const std::string& label) {
  if (!claim) return;
  Envelope& e = b.e();
  const std::string said = *claim ? "true" : "false";
  if (e.retryable == claim) return;
  if (e.retryable && (!*claim || b.mapping() == label))
    b.warn(
        "contradiction", "retryable",
        "the server says should-retry " + said + " against " + b.mapping() + "; read as " + said);
  else if (e.retryable) {
    b.warn("ignored", "retryable",
           "the server says should-retry true against " + b.mapping() + "; kept false");
    return;
  }
  e.retryable = claim;
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
  if (const auto error = challenge_error(headers))
    hint += ", error " + valid_utf8(error->substr(0, limits.auth_error_bytes));
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
  // The codes header fields carry, when the body has none: x-amzn-ErrorType (AWS REST
  // protocols; botocore parsers.py) and a 4xx challenge's error (RFC 6750 section 3).
  if (!info.aws_code)
    if (const auto t = single(b, headers, "x-amzn-ErrorType", "code"))
      if ((info.aws_code = aws_error_code(*t))) info.types.push_back(*info.aws_code);
  if (!info.oauth_error && status >= 400 && status < 500)
    if ((info.oauth_error = challenge_error(headers))) info.types.push_back(*info.oauth_error);
  const std::optional<std::int64_t> retry_after = retry_after_ms(b, headers, clock);
  const bool secondary = body_signals(b, status, headers, info, retry_after, label);
  type_override(b, info);

  e.retry_after_ms = retry_hint(b, headers, clock, secondary, info, retry_after);
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
  apply_retry_claim(b, retry_claim(b, headers), label);
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
