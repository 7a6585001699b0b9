// The decision table: what the compiler produces and decide() matches against.
//
// Columns are the attributes the rules test. Each column cuts its domain into cells: one per
// enum value, elementary intervals between the constants the rules compare numbers with, one
// cell per string constant plus "other", and an `absent` cell for envelope attributes. A row is
// a cube (one cell set per column), an action and the rule (or budget guard) it came from; the
// hit policy is first match in row order.
//
// Matching is packet classification (Lakshman and Stiliadis, "High-speed policy-based packet
// forwarding using efficient multi-dimensional range matching", SIGCOMM 1998): per column and
// cell a bitset of the rows that accept it; an input ANDs one bitset per column and the lowest
// set bit is the row. When the product of the column sizes is small the compiler also fills a
// direct-indexed array over the whole domain (the collapsed form of Gupta and McKeown's RFC,
// "Packet classification on multiple fields", SIGCOMM 1999), and a decision is one array read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/model.hpp"

namespace recourse::detail {

/// A set of cells of one column, as bits. Up to 128 cells live inline, so copying a cube (one
/// set per column, copied on every split of the analysis) allocates nothing for usual columns.
class CellSet {
 public:
  CellSet() = default;
  CellSet(std::size_t cells, bool full);
  /// The set of `cells` cells whose bits are `words` ((cells + 63) / 64 of them, none set past
  /// the last cell).
  CellSet(std::size_t cells, const std::uint64_t* words);
  CellSet(const CellSet& other) { *this = other; }
  CellSet(CellSet&& other) noexcept { *this = std::move(other); }
  CellSet& operator=(const CellSet& other);
  CellSet& operator=(CellSet&& other) noexcept;  ///< leaves `other` an empty set of no cells
  ~CellSet() = default;

  bool test(std::size_t cell) const { return (data()[cell / 64] >> (cell % 64)) & 1u; }
  void set(std::size_t cell) { data()[cell / 64] |= std::uint64_t{1} << (cell % 64); }
  void reset(std::size_t cell) { data()[cell / 64] &= ~(std::uint64_t{1} << (cell % 64)); }
  /// Adds the cells [from, to), a word at a time.
  void set_range(std::size_t from, std::size_t to);
  bool empty() const;
  bool full() const;
  std::size_t size() const { return cells_; }
  CellSet& operator&=(const CellSet& other);
  CellSet& operator|=(const CellSet& other);
  /// The bits: word_count() words, cell k at bit k % 64 of word k / 64.
  const std::uint64_t* words() const { return data(); }
  std::size_t word_count() const { return count_; }
  CellSet complement() const;
  /// Whether the two sets share a cell; allocates nothing.
  bool intersects(const CellSet& other) const {
    const std::uint64_t *w = data(), *o = other.data();
    for (std::size_t i = 0; i < count_; ++i)
      if (w[i] & o[i]) return true;
    return false;
  }
  /// Whether every cell of this set is in `other`; allocates nothing.
  bool subset_of(const CellSet& other) const {
    const std::uint64_t *w = data(), *o = other.data();
    for (std::size_t i = 0; i < count_; ++i)
      if (w[i] & ~o[i]) return false;
    return true;
  }
  /// Removes the cells of `other`.
  CellSet& operator-=(const CellSet& other);
  bool operator==(const CellSet& other) const;

 private:
  static constexpr std::size_t kInline = 2;
  std::uint64_t* data() { return heap_ ? heap_.get() : inline_; }
  const std::uint64_t* data() const { return heap_ ? heap_.get() : inline_; }

  std::uint32_t cells_ = 0, count_ = 0;
  std::uint64_t inline_[kInline] = {};
  std::unique_ptr<std::uint64_t[]> heap_;  // when count_ > kInline
};

/// A cube: one cell set per column, standing for the inputs whose cells lie in every set. Rows
/// are cubes; the compiler builds them from DNF terms, the analysis and diff split and
/// intersect them. A cube with an empty set holds no input; a cube of no columns (a table that
/// tests nothing) holds the one input there is.
using Cube = std::vector<CellSet>;

/// The cube of the inputs in both `a` and `b` (same columns). Some set of it is empty when
/// they share no input: see holds_none().
Cube intersect(const Cube& a, const Cube& b);
/// Whether `a` and `b` (same columns) share an input.
bool intersects(const Cube& a, const Cube& b);
/// Whether `x` holds no input: some column's set is empty.
bool holds_none(const Cube& x);

/// One column: an attribute and how its values fall into cells.
struct Column {
  Attr attr = Attr::Code;
  std::size_t values = 0;               ///< Code/Bool/Enum: number of values
  std::vector<std::int64_t> cuts;       ///< Duration/Count: sorted cut points
  std::vector<std::string> strings;     ///< String: the constants the rules use, sorted
  std::vector<std::string> code_names;  ///< Code: names, for dumps
  std::size_t cells = 0;                ///< including `absent` when the attribute is untrusted
  bool numeric = false;                 ///< Duration/Count: cells are intervals between cuts

  /// The cell of a value. Allocates nothing.
  std::size_t cell_of(const Slot& slot) const noexcept {
    if (!slot.present) return cells - 1;  // only untrusted columns reach here without a value
    if (numeric) {
      if (cuts.size() > 8) return cut_cell(slot.num);
      std::size_t cell = 0;  // a few cuts: count those at or below the value, without branches
      for (std::int64_t cut : cuts) cell += slot.num >= cut;
      return cell;
    }
    if (info(attr).type != Type::String) return static_cast<std::size_t>(slot.num);
    for (std::size_t i = 0; i < strings.size(); ++i)
      if (strings[i] == slot.str) return i;
    return strings.size();
  }
  /// The cell of a number among many cuts (binary search).
  std::size_t cut_cell(std::int64_t num) const noexcept;
  /// A value that falls into `cell` (absent for the absent cell), to evaluate tests on.
  Slot representative(std::size_t cell, std::string& scratch) const;
  /// The cell's name in dumps: a code, `true`, `[0, 3)`, `"x"`, `other`, `absent`.
  std::string cell_name(std::size_t cell) const;
};

/// What a row decides, and where it came from.
struct RowAction {
  Action action;
  std::string label;       ///< rule name, "default", or a guard name such as "budget:attempts"
  std::string exhausted;   ///< for guard rows: the budget
  std::uint32_t rule = 0;  ///< index into PolicySpec::rules
  ast::Pos pos;
};

struct Row {
  Cube cube;                 ///< one cell set per column
  std::uint32_t action = 0;  ///< index into Table::actions
};

enum class Strategy : std::uint8_t { Direct, Bitset };

/// A column as match() reads it: small and side by side, so a lookup touches little memory.
struct Probe {
  std::uint32_t attr = 0;              ///< the attribute, an index into the Point
  std::uint32_t column = 0;            ///< the column
  std::uint32_t absent = 0;            ///< the absent cell
  std::uint32_t base = 0;              ///< the column's first cell in Table::cell_base numbering
  std::int64_t cut = 0;                ///< kOneCut: the cut point
  std::uint32_t first = 0, count = 0;  ///< kCuts: the cut points probe_cuts[first, first + count)
};

/// How match() finds a column's cell, one group of probes each, in this order: the value is the
/// cell (codes, enums, booleans, text no rule compares), for trusted attributes (always present)
/// and for the others; one cut point; up to eight cut points (counted without branches); text
/// compared with the column's constants; and Column::cell_of (many cut points).
enum ProbeGroup : std::size_t {
  kTrustedValue,
  kValue,
  kOneCut,
  kCuts,
  kText,
  kOther,
  kProbeGroups
};

/// The largest row index a direct-indexed entry holds (entries are 16 bits, so a direct table
/// of 64 KiB entries takes 128 KiB): tables with more rows use the bitset matcher.
inline constexpr std::size_t kDirectMaxRows = 0xffff;

struct Table {
  std::vector<Column> columns;
  std::vector<Row> rows;
  std::vector<RowAction> actions;
  Strategy strategy = Strategy::Bitset;
  // Bitset matcher: cells are numbered across columns (column c's cell k is cell_base[c] + k);
  // bits[cell * words + w] holds rows 64w..64w+63, bit r % 64 set when row r accepts the cell.
  std::size_t words = 0;
  std::vector<std::uint32_t> cell_base;
  std::vector<std::uint64_t> bits;
  // Analysis only: the DNF terms of each assertion's condition (PolicySpec::assertions).
  std::vector<std::vector<std::vector<CellSet>>> assertion_terms;
  // Direct matcher, by cell number: cell_offset is the cell's equivalence class in its column
  // (cells accepted by the same rows) times the column's stride, and entries[sum of the columns'
  // cell_offset] the first matching row. classes: the number of classes per column.
  std::vector<std::uint32_t> cell_offset, classes;
  std::vector<std::uint16_t> entries;
  // What match() reads: one probe per column, by ProbeGroup; build_probes() fills them.
  std::vector<Probe> probes;
  std::uint32_t group_end[kProbeGroups] = {};  ///< one past each group's last probe
  std::vector<std::int64_t> probe_cuts;

  /// The rows accepting cell `cell` of column `column`: `words` words.
  const std::uint64_t* row_bits(std::size_t column, std::size_t cell) const noexcept {
    return bits.data() + (cell_base[column] + cell) * words;
  }
  /// Fills probes and probe_cuts from the columns.
  void build_probes();

  /// The first row matching the point. Allocates nothing.
  std::uint32_t match(const Point& point) const noexcept;
  /// The same by the bitset matcher, whatever the strategy (used to fill the direct table).
  std::uint32_t match_cells(const std::size_t* cells) const noexcept;
};

/// One setting as a dump shows it: `text` (`attempts=3`, or a bare `first`), and as diff names
/// it: `key` within its line's section (empty for a section's one bare value) and `value`.
struct Setting {
  std::string key, value, text;
};
/// One line of a dump's settings header: its section (`limits`, `backoff`, `map`, ...) and its
/// settings in order.
struct SettingLine {
  std::string section;
  std::vector<Setting> settings;
};
/// Everything besides the rows that changes a decision, in dump order: the one source of the
/// dump's header and of diff's setting changes. Breaker and throttle lines only when enabled;
/// declared codes only when no column tests `code`.
std::vector<SettingLine> settings(const Table& table, const PolicySpec& spec);

/// The policy's settings and table as stable text. `for_people` adds the matcher's strategy and
/// each row's position (`@file:line:col`); without them it is the canonical text the policy hash
/// is taken of, so the same settings and rows give the same hash whatever the matcher.
std::string dump(const Table& table, const PolicySpec& spec, bool for_people);

}  // namespace recourse::detail
