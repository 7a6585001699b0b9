// Compile stage: checked policy -> decision table.
//
// 1. Columns: every attribute a rule or guard tests. Numbers are cut at the constants compared
//    with (x < c cuts at c, x <= c at c+1, x == c at c and c+1), strings get one cell per
//    constant plus "other", envelope attributes one `absent` cell.
// 2. Each test becomes the set of cells on whose representative value eval_test() holds, so the
//    table means exactly what the reference interpreter computes.
// 3. Conditions go to disjunctive normal form (negation pushed to the tests, where it is the
//    complement of the cell set, `absent` included: `not` negates the whole test). Each term is
//    a row. A retry or repair rule is preceded, term by term, by its budget guards intersected
//    with the term, so first-match order gives the guards precedence over the rule's own route.
// 4. Per column and cell, the bitset of accepting rows; and when the product of the columns'
//    equivalence classes (cells accepted by the same rows) is at most
//    options.direct_table_max_entries, the first matching row of every class combination in one
//    array.
#include "compile/compile.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "eval/eval.hpp"
#include "source/location.hpp"

namespace recourse::detail {
namespace {

struct TooManyTerms {
  bool work;  // the max_dnf_work limit (else max_terms_per_rule)
};
struct TooLarge {
  std::size_t bytes;
};

class Compiler {
 public:
  Compiler(const PolicySpec& spec, const CompileOptions& options, const Sources& sources,
           std::vector<Diagnostic>& diagnostics, const PolicySpec* also)
      : spec_(spec), options_(options), sources_(sources), diagnostics_(diagnostics), also_(also) {
    column_of_.fill(-1);
  }

  Table run() {
    collect_all(spec_);
    if (also_) collect_all(*also_);
    build_columns();
    guard_terms_.resize(spec_.guards.size());
    for (std::uint32_t i : rule_order(spec_)) add_rule(i);
    for (const auto& a : spec_.assertions) {
      expanding = {"`" + a.text + "`", a.pos};  // the rules' max_dnf_work covers assertions too
      table_.assertion_terms.push_back(dnf(a.when, false));
    }
    std::size_t bitset_bytes = 0;
    for (const auto& col : table_.columns)
      bitset_bytes += col.cells * ((table_.rows.size() + 63) / 64) * 8;
    size_check(rows_bytes() + bitset_bytes);
    build_bitsets();
    build_direct();
    table_.build_probes();
    return std::move(table_);
  }

  /// What dnf() is expanding, for E093: "rule 'name'" or an assertion as `assert ...`, and where.
  struct Item {
    std::string what;
    ast::Pos pos;
  } expanding;

 private:
  void collect_all(const PolicySpec& spec) {
    for (const auto& r : spec.rules)
      if (r.when) collect(*r.when);
    for (const auto& a : spec.assertions) collect(a.when);
    // Guard columns only where a guard can fire, so a policy that never retries has none.
    for (const auto& g : spec.guards)
      for (const auto& r : spec.rules)
        if (guards_rule(g, r)) {
          collect(g.when);
          break;
        }
  }

  // ---- columns ------------------------------------------------------------------------------

  void collect(const Cond& c) {
    if (c.kind != ast::Expr::Kind::Test) {
      for (const auto& child : c.children) collect(child);
      return;
    }
    used_.insert(c.attr);
    add_cuts(c, cuts_[static_cast<std::size_t>(c.attr)]);
    for (const auto& k : c.values) strings_[static_cast<std::size_t>(c.attr)].insert(k.str);
  }

  // The points where a test on a number changes its value: x < c and x >= c at c, x <= c and
  // x > c at c + 1, the others at c and c + 1. A column is cut at those of all its tests.
  static void add_cuts(const Cond& c, std::set<std::int64_t>& cuts) {
    auto after = [](std::int64_t v) {
      return v == std::numeric_limits<std::int64_t>::max() ? v : v + 1;
    };
    for (const auto& k : c.values) {
      switch (c.op) {
        case ast::Op::Lt:
        case ast::Op::Ge:
          cuts.insert(k.num);
          break;
        case ast::Op::Le:
        case ast::Op::Gt:
          cuts.insert(after(k.num));
          break;
        default:
          cuts.insert(k.num);
          cuts.insert(after(k.num));
      }
    }
  }

  void build_columns() {
    for (Attr a : used_) {  // std::set: attribute order, so dumps are stable
      Column col;
      col.attr = a;
      const std::size_t i = static_cast<std::size_t>(a);
      switch (info(a).type) {
        case Type::Code:
          col.values = spec_.codes.size();
          col.code_names = spec_.codes;
          break;
        case Type::Bool:
          col.values = 2;
          break;
        case Type::Enum:
          col.values = info(a).value_count;
          break;
        case Type::String:
          col.strings.assign(strings_[i].begin(), strings_[i].end());
          col.values = col.strings.size() + 1;
          break;
        default:
          col.cuts.assign(cuts_[i].begin(), cuts_[i].end());
          col.values = col.cuts.size() + 1;
          col.numeric = true;
      }
      col.cells = col.values + (info(a).untrusted ? 1 : 0);
      column_of_[i] = static_cast<int>(table_.columns.size());
      table_.columns.push_back(std::move(col));
    }
  }

  Cube full_cube() const {
    Cube cube;
    for (const auto& col : table_.columns) cube.emplace_back(col.cells, true);
    return cube;
  }

  // ---- conditions to DNF --------------------------------------------------------------------

  void limit(std::size_t terms) const {
    if (terms > options_.max_terms_per_rule) throw TooManyTerms{false};
  }

  std::vector<Cube> dnf(const Cond& c, bool negated) {
    using K = ast::Expr::Kind;
    if (c.kind == K::Test) {
      const int col = column_of_[static_cast<std::size_t>(c.attr)];
      CellSet set = test_cells(c, table_.columns[static_cast<std::size_t>(col)], negated);
      if (set.empty()) return {};
      Cube cube = full_cube();
      cube[static_cast<std::size_t>(col)] = std::move(set);
      return {std::move(cube)};
    }
    if (c.kind == K::Not) return dnf(c.children.at(0), !negated);
    const bool conjunction = (c.kind == K::And) != negated;  // De Morgan
    if (!conjunction) {
      std::vector<Cube> out;
      for (const auto& child : c.children) {
        auto terms = dnf(child, negated);
        limit(out.size() + terms.size());
        std::move(terms.begin(), terms.end(), std::back_inserter(out));
      }
      merge(out);
      return out;
    }
    std::vector<Cube> out{full_cube()};
    for (const auto& child : c.children) {
      const auto terms = dnf(child, negated);
      std::vector<Cube> next;
      work_ += out.size() * terms.size();
      if (work_ > options_.max_dnf_work) throw TooManyTerms{true};
      for (const auto& a : out)
        for (const auto& b : terms) {
          Cube both = intersect(a, b);
          if (!holds_none(both)) {
            next.push_back(std::move(both));
            limit(next.size());
          }
        }
      merge(next);
      out = std::move(next);
      if (out.empty()) break;
    }
    return out;
  }

  // The cells of `column` on whose representative value eval_test() holds (fails, when
  // `negated`). On a wide column the test is evaluated once per class of cells it cannot tell
  // apart, not once per cell (a policy may declare 20,000 codes, or compare a number with 20,000
  // constants): a test on a number changes value only at its own cut points, which are among the
  // column's (add_cuts), and a test on a code or a string tells apart only the values it names.
  static CellSet test_cells(const Cond& c, const Column& column, bool negated) {
    CellSet set(column.cells, false);
    std::string scratch;
    auto holds = [&](std::size_t k) {
      return eval_test(c, column.representative(k, scratch)) != negated;
    };
    const Type type = info(column.attr).type;
    constexpr std::size_t kNarrow = 64;  // every cell, as the definition reads
    if (column.cells <= kNarrow ||
        (!column.numeric && type != Type::Code && type != Type::String)) {
      for (std::size_t k = 0; k < column.cells; ++k)
        if (holds(k)) set.set(k);
      return set;
    }
    const std::size_t present = column.values;  // the cells before `absent`
    if (column.cells > present && holds(present)) set.set(present);
    if (column.numeric) {
      std::set<std::int64_t> cuts;
      add_cuts(c, cuts);
      std::size_t from = 0;
      auto run = [&](std::size_t to) {  // cells [from, to) lie between two of the test's cuts
        if (from < to && holds(from)) set.set_range(from, to);
        from = to;
      };
      for (std::int64_t cut : cuts)
        run(static_cast<std::size_t>(std::lower_bound(column.cuts.begin(), column.cuts.end(), cut) -
                                     column.cuts.begin()) +
            1);
      run(present);
      return set;
    }
    std::vector<std::size_t> named;  // the cells of the values the test names
    for (const Constant& k : c.values)
      named.push_back(type == Type::Code
                          ? static_cast<std::size_t>(k.num)
                          : static_cast<std::size_t>(std::lower_bound(column.strings.begin(),
                                                                      column.strings.end(), k.str) -
                                                     column.strings.begin()));
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    std::size_t other = 0;  // the first cell the test does not name, standing for all of them
    for (std::size_t n : named)
      if (n == other) ++other;
    if (other < present && holds(other)) {
      set.set_range(0, present);
      for (std::size_t n : named)
        if (!holds(n)) set.reset(n);
    } else {
      for (std::size_t n : named)
        if (holds(n)) set.set(n);
    }
    return set;
  }

  // Joins terms that differ in one column only (x in {1} or x in {2} -> x in {1, 2}), column by
  // column: an `or` over one attribute stays one term, however long.
  void merge(std::vector<Cube>& terms) const {
    if (terms.size() < 2) return;
    for (std::size_t c = 0; c < table_.columns.size(); ++c) {
      std::map<std::vector<std::uint64_t>, std::size_t> index;  // all other columns -> term
      std::vector<Cube> out;
      for (auto& t : terms) {
        std::vector<std::uint64_t> key;
        for (std::size_t k = 0; k < t.size(); ++k)
          if (k != c) key.insert(key.end(), t[k].words(), t[k].words() + t[k].word_count());
        auto [it, fresh] = index.emplace(std::move(key), out.size());
        if (fresh)
          out.push_back(std::move(t));
        else
          out[it->second][c] |= t[c];
      }
      terms = std::move(out);
    }
  }

  // ---- rows ---------------------------------------------------------------------------------

  std::uint32_t add_action(const Action& action, std::string label, std::string exhausted,
                           std::uint32_t rule, ast::Pos pos) {
    table_.actions.push_back(RowAction{action, std::move(label), std::move(exhausted), rule, pos});
    return static_cast<std::uint32_t>(table_.actions.size() - 1);
  }

  void add_rule(std::uint32_t index) {
    const RuleSpec& rule = spec_.rules[index];
    expanding = {"rule '" + rule.name + "'", rule.pos};
    work_ = 0;
    const std::vector<Cube> terms =
        rule.when ? dnf(*rule.when, false) : std::vector<Cube>{full_cube()};
    const std::uint32_t own = add_action(rule.action, rule.name, "", index, rule.pos);
    const Route route = rule.action.route;
    if (route == Route::Retry || route == Route::Repair) warn_absent_through_not(rule, terms);
    for (const Cube& term : terms) {
      for (std::size_t k = 0; k < spec_.guards.size(); ++k) {
        const Guard& g = spec_.guards[k];
        if (!guards_rule(g, rule)) continue;
        const std::uint32_t action =
            add_action(guard_action(g, rule), g.name, g.exhausted, index, rule.pos);
        if (!guard_terms_[k]) {  // once per guard; its columns exist once a rule it guards does
          const std::size_t work = std::exchange(work_, 0);
          guard_terms_[k] = dnf(g.when, false);
          work_ = work;
        }
        for (const Cube& guard_term : *guard_terms_[k]) {
          Cube both = intersect(term, guard_term);
          if (!holds_none(both)) table_.rows.push_back(Row{std::move(both), action});
        }
      }
      table_.rows.push_back(Row{term, own});
    }
    size_check(rows_bytes());
  }

  // W001: a term constrains an envelope column yet accepts its absent cell. Positive tests never
  // accept `absent`, so only `not` (or `is absent`, which states the intent and is exempt) can.
  // `field in arguments` is absent exactly when `field` is, so a term that requires a field does
  // not count.
  void warn_absent_through_not(const RuleSpec& rule, const std::vector<Cube>& terms) {
    if (!rule.when) return;
    for (std::size_t c = 0; c < table_.columns.size(); ++c) {
      const Attr attr = table_.columns[c].attr;
      if (!info(attr).untrusted || tests_absence(*rule.when, attr)) continue;
      const std::size_t absent = table_.columns[c].cells - 1;
      const int field = column_of_[static_cast<std::size_t>(Attr::Field)];
      const bool reachable = std::any_of(terms.begin(), terms.end(), [&](const Cube& t) {
        const bool field_may_be_absent =
            attr != Attr::FieldInArguments || field < 0 ||
            t[static_cast<std::size_t>(field)].test(
                table_.columns[static_cast<std::size_t>(field)].cells - 1);
        return !t[c].full() && t[c].test(absent) && field_may_be_absent;
      });
      if (!reachable) continue;
      const std::string name =
          attr == Attr::FieldInArguments ? "field" : std::string(info(attr).name);
      report(diagnostics_, sources_, rule.pos, Severity::Warning, "W001",
             "rule '" + rule.name + "' can " + to_string(rule.action.route) + " when " + name +
                 " is absent, only because of `not`",
             "add `" + name + " is present` if an absent value should not match");
    }
  }

  // Whether `c` tests `attr is absent` (for `field in arguments`: `field is absent`) anywhere.
  static bool tests_absence(const Cond& c, Attr attr) {
    if (c.kind != ast::Expr::Kind::Test)
      return std::any_of(c.children.begin(), c.children.end(),
                         [&](const Cond& child) { return tests_absence(child, attr); });
    const Attr target = attr == Attr::FieldInArguments ? Attr::Field : attr;
    return c.op == ast::Op::IsAbsent && c.attr == target;
  }

  std::size_t rows_bytes() const {
    std::size_t per_row = sizeof(Row);
    for (const auto& col : table_.columns) per_row += sizeof(CellSet) + (col.cells + 63) / 64 * 8;
    return table_.rows.size() * per_row;
  }
  void size_check(std::size_t bytes) const {
    if (bytes > options_.max_table_bytes) throw TooLarge{bytes};
  }

  // ---- matchers -----------------------------------------------------------------------------

  void build_bitsets() {
    const std::size_t words = (table_.rows.size() + 63) / 64;
    table_.words = words;
    table_.cell_base.clear();
    std::size_t cells = 0;
    for (const auto& col : table_.columns) {
      table_.cell_base.push_back(static_cast<std::uint32_t>(cells));
      cells += col.cells;
    }
    table_.bits.assign(cells * words, 0);
    // The rows' cell sets are the transpose of the bitsets: 64 rows by 64 cells at a time, so a
    // table costs its words, not its rows times its cells.
    std::uint64_t block[64];
    for (std::size_t c = 0; c < table_.columns.size(); ++c) {
      const std::size_t column_cells = table_.columns[c].cells;
      for (std::size_t w = 0; w < words; ++w)
        for (std::size_t cw = 0; cw * 64 < column_cells; ++cw) {
          std::uint64_t any = 0;
          for (std::size_t i = 0; i < 64; ++i) {
            const std::size_t r = w * 64 + i;
            block[i] = r < table_.rows.size() ? table_.rows[r].cube[c].words()[cw] : 0;
            any |= block[i];
          }
          if (!any) continue;
          transpose(block);
          for (std::size_t j = 0; j < 64 && cw * 64 + j < column_cells; ++j)
            table_.bits[(table_.cell_base[c] + cw * 64 + j) * words + w] = block[j];
        }
    }
  }

  // Transposes a 64 x 64 bit matrix in place: bit j of word i becomes bit i of word j (the
  // recursive block swap of Warren, "Hacker's Delight", section 7-3).
  static void transpose(std::uint64_t a[64]) {
    std::uint64_t mask = 0x00000000ffffffffull;
    for (std::size_t j = 32; j != 0; j >>= 1, mask ^= mask << j)
      for (std::size_t k = 0; k < 64; k = ((k | j) + 1) & ~j) {
        const std::uint64_t t = ((a[k] >> j) ^ a[k | j]) & mask;
        a[k] ^= t << j;
        a[k | j] ^= t;
      }
  }

  // RFC's first phase (Gupta and McKeown 1999): cells of a column accepted by the same rows are
  // one equivalence class, so the direct table is indexed by classes, not cells (an untested
  // code costs no entries). Built when the product of the class counts is at most
  // options.direct_table_max_entries and every row index fits an entry.
  void build_direct() {
    if (table_.rows.size() > kDirectMaxRows) return;
    const std::size_t n = table_.columns.size(), words = table_.words;
    std::vector<std::vector<std::size_t>> members(n);  // per column: a cell of each class
    std::vector<std::uint32_t> cell_class(table_.bits.size() / std::max<std::size_t>(words, 1));
    std::size_t entries = 1;
    for (std::size_t c = 0; c < n; ++c) {
      std::map<std::vector<std::uint64_t>, std::uint32_t> ids;
      for (std::size_t k = 0; k < table_.columns[c].cells; ++k) {
        const std::uint64_t* rows = table_.row_bits(c, k);
        const auto [it, fresh] = ids.emplace(std::vector<std::uint64_t>(rows, rows + words),
                                             static_cast<std::uint32_t>(members[c].size()));
        if (fresh) members[c].push_back(k);
        cell_class[table_.cell_base[c] + k] = it->second;
      }
      if (entries > options_.direct_table_max_entries / members[c].size()) return;
      entries *= members[c].size();
    }
    if (entries > options_.direct_table_max_entries) return;  // a table without columns
    table_.classes.assign(n, 0);
    table_.cell_offset.assign(cell_class.size(), 0);
    std::vector<std::size_t> strides(n, 0);
    std::size_t stride = 1;
    for (std::size_t c = n; c-- > 0;) {
      strides[c] = stride;
      table_.classes[c] = static_cast<std::uint32_t>(members[c].size());
      for (std::size_t k = 0; k < table_.columns[c].cells; ++k) {
        const std::size_t g = table_.cell_base[c] + k;
        table_.cell_offset[g] = static_cast<std::uint32_t>(cell_class[g] * stride);
      }
      stride *= members[c].size();
    }
    table_.entries.resize(entries);
    std::vector<std::size_t> cells(n + 1, 0);
    for (std::size_t index = 0; index < entries; ++index) {
      std::size_t rest = index;
      for (std::size_t c = 0; c < n; ++c) {
        cells[c] = members[c][rest / strides[c]];
        rest %= strides[c];
      }
      table_.entries[index] = static_cast<std::uint16_t>(table_.match_cells(cells.data()));
    }
    table_.strategy = Strategy::Direct;
  }

  const PolicySpec& spec_;
  const CompileOptions& options_;
  const Sources& sources_;
  std::vector<Diagnostic>& diagnostics_;
  const PolicySpec* also_;  // another policy whose attributes and cuts the columns must carry
  Table table_;
  std::set<Attr> used_;
  std::array<std::set<std::int64_t>, kAttrCount> cuts_;
  std::array<std::set<std::string>, kAttrCount> strings_;
  std::array<int, kAttrCount> column_of_{};
  std::vector<std::optional<std::vector<Cube>>> guard_terms_;  // each guard's DNF, once used
  std::size_t work_ = 0;  // term intersections for the current rule
};

}  // namespace

std::vector<std::uint32_t> rule_order(const PolicySpec& spec) {
  std::vector<std::uint32_t> order(spec.rules.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  if (spec.hit == HitPolicy::Safest && order.size() > 1)
    std::stable_sort(order.begin(), order.end() - 1, [&](std::uint32_t a, std::uint32_t b) {
      return safety_rank(spec.rules[a].action.route) < safety_rank(spec.rules[b].action.route);
    });
  return order;
}

std::optional<Table> compile(const PolicySpec& spec, const CompileOptions& options,
                             const Sources& sources, std::vector<Diagnostic>& diagnostics,
                             const PolicySpec* also) {
  Compiler compiler(spec, options, sources, diagnostics, also);
  try {
    return compiler.run();
  } catch (const TooLarge& e) {
    report(diagnostics, sources, spec.pos, Severity::Error, "E094",
           "policy '" + spec.name + "' compiles to a table of more than " +
               std::to_string(e.bytes >> 20) + " MiB; the limit is " +
               std::to_string(options.max_table_bytes >> 20) + " MiB",
           "rules comparing many distinct constants make many cells; group them with `in [..]`, "
           "or raise CompileOptions::max_table_bytes");
    return std::nullopt;
  } catch (const TooManyTerms& e) {
    const auto& item = compiler.expanding;
    report(
        diagnostics, sources, item.pos, Severity::Error, "E093",
        e.work ? item.what + " needs more than " + std::to_string(options.max_dnf_work) +
                     " term intersections to expand"
               : item.what + " expands to more than " + std::to_string(options.max_terms_per_rule) +
                     " terms",
        std::string("an `and` of many `or`s multiplies out; split it, or raise CompileOptions::") +
            (e.work ? "max_dnf_work" : "max_terms_per_rule"));
    return std::nullopt;
  }
}

}  // namespace recourse::detail
