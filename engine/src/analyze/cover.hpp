// Coverage questions over cubes: which part of a cube no row of a list decides (cover.cpp).
#pragma once

#include <optional>
#include <vector>

#include "table/table.hpp"

namespace recourse::detail {

/// Thrown when a coverage question exceeds its work limit (the answer is left open).
struct Open {};

/// A non-empty part of `x` that no row in [0, limit) of `t` covers, or nullopt when they cover
/// all of it (recursive splitting, the rows tried in table order; throws Open beyond 200,000
/// splits). `work`, when given, is the work left: each row tested, and each 8 words of the
/// matcher's bitsets read to find the rows that may meet `x`, cost one; a question that would
/// need more throws Open.
std::optional<Cube> uncovered(const Table& t, Cube x, std::size_t limit,
                              std::size_t* work = nullptr);
/// The same against any list of cubes (the earlier rows of two tables, for diff).
std::optional<Cube> uncovered(const std::vector<const Cube*>& rows, Cube x,
                              std::size_t* work = nullptr);
/// Whether the rows in [0, limit) of `t` cover all of `x`: the answer of !uncovered(), found by
/// trying the rows nearest `limit` first (a row's own guard rows, just before it, cover most of
/// what the invariants ask about it). Work and Open as for uncovered().
bool covered(const Table& t, const Cube& x, std::size_t limit, std::size_t* work = nullptr);
/// The rows in [0, limit) of `t` that meet `x`, as a bitset of (limit + 63) / 64 words (row r
/// at bit r % 64 of word r / 64). Work as for uncovered().
std::vector<std::uint64_t> meeting(const Table& t, const Cube& x, std::size_t limit,
                                   std::size_t* work = nullptr);

}  // namespace recourse::detail
