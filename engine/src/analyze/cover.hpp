// Coverage questions over cubes: which part of a cube no row of a list decides (cover.cpp).
#pragma once

#include <optional>
#include <vector>

#include "table/table.hpp"

namespace recourse::detail {

/// Thrown when a coverage question exceeds its work limit (the answer is left open).
struct Open {};

/// A non-empty part of `x` that no row in [0, limit) of `t` covers, or nullopt when they cover
/// all of it (recursive splitting; throws Open beyond 200,000 splits).
/// `work`, when given, is the number of row tests left: the rows tested come out of it, and a
/// question that would need more throws Open.
std::optional<Cube> uncovered(const Table& t, Cube x, std::size_t limit,
                              std::size_t* work = nullptr);
/// The same against any list of cubes (the earlier rows of two tables, for diff).
std::optional<Cube> uncovered(const std::vector<const Cube*>& rows, Cube x,
                              std::size_t* work = nullptr);
/// The rows in [0, limit) of `t` that meet `x`, in order (from the matcher's bitsets).
std::vector<std::size_t> meeting(const Table& t, const Cube& x, std::size_t limit);

}  // namespace recourse::detail
