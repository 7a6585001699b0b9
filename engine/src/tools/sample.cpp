// Inputs across a policy's domain (see recourse/sample.hpp): random cells of the reachable part
// of random rows, realized by the analysis's realize().
#include "recourse/tooling.hpp"

#include "analyze/analyze.hpp"
#include "analyze/cover.hpp"
#include "analyze/witness.hpp"
#include "eval/backoff.hpp"

namespace recourse {

std::vector<Sample> sample_inputs(const Policy& policy, std::size_t n, std::uint64_t seed) {
  const detail::Compiled& compiled = detail::compiled(policy);
  const detail::Table& table = compiled.table;
  std::vector<Sample> out;
  std::uint64_t state = seed;
  // One analysis' budget (CompileOptions' defaults) for all the draws; beyond it, whole rows.
  const CompileOptions defaults;
  detail::Budget budget{defaults.max_analysis_work, defaults.max_cover_splits};
  auto draw = [&](std::size_t below) {
    state = detail::splitmix64(state);
    return static_cast<std::size_t>(state % below);
  };
  for (std::size_t tries = 0; out.size() < n && tries < 4 * n; ++tries) {
    // The part of the row no earlier row takes, so the input reaches the row (guard rows and
    // the default would otherwise take most draws).
    const std::size_t row = draw(table.rows.size());
    std::optional<detail::Cube> reached;
    try {
      reached = detail::uncovered(table, table.rows[row].cube, row, budget);
    } catch (const detail::Open&) {
      reached = table.rows[row].cube;  // too large to tell: any input of the row
    }
    if (!reached) continue;  // an unreachable row
    detail::Cube cube = std::move(*reached);
    for (detail::CellSet& set : cube) {
      std::vector<std::size_t> cells;
      for (std::size_t k = 0; k < set.size(); ++k)
        if (set.test(k)) cells.push_back(k);
      detail::CellSet one(set.size(), false);
      one.set(cells[draw(cells.size())]);
      set = std::move(one);
    }
    if (auto input = detail::realize(compiled, cube))
      out.push_back({std::move(input->envelope), std::move(input->context)});
  }
  if (out.empty()) {
    out.emplace_back();
    out.back().context.tool = std::string(policy.name());
  }
  return out;
}

}  // namespace recourse
