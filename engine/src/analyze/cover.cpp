// Coverage questions: is every input of a cube decided by some row of a list? (analysis, diff,
// sample). Decided by recursive splitting, never by enumerating the product of the columns: take
// the first row that meets the cube; if it contains the cube, the cube is covered; otherwise
// split the cube on one column into the part inside that row and the part outside, and continue
// with both (analyze.cpp cites the method).
//
// Whether rows cover a cube does not depend on the order they are tried in; which uncovered part
// is found first does. uncovered() tries them in table order (its answer is the witness a report
// prints), covered() nearest first (a retry row's own guard rows, just before it, settle most of
// the questions the invariants ask about it).
#include "analyze/cover.hpp"

#include <algorithm>

namespace recourse::detail {
namespace {

// Words of the matcher's bitsets read per unit of work (a row test reads about as many).
constexpr std::size_t kWordsPerTest = 8;
// A question's candidate rows are narrowed by the matcher's bitsets on the columns where its cube
// holds at most this many cells (each cell costs one pass over the bitset of the rows); on wider
// columns the row tests decide.
constexpr std::size_t kIndexedCells = 64;
// A part left by a split gets a filter of its own only with at least this many rows still to
// search (a filter costs a pass over the rows' bitsets).
constexpr std::size_t kRefinedRows = 256;

void charge(Budget& budget, std::size_t units) {
  if (units > budget.work) throw Open{};
  budget.work -= units;
}

// Cubes laid out flat for the splitting loop: column c's cells in words [offset[c], offset[c] +
// width[c]) of one array, so a split copies words instead of allocating cell sets. Rows are read
// in place, from their cell sets.
class Layout {
 public:
  explicit Layout(const Cube& shape) : shape_(shape) {
    for (const CellSet& set : shape) {
      offset_.push_back(stride_);
      stride_ += set.word_count();
    }
  }
  std::size_t stride() const { return stride_; }

  void append(const Cube& cube, std::vector<std::uint64_t>& out) const {
    const std::size_t at = out.size();
    out.resize(at + stride_, 0);
    for (std::size_t c = 0; c < cube.size(); ++c)
      std::copy(cube[c].words(), cube[c].words() + cube[c].word_count(),
                out.begin() + static_cast<std::ptrdiff_t>(at + offset_[c]));
  }
  Cube cube(const std::uint64_t* words) const {
    Cube out;
    for (std::size_t c = 0; c < shape_.size(); ++c)
      out.emplace_back(shape_[c].size(), words + offset_[c]);
    return out;
  }
  bool meets(const Cube& row, const std::uint64_t* piece) const {
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::uint64_t *r = row[c].words(), *p = piece + offset_[c];
      std::uint64_t any = 0;
      for (std::size_t i = 0; i < row[c].word_count(); ++i) any |= r[i] & p[i];
      if (!any) return false;
    }
    return true;
  }
  bool contains(const Cube& row, const std::uint64_t* piece) const {
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::uint64_t *r = row[c].words(), *p = piece + offset_[c];
      for (std::size_t i = 0; i < row[c].word_count(); ++i)
        if (p[i] & ~r[i]) return false;
    }
    return true;
  }
  std::size_t offset(std::size_t c) const { return offset_[c]; }
  // Splits the piece at `top` on the first column where part of it lies outside `row`: the part
  // inside stays at `top`, the part outside (disjoint from the row) goes to `top + stride`.
  // Returns that column (the piece must not lie inside the row).
  std::size_t split(const Cube& row, std::vector<std::uint64_t>& pool, std::size_t top) const {
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::uint64_t* r = row[c].words();
      const std::size_t at = top + offset_[c], n = row[c].word_count();
      std::uint64_t outside = 0;
      for (std::size_t i = 0; i < n; ++i) outside |= pool[at + i] & ~r[i];
      if (!outside) continue;
      pool.resize(top + 2 * stride_);
      std::copy(pool.begin() + static_cast<std::ptrdiff_t>(top),
                pool.begin() + static_cast<std::ptrdiff_t>(top + stride_),
                pool.begin() + static_cast<std::ptrdiff_t>(top + stride_));
      for (std::size_t i = 0; i < n; ++i) {
        pool[at + i] &= r[i];
        pool[at + stride_ + i] &= ~r[i];
      }
      return c;
    }
    return row.size();
  }

 private:
  const Cube& shape_;
  std::vector<std::size_t> offset_;
  std::size_t stride_ = 0;
};

// Keeps in `meet` (a bitset over rows) the rows that accept some cell of `set` (words of column
// c's cells): an OR of the matcher's bitsets of those cells, then an AND.
void narrow(const Table& t, std::size_t c, const std::uint64_t* set, std::size_t set_words,
            std::vector<std::uint64_t>& meet, Budget& budget) {
  const std::size_t words = meet.size();
  std::vector<std::uint64_t> any(words, 0);
  for (std::size_t i = 0; i < set_words; ++i)
    for (std::uint64_t cells = set[i]; cells; cells &= cells - 1) {
      const std::size_t k = i * 64 + static_cast<std::size_t>(__builtin_ctzll(cells));
      charge(budget, words / kWordsPerTest + 1);
      const std::uint64_t* rows = t.row_bits(c, k);
      for (std::size_t w = 0; w < words; ++w) any[w] |= rows[w];
    }
  for (std::size_t w = 0; w < words; ++w) meet[w] &= any[w];
}

std::size_t popcount(const std::uint64_t* words, std::size_t n) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i)
    count += static_cast<std::size_t>(__builtin_popcountll(words[i]));
  return count;
}

// Which rows a piece may still meet: a bitset over rows, and the columns it was narrowed by.
struct Filter {
  std::vector<std::uint64_t> rows;
  std::uint64_t columns = 0;  // bit c: narrowed by column c
};

// The rows in [0, limit) that may meet x: the matcher's bitsets ANDed over the columns where x
// holds few cells; the wider columns are left to the row tests.
Filter candidates(const Table& t, const Cube& x, std::size_t limit, Budget& budget) {
  Filter f;
  const std::size_t words = (limit + 63) / 64;
  f.rows.assign(words, ~std::uint64_t{0});
  if (limit % 64 && words) f.rows.back() = (std::uint64_t{1} << (limit % 64)) - 1;
  for (std::size_t c = 0; c < x.size(); ++c) {
    if (x[c].full() || popcount(x[c].words(), x[c].word_count()) > kIndexedCells) continue;
    narrow(t, c, x[c].words(), x[c].word_count(), f.rows, budget);
    f.columns |= std::uint64_t{1} << c;
  }
  return f;
}

// The splitting search over rows at positions [0, n): `rows.at(p, f)` is the row at position p
// (nullptr when filter f holds none there), `rows.skip(p, f)` the first position at or after p
// that f holds. After a split on column c, `rows.refine(f, c, set, words)` may give the part
// outside a filter of its own, narrowed by its cells on c. Returns an uncovered part of x, or
// nullopt. Every row tested, every split and every filter counts as work.
template <typename Rows>
std::optional<Cube> search(Rows& rows, const Cube& x, Budget& budget) {
  const Layout layout(x);
  const std::size_t stride = layout.stride(), n = rows.size();
  // The stack of cubes still to cover: cube k's words at pool[k * stride], its next position
  // next[k], its filter filter[k]. Each is disjoint from the rows at the positions before its
  // next. Filters only grow up the stack, so the one on top is the newest in use.
  std::vector<std::uint64_t> pool;
  std::vector<std::size_t> next{0}, filter{0};
  layout.append(x, pool);
  std::size_t splits = 0;
  // A row test or a split reads or copies up to `stride` words: one unit per kWordsPerTest.
  const std::size_t unit = (stride + kWordsPerTest - 1) / kWordsPerTest;
  while (!next.empty()) {
    const std::size_t top = (next.size() - 1) * stride, f = filter.back();
    std::size_t j = rows.skip(next.back(), f), tested = 0;
    while (j < n && (++tested, !layout.meets(*rows.at(j, f), &pool[top]))) j = rows.skip(j + 1, f);
    charge(budget, (tested + (j == n)) * unit);
    if (j == n) return layout.cube(&pool[top]);
    const Cube& row = *rows.at(j, f);
    if (layout.contains(row, &pool[top])) {
      next.pop_back();
      filter.pop_back();
      pool.resize(top);
      if (!filter.empty()) rows.release(filter.back());
      continue;
    }
    if (++splits > budget.max_splits) throw Open{true};
    charge(budget, unit);
    // The part outside row j is tried first, from the next position; the part inside stays,
    // still to split on the other columns from row j.
    const std::size_t c = layout.split(row, pool, top);
    next.back() = j;
    next.push_back(j + 1);
    filter.push_back(
        rows.refine(f, c, &pool[top + stride + layout.offset(c)], row[c].word_count(), j + 1));
  }
  return std::nullopt;
}

// Rows given as a list, in order; no filters.
struct ListRows {
  const std::vector<const Cube*>& rows;
  std::size_t size() const { return rows.size(); }
  const Cube* at(std::size_t p, std::size_t) const { return rows[p]; }
  std::size_t skip(std::size_t p, std::size_t) const { return p; }
  std::size_t refine(std::size_t f, std::size_t, const std::uint64_t*, std::size_t, std::size_t) {
    return f;
  }
  void release(std::size_t) {}
};

// A table's rows [0, limit) in table order (position p is row p) or nearest first (position p
// is row limit - 1 - p), through filters: the question's, then narrower ones for the parts a
// split leaves narrow on a column the question's filter could not use (`attempt < 9000` is too
// wide to narrow by, the part of it outside `attempt < 8999` is one cell).
struct TableRows {
  const Table& t;
  std::size_t limit;
  bool nearest_first;
  Budget& budget;
  std::vector<Filter> filters;

  std::size_t size() const { return limit; }
  std::size_t row(std::size_t p) const { return nearest_first ? limit - 1 - p : p; }
  const Cube* at(std::size_t p, std::size_t f) const {
    const std::size_t r = row(p);
    return (filters[f].rows[r / 64] >> (r % 64)) & 1u ? &t.rows[r].cube : nullptr;
  }
  std::size_t skip(std::size_t p, std::size_t f) const {
    if (p >= limit) return limit;
    const std::vector<std::uint64_t>& bits = filters[f].rows;
    if (!nearest_first) {
      std::size_t w = p / 64;
      std::uint64_t word = bits[w] & (~std::uint64_t{0} << (p % 64));
      while (!word && ++w < bits.size()) word = bits[w];
      return word ? std::min(limit, w * 64 + static_cast<std::size_t>(__builtin_ctzll(word)))
                  : limit;
    }
    const std::size_t r = limit - 1 - p;  // the nearest candidate at or below row r
    std::size_t w = r / 64;
    std::uint64_t word = bits[w] & (~std::uint64_t{0} >> (63 - r % 64));
    while (!word && w-- > 0) word = bits[w];
    return word ? limit - 1 - (w * 64 + 63 - static_cast<std::size_t>(__builtin_clzll(word)))
                : limit;
  }
  // A filter for a part whose cells on column c are `set`, searched from position `from`: f
  // narrowed by c when f could not use c, the part is narrow on it and many positions are left.
  std::size_t refine(std::size_t f, std::size_t c, const std::uint64_t* set, std::size_t words,
                     std::size_t from) {
    if ((filters[f].columns >> c & 1u) || limit - std::min(from, limit) < kRefinedRows ||
        popcount(set, words) > kIndexedCells)
      return f;
    Filter narrowed{filters[f].rows, filters[f].columns | std::uint64_t{1} << c};
    charge(budget, narrowed.rows.size() / kWordsPerTest + 1);
    narrow(t, c, set, words, narrowed.rows, budget);
    filters.push_back(std::move(narrowed));
    return filters.size() - 1;
  }
  // Drops the filters made after f (none of the parts left uses them).
  void release(std::size_t f) { filters.resize(f + 1); }
};

// The rows in [0, limit) that meet x, exactly: the candidates, then each tested on the columns
// the candidates were not narrowed by.
std::vector<std::uint64_t> meeting_rows(const Table& t, const Cube& x, std::size_t limit,
                                        Budget& budget) {
  Filter f = candidates(t, x, limit, budget);
  std::vector<std::size_t> wide;
  for (std::size_t c = 0; c < x.size(); ++c)
    if (!(f.columns >> c & 1u) && !x[c].full()) wide.push_back(c);
  if (wide.empty()) return std::move(f.rows);
  for (std::size_t w = 0; w < f.rows.size(); ++w)
    for (std::uint64_t bits = f.rows[w]; bits; bits &= bits - 1) {
      const std::size_t r = w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
      charge(budget, 1);
      for (std::size_t c : wide)
        if (!t.rows[r].cube[c].intersects(x[c])) {
          f.rows[w] &= ~(std::uint64_t{1} << (r % 64));
          break;
        }
    }
  return std::move(f.rows);
}

}  // namespace

std::optional<Cube> uncovered(const std::vector<const Cube*>& rows, Cube x, Budget& budget) {
  if (holds_none(x)) return std::nullopt;
  if (x.empty()) {  // no columns: one input, which any row covers
    if (rows.empty()) return x;
    return std::nullopt;
  }
  ListRows list{rows};
  return search(list, x, budget);
}

std::vector<std::uint64_t> meeting(const Table& t, const Cube& x, std::size_t limit,
                                   Budget& budget) {
  return meeting_rows(t, x, limit, budget);
}

std::optional<Cube> uncovered(const Table& t, Cube x, std::size_t limit, Budget& budget) {
  if (holds_none(x)) return std::nullopt;
  if (x.empty()) return limit == 0 ? std::optional<Cube>(x) : std::nullopt;
  // Only rows that meet x can cover part of it, so a question costs no pass over every row.
  TableRows rows{t, limit, false, budget, {candidates(t, x, limit, budget)}};
  return search(rows, x, budget);
}

bool covered(const Table& t, const Cube& x, std::size_t limit, Budget& budget) {
  if (holds_none(x)) return true;
  if (x.empty()) return limit > 0;
  TableRows rows{t, limit, true, budget, {candidates(t, x, limit, budget)}};
  return !search(rows, x, budget);
}

}  // namespace recourse::detail
