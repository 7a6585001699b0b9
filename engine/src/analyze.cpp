// Analysis stage: proofs and findings over the decision table, by cube algebra.
//
// Every row is a cube (one cell set per column) and first match decides, so "can an input in
// cube X reach row r?" is "is X not covered by the union of the rows before r?". That is decided
// by recursive splitting (as logic minimisers check tautology; Calvanese et al., "Semantics and
// Analysis of DMN Decision Tables", BPM 2016, sweep the same boundaries): take the first earlier
// row that meets X; if it contains X, X is covered; otherwise split X on one column into the
// part inside that row and the part outside, and continue with both. Nothing enumerates the
// product of the columns. A "no" leaves an uncovered sub-cube, which realize() turns into a
// concrete envelope and context and checks by computing its attributes (make_point) again, so a
// reported counterexample is one that `recourse decide` reproduces.
#include "analyze.hpp"

#include <fmt/format.h>

#include <set>

#include <nlohmann/json.hpp>

#include "compile.hpp"
#include "parse.hpp"

namespace recourse::detail {
namespace {

// Work limit for one coverage question (splits); beyond it the question is left open (W109).
constexpr std::size_t kMaxSplits = 200000;
// W109's help: what leaves a question open, and how to decide it.
constexpr const char* kOpenHelp =
    "split the policy, or raise the analysis budget (recourse check --analysis-work N, "
    "CompileOptions::max_analysis_work)";
// Shadowing rules a W101 names before it says how many more there are.
constexpr std::size_t kNamesListed = 8;

}  // namespace

bool intersects(const Cube& a, const Cube& b) {
  for (std::size_t c = 0; c < a.size(); ++c)
    if (!a[c].intersects(b[c])) return false;
  return true;
}

namespace {

// Cubes laid out flat for the splitting loop: column c's cells in words [c * w, c * w + w) of
// one array, w the widest column's word count. Testing a row against a cube then reads two
// contiguous arrays, and a split copies words instead of allocating cell sets.
class FlatCubes {
 public:
  explicit FlatCubes(const Cube& shape) : shape_(shape) {
    for (const CellSet& set : shape) w_ = std::max(w_, set.word_count());
    stride_ = shape.size() * w_;
  }
  std::size_t stride() const { return stride_; }

  void append(const Cube& cube, std::vector<std::uint64_t>& out) const {
    const std::size_t at = out.size();
    out.resize(at + stride_, 0);
    for (std::size_t c = 0; c < cube.size(); ++c) {
      const std::uint64_t* words = cube[c].words();
      if (cube[c].word_count() == 0) continue;
      out[at + c * w_] = words[0];  // one word for columns of up to 64 cells: no memmove call
      for (std::size_t i = 1; i < cube[c].word_count(); ++i) out[at + c * w_ + i] = words[i];
    }
  }
  Cube cube(const std::uint64_t* words) const {
    Cube out;
    for (std::size_t c = 0; c < shape_.size(); ++c) {
      out.emplace_back(shape_[c].size(), false);
      for (std::size_t k = 0; k < shape_[c].size(); ++k)
        if ((words[c * w_ + k / 64] >> (k % 64)) & 1u) out.back().set(k);
    }
    return out;
  }
  bool meets(const std::uint64_t* a, const std::uint64_t* b) const {
    for (std::size_t c = 0; c < stride_; c += w_) {
      std::uint64_t any = 0;
      for (std::size_t i = c; i < c + w_; ++i) any |= a[i] & b[i];
      if (!any) return false;
    }
    return true;
  }
  bool contains(const std::uint64_t* outer, const std::uint64_t* inner) const {
    for (std::size_t i = 0; i < stride_; ++i)
      if (inner[i] & ~outer[i]) return false;
    return true;
  }
  std::size_t width() const { return w_; }

 private:
  const Cube& shape_;
  std::size_t w_ = 1, stride_ = 0;
};

}  // namespace

std::optional<Cube> uncovered(const std::vector<const Cube*>& rows, Cube x, std::size_t* work) {
  for (const auto& set : x)
    if (set.empty()) return std::nullopt;  // an empty cube holds no input
  if (x.empty()) {                         // no columns: one input, which any row covers
    if (rows.empty()) return x;
    return std::nullopt;
  }
  const FlatCubes flat(x);
  const std::size_t stride = flat.stride(), w = flat.width(), limit = rows.size();
  // Rows are flattened as the scan first reaches them: many questions end within a few rows.
  std::vector<std::uint64_t> row_words;
  auto row_at = [&](std::size_t j) {
    while (row_words.size() <= j * stride) flat.append(*rows[row_words.size() / stride], row_words);
    return &row_words[j * stride];
  };
  // The stack of cubes still to cover: cube k's words at pool[k * stride], its next row next[k].
  std::vector<std::uint64_t> pool;
  std::vector<std::size_t> next{0};
  flat.append(x, pool);
  std::size_t splits = 0;
  while (!next.empty()) {
    const std::size_t top = (next.size() - 1) * stride;
    std::size_t j = next.back();
    const std::size_t from = j;
    while (j < limit && !flat.meets(row_at(j), &pool[top])) ++j;
    if (work) {  // the rows tested come out of the budget
      const std::size_t tested = j - from + 1;
      if (tested > *work) throw Open{};
      *work -= tested;
    }
    if (j == limit) return flat.cube(&pool[top]);
    const std::uint64_t* row = row_at(j);
    if (flat.contains(row, &pool[top])) {
      next.pop_back();
      pool.resize(top);
      continue;
    }
    if (++splits > kMaxSplits) throw Open{};
    for (std::size_t c = 0; c < stride; c += w) {
      std::uint64_t outside = 0;
      for (std::size_t i = c; i < c + w; ++i) outside |= pool[top + i] & ~row[i];
      if (!outside) continue;
      // The part outside row j on column c is disjoint from it: tried first, from row j + 1;
      // the part inside stays, still to split on the other columns from row j.
      pool.resize(top + 2 * stride);
      std::copy(pool.begin() + top, pool.begin() + top + stride, pool.begin() + top + stride);
      for (std::size_t i = c; i < c + w; ++i) {
        pool[top + i] &= row[i];
        pool[top + stride + i] &= ~row[i];
      }
      next.back() = j;
      next.push_back(j + 1);
      break;
    }
  }
  return std::nullopt;
}

std::vector<std::size_t> meeting(const Table& t, const Cube& x, std::size_t limit) {
  // Per column, the rows accepting any cell of x (the matcher's bitsets), intersected.
  const std::size_t words = (limit + 63) / 64;
  std::vector<std::uint64_t> meet(words, ~std::uint64_t{0}), any(words);
  if (limit % 64 && words) meet.back() = (std::uint64_t{1} << (limit % 64)) - 1;
  for (std::size_t c = 0; c < x.size(); ++c) {
    if (x[c].full()) continue;  // every row accepts some cell of a full column
    std::fill(any.begin(), any.end(), 0);
    for (std::size_t k = 0; k < x[c].size(); ++k)
      if (x[c].test(k))
        for (std::size_t w = 0; w < words; ++w) any[w] |= t.row_bits(c, k)[w];
    for (std::size_t w = 0; w < words; ++w) meet[w] &= any[w];
  }
  std::vector<std::size_t> rows;
  for (std::size_t w = 0; w < words; ++w)
    for (std::uint64_t bits = meet[w]; bits; bits &= bits - 1)
      rows.push_back(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
  return rows;
}

std::optional<Cube> uncovered(const Table& t, Cube x, std::size_t limit, std::size_t* work) {
  // Only rows that meet x can cover part of it, so a question costs no pass over every row.
  const std::vector<std::size_t> meets = meeting(t, x, limit);
  std::vector<const Cube*> rows;
  rows.reserve(meets.size());
  for (std::size_t r : meets) rows.push_back(&t.rows[r].cube);
  return uncovered(rows, std::move(x), work);
}

Cube intersect(const Cube& a, const Cube& b) {
  Cube out = a;
  for (std::size_t c = 0; c < out.size(); ++c) out[c] &= b[c];
  return out;
}

std::optional<Input> realize(const Compiled& p, const Cube& cube) {
  const Table& t = p.table;
  for (int variant = 0; variant < 4; ++variant) {
    Input in;
    Envelope& e = in.envelope;
    Context& c = in.context;
    c.tool = p.spec.name;
    c.side_effect = SideEffect::None;
    std::optional<std::int64_t> attempts_left, time_left, cost_left, slack;
    std::optional<bool> field_in_args;
    std::vector<std::string> owned;  // strings for "other" cells
    owned.reserve(t.columns.size());
    for (std::size_t k = 0; k < t.columns.size(); ++k) {
      const Column& col = t.columns[k];
      // Plain inputs read best: the first allowed cell, but the last (the most left) for the
      // budgets left and absent for optional envelope fields; odd variants look from the other
      // end. The tool takes the policy's own name when allowed (so a bundle picks this policy).
      const bool budget = col.attr == Attr::AttemptsLeft || col.attr == Attr::TimeLeft ||
                          col.attr == Attr::CostLeft || col.attr == Attr::DeadlineSlack ||
                          (info(col.attr).untrusted && col.attr != Attr::Code);
      const bool from_end = (variant % 2 == 1) != budget;
      std::size_t cell = col.cells;
      if (col.attr == Attr::Tool)
        for (std::size_t i = 0; i < col.strings.size(); ++i)
          if (col.strings[i] == p.spec.name && cube[k].test(i)) cell = i;
      for (std::size_t i = 0; i < col.cells && cell == col.cells; ++i) {
        const std::size_t at = from_end ? col.cells - 1 - i : i;
        if (cube[k].test(at)) {
          cell = at;
          break;
        }
      }
      if (cell == col.cells) return std::nullopt;
      const bool absent = info(col.attr).untrusted && cell == col.cells - 1;
      std::int64_t num = 0;
      std::string str;
      if (!absent) {
        switch (info(col.attr).type) {
          case Type::Duration:
          case Type::Count: {
            const std::int64_t lo =
                cell == 0 ? std::numeric_limits<std::int64_t>::min() : col.cuts[cell - 1];
            const std::int64_t hi =
                cell == col.cuts.size() ? std::numeric_limits<std::int64_t>::max() : col.cuts[cell];
            const bool derived = col.attr == Attr::AttemptsLeft || col.attr == Attr::TimeLeft ||
                                 col.attr == Attr::CostLeft || col.attr == Attr::DeadlineSlack;
            const std::int64_t floor = derived ? -1'000'000 : col.attr == Attr::Attempt ? 1 : 0;
            const std::int64_t low = std::max(lo, floor);
            num = variant >= 2 && hi - 1 >= low && hi < 1'000'000'000'000 ? hi - 1 : low;
            // Time left: prefer an hour when the cell allows, so the backoff fits before the
            // deadline (that check follows the lookup).
            if (col.attr == Attr::TimeLeft && hi == std::numeric_limits<std::int64_t>::max())
              num = std::max(num, std::int64_t{3'600'000});
            if (num >= hi) return std::nullopt;
            break;
          }
          case Type::String:
            str = cell < col.strings.size() ? col.strings[cell] : "other-" + std::to_string(k);
            break;
          default:
            num = static_cast<std::int64_t>(cell);
        }
      }
      switch (col.attr) {
        case Attr::Code:
          if (!absent) e.code = p.spec.codes.at(static_cast<std::size_t>(num));
          break;
        case Attr::Retryable:
          if (!absent) e.retryable = num != 0;
          break;
        case Attr::Field:
          if (!absent) e.field = str;
          break;
        case Attr::Suggestion:
          if (!absent) e.suggestion = str;
          break;
        case Attr::TraceId:
          if (!absent) e.trace_id = str;
          break;
        case Attr::RetryAfter:
          if (!absent) e.retry_after_ms = num;
          break;
        case Attr::Idempotent:
          c.idempotent = num != 0;
          break;
        case Attr::SideEffect:
          c.side_effect = static_cast<SideEffect>(num);
          break;
        case Attr::Attempt:
          c.attempt = num;
          break;
        case Attr::Repairs:
          c.repairs = num;
          break;
        case Attr::Elapsed:
          c.elapsed_ms = num;
          break;
        case Attr::Tool:
          c.tool = str;
          break;
        case Attr::Repeats:
          c.repeats = num;
          break;
        case Attr::IdempotencyKey:
          c.idempotency_key_pinned = num == 1;
          if (num == 1) c.idempotency_key = "key-1";
          break;
        case Attr::Circuit:
          c.circuit = static_cast<CircuitState>(num);
          break;
        case Attr::RetryThrottled:
          c.retry_throttled = num != 0;
          break;
        case Attr::AttemptsLeft:
          attempts_left = num;
          break;
        case Attr::TimeLeft:
          time_left = num;
          break;
        case Attr::CostLeft:
          cost_left = num;
          break;
        case Attr::DeadlineSlack:
          if (!absent) slack = num;
          break;
        case Attr::FieldInArguments:
          if (!absent) field_in_args = num != 0;
          break;
        default:
          break;
      }
    }
    // Derived attributes: choose the host's inputs that give them.
    if (attempts_left) {
      const std::int64_t v = *attempts_left;
      const std::int64_t m =
          std::clamp<std::int64_t>(c.attempt + std::max<std::int64_t>(v, 0), 1, p.attempt_ceiling);
      c.max_attempts = m;
      c.lower_retries = std::max<std::int64_t>(0, m - c.attempt - v);
    }
    if (time_left) c.deadline_ms = std::max<std::int64_t>(0, c.elapsed_ms + *time_left);
    if (cost_left && p.spec.cost_max != kNoLimit)
      c.cost_spent = std::max<std::int64_t>(0, p.spec.cost_max - *cost_left);
    if (slack && e.retry_after_ms && time_left)
      c.deadline_ms = std::max<std::int64_t>(0, c.elapsed_ms + *e.retry_after_ms + *slack);
    if (slack && !e.retry_after_ms) e.retry_after_ms = std::max<std::int64_t>(0, -*slack);
    if (field_in_args) {
      if (!e.field) e.field = "arg";
      c.arguments =
          *field_in_args ? std::vector<std::string>{*e.field} : std::vector<std::string>{};
    }
    // The check: the input's own attributes fall in the cube, and deciding it (the steps after
    // the lookup included) gives the row's route.
    std::uint32_t warnings = 0;
    std::string_view nearest;
    const Point point = make_point(p, e, c, p.wanted, warnings, nearest);
    bool inside = true;
    for (std::size_t k = 0; k < t.columns.size() && inside; ++k)
      inside = cube[k].test(t.columns[k].cell_of(point.slot(t.columns[k].attr)));
    if (!inside) continue;
    const std::uint32_t row = t.match(point);
    const RowAction& a = t.actions[t.rows[row].action];
    Decision d;
    finish(p, a.action, a.label, a.exhausted, row, point, e, c, d);
    if (d.route == a.action.route) return in;
  }
  return std::nullopt;
}

std::string input_json(const Input& in) {
  using json = nlohmann::ordered_json;
  const Envelope& e = in.envelope;
  const Context& c = in.context;
  json env = json::object();
  if (e.code) env["code"] = *e.code;
  if (e.retryable) env["retryable"] = *e.retryable;
  if (e.field) env["field"] = *e.field;
  if (e.suggestion) env["suggestion"] = *e.suggestion;
  if (e.retry_after_ms) env["retryAfterMs"] = *e.retry_after_ms;
  if (e.trace_id) env["traceId"] = *e.trace_id;
  static constexpr const char* effects[] = {"none", "unknown", "committed"};
  static constexpr const char* circuits[] = {"closed", "open", "half_open"};
  json ctx = {
      {"tool", c.tool},
      {"sideEffect", effects[static_cast<int>(c.side_effect.value_or(SideEffect::Unknown))]},
      {"attempt", c.attempt}};
  if (c.idempotent) ctx["idempotent"] = *c.idempotent;
  if (c.repairs) ctx["repairs"] = c.repairs;
  if (c.elapsed_ms) ctx["elapsedMs"] = c.elapsed_ms;
  if (c.max_attempts) ctx["maxAttempts"] = *c.max_attempts;
  if (c.lower_retries) ctx["lowerRetries"] = c.lower_retries;
  if (c.deadline_ms) ctx["deadlineMs"] = *c.deadline_ms;
  if (c.repeats) ctx["repeats"] = c.repeats;
  if (c.cost_spent) ctx["costSpent"] = c.cost_spent;
  if (c.idempotency_key_pinned) ctx["idempotencyKey"] = c.idempotency_key;
  if (c.circuit != CircuitState::Closed) ctx["circuit"] = circuits[static_cast<int>(c.circuit)];
  if (c.retry_throttled) ctx["retryThrottled"] = true;
  if (c.arguments) ctx["arguments"] = *c.arguments;
  return "envelope " + env.dump(-1, ' ', false, json::error_handler_t::replace) + " context " +
         ctx.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

class Analyzer {
 public:
  Analyzer(const Compiled& p, const grammar::Sources& sources, std::size_t max_work,
           std::vector<Diagnostic>& out)
      : p_(p), t_(p.table), sources_(sources), out_(out), work_(max_work) {}

  void run() {
    for (std::size_t a = 0; a < p_.spec.assertions.size(); ++a)
      prove(p_.spec.assertions[a], t_.assertion_terms[a]);
    unreachable_rules();
    hostile_retries();
    if (p_.spec.hit == HitPolicy::Unique) overlaps();
  }

 private:
  void report(Severity severity, const char* code, ast::Pos pos, std::string message,
              std::string help) {
    Diagnostic d;
    d.severity = severity;
    d.code = code;
    grammar::locate(d, sources_, pos);
    d.message = std::move(message);
    // An item inherited through `extends` is reported in its base's file: name the policy whose
    // table it is about.
    if (pos.source != p_.spec.pos.source)
      d.message += fmt::format(" (in policy \"{}\", which extends this one)", p_.spec.name);
    d.help = std::move(help);
    out_.push_back(std::move(d));
  }

  // The first input of `x` reaching row `r`, realized; or nullopt. Throws Open.
  std::optional<std::pair<Cube, std::optional<Input>>> reach(const Cube& x, std::size_t r) {
    auto rest = uncovered(t_, x, r, &work_);
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
                       " \"reason\"`");
          } else {
            report(Severity::Error, "E120", a.pos, fmt::format("assertion failed: {}", what),
                   example(hit->second));
          }
          return;  // one counterexample per assertion
        }
      }
    } catch (const Open&) {
      report(Severity::Warning, "W109", a.pos,
             "assertion not decided: the table is too large to analyse", kOpenHelp);
    }
  }

  static const char* invariant_code(const std::string& name) {
    if (name == "retry_after_commit") return "E101";
    if (name == "unsafe_resend") return "E102";
    if (name == "context_overflow_retry") return "E103";
    return "E104";
  }

  // W101: every row of a rule is covered by the rows of earlier rules.
  void unreachable_rules() {
    std::size_t first = 0;
    const std::vector<std::uint32_t> order = rule_order(p_.spec);
    named_.assign(p_.spec.rules.size(), false);
    place_.assign(p_.spec.rules.size(), 0);
    for (std::uint32_t i = 0; i < order.size(); ++i) place_[order[i]] = i;
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
        std::optional<Cube> gap;
        for (std::size_t r = first; r < end && !gap; ++r)
          gap = uncovered(t_, t_.rows[r].cube, first, &work_);
        const bool reachable = gap.has_value();
        if (spec.name == "default" && p_.spec.implicit_default) {
          if (reachable) {
            const auto in = realize(p_, *gap);
            report(Severity::Error, "E016", spec.pos,
                   "policy '" + p_.spec.name +
                       "' has no default route, and its rules leave inputs undecided",
                   (in ? "e.g. " + input_json(*in) + "; " : std::string()) +
                       "add `default -> stop` (or another route) as its last line");
          }
          first = end;
          continue;
        }
        if (!reachable) {
          // The rules of the rows meeting this rule's, once each, in table order (a rule's rows
          // are one run, in the order rule_order() gives).
          std::vector<std::uint32_t> by;
          for (std::size_t k = first; k < end; ++k)
            for (std::size_t r : meeting(t_, t_.rows[k].cube, first)) {
              const std::uint32_t rule_of_r = t_.actions[t_.rows[r].action].rule;
              if (!named_[rule_of_r]) by.push_back(rule_of_r);
              named_[rule_of_r] = true;
            }
          std::sort(by.begin(), by.end(),
                    [&](std::uint32_t a, std::uint32_t b) { return place_[a] < place_[b]; });
          std::string names;  // the first kNamesListed, then how many more
          for (std::size_t i = 0; i < by.size(); ++i) {
            named_[by[i]] = false;
            if (i < kNamesListed)
              names += (names.empty() ? "'" : ", '") + p_.spec.rules[by[i]].name + "'";
          }
          if (by.size() > kNamesListed)
            names += fmt::format(" and {} more rules", by.size() - kNamesListed);
          if (spec.name == "default")
            report(Severity::Warning, "W105", spec.pos,
                   "the default is never reached: the rules decide every input",
                   "keep it as a safety net, or remove it");
          else
            report(Severity::Warning, "W101", spec.pos,
                   fmt::format("rule '{}' is never reached: {} decide every input it matches",
                               spec.name, names),
                   "reorder the rules, narrow the earlier ones, or remove this one");
        }
        first = end;
      }
    } catch (const Open&) {
      report(Severity::Warning, "W109", p_.spec.pos,
             "reachability not decided: the table is too large to analyse", kOpenHelp);
    }
  }

  // E106 under `hit unique`: two rules with different routes that one input matches. Only the
  // rules' own rows count (guard rows are the engine's, not the author's choice).
  void overlaps() {
    const std::size_t last = p_.spec.rules.size() - 1;  // the default
    auto own = [&](std::size_t r) {
      const RowAction& a = t_.actions[t_.rows[r].action];
      return a.rule != last && a.label == p_.spec.rules[a.rule].name;
    };
    std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
    for (std::size_t i = 0; i < t_.rows.size(); ++i) {
      if (!own(i)) continue;
      for (std::size_t j = i + 1; j < t_.rows.size(); ++j) {
        if (!own(j)) continue;
        const RowAction& a = t_.actions[t_.rows[i].action];
        const RowAction& b = t_.actions[t_.rows[j].action];
        if (a.rule == b.rule || a.action.route == b.action.route ||
            !intersects(t_.rows[i].cube, t_.rows[j].cube))
          continue;
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
            in ? "e.g. " + input_json(*in) : std::string("narrow one of them"));
      }
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
               hit->second ? "e.g. " + input_json(*hit->second) : std::string("constrain code"));
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
  const grammar::Sources& sources_;
  std::vector<Diagnostic>& out_;
  std::size_t work_;                  // rows the coverage questions may still test
  std::vector<bool> named_;           // unreachable_rules(): rules listed for the current one
  std::vector<std::uint32_t> place_;  // unreachable_rules(): a rule's position in rule_order()
  std::set<std::uint32_t> reported_;
};

}  // namespace

void analyze(const Compiled& policy, const grammar::Sources& sources, std::size_t max_work,
             std::vector<Diagnostic>& diagnostics) {
  Analyzer(policy, sources, max_work, diagnostics).run();
}

}  // namespace recourse::detail
