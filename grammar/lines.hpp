// Lines and columns of policy text: the one definition of where a line ends and what a column
// counts, for the parser's positions, the formatter and the source lines under diagnostics.
//
// A line ends at "\n", "\r\n" or a lone "\r". A column counts characters, UTF-8 code points:
// every byte but a continuation byte (10xxxxxx) starts one. (Policy text outside comments and
// strings is ASCII, strings are valid UTF-8, and a comment runs to the end of its line, so the
// text before a position on its line is valid UTF-8.) A UTF-8 byte-order mark (EF BB BF) at the
// start of the text belongs to no line: columns and line texts leave it out, while byte offsets
// count every byte of the text as read, the mark included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ast.hpp"

namespace recourse::grammar {

/// Bytes of the line break at text[i]: 2 for "\r\n", 1 for "\n" or a lone "\r", 0 for none (or
/// i past the end).
inline std::size_t line_break(std::string_view text, std::size_t i) noexcept {
  if (i >= text.size()) return 0;
  if (text[i] == '\n') return 1;
  if (text[i] != '\r') return 0;
  return i + 1 < text.size() && text[i + 1] == '\n' ? 2 : 1;
}

/// 3 when `text` starts with a UTF-8 byte-order mark, else 0.
inline std::size_t bom_bytes(std::string_view text) noexcept {
  return text.substr(0, 3) == "\xef\xbb\xbf" ? 3 : 0;
}

/// Whether byte `c` starts a character (is not a UTF-8 continuation byte).
inline bool starts_char(char c) noexcept {
  return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
}

/// The characters in `s`.
std::size_t char_count(std::string_view s) noexcept;

/// The line of `text` that holds byte `offset` (a line break belongs to the line it ends; the
/// end of the text, to the last line), without its line break (nor, on line 1, a byte-order
/// mark).
std::string_view line_at(std::string_view text, std::size_t offset) noexcept;

/// The lines of one text, for turning byte offsets into positions and back. Built in one pass;
/// each question is a binary search, plus at most 63 bytes counted for a column.
class Lines {
 public:
  explicit Lines(std::string_view text);

  /// How many lines the text has (at least 1; a final line break ends the last line).
  std::uint32_t count() const noexcept { return static_cast<std::uint32_t>(starts_.size()); }
  /// The 1-based line holding byte `offset` (a line break belongs to the line it ends).
  std::uint32_t line_of(std::size_t offset) const noexcept;
  /// The offset of the first byte of 1-based `line` (on line 1, after a byte-order mark).
  std::size_t start(std::uint32_t line) const noexcept;
  /// The offset just past the text of 1-based `line`, before its line break.
  std::size_t end(std::uint32_t line) const noexcept;
  /// The position of byte `offset`: its line, its character column and the offset itself, in
  /// source `source`.
  ast::Pos pos(std::size_t offset, std::uint32_t source) const noexcept;

 private:
  // Characters in text_[0, offset).
  std::size_t chars_before(std::size_t offset) const noexcept;

  static constexpr std::size_t kBlock = 64;
  std::string_view text_;
  std::vector<std::size_t> starts_;           // [l]: offset of line l + 1 (0 for line 1)
  std::vector<std::size_t> chars_per_block_;  // [k]: characters in text_[0, k * kBlock)
};

}  // namespace recourse::grammar
