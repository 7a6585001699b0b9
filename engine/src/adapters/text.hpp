// Adapters, small text helpers: ASCII case, white space, digits, and untrusted values quoted in
// warnings; the saturating seconds -> ms arithmetic of the retry hints.
//
// Input: header values, status names, body text (untrusted bytes). Output: plain values; none of
// these throws except on allocation. "Digits" and "white space" are ASCII as in RFC 9110
// (section 5.6.1 OWS is spaces and tabs; delay-seconds, section 10.2.3, is 1*DIGIT).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace recourse::detail::adapt {

/// The largest delay in ms; longer ones saturate here.
inline constexpr std::int64_t kSaturatedMs = std::numeric_limits<std::int64_t>::max();

/// `s` in ASCII lower case.
std::string lower(std::string_view s);
/// ASCII case-insensitive equality (header names, protocol names, body types).
bool iequals(std::string_view a, std::string_view b);
/// True when `needle` occurs in `haystack`.
bool has(std::string_view haystack, std::string_view needle);
/// `s` without leading and trailing spaces and tabs (RFC 9110 OWS).
std::string_view trim(std::string_view s);
/// True when `s` is one or more ASCII digits.
bool all_digits(std::string_view s);
/// A number as a standalone token ("401" in "failed: 401 Invalid", not in "4010").
bool has_number(std::string_view text, std::string_view number);
/// An untrusted value inside a warning: an excerpt in quotes, at most 40 bytes, each byte outside
/// printable ASCII as '?', so a hostile header cannot flood or forge a log line.
std::string excerpt(std::string_view s);
/// `seconds` as ms, saturating at kSaturatedMs.
std::int64_t saturating_ms(std::uint64_t seconds);
/// Digits as an unsigned number, saturating at UINT64_MAX.
std::uint64_t digits_value(std::string_view s);
/// "12" or "0.503" (not RFC 9110's grammar, but seen in the wild): whole seconds, a fraction
/// rounded up. Anything else (signs, exponents, nan, inf, units): nullopt.
std::optional<std::uint64_t> whole_seconds_up(std::string_view s);

}  // namespace recourse::detail::adapt
