// CellSet: the cell sets of decision-table columns, inline up to 128 cells and on the heap
// beyond; copies, moves and the set operations the compiler and the analysis use.
#include "support.hpp"
#include "table/table.hpp"

using recourse::detail::CellSet;

namespace {

CellSet with(std::size_t cells, std::initializer_list<std::size_t> members) {
  CellSet s(cells, false);
  for (std::size_t m : members) s.set(m);
  return s;
}

}  // namespace

TEST_CASE("cellset: set operations agree inline and on the heap", "[table]") {
  for (std::size_t cells :
       {std::size_t{3}, std::size_t{64}, std::size_t{128}, std::size_t{129}, std::size_t{300}}) {
    INFO(cells << " cells");
    const std::size_t last = cells - 1;
    const CellSet a = with(cells, {0, last});
    const CellSet b = with(cells, {last});
    CHECK(a.size() == cells);
    CHECK(a.word_count() == (cells + 63) / 64);
    CHECK(CellSet(cells, true).full());
    CHECK(CellSet(cells, false).empty());
    CHECK(b.subset_of(a));
    CHECK_FALSE(a.subset_of(b));
    CHECK(a.intersects(b));
    CHECK_FALSE(with(cells, {0}).intersects(b));
    CellSet c = a;  // a copy owns its bits
    c -= b;
    CHECK(c == with(cells, {0}));
    CHECK(a == with(cells, {0, last}));
    c |= b;
    CHECK(c == a);
    c &= b;
    CHECK(c == b);
    CHECK(a.complement().test(1) == (cells > 2));
    CHECK_FALSE(a.complement().test(last));
    CellSet moved = std::move(c);
    CHECK(moved == b);
    CHECK(c.size() == 0);  // a moved-from set is empty
    c = a;                 // and can be assigned again
    CHECK(c == a);
    CellSet small = with(3, {1});
    small = a;  // a larger set assigned over a smaller one, and back
    CHECK(small == a);
    small = with(3, {2});
    CHECK(small == with(3, {2}));
    CHECK(small.test(2));
  }
}
