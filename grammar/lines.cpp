// Lines and columns of policy text (lines.hpp).
#include "lines.hpp"

#include <algorithm>

namespace recourse::grammar {

std::size_t char_count(std::string_view s) noexcept {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), starts_char));
}

std::string_view line_at(std::string_view text, std::size_t offset) noexcept {
  offset = std::min(offset, text.size());
  if (line_break(text, offset) == 1 && offset > 0 && line_break(text, offset - 1) == 2)
    --offset;  // the "\n" of a "\r\n"
  std::size_t begin = offset;
  while (begin > 0 && text[begin - 1] != '\n' && text[begin - 1] != '\r') --begin;
  if (begin == 0) begin = bom_bytes(text);
  std::size_t end = std::max(begin, offset);
  while (end < text.size() && text[end] != '\n' && text[end] != '\r') ++end;
  return text.substr(begin, end - begin);
}

Lines::Lines(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (std::size_t i = 0; i < text.size();) {
    if (const std::size_t n = line_break(text, i); n > 0) {
      i += n;
      starts_.push_back(i);
    } else {
      ++i;
    }
  }
  chars_per_block_.reserve(text.size() / kBlock + 1);
  std::size_t chars = 0;
  for (std::size_t k = 0; k <= text.size(); k += kBlock) {
    chars_per_block_.push_back(chars);
    chars += char_count(text.substr(k, kBlock));
  }
}

std::uint32_t Lines::line_of(std::size_t offset) const noexcept {
  return static_cast<std::uint32_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                                    starts_.begin());
}

std::size_t Lines::start(std::uint32_t line) const noexcept {
  if (line <= 1) return bom_bytes(text_);
  return line <= starts_.size() ? starts_[line - 1] : text_.size();
}

std::size_t Lines::end(std::uint32_t line) const noexcept {
  if (line >= starts_.size()) return text_.size();
  std::size_t e = starts_[line];  // the next line's start, less this line's break
  e -= e >= 2 && text_[e - 2] == '\r' && text_[e - 1] == '\n' ? 2 : 1;
  return e;
}

ast::Pos Lines::pos(std::size_t offset, std::uint32_t source) const noexcept {
  offset = std::min(offset, text_.size());
  const std::uint32_t line = line_of(offset);
  const std::size_t first = std::min(start(line), offset);  // an offset inside the mark: 1
  const auto column = static_cast<std::uint32_t>(chars_before(offset) - chars_before(first) + 1);
  return {line, column, source, offset};
}

std::size_t Lines::chars_before(std::size_t offset) const noexcept {
  const std::size_t block = offset / kBlock;
  return chars_per_block_[block] +
         char_count(text_.substr(block * kBlock, offset - block * kBlock));
}

}  // namespace recourse::grammar
