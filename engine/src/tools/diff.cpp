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
#include <sstream>

#include "analyze/analyze.hpp"
#include "analyze/cover.hpp"
#include "analyze/witness.hpp"
#include "check/check.hpp"
#include "compile/compile.hpp"
#include "parse.hpp"
#include "source/sources.hpp"
#include "table/table.hpp"

namespace recourse {
namespace {

// One version: parsed, its bases (NAME.recourse beside it) merged in as compile_paths() does,
// then checked.
std::optional<detail::PolicySpec> spec_of(grammar::Sources& sources, std::deque<Source>& loaded,
                                          std::uint32_t index, std::string_view name,
                                          const CompileOptions& options,
                                          std::vector<Diagnostic>& out) {
  const grammar::SourceRef src = sources[index];
  auto file = grammar::parse(src.path, src.text, options.max_depth, out, index);
  if (!file) return std::nullopt;
  std::vector<ast::File> files{std::move(*file)};
  detail::inherit(files, sources,
                  detail::file_loader(sources, loaded, options, out, {std::string(src.path)}),
                  options.max_extends_depth, out);
  auto specs = detail::check(files.front(), sources, options, out);
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

// The settings header of a table dump (the lines before "columns") as "section.key" -> value:
// `limits attempts=3 ...` gives limits.attempts = 3; `backoff exponential ...` backoff.kind;
// `hit first` hit. Values may hold quoted strings and lists, never split inside them.
std::vector<std::pair<std::string, std::string>> settings_of(const std::string& dump) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(dump);
  std::string line;
  std::getline(in, line);  // policy "name"
  while (std::getline(in, line) && line != "columns") {
    std::vector<std::string> words(1);
    bool quoted = false;
    int depth = 0;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (!quoted && (c == '[' || c == ']')) depth += c == '[' ? 1 : -1;
      if (c == ' ' && !quoted && depth == 0) {
        words.emplace_back();
        continue;
      }
      words.back() += c;
    }
    const std::string& section = words.front();
    if (words.size() == 2 && words[1].find('=') == std::string::npos) {
      out.push_back({section, words[1]});
      continue;
    }
    for (std::size_t i = 1; i < words.size(); ++i) {
      const auto eq = words[i].find('=');
      if (eq == std::string::npos)
        out.push_back({section + ".kind", words[i]});
      else
        out.push_back({section + "." + words[i].substr(0, eq), words[i].substr(eq + 1)});
    }
  }
  return out;
}

std::vector<SettingChange> setting_changes(const std::string& before, const std::string& after) {
  const auto a = settings_of(before), b = settings_of(after);
  auto value = [](const auto& list, const std::string& key) -> std::string {
    for (const auto& [k, v] : list)
      if (k == key) return v;
    return "absent";
  };
  std::vector<SettingChange> out;
  std::vector<std::string> keys;
  for (const auto* list : {&a, &b})
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
    grammar::Sources sources{{before.path, before.text}, {after.path, after.text}};
    std::deque<Source> bases;
    auto a = spec_of(sources, bases, 0, policy, options, result.diagnostics);
    auto b = spec_of(sources, bases, 1, policy, options, result.diagnostics);
    if (!a || !b) return result;
    if (a->codes != b->codes) {
      auto missing = [](const std::vector<std::string>& from, const std::vector<std::string>& in) {
        std::string out;
        for (const auto& c : from)
          if (std::find(in.begin(), in.end(), c) == in.end()) out += (out.empty() ? "" : ", ") + c;
        return out.empty() ? std::string("none") : out;
      };
      Diagnostic d;
      d.code = "E040";
      grammar::locate(d, sources, b->pos);
      d.message = fmt::format(
          "the two versions declare different codes (only before: {}; only after: {}); diff "
          "compares policies with the same codes",
          missing(a->codes, b->codes), missing(b->codes, a->codes));
      d.help = "declare the same codes in both versions, in the same order";
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
    result.settings = setting_changes(detail::dump(old_policy->table, old_policy->spec, false),
                                      detail::dump(new_policy->table, new_policy->spec, false));
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
