// row_chunks_test.cpp - the few-row products' cut of rows into launches: every row once, in order, power-of-two chunks but near the next power
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "kernels/row_chunks.h"

namespace {

std::vector<std::pair<int, int>> chunks_of(int rows) {
  std::vector<std::pair<int, int>> out;
  kdsl::kernels::detail::for_row_chunks(rows, [&](int first, int count) { out.emplace_back(first, count); });
  return out;
}

using Chunks = std::vector<std::pair<int, int>>;

}  // namespace

TEST_CASE("kernels: few-row products cut rows into power-of-two launches, all but a count near the next power") {
  CHECK(chunks_of(1) == Chunks{{0, 1}});
  CHECK(chunks_of(2) == Chunks{{0, 2}});
  CHECK(chunks_of(3) == Chunks{{0, 2}, {2, 1}});
  CHECK(chunks_of(5) == Chunks{{0, 4}, {4, 1}});
  CHECK(chunks_of(7) == Chunks{{0, 7}});  // 7 of 8: one 8-row launch, one clamped row
  CHECK(chunks_of(9) == Chunks{{0, 8}, {8, 1}});
  CHECK(chunks_of(11) == Chunks{{0, 8}, {8, 2}, {10, 1}});
  CHECK(chunks_of(12) == Chunks{{0, 8}, {8, 4}});
  CHECK(chunks_of(13) == Chunks{{0, 13}});
  CHECK(chunks_of(16) == Chunks{{0, 16}});
  // Every count: the chunks tile [0, rows) in order, each at most 1.5x below its rounding.
  for (int rows = 1; rows <= 16; ++rows) {
    CAPTURE(rows);
    int next = 0;
    for (auto [first, count] : chunks_of(rows)) {
      CHECK(first == next);
      CHECK(count >= 1);
      next = first + count;
    }
    CHECK(next == rows);
  }
}
