// The rules for the members of an envelope object (docs/language.md section 13), in one place
// for both JSON readers: the portable one (nlohmann's SAX interface, envelope/envelope.cpp) and
// the SIMD one (simdjson, envelope/simd.cpp). A reader calls key() for each member of the
// top-level object, then one value method for its value; values nested deeper never reach this
// class. Per field, the value either passes its check or the field is absent with a warning;
// never a different valid value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "envelope/json_number.hpp"
#include "recourse/envelope.hpp"

namespace recourse::detail {

/// One envelope's top-level members, read into `out` (whose warnings receive one entry per field
/// read as absent, in the order found).
class EnvelopeMembers {
 public:
  /// The fields in Envelope's key order (model/fields.hpp).
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

  EnvelopeMembers(const ReaderLimits& limits, Envelope& out) : limits_(limits), out_(out) {}

  /// A member's key: the field it names, if any, takes the next value.
  void key(std::string_view k);
  /// Whether the value awaited is retryAfterMs, the one field whose value is a number.
  bool awaits_number() const { return current_ == Key::RetryAfter; }

  void null();
  void boolean(bool v);
  void integer(std::int64_t v);
  void unsigned_integer(std::uint64_t v);
  /// A number with a fraction or an exponent, `token` as written (see written_double(); an
  /// empty token when the reader does not keep it, allowed only when !awaits_number()).
  void floating(double nearest, std::string_view token);
  void string(std::string_view v);
  /// An object or an array as the value.
  void container();

 private:
  template <typename F>
  void value(F&& handle);
  void number(bool valid, std::int64_t ms);
  bool duplicate();
  void drop(const char* kind, const std::string& why);
  std::string expected() const;

  const ReaderLimits& limits_;
  Envelope& out_;
  Key current_ = Key::None;
  bool seen_[static_cast<std::size_t>(Key::kCount)] = {};
  bool duplicated_[static_cast<std::size_t>(Key::kCount)] = {};
};

}  // namespace recourse::detail
