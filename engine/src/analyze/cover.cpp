// Coverage questions: is every input of a cube decided by some row of a list? (analysis, diff,
// sample). Decided by recursive splitting, never by enumerating the product of the columns: take
// the first row that meets the cube; if it contains the cube, the cube is covered; otherwise
// split the cube on one column into the part inside that row and the part outside, and continue
// with both (analyze.cpp cites the method).
#include "analyze/cover.hpp"

#include <algorithm>

namespace recourse::detail {
namespace {

// Work limit for one coverage question (splits); beyond it the question is left open (W109).
constexpr std::size_t kMaxSplits = 200000;

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
  if (holds_none(x)) return std::nullopt;
  if (x.empty()) {  // no columns: one input, which any row covers
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

}  // namespace recourse::detail
