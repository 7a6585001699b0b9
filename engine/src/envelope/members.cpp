// The envelope object's member rules (see members.hpp) and the same rules for fields handed over
// one by one (envelope/fields.hpp).
#include "envelope/members.hpp"

#include <array>
#include <cmath>
#include <limits>

#include "envelope/fields.hpp"
#include "envelope/sax.hpp"
#include "model/fields.hpp"
#include "source/utf8.hpp"

namespace recourse::detail {
namespace {

using Key = EnvelopeMembers::Key;

// The keys, in Key's order: model/fields.hpp's order.
constexpr std::array<const char*, static_cast<std::size_t>(Key::kCount)> kKeys = [] {
  std::array<const char*, static_cast<std::size_t>(Key::kCount)> keys{};
  std::size_t i = 0;
  for_each_envelope_field([&](const Field& f, auto) { keys.at(i++) = f.key.data(); });
  return keys;
}();

// Calls `f(member)` with the Envelope's member for field `which`.
template <typename F>
void with_member(Key which, F&& f) {
  std::size_t i = 0;
  for_each_envelope_field([&](const Field&, auto member) {
    if (i++ == static_cast<std::size_t>(which)) f(member);
  });
}

Key field_of(std::string_view key) {
  for (int i = 0; i < static_cast<int>(Key::kCount); ++i)
    if (key == kKeys[i]) return static_cast<Key>(i);
  return Key::None;
}

// Why retryAfterMs is dropped when it is not a number of ms >= 0.
constexpr const char* kBadWait = "expected a finite number of ms >= 0";

// The warning kind ("oversized", "malformed") when string `v` cannot be the value of string
// field `f`, with the reason in `why`; nullptr when it can. The one statement of the string
// fields' rules: a cap per field, and only message and suggestion may be empty.
const char* string_problem(Key f, std::string_view v, const ReaderLimits& limits,
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

void clear(Envelope& e, Key f) {
  with_member(f, [&](auto member) { (e.*member).reset(); });
}

}  // namespace

void EnvelopeMembers::key(std::string_view k) {
  current_ = field_of(k);
}

// A value for `current_` (none: the key names no field): handled unless the key was seen before.
template <typename F>
void EnvelopeMembers::value(F&& handle) {
  if (current_ == Key::None) return;
  if (!duplicate()) handle();
  current_ = Key::None;
}

void EnvelopeMembers::null() {
  value([&] { drop("null", "is null"); });
}

void EnvelopeMembers::boolean(bool v) {
  value([&] {
    if (current_ == Key::Retryable)
      out_.retryable = v;
    else
      drop("malformed", "expected " + expected() + ", got a boolean");
  });
}

void EnvelopeMembers::integer(std::int64_t v) {
  number(v >= 0, v);
}

void EnvelopeMembers::unsigned_integer(std::uint64_t v) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  number(true, v <= static_cast<std::uint64_t>(kMax) ? static_cast<std::int64_t>(v) : kMax);
}

void EnvelopeMembers::floating(double nearest, std::string_view token) {
  const double v = written_double(nearest, token);
  if (!std::isfinite(v) || v < 0) return number(false, 0);
  const double up = std::ceil(v);
  number(true, up >= 9223372036854775807.0 ? std::numeric_limits<std::int64_t>::max()
                                           : static_cast<std::int64_t>(up));
}

void EnvelopeMembers::number(bool valid, std::int64_t ms) {
  value([&] {
    if (current_ != Key::RetryAfter)
      return drop("malformed", "expected " + expected() + ", got a number");
    if (!valid) return drop("malformed", kBadWait);
    out_.retry_after_ms = ms;
  });
}

void EnvelopeMembers::string(std::string_view v) {
  value([&] {
    if (v == kOverflowMarker) return drop("malformed", "is a number beyond the range of a double");
    if (current_ == Key::Retryable || current_ == Key::RetryAfter)
      return drop("malformed", "expected " + expected() + ", got a string");
    std::string why;
    if (const char* kind = string_problem(current_, v, limits_, why)) return drop(kind, why);
    with_member(current_, [&](auto member) {
      auto& field = out_.*member;
      if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::optional<std::string>>)
        field.emplace(v);
    });
  });
}

void EnvelopeMembers::container() {
  value([&] { drop("malformed", "expected " + expected() + ", got an object or array"); });
}

std::string EnvelopeMembers::expected() const {
  switch (current_) {
    case Key::Retryable:
      return "true or false";
    case Key::RetryAfter:
      return "a finite number of ms >= 0";
    default:
      return "a string";
  }
}

// A second occurrence of a key drops the field, whatever either value was.
bool EnvelopeMembers::duplicate() {
  const auto i = static_cast<std::size_t>(current_);
  if (!seen_[i]) {
    seen_[i] = true;
    return false;
  }
  if (!duplicated_[i]) {
    duplicated_[i] = true;
    clear(out_, current_);
    out_.warnings.push_back(
        {"duplicate", kKeys[i], std::string(kKeys[i]) + " appears more than once; read as absent"});
  }
  return true;
}

void EnvelopeMembers::drop(const char* kind, const std::string& why) {
  clear(out_, current_);
  out_.warnings.push_back(dropped(kind, current_, why));
}

Envelope read_fields(Envelope fields, const ReaderLimits& limits) {
  auto text = [&](Key f, std::optional<std::string>& value) {
    if (!value) return;
    std::string why;
    // JSON text is UTF-8 (RFC 8259 section 8.1) and the JSON reader refuses other bytes; a
    // field handed over as bytes is held to the same.
    const char* kind = string_problem(f, *value, limits, why);
    if (!kind && !is_valid_utf8(*value)) {
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

}  // namespace recourse::detail
