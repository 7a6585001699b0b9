// `recourse diff`: the behavioural change between two versions of a policy.
//
// The inputs are compared view by view (diff_views.hpp): in each, both versions are rewritten
// so that their derived attributes share coordinates, and compiled into one cell space (each
// table's columns carry the other's attributes and cuts). An input decided by old row i and new
// row j lies in cube old_i ∩ new_j and in none of the rows before i (old) or before j (new);
// where the two rows decide differently (route, target, rule, spent budget, key directive) and
// that set is not empty, the decision changed. Where the rows agree on a retry but the
// versions' backoffs differ, the set is cut by attempt and Retry-After (the delays' inputs)
// into cells of one delay range each, and the cells whose ranges differ are the change. The
// pieces come from the same cube algebra as the analysis; each region's example is realized,
// decided by both versions, and reported as decide() answers it.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "analyze/analyze.hpp"
#include "analyze/cover.hpp"
#include "analyze/witness.hpp"
#include "check/check.hpp"
#include "compile/compile.hpp"
#include "recourse/tooling.hpp"
#include "source/location.hpp"
#include "source/sources.hpp"
#include "table/table.hpp"
#include "tools/diff_views.hpp"

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

namespace detail {
namespace {

// Attempts past this many are compared as one cell for the delays (beyond the attempts
// ceiling no retry is decided; this bounds the cuts when the ceiling is raised far).
constexpr std::int64_t kDelayAttempts = 1000;

// One side of a change: what decides an input, as diff compares it.
struct Outcome {
  Route route = Route::Stop;
  std::string target, rule, exhausted;
  KeyDirective key = KeyDirective::None;
  DelayBounds delay;
  bool operator==(const Outcome& o) const {
    return route == o.route && target == o.target && rule == o.rule && exhausted == o.exhausted &&
           key == o.key && delay == o.delay;
  }
};

// The row's outcome, without an input (delays unknown).
Outcome outcome_of(const PolicySpec& spec, const RowAction& row) {
  return {row.action.route,
          row.action.target,
          row.label,
          row.exhausted,
          key_directive(spec, row.action.route),
          {}};
}

// What decide() gives for `in`.
Outcome outcome_of(const Compiled& p, const Input& in) {
  Decision d;
  const Point point = make_point(p, in.envelope, in.context, p.wanted, d.warnings, d.nearest_code);
  const std::uint32_t row = p.table.match(point);
  const RowAction& a = p.table.actions[p.table.rows[row].action];
  finish(p, a.action, a.label, a.exhausted, point, in.envelope, in.context, d);
  Outcome out{d.route,
              std::string(d.target),
              std::string(d.rule),
              std::string(d.exhausted),
              d.idempotency_key,
              {}};
  if (d.route == Route::Retry)
    out.delay = delay_bounds(p.spec, schedule_of(p.spec, a.action), in.context.attempt,
                             in.envelope.retry_after_ms.value_or(0));
  return out;
}

DecisionChange change_of(const Outcome& x, const Outcome& y, std::string example) {
  return {x.rule,
          y.rule,
          x.route,
          y.route,
          x.target,
          y.target,
          std::move(example),
          x.exhausted,
          y.exhausted,
          x.key,
          y.key,
          x.delay.min_ms,
          x.delay.max_ms,
          y.delay.min_ms,
          y.delay.max_ms};
}

// The comparison of the two versions over one view of the inputs.
class Comparison {
 public:
  Comparison(const Compiled& before, const Compiled& after, const View& view, bool delays,
             Budget& budget, std::set<std::tuple<std::string, std::string, bool>>& seen,
             std::vector<DecisionChange>& out)
      : a_(before),
        b_(after),
        may_{!view.attempts, !view.deadline},
        delays_(delays),
        ceiling_(before.attempt_ceiling),
        budget_(budget),
        seen_(seen),
        out_(out) {}

  // Each pair of rows that decide differently, or alike but for a retry's delays.
  void run(const Compiled& real_before, const Compiled& real_after) {
    const Table &ta = a_.table, &tb = b_.table;
    for (std::size_t i = 0; i < ta.rows.size(); ++i) {
      const RowAction& x = ta.actions[ta.rows[i].action];
      for (std::size_t j = 0; j < tb.rows.size(); ++j) {
        const RowAction& y = tb.actions[tb.rows[j].action];
        const Outcome ox = outcome_of(a_.spec, x), oy = outcome_of(b_.spec, y);
        const bool delay = ox == oy;  // same decision: only the delays can differ
        if (delay && !(delays_ && x.action.route == Route::Retry)) continue;
        const auto key = std::make_tuple(x.label, y.label, delay);
        if (seen_.count(key)) continue;
        Cube both = intersect(ta.rows[i].cube, tb.rows[j].cube);
        if (holds_none(both)) continue;
        earlier_.clear();
        for (std::size_t r = 0; r < i; ++r) earlier_.push_back(&ta.rows[r].cube);
        for (std::size_t r = 0; r < j; ++r) earlier_.push_back(&tb.rows[r].cube);
        const auto region =
            delay ? delay_region(both, x.action, y.action) : uncovered(earlier_, both, budget_);
        if (!region) continue;
        seen_.insert(key);
        out_.push_back(reported(*region, ox, oy, real_before, real_after));
      }
    }
  }

 private:
  // The first cell of attempt and Retry-After within `both`, and decided by the two rows, where
  // the versions' delay ranges differ (cut_for_delays() made each cell one range per version).
  std::optional<Cube> delay_region(const Cube& both, const Action& x, const Action& y) {
    const Table& t = a_.table;
    std::size_t attempt = t.columns.size(), hint = t.columns.size();
    for (std::size_t k = 0; k < t.columns.size(); ++k) {
      if (t.columns[k].attr == Attr::Attempt) attempt = k;
      if (t.columns[k].attr == Attr::RetryAfter) hint = k;
    }
    if (attempt == t.columns.size() || hint == t.columns.size()) return std::nullopt;
    const Column &ca = t.columns[attempt], &ch = t.columns[hint];
    auto low = [](const Column& c, std::size_t cell) {  // the cell's least value, at least 0
      return cell == 0 ? std::int64_t{0} : std::max<std::int64_t>(0, c.cuts[cell - 1]);
    };
    auto high = [](const Column& c, std::size_t cell) {
      return cell < c.cuts.size() ? c.cuts[cell] : std::numeric_limits<std::int64_t>::max();
    };
    for (std::size_t n = 0; n < ca.cells; ++n) {
      // Attempts start at 1, and from the ceiling on no retry is left (attempts_left <= 0).
      if (!both[attempt].test(n) || high(ca, n) <= 1 || low(ca, n) >= ceiling_) continue;
      const std::int64_t call = std::max<std::int64_t>(1, low(ca, n));
      CellSet hints(ch.cells, false);
      for (std::size_t h = 0; h < ch.cells; ++h) {
        const bool absent = h == ch.cells - 1;  // untrusted: the last cell is `absent`
        if (!both[hint].test(h) || (!absent && high(ch, h) <= 0)) continue;
        const std::int64_t ms = absent ? 0 : low(ch, h);
        if (delay_bounds(a_.spec, schedule_of(a_.spec, x), call, ms) !=
            delay_bounds(b_.spec, schedule_of(b_.spec, y), call, ms))
          hints.set(h);
      }
      if (hints.empty()) continue;
      Cube part = both;
      part[attempt] = CellSet(ca.cells, false);
      part[attempt].set(n);
      part[hint] = std::move(hints);
      if (auto region = uncovered(earlier_, std::move(part), budget_)) return region;
    }
    return std::nullopt;
  }

  // The change of `region` as decide() gives it for an input there; as the rows decide it when
  // no input is found.
  DecisionChange reported(const Cube& region, const Outcome& x, const Outcome& y,
                          const Compiled& real_before, const Compiled& real_after) const {
    for (const Compiled* p : {&a_, &b_}) {
      const auto in = realize(*p, region, may_);
      if (!in) continue;
      const Outcome before = outcome_of(real_before, *in), after = outcome_of(real_after, *in);
      if (!(before == after)) return change_of(before, after, input_json(*in));
    }
    return change_of(x, y, "");
  }

  const Compiled &a_, &b_;
  Overrides may_;
  bool delays_;
  std::int64_t ceiling_;
  Budget& budget_;
  std::set<std::tuple<std::string, std::string, bool>>& seen_;
  std::vector<DecisionChange>& out_;
  std::vector<const Cube*> earlier_;
};

}  // namespace
}  // namespace detail

namespace {

// What compare() found: `ok` when both versions compiled and were compared.
struct DiffResult : PolicyDiff {
  bool ok = false;
  std::vector<Diagnostic> diagnostics;
};

DiffResult compare(const Source& before, const Source& after, std::string_view policy,
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
    const std::int64_t ceiling = options.attempt_ceiling;
    const auto old_policy =
        detail::Compiled::make(std::move(*a), std::move(*ta), ceiling, options.steering);
    const auto new_policy =
        detail::Compiled::make(std::move(*b), std::move(*tb), ceiling, options.steering);
    const detail::PolicySpec &sa = old_policy->spec, &sb = new_policy->spec;
    result.settings = setting_changes(*old_policy, *new_policy);
    const bool delays = detail::delays_differ(sa, sb);
    std::set<std::tuple<std::string, std::string, bool>> seen;
    // Each comparison may split as much as one question of the analysis; the work is unbounded.
    detail::Budget budget{SIZE_MAX, options.max_cover_splits};
    for (const detail::View& view : detail::views(sa, sb, ceiling)) {
      detail::PolicySpec va = detail::in_view(sa, sa, sb, view, ceiling);
      detail::PolicySpec vb = detail::in_view(sb, sa, sb, view, ceiling);
      if (delays) {
        const std::int64_t last = std::min(ceiling, detail::kDelayAttempts);
        detail::cut_for_delays(va, sa, sb, last);
        detail::cut_for_delays(vb, sa, sb, last);
      }
      // The versions compiled above; their views' tables hold the same rules and warn alike.
      std::vector<Diagnostic> again;
      auto view_a = detail::compile(va, options, sources, again, &vb);
      auto view_b = detail::compile(vb, options, sources, again, &va);
      if (!view_a || !view_b) {
        for (auto& d : again)
          if (d.severity == Severity::Error) result.diagnostics.push_back(std::move(d));
        return result;
      }
      const auto pa = detail::Compiled::make(std::move(va), std::move(*view_a), ceiling);
      const auto pb = detail::Compiled::make(std::move(vb), std::move(*view_b), ceiling);
      detail::Comparison(*pa, *pb, view, delays, budget, seen, result.changes)
          .run(*old_policy, *new_policy);
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

}  // namespace

Result<PolicyDiff> diff(const Source& before, const Source& after, std::string_view policy,
                        const CompileOptions& options) {
  try {
    DiffResult r = compare(before, after, policy, options);
    if (!r.ok) return Result<PolicyDiff>::failure(std::move(r.diagnostics));
    return {static_cast<PolicyDiff&&>(r), std::move(r.diagnostics)};
  } catch (...) {
    return Result<PolicyDiff>::failure(
        error_diagnostic("E099", "internal error while comparing: unknown exception"));
  }
}

}  // namespace recourse
