// Envelope reader (untrusted input) and context reader (trusted input).
//
// The envelope is read with nlohmann's SAX interface: no DOM is built, nesting is bounded while
// reading, and a key seen twice is visible (a DOM keeps only one of them). Per field, the value
// either passes its check or the field is absent with a warning; never a different valid value.
// A number is read by its written value (json_number.hpp), not only by its nearest double.
// The context comes from the host and is parsed strictly: any bad field is an error, and so is
// a key given twice in any of its objects.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "json_number.hpp"
#include "recourse/envelope.hpp"

namespace recourse {

namespace detail {

double written_double(double nearest, std::string_view token) {
  if (!std::isfinite(nearest) || std::trunc(nearest) != nearest) return nearest;
  const bool negative = !token.empty() && token.front() == '-';
  // The written value is digits * 10^exponent, digits without leading zeros.
  std::string digits;
  std::int64_t exponent = 0;
  std::size_t i = negative ? 1 : 0;
  for (bool fraction = false; i < token.size() && token[i] != 'e' && token[i] != 'E'; ++i) {
    if (token[i] == '.') {
      fraction = true;
      continue;
    }
    if (!digits.empty() || token[i] != '0') digits += token[i];
    if (fraction) --exponent;
  }
  if (digits.empty()) return nearest;  // zero, however written
  if (i < token.size()) {              // the exponent, saturating far beyond any double
    const bool down = i + 1 < token.size() && token[i + 1] == '-';
    std::int64_t e = 0;
    for (++i; i < token.size(); ++i)
      if (token[i] >= '0' && token[i] <= '9' && e < 100'000'000) e = e * 10 + (token[i] - '0');
    exponent += down ? -e : e;
  }
  // Its whole part (digits, no leading zeros) and whether a fraction is left over.
  std::string whole;
  bool fraction = false;
  if (exponent >= 0) {
    whole = digits + std::string(static_cast<std::size_t>(exponent), '0');
  } else if (const std::int64_t k = static_cast<std::int64_t>(digits.size()) + exponent; k > 0) {
    whole = digits.substr(0, static_cast<std::size_t>(k));
    fraction = digits.find_first_not_of('0', static_cast<std::size_t>(k)) != std::string::npos;
  } else {
    fraction = true;
  }
  std::string nearest_whole = fmt::format("{:.0f}", std::fabs(nearest));
  if (nearest_whole == "0") nearest_whole.clear();
  const int order = whole.size() != nearest_whole.size()
                        ? (whole.size() < nearest_whole.size() ? -1 : 1)
                        : whole.compare(nearest_whole);
  const double inf = std::numeric_limits<double>::infinity();
  if (order > 0 || (order == 0 && fraction))  // farther from zero than `nearest`
    return std::nextafter(nearest, negative ? -inf : inf);
  if (order < 0) return std::nextafter(nearest, negative ? -0.0 : 0.0);
  return nearest;
}

}  // namespace detail

namespace {

// JSON allows numbers such as 1e999 that no double holds; nlohmann stops at them. The reader
// replaces such a number by this string and reads again, so the field alone is dropped.
constexpr std::string_view kOverflowMarker = "\x01recourse:number-overflow";

enum class Field {
  Code,
  Message,
  Retryable,
  FieldName,
  Suggestion,
  RetryAfter,
  TraceId,
  kCount,
  None
};

constexpr const char* kKeys[] = {"code",       "message",      "retryable", "field",
                                 "suggestion", "retryAfterMs", "traceId"};

Field field_of(const std::string& key) {
  for (int i = 0; i < static_cast<int>(Field::kCount); ++i)
    if (key == kKeys[i]) return static_cast<Field>(i);
  return Field::None;
}

class Reader : public nlohmann::json_sax<nlohmann::json> {
 public:
  Reader(const ReaderLimits& limits, EnvelopeResult& out) : limits_(limits), out_(out) {}

  bool null() override {
    return scalar([&] { drop("null", "is null"); });
  }
  bool boolean(bool v) override {
    return scalar([&] {
      if (current_ == Field::Retryable)
        set_bool(v);
      else
        drop("malformed", "expected " + expected() + ", got a boolean");
    });
  }
  bool number_integer(number_integer_t v) override {
    return number(static_cast<double>(v), v >= 0, v);
  }
  bool number_unsigned(number_unsigned_t v) override {
    const bool fits = v <= static_cast<number_unsigned_t>(std::numeric_limits<std::int64_t>::max());
    return number(static_cast<double>(v), true,
                  fits ? static_cast<std::int64_t>(v) : std::numeric_limits<std::int64_t>::max());
  }
  bool number_float(number_float_t v, const string_t& token) override {
    v = detail::written_double(v, token);
    if (!std::isfinite(v) || v < 0) return number(v, false, 0);
    const double up = std::ceil(v);
    return number(v, true,
                  up >= 9223372036854775807.0 ? std::numeric_limits<std::int64_t>::max()
                                              : static_cast<std::int64_t>(up));
  }
  bool string(string_t& v) override {
    return scalar([&] {
      if (v == kOverflowMarker)
        return drop("malformed", "is a number beyond the range of a double");
      if (current_ == Field::Retryable || current_ == Field::RetryAfter) {
        drop("malformed", "expected " + expected() + ", got a string");
        return;
      }
      const std::size_t cap = current_ == Field::Code ? limits_.max_code_bytes
                              : current_ == Field::Message || current_ == Field::Suggestion
                                  ? limits_.max_text_bytes
                                  : limits_.max_field_bytes;
      if (v.size() > cap)
        return drop("oversized", "is longer than " + std::to_string(cap) + " bytes");
      if (v.empty() && current_ != Field::Message && current_ != Field::Suggestion)
        return drop("malformed", "is an empty string");
      set_string(std::move(v));
    });
  }
  bool binary(binary_t&) override {
    return scalar([&] { drop("malformed", "is binary"); });
  }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    if (depth_ == 0) {
      error_ = "an envelope is a JSON object";
      return false;
    }
    return open();
  }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (depth_ == 1) current_ = field_of(k);
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

  static constexpr int kNumberOverflow = 406;  // nlohmann's out_of_range.406
  std::string error_;
  std::size_t overflow_end_ = 0;  // a number beyond double's range ended here (0: none)
  std::size_t overflow_size_ = 0;

 private:
  std::string expected() const {
    switch (current_) {
      case Field::Retryable:
        return "true or false";
      case Field::RetryAfter:
        return "a finite number of ms >= 0";
      default:
        return "a string";
    }
  }

  // A scalar at the top level is not an envelope; inside an unknown key or a nested value it is
  // skipped; at depth 1 it is the value of `current_`.
  template <typename F>
  bool scalar(F&& handle) {
    if (depth_ == 0) {
      error_ = "an envelope is a JSON object";
      return false;
    }
    if (depth_ == 1 && current_ != Field::None) {
      if (!duplicate()) handle();
      current_ = Field::None;
    }
    return true;
  }

  bool number(double, bool valid, std::int64_t value) {
    return scalar([&] {
      if (current_ != Field::RetryAfter)
        return drop("malformed", "expected " + expected() + ", got a number");
      if (!valid) return drop("malformed", "expected a finite number of ms >= 0");
      out_.envelope.retry_after_ms = value;
    });
  }

  bool open() {
    if (depth_ == 1 && current_ != Field::None) {
      if (!duplicate()) drop("malformed", "expected " + expected() + ", got an object or array");
      current_ = Field::None;
    }
    if (++depth_ > limits_.max_depth) return too_deep();
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  bool too_deep() {
    error_ = "envelope nested deeper than " + std::to_string(limits_.max_depth) + " levels";
    return false;
  }

  // A second occurrence of a key drops the field, whatever either value was.
  bool duplicate() {
    const auto i = static_cast<std::size_t>(current_);
    if (!seen_[i]) {
      seen_[i] = true;
      return false;
    }
    if (!duplicated_[i]) {
      duplicated_[i] = true;
      clear(current_);
      out_.envelope.warnings.push_back(
          {"duplicate", kKeys[i],
           std::string(kKeys[i]) + " appears more than once; read as absent"});
    }
    return true;
  }

  void drop(const char* kind, const std::string& why) {
    clear(current_);
    const char* key = kKeys[static_cast<std::size_t>(current_)];
    out_.envelope.warnings.push_back(
        {kind, key, std::string(key) + " " + why + "; read as absent"});
  }

  void clear(Field f) {
    Envelope& e = out_.envelope;
    switch (f) {
      case Field::Code:
        e.code.reset();
        break;
      case Field::Message:
        e.message.reset();
        break;
      case Field::Retryable:
        e.retryable.reset();
        break;
      case Field::FieldName:
        e.field.reset();
        break;
      case Field::Suggestion:
        e.suggestion.reset();
        break;
      case Field::RetryAfter:
        e.retry_after_ms.reset();
        break;
      case Field::TraceId:
        e.trace_id.reset();
        break;
      default:
        break;
    }
  }
  void set_bool(bool v) { out_.envelope.retryable = v; }
  void set_string(std::string v) {
    Envelope& e = out_.envelope;
    switch (current_) {
      case Field::Code:
        e.code = std::move(v);
        break;
      case Field::Message:
        e.message = std::move(v);
        break;
      case Field::FieldName:
        e.field = std::move(v);
        break;
      case Field::Suggestion:
        e.suggestion = std::move(v);
        break;
      case Field::TraceId:
        e.trace_id = std::move(v);
        break;
      default:
        break;
    }
  }

  const ReaderLimits& limits_;
  EnvelopeResult& out_;
  std::size_t depth_ = 0;
  Field current_ = Field::None;
  bool seen_[static_cast<std::size_t>(Field::kCount)] = {};
  bool duplicated_[static_cast<std::size_t>(Field::kCount)] = {};
};

}  // namespace

EnvelopeResult read_envelope(std::string_view json, const ReaderLimits& limits) noexcept {
  EnvelopeResult out;
  try {
    if (json.size() > limits.max_bytes) {
      out.error = "envelope is " + std::to_string(json.size()) + " bytes; the limit is " +
                  std::to_string(limits.max_bytes);
      return out;
    }
    // JSON has no raw NUL (inside strings it must be escaped); nlohmann would stop reading there.
    if (const auto nul = json.find('\0'); nul != std::string_view::npos) {
      out.error = "invalid JSON at byte " + std::to_string(nul + 1) + ": a NUL byte";
      return out;
    }
    std::string text;  // a patched copy, made only when a number overflows
    std::string_view input = json;
    std::string error;
    // Each pass replaces one overflowing number, up to limits.max_overflow_numbers.
    for (std::size_t pass = 0;; ++pass) {
      out = EnvelopeResult{};
      Reader reader(limits, out);
      const bool ok = nlohmann::json::sax_parse(input.begin(), input.end(), &reader);
      if (ok && reader.error_.empty()) break;
      if (reader.overflow_end_ == 0 || !reader.error_.empty()) {
        error = reader.error_.empty() ? "invalid JSON" : reader.error_;
        break;
      }
      if (pass == limits.max_overflow_numbers) {
        error = "envelope has more than " + std::to_string(limits.max_overflow_numbers) +
                " numbers beyond the range of a double";
        break;
      }
      if (text.empty()) text = std::string(json);
      input = text;
      text.replace(reader.overflow_end_ - reader.overflow_size_, reader.overflow_size_,
                   "\"\\u0001recourse:number-overflow\"");
      input = text;
    }
    if (!error.empty()) {
      out = EnvelopeResult{};
      out.error = std::move(error);
      return out;
    }
    out.ok = true;
  } catch (const std::exception& e) {
    out = EnvelopeResult{};
    out.error = std::string("envelope could not be read: ") + e.what();
  }
  return out;
}

namespace {

constexpr std::int64_t kMaxMs = 1'000'000'000'000'000;

struct ContextReader {
  std::vector<Diagnostic>& errors;

  void fail(const std::string& key, const std::string& what) {
    Diagnostic d;
    d.code = "C001";
    d.message = "context." + key + " " + what;
    errors.push_back(std::move(d));
  }

  // Trusted numbers stay far below INT64_MAX (which means "no limit" inside the engine) so no
  // sum or difference of two of them can overflow: counts up to 1e9, ms up to 1e15 (31,000 years).
  template <typename T>
  void integer(const nlohmann::json& j, const char* key, T& out, std::int64_t min,
               std::int64_t max = 1'000'000'000) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_number_integer() ||
        (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) ||
        it->get<std::int64_t>() < min || it->get<std::int64_t>() > max)
      return fail(
          key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    out = it->get<std::int64_t>();
  }
  void flag(const nlohmann::json& j, const char* key, bool& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_boolean()) return fail(key, "must be true or false");
    out = it->get<bool>();
  }
  void text(const nlohmann::json& j, const char* key, std::string& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_string()) return fail(key, "must be a string");
    out = it->get<std::string>();
  }
};

}  // namespace

ContextResult read_context(std::string_view json) noexcept {
  ContextResult out;
  try {
    ContextReader r{out.errors};
    auto whole = [&](std::string message) {
      r.fail("", "");
      out.errors.back().message = std::move(message);
      return out;
    };
    if (json.find('\0') != std::string_view::npos)
      return whole("context is not valid JSON: a NUL byte");
    // A DOM keeps one value of a key given twice; for a trusted fact (was the payment
    // committed?) that would be a guess, so a repeated key in any object of the context is C001.
    // Keys are compared as the parser unescaped them ("side\u0045ffect" is "sideEffect").
    std::vector<std::set<std::string>> keys;  // per open object
    std::vector<std::string> path;            // the key being read, per open object
    std::string repeated;
    const auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      using Event = nlohmann::json::parse_event_t;
      if (event == Event::object_start) {
        keys.emplace_back();
        path.resize(keys.size());
      } else if (event == Event::object_end) {
        keys.pop_back();
      } else if (event == Event::key && repeated.empty()) {
        const auto& k = parsed.get_ref<const std::string&>();
        path.resize(keys.size());
        path.back() = k;
        if (!keys.back().insert(k).second)
          for (std::size_t i = 0; i < path.size(); ++i) repeated += (i ? "." : "") + path[i];
      }
      return true;
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(json.begin(), json.end(), callback);
    } catch (const nlohmann::json::exception& e) {
      return whole(std::string("context is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) return whole("context is not a JSON object");
    if (!repeated.empty()) return whole("context." + repeated + " appears more than once");
    Context& c = out.context;
    r.text(j, "tool", c.tool);
    r.text(j, "operationId", c.operation_id);
    r.text(j, "workflowId", c.workflow_id);
    r.text(j, "argsHash", c.args_hash);
    if (auto it = j.find("idempotent"); it != j.end() && !it->is_null()) {
      if (it->is_boolean())
        c.idempotent = it->get<bool>();
      else
        r.fail("idempotent", "must be true or false");
    }
    if (auto it = j.find("sideEffect"); it != j.end() && !it->is_null()) {
      const std::string s = it->is_string() ? it->get<std::string>() : "";
      if (s == "none")
        c.side_effect = SideEffect::None;
      else if (s == "unknown")
        c.side_effect = SideEffect::Unknown;
      else if (s == "committed")
        c.side_effect = SideEffect::Committed;
      else
        r.fail("sideEffect", "must be \"none\", \"unknown\" or \"committed\"");
    }
    r.integer(j, "attempt", c.attempt, 1);
    r.integer(j, "repairs", c.repairs, 0);
    r.integer(j, "elapsedMs", c.elapsed_ms, 0, kMaxMs);
    std::int64_t v = -1;
    r.integer(j, "maxAttempts", v, 1);
    if (v >= 1) c.max_attempts = v;
    v = -1;
    r.integer(j, "deadlineMs", v, 0, kMaxMs);
    if (v >= 0) c.deadline_ms = v;
    r.integer(j, "lowerRetries", c.lower_retries, 0);
    r.integer(j, "repeats", c.repeats, 0);
    r.integer(j, "costSpent", c.cost_spent, 0);
    v = -1;
    r.integer(j, "nowMs", v, 0, kMaxMs);
    if (v >= 0) c.now_ms = v;
    std::string next_key;
    r.text(j, "idempotencyKey", c.idempotency_key);
    r.text(j, "nextAttemptIdempotencyKey", next_key);
    c.idempotency_key_pinned =
        !c.idempotency_key.empty() && (next_key.empty() || next_key == c.idempotency_key);
    r.flag(j, "idempotencyKeyPinned", c.idempotency_key_pinned);
    r.flag(j, "retryThrottled", c.retry_throttled);
    if (auto it = j.find("circuit"); it != j.end() && !it->is_null()) {
      const std::string s = it->is_string() ? it->get<std::string>() : "";
      if (s == "closed")
        c.circuit = CircuitState::Closed;
      else if (s == "open")
        c.circuit = CircuitState::Open;
      else if (s == "half_open")
        c.circuit = CircuitState::HalfOpen;
      else
        r.fail("circuit", "must be \"closed\", \"open\" or \"half_open\"");
    }
    if (auto it = j.find("arguments"); it != j.end() && !it->is_null()) {
      std::vector<std::string> args;
      bool ok = it->is_array();
      if (ok)
        for (const auto& a : *it) {
          if (!a.is_string())
            ok = false;
          else
            args.push_back(a.get<std::string>());
        }
      if (ok)
        c.arguments = std::move(args);
      else
        r.fail("arguments", "must be a list of strings");
    }
    out.ok = out.errors.empty();
  } catch (const std::exception& e) {
    out.ok = false;
    Diagnostic d;
    d.code = "C001";
    d.message = std::string("context could not be read: ") + e.what();
    out.errors.push_back(std::move(d));
  }
  return out;
}

}  // namespace recourse
