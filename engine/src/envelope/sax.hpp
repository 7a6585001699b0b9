// Hardened SAX parsing of untrusted JSON (RFC 8259), shared by the envelope reader
// (envelope/envelope.cpp) and the adapters' DOM builder (adapters/json.cpp).
//
// nlohmann stops at a number beyond a double's range (1e999: its out_of_range.406). Rather than
// failing the whole input, the readers replace that number by a marker string and read again, so
// that value alone is lost (read as absent, with a warning, where a field reads it). sax_read()
// runs those passes, with the size and NUL checks every untrusted input gets first.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace recourse::detail {

/// The string a number beyond a double's range is replaced by (U+0001 starts every marker).
inline constexpr std::string_view kOverflowMarker = "\x01recourse:number-overflow";

/// One SAX pass's errors: the first error other than an overflowing number, and where the
/// overflowing number is.
struct SaxErrors {
  static constexpr int kNumberOverflow = 406;  ///< nlohmann's out_of_range.406
  std::string error;                           ///< the first other error; empty: none
  std::size_t overflow_end = 0;                ///< a number beyond a double's range ended here
  std::size_t overflow_size = 0;               ///< and had this many bytes

  /// For json_sax::parse_error: records the error and returns false (the parse stops).
  bool record(std::size_t position, const std::string& token,
              const nlohmann::detail::exception& e) {
    if (e.id == kNumberOverflow && token.size() <= position) {
      overflow_end = position;
      overflow_size = token.size();
    } else if (error.empty()) {
      error = "invalid JSON at byte " + std::to_string(position) + ": " + e.what();
    }
    return false;
  }
};

/// Reads `text`, `subject` (e.g. "envelope") naming it in errors: more than `max_bytes` bytes,
/// a NUL byte, invalid JSON, or more than `max_overflow_numbers` numbers beyond a double's range
/// are an error, returned as its message ("" when the read succeeded). Each pass calls
/// `pass(input, errors)`, which runs a SAX consumer over `input` (the text, or a copy with the
/// overflowing numbers replaced by kOverflowMarker), records its errors in `errors` and returns
/// whether the parse succeeded; the consumer of the last pass holds the result.
template <typename Pass>
std::string sax_read(std::string_view text, std::string_view subject, std::size_t max_bytes,
                     std::size_t max_overflow_numbers, Pass&& pass) {
  const std::string who(subject);
  if (text.size() > max_bytes)
    return who + " is " + std::to_string(text.size()) + " bytes; the limit is " +
           std::to_string(max_bytes);
  // JSON has no raw NUL (inside strings it must be escaped); nlohmann would stop reading there.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    return "invalid JSON at byte " + std::to_string(nul + 1) + ": a NUL byte";
  std::string patched;  // a copy, made only when a number overflows
  std::string_view input = text;
  for (std::size_t n = 0;; ++n) {
    SaxErrors errors;
    const bool ok = pass(input, errors);
    if (ok && errors.error.empty()) return "";
    if (errors.overflow_end == 0 || !errors.error.empty())
      return errors.error.empty() ? "invalid JSON" : errors.error;
    if (n == max_overflow_numbers)
      return who + " has more than " + std::to_string(max_overflow_numbers) +
             " numbers beyond the range of a double";
    if (patched.empty()) patched = std::string(text);
    patched.replace(errors.overflow_end - errors.overflow_size, errors.overflow_size,
                    "\"\\u0001recourse:number-overflow\"");
    input = patched;
  }
}

}  // namespace recourse::detail
