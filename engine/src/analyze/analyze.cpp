// Analysis stage: proofs and findings over the decision table, by cube algebra.
//
// Every row is a cube (one cell set per column) and first match decides, so "can an input in
// cube X reach row r?" is "is X not covered by the union of the rows before r?". That is decided
// by recursive splitting (as logic minimisers check tautology; Calvanese et al., "Semantics and
// Analysis of DMN Decision Tables", BPM 2016, sweep the same boundaries): take the first earlier
// row that meets X; if it contains X, X is covered; otherwise split X on one column into the
// part inside that row and the part outside, and continue with both. Nothing enumerates the
// product of the columns (cover.cpp). A "no" leaves an uncovered sub-cube, which realize()
// (witness.cpp) turns into a concrete envelope and context and checks by computing its
// attributes (make_point) again, so a reported counterexample is one that `recourse decide`
// reproduces.
#include "analyze/analyze.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "analyze/cover.hpp"
#include "analyze/witness.hpp"
#include "compile/compile.hpp"
#include "source/location.hpp"

namespace recourse::detail {
namespace {

// W109's help: what left a question open, and how to decide it.
const char* open_help(const Open& open) {
  return open.splits ? "split the policy, or raise the splits one question may make "
                       "(recourse check --max-cover-splits N, CompileOptions::max_cover_splits)"
                     : "split the policy, or raise the analysis budget (recourse check "
                       "--analysis-work N, CompileOptions::max_analysis_work)";
}
// Shadowing rules a W101 names before it says how many more there are.
constexpr std::size_t kNamesListed = 8;

class Analyzer {
 public:
  Analyzer(const Compiled& p, const Sources& sources, Budget budget, std::vector<Diagnostic>& out)
      : p_(p), t_(p.table), sources_(sources), out_(out), budget_(budget) {
    run_last_.assign((t_.rows.size() + 63) / 64, 0);
    for (std::size_t r = 0; r < t_.rows.size(); ++r)
      if (r + 1 == t_.rows.size() ||
          t_.actions[t_.rows[r].action].rule != t_.actions[t_.rows[r + 1].action].rule)
        run_last_[r / 64] |= std::uint64_t{1} << (r % 64);
  }

  void run() {
    for (std::size_t a = 0; a < p_.spec.assertions.size(); ++a)
      prove(p_.spec.assertions[a], t_.assertion_terms[a]);
    unreachable_rules();
    hostile_retries();
    if (p_.spec.hit == HitPolicy::Unique) overlaps();
  }

 private:
  // Reports a finding; `example`, when given, is its witness (the input the help shows).
  void report(Severity severity, const char* code, ast::Pos pos, std::string message,
              std::string help, const std::optional<Input>& example = std::nullopt) {
    // An item inherited through `extends` is reported in its base's file: name the policy whose
    // table it is about.
    if (pos.source != p_.spec.pos.source)
      message += fmt::format(" (in policy \"{}\", which extends this one)", p_.spec.name);
    Diagnostic& d =
        detail::report(out_, sources_, pos, severity, code, std::move(message), std::move(help));
    if (example) d.witness = witness_of(*example);
  }

  // The first input of `x` reaching row `r`, realized; or nullopt. Throws Open. Most questions
  // are answered "covered", which the rows nearest r settle; the first input in table order is
  // looked for only when there is one.
  std::optional<std::pair<Cube, std::optional<Input>>> reach(const Cube& x, std::size_t r) {
    if (covered(t_, x, r, budget_)) return std::nullopt;
    auto rest = uncovered(t_, x, r, budget_);
    if (!rest) return std::nullopt;
    return std::make_pair(*rest, realize(p_, *rest));
  }

  static std::string example(const std::optional<Input>& in) {
    return in ? "counterexample: " + input_json(*in)
              : "the table reaches this row, but no concrete input for it was found (derived "
                "attributes)";
  }

  void prove(const AssertSpec& a, const std::vector<Cube>& terms) {
    const bool invariant = !a.invariant.empty();
    try {
      for (std::size_t r = 0; r < t_.rows.size(); ++r) {
        const RowAction& act = t_.actions[t_.rows[r].action];
        const bool in_routes = (a.routes >> static_cast<int>(act.action.route)) & 1u;
        if (in_routes != a.never)
          continue;  // never: rows deciding a listed route; always: the others
        for (const Cube& term : terms) {
          auto hit = reach(intersect(t_.rows[r].cube, term), r);
          if (!hit) continue;
          const std::string what =
              fmt::format("{} '{}' decides {}",
                          act.label.rfind("budget:", 0) == 0 || act.label.rfind("gate:", 0) == 0 ||
                                  act.label.rfind("circuit:", 0) == 0
                              ? "guard"
                              : "rule",
                          act.label, to_string(act.action.route));
          if (invariant) {
            report(Severity::Error, invariant_code(a.invariant), act.pos,
                   fmt::format("invariant {} broken: {} ({})", a.invariant, what, a.text),
                   example(hit->second) + "; waive it only with `waive " + a.invariant +
                       " \"reason\"`",
                   hit->second);
          } else {
            report(Severity::Error, "E120", a.pos, fmt::format("assertion failed: {}", what),
                   example(hit->second), hit->second);
          }
          return;  // one counterexample per assertion
        }
      }
    } catch (const Open& open) {
      report(Severity::Warning, "W109", a.pos,
             "assertion not decided: the table is too large to analyse", open_help(open));
    }
  }

  static const char* invariant_code(const std::string& name) {
    if (name == "retry_after_commit") return "E101";
    if (name == "unsafe_resend") return "E102";
    if (name == "context_overflow_retry") return "E103";
    if (name == "steered_repair") return "E105";
    return "E104";
  }

  // W101: every row of a rule is covered by the rows of earlier rules.
  void unreachable_rules() {
    std::size_t first = 0;
    const std::vector<std::uint32_t> order = rule_order(p_.spec);
    try {
      // Rows come in runs, one per rule, in the table's rule order.
      for (std::uint32_t rule : order) {
        std::size_t end = first;
        while (end < t_.rows.size() && t_.actions[t_.rows[end].action].rule == rule) ++end;
        const RuleSpec& spec = p_.spec.rules[rule];
        if (end == first) {
          report(Severity::Warning, "W101", spec.pos,
                 fmt::format("rule '{}' is never reached: its condition never holds", spec.name),
                 "a test contradicts another (e.g. code == A and code == B)");
          continue;
        }
        // Reachable when some row of the rule is not covered by the rows before the rule: the
        // rows nearest it settle most (covered()); the input E016 shows is the first gap in
        // table order.
        std::size_t open_row = end;
        for (std::size_t r = first; r < end && open_row == end; ++r)
          if (!covered(t_, t_.rows[r].cube, first, budget_)) open_row = r;
        const bool reachable = open_row < end;
        if (spec.name == "default" && p_.spec.implicit_default) {
          if (reachable) {
            const auto gap = uncovered(t_, t_.rows[open_row].cube, first, budget_);
            const auto in = gap ? realize(p_, *gap) : std::nullopt;
            report(Severity::Error, "E016", spec.pos,
                   "policy '" + p_.spec.name +
                       "' has no default route, and its rules leave inputs undecided",
                   (in ? "e.g. " + input_json(*in) + "; " : std::string()) +
                       "add `default -> stop` (or another route) as its last line",
                   in);
          }
          first = end;
          continue;
        }
        if (!reachable) {
          // The rules of the rows meeting this rule's, once each, in table order: a rule's rows
          // are one run, in the order rule_order() gives, so each rule counts at its run's end.
          std::vector<std::uint64_t> meet((first + 63) / 64, 0);
          for (std::size_t k = first; k < end; ++k) {
            const std::vector<std::uint64_t> m = meeting(t_, t_.rows[k].cube, first, budget_);
            for (std::size_t w = 0; w < meet.size(); ++w) meet[w] |= m[w];
          }
          const std::vector<std::uint64_t> by = runs_met(meet, first);
          std::size_t count = 0;
          std::string names;  // the first kNamesListed, then how many more
          for (std::size_t w = 0; w < by.size(); ++w)
            for (std::uint64_t bits = by[w]; bits; bits &= bits - 1, ++count) {
              if (count >= kNamesListed) continue;
              const std::size_t r = w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
              names += (names.empty() ? "'" : ", '") +
                       p_.spec.rules[t_.actions[t_.rows[r].action].rule].name + "'";
            }
          if (count > kNamesListed)
            names += fmt::format(" and {} more rules", count - kNamesListed);
          if (spec.name == "default")
            report(Severity::Warning, "W105", spec.pos,
                   "the default is never reached: the rules decide every input",
                   "keep it as a safety net, or remove it");
          else {
            // An input of this rule that an earlier one decides.
            const auto in = realize(p_, t_.rows[first].cube);
            report(Severity::Warning, "W101", spec.pos,
                   fmt::format("rule '{}' is never reached: {} decide{} every input it matches",
                               spec.name, names, count == 1 ? "s" : ""),
                   (in ? "e.g. " + input_json(*in) + "; " : std::string()) +
                       "reorder the rules, narrow the earlier ones, or remove this one",
                   in);
          }
        }
        first = end;
      }
    } catch (const Open& open) {
      report(Severity::Warning, "W109", p_.spec.pos,
             "reachability not decided: the table is too large to analyse", open_help(open));
    }
  }

  // The rows of `meet` (a bitset over rows [0, first), where a rule's rows end) as one bit per
  // rule met, at the last row of its run. A run's bits, less its last, are ones in S = ~last;
  // adding the run's met rows to them carries a one into its last row exactly when some row is
  // met, and stops there (Warren, "Hacker's Delight", chapter 2: propagating bits by addition).
  std::vector<std::uint64_t> runs_met(const std::vector<std::uint64_t>& meet,
                                      std::size_t first) const {
    std::vector<std::uint64_t> out(meet.size());
    bool carry = false;
    for (std::size_t w = 0; w < meet.size(); ++w) {
      const std::uint64_t last = run_last_[w], s = ~last, m = meet[w];
      std::uint64_t sum;
      bool c1 = __builtin_add_overflow(s, m & s, &sum);
      const bool c2 = __builtin_add_overflow(sum, std::uint64_t{carry}, &sum);
      carry = c1 || c2;
      out[w] = ((sum & last) | (m & last));
    }
    if (first % 64 && !out.empty()) out.back() &= (std::uint64_t{1} << (first % 64)) - 1;
    return out;
  }

  // E106 under `hit unique`: two rules with different routes that one input matches. Only the
  // rules' own rows count (guard rows are the engine's, not the author's choice). The pairs are
  // found by the matcher's bitsets, each row's work counted; beyond the budget, W109.
  void overlaps() {
    const std::size_t last = p_.spec.rules.size() - 1;  // the default
    auto own = [&](std::size_t r) {
      const RowAction& a = t_.actions[t_.rows[r].action];
      return a.rule != last && a.label == p_.spec.rules[a.rule].name;
    };
    std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
    try {
      for (std::size_t i = 0; i < t_.rows.size(); ++i)
        if (own(i)) overlaps_of(i, own, seen);
    } catch (const Open& open) {
      report(Severity::Warning, "W109", p_.spec.pos,
             "overlaps under `hit unique` not decided: the table is too large to analyse",
             open_help(open));
    }
  }

  template <typename Own>
  void overlaps_of(std::size_t i, const Own& own,
                   std::set<std::pair<std::uint32_t, std::uint32_t>>& seen) {
    const std::vector<std::uint64_t> meet = meeting(t_, t_.rows[i].cube, t_.rows.size(), budget_);
    for (std::size_t w = (i + 1) / 64; w < meet.size(); ++w)
      for (std::uint64_t bits = meet[w]; bits; bits &= bits - 1) {
        const std::size_t j = w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
        if (j <= i || !own(j)) continue;
        if (budget_.work == 0) throw Open{};
        --budget_.work;
        const RowAction& a = t_.actions[t_.rows[i].action];
        const RowAction& b = t_.actions[t_.rows[j].action];
        if (a.rule == b.rule || a.action.route == b.action.route) continue;
        const auto key = std::minmax(a.rule, b.rule);
        if (!seen.insert(key).second) continue;
        const RuleSpec& first = p_.spec.rules[key.first];
        const RuleSpec& second = p_.spec.rules[key.second];
        const auto in = realize(p_, intersect(t_.rows[i].cube, t_.rows[j].cube));
        report(
            Severity::Error, "E106", second.pos,
            fmt::format(
                "rules '{}' ({}) and '{}' ({}) both match some inputs, and `hit unique` forbids it",
                first.name, to_string(first.action.route), second.name,
                to_string(second.action.route)),
            in ? "e.g. " + input_json(*in) : std::string("narrow one of them"), in);
      }
  }

  // W103 / W104: retry rules a hostile server steers.
  void hostile_retries() {
    const int code_col = column(Attr::Code), retryable_col = column(Attr::Retryable);
    for (std::size_t r = 0; r < t_.rows.size(); ++r) {
      const RowAction& act = t_.actions[t_.rows[r].action];
      if (act.action.route != Route::Retry || act.label != p_.spec.rules[act.rule].name) continue;
      if (reported_.count(act.rule)) continue;
      const Cube& row = t_.rows[r].cube;
      if (code_col >= 0 && retryable_col >= 0 && row[static_cast<std::size_t>(code_col)].full() &&
          !row[static_cast<std::size_t>(retryable_col)].full()) {
        report(Severity::Warning, "W104", act.pos,
               fmt::format("rule '{}' retries on `retryable` without looking at `code`", act.label),
               "a server that marks everything retryable steers it; constrain code, e.g. code in "
               "[TRANSIENT, RATE_LIMITED]");
        reported_.insert(act.rule);
        continue;
      }
      if (code_col < 0) continue;
      Cube permanent = row;
      CellSet codes(t_.columns[static_cast<std::size_t>(code_col)].cells, false);
      for (std::int64_t id : {std::int64_t{3}, std::int64_t{4}, std::int64_t{5}})
        codes.set(static_cast<std::size_t>(id));
      permanent[static_cast<std::size_t>(code_col)] &= codes;
      try {
        auto hit = reach(permanent, r);
        if (!hit) continue;
        report(Severity::Warning, "W103", act.pos,
               fmt::format(
                   "rule '{}' can retry a permanent failure (VALIDATION, PERMISSION or NOT_FOUND)",
                   act.label),
               hit->second ? "e.g. " + input_json(*hit->second) : std::string("constrain code"),
               hit->second);
        reported_.insert(act.rule);
      } catch (const Open&) {
      }
    }
  }

  int column(Attr a) const {
    for (std::size_t c = 0; c < t_.columns.size(); ++c)
      if (t_.columns[c].attr == a) return static_cast<int>(c);
    return -1;
  }

  const Compiled& p_;
  const Table& t_;
  const Sources& sources_;
  std::vector<Diagnostic>& out_;
  Budget budget_;                        // what the coverage questions may still spend
  std::vector<std::uint64_t> run_last_;  // bit r: row r is the last of its rule's rows
  std::set<std::uint32_t> reported_;
};

}  // namespace

void analyze(const Compiled& policy, const Sources& sources, const CompileOptions& options,
             std::vector<Diagnostic>& diagnostics) {
  Analyzer(policy, sources, Budget{options.max_analysis_work, options.max_cover_splits},
           diagnostics)
      .run();
}

}  // namespace recourse::detail
