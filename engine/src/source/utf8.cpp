// UTF-8 decoding and repair (RFC 3629 section 3); see utf8.hpp.
#include "source/utf8.hpp"

namespace recourse::detail {

// Decodes one UTF-8 sequence at s[i]; returns its length (0: invalid) and the code point.
std::size_t decode_utf8(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80           ? 1
                  : (c >> 5) == 0x6  ? 2
                  : (c >> 4) == 0xe  ? 3
                  : (c >> 3) == 0x1e ? 4
                                     : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
  for (std::size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

bool is_valid_utf8(std::string_view s) noexcept {
  std::uint32_t cp = 0;
  for (std::size_t i = 0, n = 0; i < s.size(); i += n)
    if ((n = decode_utf8(s, i, cp)) == 0) return false;
  return true;
}

// Replaces bytes that are not UTF-8 with U+FFFD, so text from a header or a non-JSON body can
// be written as JSON.
std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    if (const std::size_t n = decode_utf8(s, i, cp); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

}  // namespace recourse::detail
