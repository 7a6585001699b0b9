// `recourse diff`: the behavioural change between two versions of a policy.
//
// Both versions are compiled into one cell space (each table's columns carry the other's
// attributes and cuts). An input decided by old row i and new row j lies in cube
// old_i ∩ new_j and in none of the rows before i (old) or before j (new); where the two rows'
// actions differ and that set is not empty, the decision changed. The pieces come from the same
// cube algebra as the analysis, and each region's example is realized and checked by deciding it.
#include <fmt/format.h>

#include <map>

#include "analyze.hpp"
#include "check.hpp"
#include "compile.hpp"
#include "parse.hpp"

namespace recourse {
namespace {

std::optional<detail::PolicySpec> spec_of(const grammar::Sources& sources, std::uint32_t index,
                                          std::string_view name, const CompileOptions& options,
                                          std::vector<Diagnostic>& out) {
  const grammar::SourceRef& src = sources[index];
  auto file = grammar::parse(src.path, src.text, options.max_depth, out, index);
  if (!file) return std::nullopt;
  auto specs = detail::check(*file, sources, options, out);
  if (has_errors(out)) return std::nullopt;
  for (auto& s : specs)
    if (name.empty() ? specs.size() == 1 : s.name == name) return std::move(s);
  Diagnostic d;
  d.code = "E040";
  d.file = std::string(src.path);
  d.message = name.empty() ? "the file holds several policies: name the one to compare"
                           : fmt::format("no policy \"{}\" in the file", name);
  out.push_back(std::move(d));
  return std::nullopt;
}

}  // namespace

DiffResult diff(const Source& before, const Source& after, std::string_view policy,
                const CompileOptions& options) {
  DiffResult result;
  try {
    const grammar::Sources sources{{before.path, before.text}, {after.path, after.text}};
    auto a = spec_of(sources, 0, policy, options, result.diagnostics);
    auto b = spec_of(sources, 1, policy, options, result.diagnostics);
    if (!a || !b) return result;
    if (a->codes != b->codes) {
      Diagnostic d;
      d.code = "E040";
      d.file = after.path;
      d.message =
          "the two versions declare different codes; diff compares policies with the same codes";
      result.diagnostics.push_back(std::move(d));
      return result;
    }
    auto ta = detail::compile(*a, options, sources, result.diagnostics, &*b);
    auto tb = detail::compile(*b, options, sources, result.diagnostics, &*a);
    if (!ta || !tb) return result;
    const auto old_policy =
        detail::Compiled::make(std::move(*a), std::move(*ta), options.attempt_ceiling);
    const auto new_policy =
        detail::Compiled::make(std::move(*b), std::move(*tb), options.attempt_ceiling);
    const detail::Table& told = old_policy->table;
    const detail::Table& tnew = new_policy->table;
    std::map<std::pair<std::string, std::string>, bool> seen;
    std::vector<const detail::Cube*> earlier;
    for (std::size_t i = 0; i < told.rows.size(); ++i) {
      const detail::RowAction& x = told.actions[told.rows[i].action];
      for (std::size_t j = 0; j < tnew.rows.size(); ++j) {
        const detail::RowAction& y = tnew.actions[tnew.rows[j].action];
        if (x.action.route == y.action.route && x.action.target == y.action.target) continue;
        const auto key = std::make_pair(x.label, y.label);
        if (seen.count(key)) continue;
        const detail::Cube both = detail::intersect(told.rows[i].cube, tnew.rows[j].cube);
        earlier.clear();
        for (std::size_t r = 0; r < i; ++r) earlier.push_back(&told.rows[r].cube);
        for (std::size_t r = 0; r < j; ++r) earlier.push_back(&tnew.rows[r].cube);
        const auto region = detail::uncovered(earlier, both);
        if (!region) continue;
        seen[key] = true;
        DecisionChange change{
            x.label, y.label, x.action.route, y.action.route, x.action.target, y.action.target, ""};
        if (const auto in = detail::realize(*new_policy, *region))
          change.example = detail::input_json(*in);
        result.changes.push_back(std::move(change));
      }
    }
    result.ok = true;
  } catch (const detail::Open&) {
    Diagnostic d;
    d.code = "W109";
    d.severity = Severity::Warning;
    d.message = "diff not decided: the tables are too large to compare";
    result.diagnostics.push_back(std::move(d));
  } catch (const std::exception& e) {
    Diagnostic d;
    d.code = "E099";
    d.message = std::string("internal error while comparing: ") + e.what();
    result.diagnostics.push_back(std::move(d));
  }
  return result;
}

}  // namespace recourse
