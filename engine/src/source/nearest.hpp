// Nearest-name suggestions ("did you mean TRANSIENT?") for diagnostics and unknown codes.
//
// Levenshtein distance over bytes, ignoring ASCII case (so `transient` finds TRANSIENT), computed
// in a fixed stack buffer so decide() can use it without allocating; names longer than
// kMaxNameBytes are compared on their first bytes only.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>

namespace recourse::detail {

inline constexpr std::size_t kMaxNameBytes = 64;

inline constexpr char lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}

/// Edit distance between a and b (insert, delete, substitute: cost 1 each; case is free), when
/// it is below `bound`; otherwise `bound`. The distance is at least the difference of the
/// lengths, and never falls below the smallest entry of a row, so most candidates end early.
inline std::size_t edit_distance(std::string_view a, std::string_view b,
                                 std::size_t bound = kMaxNameBytes + 1) noexcept {
  a = a.substr(0, std::min(a.size(), kMaxNameBytes));
  b = b.substr(0, std::min(b.size(), kMaxNameBytes));
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) >= bound) return bound;
  std::array<std::size_t, kMaxNameBytes + 1> row{};
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    std::size_t smallest = row[0];
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = up;
      smallest = std::min(smallest, row[j]);
    }
    if (smallest >= bound) return bound;
  }
  return std::min(row[b.size()], bound);
}

/// The candidate nearest to `name`, or empty when none is within a third of its length (at
/// least 2 edits), or when the nearest is a case-insensitive match it always wins. Ties go to
/// the first candidate. Each candidate costs at most one pass of the distance, cut short once
/// it cannot beat the best so far.
template <typename Range>
std::string_view nearest(std::string_view name, const Range& candidates) noexcept {
  std::string_view best;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::string_view candidate(c);
    const std::size_t d = edit_distance(name, candidate, best_distance);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
      if (d == 0) break;
    }
  }
  return best;
}

}  // namespace recourse::detail
