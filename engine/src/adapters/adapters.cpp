// Adapters: raw protocol errors (HTTP, transport, gRPC, JSON-RPC, MCP) -> Envelope.
//
// Input: what a tool call returned, typed or as one raw JSON object. Output: the envelope a
// policy decides on, with a warning for every value that was read as absent. The mapping tables
// and their sources (RFC 9110, RFC 6585, RFC 9457, gRFC A6, JSON-RPC 2.0, the MCP spec) are in
// the public header and docs/adapters.md; this file implements them in the same order.
//
// Raw JSON is read into a DOM by a SAX builder rather than json::parse, for the envelope reader's
// hardening: a key seen twice in one object becomes a marker (read as absent with a "duplicate"
// warning, never as either value), nesting beyond the limit becomes a marker instead of a deep
// tree, and a number beyond a double's range (1e999) becomes a marker instead of failing the
// whole input. A marker only warns when the adapter reads that value.
#include "recourse/adapters.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>

#include "source/utf8.hpp"

namespace recourse {
namespace {

using detail::valid_utf8;
using json = nlohmann::json;

constexpr std::string_view kDuplicate = "\x01recourse:duplicate";
constexpr std::string_view kTooDeep = "\x01recourse:too-deep";
constexpr std::string_view kOverflow = "\x01recourse:number-overflow";  // as envelope.cpp's
constexpr std::string_view kNotText = "\x01recourse:not-text";  // a header value not a string
constexpr std::int64_t kMaxMs = std::numeric_limits<std::int64_t>::max();

// ---- small text helpers ----------------------------------------------------------------------

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

bool has(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A number as a standalone token ("401" in "failed: 401 Invalid", not in "4010").
bool has_number(std::string_view text, std::string_view number) {
  for (std::size_t at = text.find(number); at != std::string_view::npos;
       at = text.find(number, at + 1)) {
    const bool before = at == 0 || !std::isdigit(static_cast<unsigned char>(text[at - 1]));
    const std::size_t end = at + number.size();
    const bool after = end == text.size() || !std::isdigit(static_cast<unsigned char>(text[end]));
    if (before && after) return true;
  }
  return false;
}

// An untrusted value inside a warning: quoted, at most 40 bytes, non-printable bytes as '?'.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  return out + (s.size() > 40 ? "...\"" : "\"");
}

std::int64_t saturating_ms(std::uint64_t seconds) {
  return seconds > static_cast<std::uint64_t>(kMaxMs / 1000)
             ? kMaxMs
             : static_cast<std::int64_t>(seconds) * 1000;
}

// Digits as an unsigned number, saturating at UINT64_MAX.
std::uint64_t digits_value(std::string_view s) {
  std::uint64_t v = 0;
  for (char c : s) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10)
      return std::numeric_limits<std::uint64_t>::max();
    v = v * 10 + d;
  }
  return v;
}

// "12" or "0.503" (not RFC 9110's grammar, but seen in the wild): whole seconds, a fraction
// rounded up. Anything else (signs, exponents, nan, inf, units): nullopt.
std::optional<std::uint64_t> whole_seconds_up(std::string_view s) {
  const std::size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  if (!all_digits(whole)) return std::nullopt;
  std::uint64_t v = digits_value(whole);
  if (dot != std::string_view::npos) {
    const std::string_view fraction = s.substr(dot + 1);
    if (!all_digits(fraction)) return std::nullopt;
    if (fraction.find_first_not_of('0') != std::string_view::npos &&
        v != std::numeric_limits<std::uint64_t>::max())
      ++v;
  }
  return v;
}

// ---- HTTP-date (RFC 9110 section 5.6.7) -------------------------------------------------------

// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

class DateCursor {
 public:
  explicit DateCursor(std::string_view s) : s_(s) {}
  bool lit(std::string_view t) {
    if (s_.substr(i_, t.size()) != t) return false;
    i_ += t.size();
    return true;
  }
  bool number(std::size_t n, int& out) {
    if (i_ + n > s_.size() || !all_digits(s_.substr(i_, n))) return false;
    out = static_cast<int>(digits_value(s_.substr(i_, n)));
    i_ += n;
    return true;
  }
  template <std::size_t N>
  bool one_of(const std::array<std::string_view, N>& words, int& index) {
    for (std::size_t k = 0; k < N; ++k)
      if (s_.substr(i_, words[k].size()) == words[k]) {
        // A short day name must not be the prefix of a long one ("Sun" of "Sunday").
        const std::size_t end = i_ + words[k].size();
        if (end < s_.size() && std::isalpha(static_cast<unsigned char>(s_[end]))) continue;
        index = static_cast<int>(k);
        i_ = end;
        return true;
      }
    return false;
  }
  bool time(int& h, int& m, int& s) {
    return number(2, h) && lit(":") && number(2, m) && lit(":") && number(2, s);
  }
  bool done() const { return i_ == s_.size(); }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

constexpr std::array<std::string_view, 7> kDays = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> kLongDays = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// An HTTP-date in any of its three forms, as ms since the epoch. A two-digit RFC 850 year more
// than 50 years ahead of `now_ms` is read in the past century (section 5.6.7).
std::optional<std::int64_t> http_date_ms(std::string_view text,
                                         std::optional<std::int64_t> now_ms) {
  int wday = 0, day = 0, month = 0, year = 0, h = 0, m = 0, s = 0;
  bool ok = false;
  {  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
    DateCursor c(text);
    ok = c.one_of(kDays, wday) && c.lit(", ") && c.number(2, day) && c.lit(" ") &&
         c.one_of(kMonths, month) && c.lit(" ") && c.number(4, year) && c.lit(" ") &&
         c.time(h, m, s) && c.lit(" GMT") && c.done();
  }
  if (!ok) {  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
    DateCursor c(text);
    int yy = 0;
    ok = c.one_of(kLongDays, wday) && c.lit(", ") && c.number(2, day) && c.lit("-") &&
         c.one_of(kMonths, month) && c.lit("-") && c.number(2, yy) && c.lit(" ") &&
         c.time(h, m, s) && c.lit(" GMT") && c.done();
    if (ok && now_ms) {
      const int now_year = static_cast<int>(1970 + *now_ms / 31'556'952'000);  // mean years
      year = (now_year / 100) * 100 + yy;
      if (year > now_year + 50) year -= 100;
    } else if (ok) {
      year = yy < 70 ? 2000 + yy : 1900 + yy;
    }
  }
  if (!ok) {  // asctime: Sun Nov  6 08:49:37 1994
    DateCursor c(text);
    ok = c.one_of(kDays, wday) && c.lit(" ") && c.one_of(kMonths, month) && c.lit(" ") &&
         (c.lit(" ") ? c.number(1, day) : c.number(2, day)) && c.lit(" ") && c.time(h, m, s) &&
         c.lit(" ") && c.number(4, year) && c.done();
  }
  if (!ok) return std::nullopt;
  static constexpr int kMonthDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day < 1 || day > kMonthDays[month] || (month == 1 && day == 29 && !leap) || h > 23 ||
      m > 59 || s > 60)
    return std::nullopt;
  const std::int64_t days =
      days_from_civil(year, static_cast<unsigned>(month + 1), static_cast<unsigned>(day));
  return ((days * 24 + h) * 60 + m) * 60'000 + std::int64_t{s} * 1000;
}

// ---- hardened JSON ---------------------------------------------------------------------------

// A SAX consumer that builds a DOM, with markers for duplicates, depth and overflow (see the
// file comment).
class DomBuilder : public nlohmann::json_sax<json> {
 public:
  explicit DomBuilder(std::size_t max_depth) : max_depth_(max_depth) {}

  bool null() override { return put(json()); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return put(json(v)); }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t&) override { return put(json()); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (skip_ == 0) {
      duplicate_ = stack_.back()->contains(k);
      key_ = std::move(k);
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& e) override {
    if (e.id == kNumberOverflow && token.size() <= position) {
      overflow_end_ = position;
      overflow_size_ = token.size();
    } else if (error_.empty()) {
      error_ = "invalid JSON at byte " + std::to_string(position) + ": " + e.what();
    }
    return false;
  }

  static constexpr int kNumberOverflow = 406;
  json root_;
  std::string error_;
  std::size_t overflow_end_ = 0;
  std::size_t overflow_size_ = 0;

 private:
  json* insert(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    if (duplicate_) {
      slot = std::string(kDuplicate);
      duplicate_ = false;
      return nullptr;
    }
    slot = std::move(v);
    return &slot;
  }
  bool put(json&& v) {
    if (skip_ == 0) insert(std::move(v));
    return true;
  }
  bool open(json&& container) {
    if (skip_ > 0) {
      ++skip_;
      return true;
    }
    if (stack_.size() >= max_depth_) {
      insert(std::string(kTooDeep));
      skip_ = 1;
      return true;
    }
    json* slot = insert(std::move(container));
    if (slot == nullptr) {
      skip_ = 1;  // the second value of a duplicated key: skipped
      return true;
    }
    stack_.push_back(slot);
    return true;
  }
  bool close() {
    if (skip_ > 0)
      --skip_;
    else
      stack_.pop_back();
    return true;
  }

  std::size_t max_depth_;
  std::vector<json*> stack_;
  std::string key_;
  bool duplicate_ = false;
  std::size_t skip_ = 0;
};

struct Parsed {
  bool ok = false;
  std::string error;
  json value;
};

Parsed parse_json(std::string_view text, std::size_t max_bytes, const ReaderLimits& limits) {
  Parsed out;
  if (text.size() > max_bytes) {
    out.error = "input is " + std::to_string(text.size()) + " bytes; the limit is " +
                std::to_string(max_bytes);
    return out;
  }
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    out.error = "invalid JSON at byte " + std::to_string(nul + 1) + ": a NUL byte";
    return out;
  }
  std::string patched;
  std::string_view input = text;
  for (std::size_t pass = 0;; ++pass) {
    DomBuilder builder(limits.max_depth);
    const bool ok = json::sax_parse(input.begin(), input.end(), &builder);
    if (ok && builder.error_.empty()) {
      out.ok = true;
      out.value = std::move(builder.root_);
      return out;
    }
    if (builder.overflow_end_ == 0 || !builder.error_.empty()) {
      out.error = builder.error_.empty() ? "invalid JSON" : builder.error_;
      return out;
    }
    if (pass == limits.max_overflow_numbers) {
      out.error = "more than " + std::to_string(limits.max_overflow_numbers) +
                  " numbers beyond the range of a double";
      return out;
    }
    if (patched.empty()) patched = std::string(text);
    patched.replace(builder.overflow_end_ - builder.overflow_size_, builder.overflow_size_,
                    "\"\\u0001recourse:number-overflow\"");
    input = patched;
  }
}

bool is_marker(const json& v) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  return !s.empty() && s[0] == '\x01' && (s == kDuplicate || s == kTooDeep || s == kOverflow);
}

// ---- the result under construction -----------------------------------------------------------

constexpr std::array<std::string_view, 10> kBuiltinCodes = {
    "TRANSIENT", "RATE_LIMITED", "TIMEOUT",        "VALIDATION",       "PERMISSION",
    "NOT_FOUND", "CONFLICT",     "QUOTA_EXCEEDED", "CONTEXT_OVERFLOW", "UNKNOWN"};

class Builder {
 public:
  Builder(AdapterResult& r, const AdapterOptions& o) : r_(r), o_(o) { r_.ok = true; }
  Envelope& e() { return r_.envelope; }
  const AdapterOptions& options() const { return o_; }

  void warn(const char* kind, const char* field, std::string message) {
    r_.envelope.warnings.push_back({kind, field, std::move(message)});
  }
  void set_code(std::string_view code, std::optional<bool> retryable, std::string mapping) {
    r_.envelope.code = std::string(code);
    r_.envelope.retryable = retryable;
    r_.mapping = std::move(mapping);
  }
  void set_code_only(std::string_view code, std::string mapping) {
    r_.envelope.code = std::string(code);
    r_.mapping = std::move(mapping);
  }
  const std::string& mapping() const { return r_.mapping; }
  AdapterResult& result() { return r_; }

  // A member of a raw form, or nullptr; a marker there is read as absent with a warning on
  // `field` (an envelope key).
  const json* member(const json& object, std::string_view key, const char* field) {
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
    else if (s == kOverflow)
      warn("malformed", field, where + " is a number beyond the range of a double; read as absent");
    else
      return &*it;
    return nullptr;
  }
  // A member that must be a string when present; another type warns (null is silent).
  std::optional<std::string> text(const json& object, std::string_view key, const char* field) {
    const json* v = member(object, key, field);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (v->is_string()) return v->get<std::string>();
    warn("malformed", field, std::string(key) + " is not a string; read as absent");
    return std::nullopt;
  }

  // The envelope's string caps and non-empty rules, as read_envelope applies them. Strings are
  // UTF-8 as in any envelope read from JSON (a typed entry point such as from_jsonrpc may be
  // handed other bytes): invalid sequences become U+FFFD, so to_json reads back the same.
  void finish() {
    Envelope& e = r_.envelope;
    const ReaderLimits& l = o_.limits;
    auto cap = [&](std::optional<std::string>& v, const char* field, std::size_t limit,
                   bool may_be_empty) {
      if (!v) return;
      *v = valid_utf8(*v);
      if (v->size() > limit) {
        warn("oversized", field,
             std::string(field) + " is longer than " + std::to_string(limit) +
                 " bytes; read as absent");
        v.reset();
      } else if (v->empty() && !may_be_empty) {
        v.reset();
      }
    };
    cap(e.code, "code", l.max_code_bytes, false);
    cap(e.message, "message", l.max_text_bytes, true);
    cap(e.field, "field", l.max_field_bytes, false);
    cap(e.suggestion, "suggestion", l.max_text_bytes, true);
    cap(e.trace_id, "traceId", l.max_field_bytes, false);
  }

  // A policy's or host's override for (protocol, key), if any.
  const CodeMapping* mapping_for(Protocol protocol, std::string_view key) const {
    auto same = [](Protocol a, Protocol b) {
      auto rpc = [](Protocol p) { return p == Protocol::JsonRpc || p == Protocol::Mcp; };
      return a == b || (rpc(a) && rpc(b));
    };
    for (const auto& m : o_.mappings)
      if (same(m.protocol, protocol) && m.key == key && !m.code.empty()) return &m;
    return nullptr;
  }

  // An envelope inside a body, a structuredContent or a JSON-RPC data: its present fields win.
  // It goes through read_envelope itself, markers written back as what they stood for.
  bool overlay(const json& object, const char* where) {
    std::string text = "{";
    for (const auto& [key, value] : object.items()) {
      if (text.size() > 1) text += ',';
      const std::string k = json(key).dump();
      if (value.is_string() && value.get_ref<const std::string&>() == kDuplicate)
        text += k + ":null," + k + ":null";
      else if (value.is_string() && value.get_ref<const std::string&>() == kOverflow)
        text += k + ":1e999";
      else if (value.is_string() && value.get_ref<const std::string&>() == kTooDeep)
        text += k + ":{}";
      else
        text += k + ":" + value.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    text += "}";
    const EnvelopeResult inner = read_envelope(text, o_.limits);
    if (!inner.ok) {
      warn("malformed", "code",
           std::string(where) + " looks like an envelope but cannot be read: " + inner.error);
      return false;
    }
    Envelope& e = r_.envelope;
    const Envelope& in = inner.envelope;
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

 private:
  AdapterResult& r_;
  const AdapterOptions& o_;
};

// An object "carries an envelope" when its code is a string naming a built-in code, or it has
// a `retryable` key: the seed's ToolError, not a provider's own error JSON.
bool carries_envelope(const json& v) {
  if (!v.is_object()) return false;
  const auto code = v.find("code");
  if (code == v.end() || !code->is_string()) return false;
  const auto& s = code->get_ref<const std::string&>();
  return v.contains("retryable") ||
         std::find(kBuiltinCodes.begin(), kBuiltinCodes.end(), s) != kBuiltinCodes.end();
}

// ---- headers ---------------------------------------------------------------------------------

struct HeaderValue {
  bool present = false;
  bool repeated = false;
  std::string value;
};

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

// traceparent's trace-id (W3C Trace Context), else the first request-id header.
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

// ---- provider bodies -------------------------------------------------------------------------

struct BodyInfo {
  std::optional<std::string> message;
  std::vector<std::string> types;  // error types and codes, problem type, Google status/reason
  std::optional<std::string> field, suggestion;
  std::optional<std::int64_t> retry_delay_ms;  // google.rpc.RetryInfo
  const json* envelope = nullptr;              // the body is itself an envelope
};

const std::string* str(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string() || is_marker(*it)) return nullptr;
  return &it->get_ref<const std::string&>();
}

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
    ms = ms > kMaxMs - part ? kMaxMs : ms + part;
  }
  return ms;
}

// google.rpc details (RetryInfo, BadRequest, ErrorInfo), in a Google JSON error or gRPC.
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

// Problem details (RFC 9457), OpenAI, Anthropic, Google, GitHub, Stripe and OAuth error JSON.
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

// ---- HTTP ------------------------------------------------------------------------------------

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

std::optional<bool> tri(int v) {
  return v < 0 ? std::nullopt : std::optional<bool>(v == 1);
}

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
         "Retry-After " + quote(h.value) +
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
           std::string(name) + " " + quote(h.value) + " " + why + "; read as absent");
    return std::nullopt;
  };
  if (h.repeated) return bad("appears more than once");
  const auto seconds = whole_seconds_up(trim(h.value));
  if (!seconds) return bad("is not a number of seconds");
  if (*seconds < 1'000'000'000) return saturating_ms(*seconds);
  if (!clock) return bad("is an epoch time but there is no clock");
  return std::max<std::int64_t>(0, saturating_ms(*seconds) - *clock);
}

void keep_longest(std::optional<std::int64_t>& into, std::optional<std::int64_t> hint) {
  if (hint) into = std::max(into.value_or(0), *hint);
}

// The HTTP adapter. `body_json` is the body when it is JSON; `body_text` otherwise.
void http(Builder& b, int status, const Headers& headers, const json* body_json,
          std::string_view body_text, std::optional<std::int64_t> now_ms) {
  Envelope& e = b.e();
  // The clock for absolute times: the host's now, else the response's Date header.
  std::optional<std::int64_t> clock = now_ms;
  if (!clock) {
    const HeaderValue date = header(headers, "Date");
    if (date.present && !date.repeated) clock = http_date_ms(trim(date.value), std::nullopt);
  }
  const StatusRow* row = nullptr;
  for (const auto& r : kHttpStatus)
    if (r.status == status) row = &r;
  const std::string label = "http " + std::to_string(status);
  if (status < 100 || status > 599) {
    b.warn("malformed", "code",
           "HTTP status " + std::to_string(status) + " is not a status code; read as UNKNOWN");
    b.set_code("UNKNOWN", std::nullopt, "http garbled status");
  } else if (row) {
    b.set_code(row->code, tri(row->retryable), label);
  } else {
    b.set_code("UNKNOWN", std::nullopt, label);
  }

  BodyInfo info;
  if (body_json) info = read_body(*body_json);

  // The body outranks the status where the provider documents it.
  const bool client_error = status >= 400 && status < 500;
  const HeaderValue remaining = header(headers, "X-RateLimit-Remaining");
  const bool exhausted = remaining.present && trim(remaining.value) == "0";
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
  } else if (status == 403 && (says_rate_limit(message) || exhausted || retry_after_given)) {
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
  for (const auto& t : info.types)
    if (const CodeMapping* m = b.mapping_for(Protocol::Http, t); m && !all_digits(m->key)) {
      b.set_code_only(m->code, "override http \"" + m->key + "\"");
      break;
    }

  // Retry hints: the longest valid one (never retry earlier than any hint asked).
  std::optional<std::int64_t> wait = retry_after_ms(b, headers, clock);
  if (e.code == "RATE_LIMITED") {
    keep_longest(wait, reset_ms(b, headers, "RateLimit-Reset", clock));
    if (!remaining.present || exhausted || secondary)
      keep_longest(wait, reset_ms(b, headers, "X-RateLimit-Reset", clock));
    if (secondary) keep_longest(wait, b.options().secondary_rate_limit_min_ms);
  }
  keep_longest(wait, info.retry_delay_ms);
  e.retry_after_ms = wait;

  e.field = info.field;
  e.suggestion = info.suggestion;
  if (status == 401) {
    const HeaderValue challenge = header(headers, "WWW-Authenticate");
    if (challenge.present) {
      // RFC 9110 section 11.6.1: the scheme first; RFC 6750 section 3: error="invalid_token".
      const std::string_view v = trim(challenge.value);
      std::string scheme(v.substr(0, std::min(v.find(' '), v.size())));
      std::string hint = "authenticate (" + valid_utf8(scheme.substr(0, 32));
      const std::size_t at = v.find("error=\"");
      if (at != std::string_view::npos) {
        const std::string_view rest = v.substr(at + 7);
        hint += ", error " + valid_utf8(rest.substr(0, std::min<std::size_t>(rest.find('"'), 64)));
      }
      e.suggestion = hint + ")";
    }
  }

  // The message: the body's, else the status line (and a short plain-text body, never HTML).
  if (info.message) {
    e.message = info.message;
  } else if (status >= 100 && status <= 599) {
    std::string line =
        "HTTP " + std::to_string(status) + (row ? std::string(" ") + row->reason : "");
    const std::string_view text = trim(body_text.substr(0, body_text.find('\n')));
    const bool html = has(lower(body_text.substr(0, 512)), "<html") ||
                      has(lower(body_text.substr(0, 512)), "<!doctype") ||
                      (text.size() > 1 && text[0] == '<');
    if (!text.empty() && !html) line += ": " + valid_utf8(text.substr(0, 200));
    e.message = line;
  }
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
  b.e().message = "transport error: " + valid_utf8(error.substr(0, 1024));
}

// ---- gRPC ------------------------------------------------------------------------------------

struct GrpcRow {
  const char* name;
  const char* code;
  int retryable;
};

// grpc/doc/statuscodes.md, indexed by number.
constexpr std::array<GrpcRow, 17> kGrpcStatus = {{
    {"OK", "UNKNOWN", -1},
    {"CANCELLED", "UNKNOWN", 0},
    {"UNKNOWN", "UNKNOWN", -1},
    {"INVALID_ARGUMENT", "VALIDATION", 0},
    {"DEADLINE_EXCEEDED", "TIMEOUT", 1},
    {"NOT_FOUND", "NOT_FOUND", 0},
    {"ALREADY_EXISTS", "CONFLICT", 0},
    {"PERMISSION_DENIED", "PERMISSION", 0},
    {"RESOURCE_EXHAUSTED", "RATE_LIMITED", 1},
    {"FAILED_PRECONDITION", "CONFLICT", 0},
    {"ABORTED", "CONFLICT", 1},
    {"OUT_OF_RANGE", "VALIDATION", 0},
    {"UNIMPLEMENTED", "NOT_FOUND", 0},
    {"INTERNAL", "UNKNOWN", 0},
    {"UNAVAILABLE", "TRANSIENT", 1},
    {"DATA_LOSS", "UNKNOWN", 0},
    {"UNAUTHENTICATED", "PERMISSION", 0},
}};

// "UNAVAILABLE", "Unavailable" (Go), "14" -> 14.
std::optional<std::size_t> grpc_status(std::string_view s) {
  s = trim(s);
  if (all_digits(s) && s.size() <= 2) {
    const auto n = digits_value(s);
    if (n < kGrpcStatus.size()) return static_cast<std::size_t>(n);
    return std::nullopt;
  }
  std::string squeezed;
  for (char c : s)
    if (c != '_') squeezed += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t i = 0; i < kGrpcStatus.size(); ++i) {
    std::string name;
    for (const char* p = kGrpcStatus[i].name; *p; ++p)
      if (*p != '_') name += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
    if (name == squeezed) return i;
  }
  return std::nullopt;
}

void grpc(Builder& b, std::optional<std::string> status, std::string_view message,
          const Headers& metadata, const json* details) {
  Envelope& e = b.e();
  const auto index = status ? grpc_status(*status) : std::nullopt;
  if (!index) {
    b.warn("malformed", "code",
           (status ? "gRPC status " + quote(*status) + " is not a status code"
                   : std::string("no gRPC status")) +
               "; read as UNKNOWN");
    b.set_code("UNKNOWN", std::nullopt, "grpc garbled status");
  } else {
    const GrpcRow& row = kGrpcStatus[*index];
    b.set_code(row.code, tri(row.retryable), std::string("grpc ") + row.name);
    if (*index == 0) b.warn("malformed", "code", "gRPC status OK is not an error; read as UNKNOWN");
    if (const CodeMapping* m = b.mapping_for(Protocol::Grpc, row.name))
      b.set_code_only(m->code, "override grpc " + m->key);
    else if (const CodeMapping* n = b.mapping_for(Protocol::Grpc, std::to_string(*index)))
      b.set_code_only(n->code, "override grpc " + n->key);
  }
  if (!message.empty()) e.message = valid_utf8(message);
  BodyInfo info;
  if (details) read_google_details(*details, info);
  e.field = info.field;
  e.suggestion = info.suggestion;
  e.retry_after_ms = info.retry_delay_ms;
  // gRFC A6: a non-negative integer pushback is the delay; a negative or malformed one means
  // the server asks the client not to retry.
  const HeaderValue pushback = header(metadata, "grpc-retry-pushback-ms");
  if (pushback.present) {
    const std::string_view v = trim(pushback.value);
    if (!pushback.repeated && all_digits(v)) {
      const auto ms = digits_value(v);
      keep_longest(e.retry_after_ms, ms > static_cast<std::uint64_t>(kMaxMs)
                                         ? kMaxMs
                                         : static_cast<std::int64_t>(ms));
    } else {
      e.retryable = false;
      b.warn("malformed", "retryAfterMs",
             "grpc-retry-pushback-ms " + quote(pushback.value) +
                 (pushback.repeated ? " appears more than once" : " is negative or malformed") +
                 ": the server asks not to retry (gRFC A6); retryable read as false");
    }
  }
  e.trace_id = trace_id_of(metadata);
}

// ---- JSON-RPC and MCP ------------------------------------------------------------------------

void jsonrpc(Builder& b, std::optional<std::int64_t> code, std::optional<std::string> message,
             const json* data, const char* label) {
  Envelope& e = b.e();
  const std::string prefix(label);
  if (!code) {
    b.warn("malformed", "code", prefix + " error has no integer code; read as UNKNOWN");
    b.set_code("UNKNOWN", std::nullopt, prefix + " garbled code");
  } else {
    // JSON-RPC 2.0 section 5.1; -32002 from the MCP resources spec.
    const std::int64_t c = *code;
    const std::string l = prefix + " " + std::to_string(c);
    if (c == -32700 || c == -32600 || c == -32602)
      b.set_code("VALIDATION", false, l);
    else if (c == -32601 || c == -32002)
      b.set_code("NOT_FOUND", false, l);
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
  }
}

// The JSON-RPC error object's members, read with warnings.
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
  if (says_credential_problem(text)) b.set_code_only("PERMISSION", "mcp isError text: credential");
}

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

void http_raw(Builder& b, const json& raw, std::optional<std::int64_t> now_ms) {
  const Headers headers = headers_of(b, raw, "headers");
  const json* body = b.member(raw, "body", "message");
  std::string_view text;
  if (body && body->is_string()) {
    text = body->get_ref<const std::string&>();
    if (text.size() > b.options().limits.max_bytes) {
      b.warn("oversized", "message",
             "body is longer than " + std::to_string(b.options().limits.max_bytes) +
                 " bytes; ignored");
      text = {};
    }
  }
  // A JSON body sent as a string is still JSON.
  Parsed parsed;
  if (!text.empty() && trim(text).substr(0, 1) == "{") {
    parsed = parse_json(text, b.options().limits.max_bytes, b.options().limits);
    if (parsed.ok && parsed.value.is_object()) body = &parsed.value;
  }
  const json* status = b.member(raw, "status", "code");
  if (status && status->is_number_integer()) {
    const std::int64_t s = status->get<std::int64_t>();
    const bool json_body = body && body->is_object();
    return http(b, static_cast<int>(std::clamp<std::int64_t>(s, -1, 1000)), headers,
                json_body ? body : nullptr, json_body ? std::string_view() : text, now_ms);
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

}  // namespace

const char* to_string(Protocol protocol) noexcept {
  switch (protocol) {
    case Protocol::Http:
      return "http";
    case Protocol::Grpc:
      return "grpc";
    case Protocol::Mcp:
      return "mcp";
    case Protocol::JsonRpc:
      return "jsonrpc";
  }
  return "http";
}

std::optional<Protocol> protocol_of(std::string_view name) noexcept {
  name = trim(name);
  const std::string_view word = name.substr(0, std::min(name.find(' '), name.size()));
  if (iequals(word, "http") || iequals(word, "https")) return Protocol::Http;
  if (iequals(word, "grpc")) return Protocol::Grpc;
  if (iequals(word, "mcp")) return Protocol::Mcp;
  if (iequals(word, "jsonrpc") || iequals(word, "json-rpc")) return Protocol::JsonRpc;
  return std::nullopt;
}

namespace {

template <typename F>
AdapterResult guarded(const AdapterOptions& options, F&& run) noexcept {
  AdapterResult r;
  try {
    Builder b(r, options);
    run(b);
    if (r.ok) b.finish();
  } catch (const std::exception& e) {
    r = AdapterResult{};
    r.error = std::string("raw form could not be read: ") + e.what();
  }
  return r;
}

}  // namespace

AdapterResult from_http(int status, const Headers& headers, std::string_view body,
                        std::optional<std::int64_t> now_ms,
                        const AdapterOptions& options) noexcept {
  return guarded(options, [&](Builder& b) {
    std::string_view text = body;
    if (text.size() > options.limits.max_bytes) {
      b.warn("oversized", "message",
             "body is longer than " + std::to_string(options.limits.max_bytes) + " bytes; ignored");
      text = {};
    }
    Parsed parsed;
    if (!trim(text).empty() && trim(text).front() == '{')
      parsed = parse_json(text, options.limits.max_bytes, options.limits);
    const bool json_body = parsed.ok && parsed.value.is_object();
    http(b, status, headers, json_body ? &parsed.value : nullptr, json_body ? "" : text, now_ms);
  });
}

AdapterResult from_transport_error(std::string_view error, const AdapterOptions& options) noexcept {
  return guarded(options, [&](Builder& b) { transport(b, error); });
}

AdapterResult from_grpc(std::string_view status, std::string_view message, const Headers& metadata,
                        const AdapterOptions& options) noexcept {
  return guarded(options,
                 [&](Builder& b) { grpc(b, std::string(status), message, metadata, nullptr); });
}

AdapterResult from_jsonrpc(std::int64_t code, std::string_view message, std::string_view data_json,
                           const AdapterOptions& options) noexcept {
  return guarded(options, [&](Builder& b) {
    Parsed data;
    if (!trim(data_json).empty()) {
      data = parse_json(data_json, options.limits.max_bytes, options.limits);
      if (!data.ok) b.warn("malformed", "field", "JSON-RPC error data is not JSON; ignored");
    }
    jsonrpc(b, code, std::string(message), data.ok ? &data.value : nullptr, "jsonrpc");
  });
}

AdapterResult from_mcp(std::string_view reply_json, const AdapterOptions& options) noexcept {
  return from_raw(Protocol::Mcp, reply_json, std::nullopt, options);
}

AdapterResult from_raw(std::optional<Protocol> protocol, std::string_view raw_json,
                       std::optional<std::int64_t> now_ms, const AdapterOptions& options) noexcept {
  return guarded(options, [&](Builder& b) {
    Parsed parsed = parse_json(raw_json, options.max_raw_bytes, options.limits);
    AdapterResult& r = b.result();
    if (!parsed.ok || !parsed.value.is_object()) {
      r = AdapterResult{};
      r.error = parsed.ok ? "a raw form is a JSON object" : parsed.error;
      return;
    }
    const json& raw = parsed.value;
    std::optional<Protocol> named;
    if (const std::string* p = str(raw, "protocol")) named = protocol_of(*p);
    if (!protocol) protocol = named;
    if (!protocol) {
      r = AdapterResult{};
      r.error = "the raw form names no protocol (http, grpc, mcp or jsonrpc)";
      return;
    }
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
            r.idempotent = idempotent_of(*a);
          else if (idempotent_of(*a))
            b.warn("ignored", "idempotent",
                   "tool annotations come from an untrusted server; idempotent not set");
        }
        break;
    }
  });
}

std::optional<bool> idempotent_from_annotations(std::string_view annotations_json,
                                                bool trusted) noexcept {
  if (!trusted) return std::nullopt;
  try {
    const Parsed parsed = parse_json(annotations_json, 64 * 1024, ReaderLimits{});
    if (!parsed.ok) return std::nullopt;
    return idempotent_of(parsed.value);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string to_json(const Envelope& e) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (e.code) j["code"] = *e.code;
  if (e.message) j["message"] = *e.message;
  if (e.retryable) j["retryable"] = *e.retryable;
  if (e.field) j["field"] = *e.field;
  if (e.suggestion) j["suggestion"] = *e.suggestion;
  if (e.retry_after_ms) j["retryAfterMs"] = *e.retry_after_ms;
  if (e.trace_id) j["traceId"] = *e.trace_id;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace recourse
