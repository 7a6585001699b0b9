// Analysis stage: questions about a compiled table, decided exactly by cube algebra.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiled.hpp"
#include "parse.hpp"

namespace recourse::detail {

using Cube = std::vector<CellSet>;

/// Thrown when a coverage question exceeds its work limit (the answer is left open).
struct Open {};

bool intersects(const Cube& a, const Cube& b);
Cube intersect(const Cube& a, const Cube& b);

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

/// A concrete envelope and context.
struct Input {
  Envelope envelope;
  Context context;
};

/// An input whose attributes fall in `cube` and whose decision by `policy` keeps the route of
/// the row it matches (the checks after the lookup included); nullopt when the choices tried do
/// not land there (derived attributes can make a cell combination infeasible).
std::optional<Input> realize(const Compiled& policy, const Cube& cube);

/// `envelope {...} context {...}`, ready for `recourse decide`.
std::string input_json(const Input& input);

/// Proves the built-in invariants and the author's assertions over the table (errors E101-E104,
/// E120 with a counterexample input that `recourse decide` reproduces), and reports unreachable
/// rules (W101), retry rules a server can steer into retrying permanent failures (W103) and retry
/// rules that trust `retryable` without looking at `code` (W104). `sources` are the texts
/// the policy's positions point into. `max_work` bounds the row tests of all the coverage
/// questions (CompileOptions::max_analysis_work); the questions left beyond it are W109.
void analyze(const Compiled& policy, const grammar::Sources& sources, std::size_t max_work,
             std::vector<Diagnostic>& diagnostics);

}  // namespace recourse::detail
