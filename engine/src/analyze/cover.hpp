// Coverage questions over cubes: which part of a cube no row of a list decides (cover.cpp).
#pragma once

#include <optional>
#include <vector>

#include "table/table.hpp"

namespace recourse::detail {

/// What coverage questions may spend. `work` is left for all the questions that share it and
/// spent as they go: each row tested, and each 8 words of the matcher's bitsets read to find the
/// rows that may meet a cube, cost one (CompileOptions::max_analysis_work; SIZE_MAX: unbounded).
/// `max_splits` bounds the splits of any one question (CompileOptions::max_cover_splits): each
/// split keeps one more part of the cube to cover, so it bounds a question's memory too.
struct Budget {
  std::size_t work;
  std::size_t max_splits;
};

/// Thrown when a coverage question would spend more than its Budget (the answer is left open):
/// `splits` when that question passed Budget::max_splits, else the work ran out.
struct Open {
  bool splits = false;
};

/// A non-empty part of `x` that no row in [0, limit) of `t` covers, or nullopt when they cover
/// all of it (recursive splitting, the rows tried in table order). Spends `budget`; a question
/// that would need more throws Open.
std::optional<Cube> uncovered(const Table& t, Cube x, std::size_t limit, Budget& budget);
/// The same against any list of cubes (the earlier rows of two tables, for diff).
std::optional<Cube> uncovered(const std::vector<const Cube*>& rows, Cube x, Budget& budget);
/// Whether the rows in [0, limit) of `t` cover all of `x`: the answer of !uncovered(), found by
/// trying the rows nearest `limit` first (a row's own guard rows, just before it, cover most of
/// what the invariants ask about it). Budget and Open as for uncovered().
bool covered(const Table& t, const Cube& x, std::size_t limit, Budget& budget);
/// The rows in [0, limit) of `t` that meet `x`, as a bitset of (limit + 63) / 64 words (row r
/// at bit r % 64 of word r / 64). Budget and Open as for uncovered().
std::vector<std::uint64_t> meeting(const Table& t, const Cube& x, std::size_t limit,
                                   Budget& budget);

}  // namespace recourse::detail
