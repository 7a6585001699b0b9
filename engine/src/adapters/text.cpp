// Adapters, small text helpers; see text.hpp.
#include "adapters/text.hpp"

#include <algorithm>
#include <cctype>

namespace recourse::detail::adapt {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

bool has(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool has_number(std::string_view text, std::string_view number) {
  for (std::size_t at = text.find(number); at != std::string_view::npos;
       at = text.find(number, at + 1)) {
    const bool before = at == 0 || !std::isdigit(static_cast<unsigned char>(text[at - 1]));
    const std::size_t end = at + number.size();
    const bool after = end == text.size() || !std::isdigit(static_cast<unsigned char>(text[end]));
    if (before && after) return true;
  }
  return false;
}

std::string excerpt(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  return out + (s.size() > 40 ? "...\"" : "\"");
}

std::int64_t saturating_ms(std::uint64_t seconds) {
  return seconds > static_cast<std::uint64_t>(kSaturatedMs / 1000)
             ? kSaturatedMs
             : static_cast<std::int64_t>(seconds) * 1000;
}

std::uint64_t digits_value(std::string_view s) {
  std::uint64_t v = 0;
  for (char c : s) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10)
      return std::numeric_limits<std::uint64_t>::max();
    v = v * 10 + d;
  }
  return v;
}

std::optional<std::uint64_t> whole_seconds_up(std::string_view s) {
  const std::size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  if (!all_digits(whole)) return std::nullopt;
  std::uint64_t v = digits_value(whole);
  if (dot != std::string_view::npos) {
    const std::string_view fraction = s.substr(dot + 1);
    if (!all_digits(fraction)) return std::nullopt;
    if (fraction.find_first_not_of('0') != std::string_view::npos &&
        v != std::numeric_limits<std::uint64_t>::max())
      ++v;
  }
  return v;
}

}  // namespace recourse::detail::adapt
