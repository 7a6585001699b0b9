// Envelope reader (untrusted input). The context, trusted input, is read in
// engine/src/wire/context.cpp.
//
// The envelope is read with nlohmann's SAX interface: no DOM is built, nesting is bounded while
// reading, and a key seen twice is visible (a DOM keeps only one of them). Per field, the value
// either passes its check or the field is absent with a warning; never a different valid value.
// A number is read by its written value (envelope/json_number.hpp), not only by its nearest double.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "envelope/fields.hpp"
#include "envelope/json_number.hpp"
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

// Why retryAfterMs is dropped when it is not a number of ms >= 0.
constexpr const char* kBadWait = "expected a finite number of ms >= 0";

// The warning kind ("oversized", "malformed") when string `v` cannot be the value of string
// field `f`, with the reason in `why`; nullptr when it can. The one statement of the string
// fields' rules: a cap per field, and only message and suggestion may be empty.
const char* string_problem(Field f, const std::string& v, const ReaderLimits& limits,
                           std::string& why) {
  const std::size_t cap = f == Field::Code                                ? limits.max_code_bytes
                          : f == Field::Message || f == Field::Suggestion ? limits.max_text_bytes
                                                                          : limits.max_field_bytes;
  if (v.size() > cap) {
    why = "is longer than " + std::to_string(cap) + " bytes";
    return "oversized";
  }
  if (v.empty() && f != Field::Message && f != Field::Suggestion) {
    why = "is an empty string";
    return "malformed";
  }
  return nullptr;
}

// The warning for field `f` read as absent: `kind`, and the key followed by `why`.
EnvelopeWarning dropped(const char* kind, Field f, const std::string& why) {
  const char* key = kKeys[static_cast<std::size_t>(f)];
  return {kind, key, std::string(key) + " " + why + "; read as absent"};
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
      std::string why;
      if (const char* kind = string_problem(current_, v, limits_, why)) return drop(kind, why);
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
      if (!valid) return drop("malformed", kBadWait);
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
    out_.envelope.warnings.push_back(dropped(kind, current_, why));
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

Envelope detail::read_fields(Envelope fields, const ReaderLimits& limits) {
  auto text = [&](Field f, std::optional<std::string>& value) {
    if (!value) return;
    std::string why;
    if (const char* kind = string_problem(f, *value, limits, why)) {
      value.reset();
      fields.warnings.push_back(dropped(kind, f, why));
    }
  };
  text(Field::Code, fields.code);
  text(Field::Message, fields.message);
  text(Field::FieldName, fields.field);
  text(Field::Suggestion, fields.suggestion);
  if (fields.retry_after_ms && *fields.retry_after_ms < 0) {
    fields.retry_after_ms.reset();
    fields.warnings.push_back(dropped("malformed", Field::RetryAfter, kBadWait));
  }
  text(Field::TraceId, fields.trace_id);
  return fields;
}

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

}  // namespace recourse
