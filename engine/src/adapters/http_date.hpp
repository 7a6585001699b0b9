// Adapters, HTTP dates (RFC 9110 section 5.6.7): the absolute form of Retry-After (section
// 10.2.3) and the Date header (section 6.6.1), the clock the HTTP adapter falls back to; and
// RFC 3339 date-times, the form of Anthropic's rate-limit resets.
//
// Input: a header value, OWS trimmed. Output: ms since the Unix epoch, or nullopt when the text
// is none of the three forms (IMF-fixdate, RFC 850, asctime) or names no real date and time.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace recourse::detail::adapt {

/// An HTTP-date in IMF-fixdate, RFC 850 or asctime form as ms since the epoch, or nullopt.
/// `now_ms` (the clock, when there is one) places a two-digit RFC 850 year (http_date.cpp).
std::optional<std::int64_t> http_date_ms(std::string_view text, std::optional<std::int64_t> now_ms);

/// An RFC 3339 date-time (section 5.6), such as Anthropic's anthropic-ratelimit-*-reset
/// "2024-01-01T00:00:30Z", as ms since the epoch (a fraction rounded up to the ms), or nullopt.
std::optional<std::int64_t> rfc3339_ms(std::string_view text);

}  // namespace recourse::detail::adapt
