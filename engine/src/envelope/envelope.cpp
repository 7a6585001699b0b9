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
#include "envelope/sax.hpp"
#include "model/fields.hpp"
#include "recourse/envelope.hpp"
#include "source/utf8.hpp"

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

enum class Key {
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

// The keys, in Key's order: model/fields.hpp's order.
constexpr std::array<const char*, static_cast<std::size_t>(Key::kCount)> kKeys = [] {
  std::array<const char*, static_cast<std::size_t>(Key::kCount)> keys{};
  std::size_t i = 0;
  detail::for_each_envelope_field(
      [&](const detail::Field& f, auto) { keys.at(i++) = f.key.data(); });
  return keys;
}();

// Calls `f(member)` with the Envelope's member for field `which`.
template <typename F>
void with_member(Key which, F&& f) {
  std::size_t i = 0;
  detail::for_each_envelope_field([&](const detail::Field&, auto member) {
    if (i++ == static_cast<std::size_t>(which)) f(member);
  });
}

Key field_of(const std::string& key) {
  for (int i = 0; i < static_cast<int>(Key::kCount); ++i)
    if (key == kKeys[i]) return static_cast<Key>(i);
  return Key::None;
}

// Why retryAfterMs is dropped when it is not a number of ms >= 0.
constexpr const char* kBadWait = "expected a finite number of ms >= 0";

// The warning kind ("oversized", "malformed") when string `v` cannot be the value of string
// field `f`, with the reason in `why`; nullptr when it can. The one statement of the string
// fields' rules: a cap per field, and only message and suggestion may be empty.
const char* string_problem(Key f, const std::string& v, const ReaderLimits& limits,
                           std::string& why) {
  const std::size_t cap = f == Key::Code                              ? limits.max_code_bytes
                          : f == Key::Message || f == Key::Suggestion ? limits.max_text_bytes
                                                                      : limits.max_field_bytes;
  if (v.size() > cap) {
    why = "is longer than " + std::to_string(cap) + " bytes";
    return "oversized";
  }
  if (v.empty() && f != Key::Message && f != Key::Suggestion) {
    why = "is an empty string";
    return "malformed";
  }
  return nullptr;
}

// The warning for field `f` read as absent: `kind`, and the key followed by `why`.
EnvelopeWarning dropped(const char* kind, Key f, const std::string& why) {
  const char* key = kKeys[static_cast<std::size_t>(f)];
  return {kind, key, std::string(key) + " " + why + "; read as absent"};
}

class Reader : public nlohmann::json_sax<nlohmann::json> {
 public:
  Reader(const ReaderLimits& limits, Envelope& out, detail::SaxErrors& errors)
      : limits_(limits), out_(out), errors_(errors) {}

  bool null() override {
    return scalar([&] { drop("null", "is null"); });
  }
  bool boolean(bool v) override {
    return scalar([&] {
      if (current_ == Key::Retryable)
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
      if (v == detail::kOverflowMarker)
        return drop("malformed", "is a number beyond the range of a double");
      if (current_ == Key::Retryable || current_ == Key::RetryAfter) {
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
      errors_.error = "an envelope is a JSON object";
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
    return errors_.record(position, token, e);
  }

 private:
  std::string expected() const {
    switch (current_) {
      case Key::Retryable:
        return "true or false";
      case Key::RetryAfter:
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
      errors_.error = "an envelope is a JSON object";
      return false;
    }
    if (depth_ == 1 && current_ != Key::None) {
      if (!duplicate()) handle();
      current_ = Key::None;
    }
    return true;
  }

  bool number(double, bool valid, std::int64_t value) {
    return scalar([&] {
      if (current_ != Key::RetryAfter)
        return drop("malformed", "expected " + expected() + ", got a number");
      if (!valid) return drop("malformed", kBadWait);
      out_.retry_after_ms = value;
    });
  }

  bool open() {
    if (depth_ == 1 && current_ != Key::None) {
      if (!duplicate()) drop("malformed", "expected " + expected() + ", got an object or array");
      current_ = Key::None;
    }
    if (++depth_ > limits_.max_depth) return too_deep();
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  bool too_deep() {
    errors_.error = "envelope nested deeper than " + std::to_string(limits_.max_depth) + " levels";
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
      out_.warnings.push_back({"duplicate", kKeys[i],
                               std::string(kKeys[i]) + " appears more than once; read as absent"});
    }
    return true;
  }

  void drop(const char* kind, const std::string& why) {
    clear(current_);
    out_.warnings.push_back(dropped(kind, current_, why));
  }

  void clear(Key f) {
    with_member(f, [&](auto member) { (out_.*member).reset(); });
  }
  void set_bool(bool v) { out_.retryable = v; }
  void set_string(std::string v) {
    with_member(current_, [&](auto member) {
      auto& field = out_.*member;
      if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::optional<std::string>>)
        field = std::move(v);
    });
  }

  const ReaderLimits& limits_;
  Envelope& out_;
  detail::SaxErrors& errors_;
  std::size_t depth_ = 0;
  Key current_ = Key::None;
  bool seen_[static_cast<std::size_t>(Key::kCount)] = {};
  bool duplicated_[static_cast<std::size_t>(Key::kCount)] = {};
};

}  // namespace

Envelope detail::read_fields(Envelope fields, const ReaderLimits& limits) {
  auto text = [&](Key f, std::optional<std::string>& value) {
    if (!value) return;
    std::string why;
    // JSON text is UTF-8 (RFC 8259 section 8.1) and the JSON reader refuses other bytes; a
    // field handed over as bytes is held to the same.
    const char* kind = string_problem(f, *value, limits, why);
    if (!kind && !detail::is_valid_utf8(*value)) {
      kind = "malformed";
      why = "is not valid UTF-8";
    }
    if (kind) {
      value.reset();
      fields.warnings.push_back(dropped(kind, f, why));
    }
  };
  text(Key::Code, fields.code);
  text(Key::Message, fields.message);
  text(Key::FieldName, fields.field);
  text(Key::Suggestion, fields.suggestion);
  if (fields.retry_after_ms && *fields.retry_after_ms < 0) {
    fields.retry_after_ms.reset();
    fields.warnings.push_back(dropped("malformed", Key::RetryAfter, kBadWait));
  }
  text(Key::TraceId, fields.trace_id);
  return fields;
}

Result<Envelope> read_envelope(std::string_view json, const ReaderLimits& limits) noexcept {
  std::string error;
  try {
    Envelope out;
    error =
        detail::sax_read(json, "envelope", limits.max_bytes, limits.max_overflow_numbers,
                         [&](std::string_view input, detail::SaxErrors& errors) {
                           out = Envelope{};
                           Reader reader(limits, out, errors);
                           return nlohmann::json::sax_parse(input.begin(), input.end(), &reader);
                         });
    if (error.empty()) return out;
  } catch (const std::exception& e) {
    error = std::string("envelope could not be read: ") + e.what();
  } catch (...) {
    error = "envelope could not be read";
  }
  try {
    return Result<Envelope>::failure(error_diagnostic("N001", std::move(error)));
  } catch (...) {
    return Envelope{};  // no memory even for the reason: every field absent, the safe reading
  }
}

}  // namespace recourse
