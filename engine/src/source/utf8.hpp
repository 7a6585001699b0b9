// UTF-8 (RFC 3629): decoding one sequence, and making text valid. The one reading of UTF-8 for
// the adapters (header values, non-JSON bodies) and the model-text cleaner.
//
// Input: any bytes. A sequence is valid when it is the shortest form of a code point in
// U+0000..U+10FFFF other than a surrogate (U+D800..U+DFFF), RFC 3629 section 3; anything else
// (a stray continuation byte, a truncated sequence, an overlong form, a surrogate, a lead byte
// F5..FF) is invalid one byte at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace recourse::detail {

/// Decodes one UTF-8 sequence at s[i] (i < s.size()); returns its length in bytes, 1 to 4, and
/// sets `cp` to its code point, or returns 0 when the bytes there are not valid UTF-8.
std::size_t decode_utf8(std::string_view s, std::size_t i, std::uint32_t& cp);

/// Whether every byte of `s` belongs to a valid sequence.
bool is_valid_utf8(std::string_view s) noexcept;

/// `s` with each byte that does not start a valid sequence replaced by U+FFFD (EF BF BD), so
/// text from a header or a non-JSON body can be written as JSON. Valid text is returned as is.
std::string valid_utf8(std::string_view s);

}  // namespace recourse::detail
