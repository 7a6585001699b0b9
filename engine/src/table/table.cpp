// Decision table: cell sets, cell lookup, matching and the stable text dump.
#include "table/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "model/settings.hpp"
#include "recourse/diagnostic.hpp"

namespace recourse::detail {

CellSet::CellSet(std::size_t cells, bool full)
    : cells_(static_cast<std::uint32_t>(cells)),
      count_(static_cast<std::uint32_t>((cells + 63) / 64)) {
  if (count_ > kInline) heap_ = std::make_unique<std::uint64_t[]>(count_);
  std::uint64_t* w = data();
  std::fill(w, w + count_, full ? ~std::uint64_t{0} : 0);
  if (full && cells % 64) w[count_ - 1] = (std::uint64_t{1} << (cells % 64)) - 1;
}

CellSet::CellSet(std::size_t cells, const std::uint64_t* words) : CellSet(cells, false) {
  std::copy(words, words + count_, data());
}

CellSet& CellSet::operator=(const CellSet& other) {
  if (this == &other) return *this;
  static_assert(kInline == 2, "the inline copy below copies two words");
  if (other.count_ <= kInline) {  // the usual case: two words, no call to memmove
    heap_.reset();
    inline_[0] = other.inline_[0];
    inline_[1] = other.inline_[1];
  } else if (!heap_ || count_ != other.count_) {
    heap_ = std::make_unique<std::uint64_t[]>(other.count_);
  }
  cells_ = other.cells_;
  count_ = other.count_;
  if (count_ <= kInline) return *this;
  std::copy(other.heap_.get(), other.heap_.get() + count_, heap_.get());
  return *this;
}

CellSet& CellSet::operator=(CellSet&& other) noexcept {
  if (this == &other) return *this;
  cells_ = std::exchange(other.cells_, 0);
  count_ = std::exchange(other.count_, 0);
  heap_ = std::move(other.heap_);
  std::copy(other.inline_, other.inline_ + kInline, inline_);
  return *this;
}

void CellSet::set_range(std::size_t from, std::size_t to) {
  std::uint64_t* w = data();
  while (from < to && from % 64) set(from++);
  for (; from + 64 <= to; from += 64) w[from / 64] = ~std::uint64_t{0};
  while (from < to) set(from++);
}

bool CellSet::operator==(const CellSet& other) const {
  return count_ == other.count_ && std::equal(data(), data() + count_, other.data());
}

bool CellSet::empty() const {
  const std::uint64_t* w = data();
  return std::all_of(w, w + count_, [](std::uint64_t x) { return x == 0; });
}

bool CellSet::full() const {
  const std::uint64_t* w = data();
  const std::size_t whole = cells_ / 64;
  for (std::size_t i = 0; i < whole; ++i)
    if (w[i] != ~std::uint64_t{0}) return false;
  return cells_ % 64 == 0 || w[whole] == (std::uint64_t{1} << (cells_ % 64)) - 1;
}

CellSet& CellSet::operator&=(const CellSet& other) {
  std::uint64_t* w = data();
  const std::uint64_t* o = other.data();
  for (std::size_t i = 0; i < count_; ++i) w[i] &= o[i];
  return *this;
}

CellSet& CellSet::operator|=(const CellSet& other) {
  std::uint64_t* w = data();
  const std::uint64_t* o = other.data();
  for (std::size_t i = 0; i < count_; ++i) w[i] |= o[i];
  return *this;
}

CellSet& CellSet::operator-=(const CellSet& other) {
  std::uint64_t* w = data();
  const std::uint64_t* o = other.data();
  for (std::size_t i = 0; i < count_; ++i) w[i] &= ~o[i];
  return *this;
}

CellSet CellSet::complement() const {
  CellSet out(cells_, true);
  out -= *this;
  return out;
}

Cube intersect(const Cube& a, const Cube& b) {
  Cube out = a;
  for (std::size_t c = 0; c < out.size(); ++c) out[c] &= b[c];
  return out;
}

bool intersects(const Cube& a, const Cube& b) {
  for (std::size_t c = 0; c < a.size(); ++c)
    if (!a[c].intersects(b[c])) return false;
  return true;
}

bool holds_none(const Cube& x) {
  return std::any_of(x.begin(), x.end(), [](const CellSet& set) { return set.empty(); });
}

std::size_t Column::cut_cell(std::int64_t num) const noexcept {
  return static_cast<std::size_t>(std::upper_bound(cuts.begin(), cuts.end(), num) - cuts.begin());
}

Slot Column::representative(std::size_t cell, std::string& scratch) const {
  Slot s;
  if (info(attr).untrusted && cell == cells - 1) return s;  // absent
  s.present = true;
  switch (info(attr).type) {
    case Type::Duration:
    case Type::Count:
      s.num = cell == 0 ? std::numeric_limits<std::int64_t>::min() : cuts[cell - 1];
      break;
    case Type::String:
      if (cell < strings.size()) {
        s.str = strings[cell];
      } else {  // "other": after the greatest constant (strings are sorted), so equal to none
        scratch = strings.empty() ? std::string() : strings.back();
        scratch += '\x01';
        s.str = scratch;
      }
      break;
    default:
      s.num = static_cast<std::int64_t>(cell);
  }
  return s;
}

std::string Column::cell_name(std::size_t cell) const {
  if (info(attr).untrusted && cell == cells - 1) return "absent";
  switch (info(attr).type) {
    case Type::Code:
      return code_names.at(cell);
    case Type::Bool:
      return cell ? "true" : "false";
    case Type::Enum:
      return std::string(info(attr).values[cell]);
    case Type::String:
      return cell < strings.size() ? recourse::quoted(strings[cell]) : "other";
    default: {
      auto bound = [](std::int64_t v) {
        if (v == std::numeric_limits<std::int64_t>::min()) return std::string("-inf");
        if (v == std::numeric_limits<std::int64_t>::max()) return std::string("+inf");
        return std::to_string(v);
      };
      const std::int64_t lo = cell == 0 ? std::numeric_limits<std::int64_t>::min() : cuts[cell - 1];
      const std::int64_t hi =
          cell == cuts.size() ? std::numeric_limits<std::int64_t>::max() : cuts[cell];
      return fmt::format("[{},{})", bound(lo), bound(hi));
    }
  }
}

std::uint32_t Table::match_cells(const std::size_t* cells) const noexcept {
  const std::uint64_t* column_bits[kAttrCount];
  const std::size_t n = columns.size();
  for (std::size_t c = 0; c < n; ++c) column_bits[c] = row_bits(c, cells[c]);
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t acc = ~std::uint64_t{0};
    for (std::size_t c = 0; c < n && acc; ++c) acc &= column_bits[c][w];
    if (acc)
      return static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(acc)));
  }
  return static_cast<std::uint32_t>(rows.size() - 1);  // unreachable: the default row matches all
}

void Table::build_probes() {
  probes.clear();
  probe_cuts.clear();
  std::vector<Probe> group[kProbeGroups];
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const Column& col = columns[c];
    Probe p;
    p.attr = static_cast<std::uint32_t>(col.attr);
    p.column = static_cast<std::uint32_t>(c);
    p.absent = static_cast<std::uint32_t>(col.cells - 1);
    p.base = cell_base[c];
    const bool untrusted = info(col.attr).untrusted;
    if (col.numeric && col.cuts.size() == 1) {
      p.cut = col.cuts[0];
      group[kOneCut].push_back(p);
    } else if (col.numeric && col.cuts.size() <= 8) {
      p.first = static_cast<std::uint32_t>(probe_cuts.size());
      p.count = static_cast<std::uint32_t>(col.cuts.size());
      probe_cuts.insert(probe_cuts.end(), col.cuts.begin(), col.cuts.end());
      group[kCuts].push_back(p);
    } else if (!col.numeric && !col.strings.empty()) {
      group[kText].push_back(p);
    } else if (col.numeric) {
      group[kOther].push_back(p);
    } else {  // codes, enums, booleans, and text no rule compares (a present text's num is 0)
      group[untrusted ? kValue : kTrustedValue].push_back(p);
    }
  }
  for (std::size_t g = 0; g < kProbeGroups; ++g) {
    probes.insert(probes.end(), group[g].begin(), group[g].end());
    group_end[g] = static_cast<std::uint32_t>(probes.size());
  }
}

namespace {

// Text columns of up to this many constants are matched by comparing each in turn (cheaper than
// a search for a few); longer ones by binary search.
constexpr std::size_t kTextScanned = 16;

// `has ? value : absent` without a branch: whether an envelope attribute is present varies from
// call to call, so a branch would be mispredicted.
inline std::size_t present_or(bool has, std::size_t value, std::size_t absent) {
  return absent ^ ((value ^ absent) & (std::size_t{0} - has));
}

// Calls cell(probe, cell) for each column of the point, one loop per probe group, so no loop
// branches on the kind of column.
template <class Cell>
inline void for_each_cell(const Table& t, const Point& point, Cell cell) {
  const Probe* const first = t.probes.data();
  const Probe* p = first;
  auto has = [&](const Probe* q) { return (point.present >> q->attr & 1) != 0; };
  for (const Probe* end = first + t.group_end[kTrustedValue]; p != end; ++p)
    cell(*p, static_cast<std::size_t>(point.num[p->attr]));
  for (const Probe* end = first + t.group_end[kValue]; p != end; ++p)
    cell(*p, present_or(has(p), static_cast<std::size_t>(point.num[p->attr]), p->absent));
  for (const Probe* end = first + t.group_end[kOneCut]; p != end; ++p)
    cell(*p, present_or(has(p), point.num[p->attr] >= p->cut, p->absent));
  for (const Probe* end = first + t.group_end[kCuts]; p != end; ++p) {
    const std::int64_t v = point.num[p->attr];
    const std::int64_t* k = t.probe_cuts.data() + p->first;
    std::size_t n = 0;
    for (std::uint32_t i = 0; i < p->count; ++i) n += v >= k[i];
    cell(*p, present_or(has(p), n, p->absent));
  }
  for (const Probe* end = first + t.group_end[kText]; p != end; ++p) {
    const Point::Text& text = point.text[p->attr];
    const std::vector<std::string>& constants = t.columns[p->column].strings;
    std::size_t n = constants.size();                 // "other" unless a constant is equal
    if (has(p) && constants.size() > kTextScanned) {  // sorted: a binary search
      const std::string_view value(text.data, text.size);
      const auto it =
          std::lower_bound(constants.begin(), constants.end(), value,
                           [](const std::string& c, std::string_view v) { return c < v; });
      if (it != constants.end() && *it == value)
        n = static_cast<std::size_t>(it - constants.begin());
    } else if (has(p)) {
      for (std::size_t i = 0; i < constants.size(); ++i)
        if (constants[i].size() == text.size &&
            std::memcmp(constants[i].data(), text.data, text.size) == 0) {
          n = i;
          break;
        }
    }
    cell(*p, has(p) ? n : p->absent);
  }
  for (const Probe* end = first + t.group_end[kOther]; p != end; ++p)
    cell(*p, t.columns[p->column].cell_of(point.slot(static_cast<Attr>(p->attr))));
}

}  // namespace

std::uint32_t Table::match(const Point& point) const noexcept {
  if (strategy == Strategy::Direct) {
    std::size_t index = 0;
    const std::uint32_t* offset = cell_offset.data();
    for_each_cell(*this, point,
                  [&](const Probe& p, std::size_t cell) { index += offset[p.base + cell]; });
    return entries[index];
  }
  std::size_t cells[kAttrCount];
  for_each_cell(*this, point, [&](const Probe& p, std::size_t cell) { cells[p.column] = cell; });
  return match_cells(cells);
}

std::vector<SettingLine> settings(const Table& table, const PolicySpec& spec) {
  // Everything that changes a decision is here (so in the dump, and in the hash): the hit
  // policy, then each block's settings by the settings table (model/settings.hpp).
  auto pair = [](std::string_view key, std::string value) {
    std::string text = std::string(key) + "=" + value;
    return Setting{std::string(key), std::move(value), std::move(text)};
  };
  auto bare = [](std::string key, std::string value) {
    return Setting{std::move(key), value, value};
  };
  auto block = [&](std::string_view name, std::vector<Setting> first = {},
                   const PolicySpec* of = nullptr) {
    SettingLine line{std::string(name), std::move(first)};
    for (const SettingDef* def : settings_of(name))
      if (def->show)
        if (std::string value = def->show(of ? *of : spec); !value.empty())
          line.settings.push_back(pair(def->key, std::move(value)));
    return line;
  };
  std::vector<SettingLine> out;
  out.push_back({"hit", {bare("", std::string(name_of(spec.hit)))}});
  out.push_back(block("tool"));
  out.push_back(block("limits"));
  const std::string kind(name_of(spec.backoff.kind));
  out.push_back(block("backoff", {Setting{"kind", kind, kind}}));
  for (const Schedule& schedule : spec.schedules) {  // each named backoff, read by the same rows
    PolicySpec named;
    named.backoff = schedule.backoff;
    const std::string named_kind(name_of(schedule.backoff.kind));
    SettingLine line = block("backoff", {Setting{"kind", named_kind, named_kind}}, &named);
    line.section = "backoff " + schedule.name;
    out.push_back(std::move(line));
  }
  if (spec.breaker.enabled) out.push_back(block("breaker"));
  if (spec.throttle.enabled) out.push_back(block("throttle"));
  for (const auto& m : spec.mappings) {  // adapter overrides change the envelope, so the decision
    std::string key = fmt::format("{} {}", to_string(m.protocol), recourse::quoted(m.key));
    std::string text = key + " -> " + m.code;
    out.push_back({"map", {Setting{std::move(key), m.code, std::move(text)}}});
  }
  // Declared codes change a decision even when no rule tests `code`: an envelope naming one is
  // not UNKNOWN (no unknown_code warning, no nearestCode). A code column names them all itself.
  const bool code_column = std::any_of(table.columns.begin(), table.columns.end(),
                                       [](const Column& c) { return c.attr == Attr::Code; });
  if (!code_column && spec.codes.size() > kBuiltinCodes.size()) {
    std::string declared;
    for (std::size_t i = kBuiltinCodes.size(); i < spec.codes.size(); ++i)
      declared += (declared.empty() ? "" : " ") + spec.codes[i];
    out.push_back({"codes", {bare("", declared)}});
  }
  return out;
}

namespace {

// Runs of consecutive cells longer than this are written `first..last` in a dump; shorter ones
// cell by cell. A row of a column cut 40,000 times (`attempt != 7` among 20,000 rules) is then
// two runs, not 40,000 names: a dump is as long as the rows' runs, not their cells.
constexpr std::size_t kRunListed = 64;

// Calls run(from, to) for each maximal run [from, to) of cells in `set`, in order, a word at a
// time.
template <typename Run>
void for_each_run(const CellSet& set, Run run) {
  const std::uint64_t* w = set.words();
  std::size_t k = 0;
  const std::size_t n = set.size();
  auto next = [&](bool value) {  // the first cell at or after k whose bit is `value`, or n
    while (k < n) {
      const std::uint64_t word = value ? w[k / 64] : ~w[k / 64];
      const std::uint64_t rest = word & (~std::uint64_t{0} << (k % 64));
      if (rest) return std::min(n, k / 64 * 64 + static_cast<std::size_t>(__builtin_ctzll(rest)));
      k = (k / 64 + 1) * 64;
    }
    return n;
  };
  while (k < n) {
    const std::size_t from = next(true);
    if (from >= n) return;
    k = from;
    const std::size_t to = next(false);
    run(from, to);
    k = to;
  }
}

}  // namespace

std::string dump(const Table& table, const PolicySpec& spec, bool for_people) {
  std::string out = fmt::format("policy {}\n", recourse::quoted(spec.name));
  for (const SettingLine& line : settings(table, spec)) {
    out += line.section;
    for (const Setting& s : line.settings) out += " " + s.text;
    out += "\n";
  }
  if (for_people && table.strategy == Strategy::Direct) {
    std::string cells, classes;
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      cells += (cells.empty() ? "" : "x") + std::to_string(table.columns[c].cells);
      classes += (classes.empty() ? "" : "x") + std::to_string(table.classes[c]);
    }
    out += fmt::format("strategy direct {} classes of {} cells = {} entries\n",
                       classes.empty() ? "1" : classes, cells.empty() ? "1" : cells,
                       table.entries.size());
  } else if (for_people) {
    out += fmt::format("strategy bitset {} rows x {} words\n", table.rows.size(), table.words);
  }
  out += "columns\n";
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    const Column& col = table.columns[c];
    out += fmt::format("  c{} {}:", c, info(col.attr).name);
    for (std::size_t k = 0; k < col.cells; ++k) out += " " + col.cell_name(k);
    out += "\n";
  }
  out += "rows\n";
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const Row& row = table.rows[r];
    const RowAction& a = table.actions[row.action];
    std::string cube;
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      if (row.cube[c].full()) continue;
      std::string cells;
      for_each_run(row.cube[c], [&](std::size_t from, std::size_t to) {
        const Column& col = table.columns[c];
        if (to - from > kRunListed)
          cells += (cells.empty() ? "" : ",") + col.cell_name(from) + ".." + col.cell_name(to - 1);
        else
          for (std::size_t k = from; k < to; ++k)
            cells += (cells.empty() ? "" : ",") + col.cell_name(k);
      });
      cube += fmt::format(" {}={{{}}}", info(table.columns[c].attr).name, cells);
    }
    out += fmt::format("  r{} {}{}{} -> {}", r, a.label, cube.empty() ? " *" : "", cube,
                       action_text(a.action));
    if (for_people) out += fmt::format("  @{}:{}:{}", spec.file, a.pos.line, a.pos.column);
    out += "\n";
  }
  return out;
}

}  // namespace recourse::detail
