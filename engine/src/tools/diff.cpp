// `recourse diff`: the behavioural change between two versions of a policy.
//
// Both versions are compiled into one cell space (each table's columns carry the other's
// attributes and cuts). An input decided by old row i and new row j lies in cube
// old_i ∩ new_j and in none of the rows before i (old) or before j (new); where the two rows'
// actions differ and that set is not empty, the decision changed. The pieces come from the same
// cube algebra as the analysis, and each region's example is realized and checked by deciding it.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analyze/analyze.hpp"
#include "analyze/cover.hpp"
#include "analyze/witness.hpp"
#include "check/check.hpp"
#include "compile/compile.hpp"
#include "source/location.hpp"
#include "source/sources.hpp"
#include "table/table.hpp"

namespace recourse {
namespace {

// One version: read as compile_paths() reads it (its bases NAME.recourse beside it), then checked.
std::optional<detail::PolicySpec> spec_of(const std::vector<Source>& version,
                                          detail::Sources& sources, std::deque<Source>& loaded,
                                          std::string_view name, const CompileOptions& options,
                                          std::vector<Diagnostic>& out) {
  const std::vector<ast::File> files =
      detail::read_policies(version, options, true, sources, loaded, out);
  if (files.empty()) return std::nullopt;
  auto specs = detail::check(files.front(), sources, options, out);
  if (has_errors(out)) return std::nullopt;
  for (auto& s : specs)
    if (name.empty() ? specs.size() == 1 : s.name == name) return std::move(s);
  Diagnostic d;
  d.code = "E040";
  d.file = version.front().path;
  d.message = name.empty() ? "the file holds several policies: name the one to compare"
                           : fmt::format("no policy \"{}\" in the file", name);
  out.push_back(std::move(d));
  return std::nullopt;
}

// The settings that differ, named `section.key` (`limits.attempts`) or `section` for a bare
// value (`hit`), "absent" on the side that lacks one (a breaker turned on).
std::vector<SettingChange> setting_changes(const detail::Compiled& before,
                                           const detail::Compiled& after) {
  using List = std::vector<std::pair<std::string, std::string>>;
  auto named = [](const detail::Compiled& p) {
    List out;
    for (const detail::SettingLine& line : detail::settings(p.table, p.spec))
      for (const detail::Setting& s : line.settings)
        out.push_back({s.key.empty() ? line.section : line.section + "." + s.key, s.value});
    return out;
  };
  const List a = named(before), b = named(after);
  auto value = [](const List& list, const std::string& key) -> std::string {
    for (const auto& [k, v] : list)
      if (k == key) return v;
    return "absent";
  };
  std::vector<SettingChange> out;
  std::vector<std::string> keys;
  for (const List* list : {&a, &b})
    for (const auto& [k, v] : *list)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  for (const auto& k : keys)
    if (value(a, k) != value(b, k)) out.push_back({k, value(a, k), value(b, k)});
  return out;
}

}  // namespace

DiffResult diff(const Source& before, const Source& after, std::string_view policy,
                const CompileOptions& options) {
  DiffResult result;
  try {
    detail::Sources sources;
    std::deque<Source> bases;
    const std::vector<Source> versions[2] = {{before}, {after}};  // `sources` views their texts
    auto a = spec_of(versions[0], sources, bases, policy, options, result.diagnostics);
    auto b = spec_of(versions[1], sources, bases, policy, options, result.diagnostics);
    if (!a || !b) return result;
    if (a->codes != b->codes) {
      auto missing = [](const std::vector<std::string>& from, const std::vector<std::string>& in) {
        std::string out;
        for (const auto& c : from)
          if (std::find(in.begin(), in.end(), c) == in.end()) out += (out.empty() ? "" : ", ") + c;
        return out.empty() ? std::string("none") : out;
      };
      detail::report(result.diagnostics, sources, b->pos, Severity::Error, "E040",
                     fmt::format("the two versions declare different codes (only before: {}; "
                                 "only after: {}); diff compares policies with the same codes",
                                 missing(a->codes, b->codes), missing(b->codes, a->codes)),
                     "declare the same codes in both versions, in the same order");
      return result;
    }
    auto ta = detail::compile(*a, options, sources, result.diagnostics, &*b);
    auto tb = detail::compile(*b, options, sources, result.diagnostics, &*a);
    if (!ta || !tb) return result;
    const auto old_policy = detail::Compiled::make(std::move(*a), std::move(*ta),
                                                   options.attempt_ceiling, options.steering);
    const auto new_policy = detail::Compiled::make(std::move(*b), std::move(*tb),
                                                   options.attempt_ceiling, options.steering);
    result.settings = setting_changes(*old_policy, *new_policy);
    const detail::Table& told = old_policy->table;
    const detail::Table& tnew = new_policy->table;
    std::map<std::pair<std::string, std::string>, bool> seen;
    std::vector<const detail::Cube*> earlier;
    // Each comparison may split as much as one question of the analysis; the work is unbounded.
    detail::Budget budget{SIZE_MAX, options.max_cover_splits};
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
        const auto region = detail::uncovered(earlier, both, budget);
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
    d.help =
        "raise the splits one comparison may make (recourse diff --max-cover-splits N, "
        "CompileOptions::max_cover_splits)";
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
