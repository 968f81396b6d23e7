// row_chunks_test.cpp - the few-row products' cut of rows into launches: every row once, in order, power-of-two chunks (but near the next power) within a format's largest launch
#include <doctest/doctest.h>

#include <bit>
#include <utility>
#include <vector>

#include "kernels/row_chunks.h"

namespace {

std::vector<std::pair<int, int>> chunks_of(int rows, int largest = 1 << 30) {
  std::vector<std::pair<int, int>> out;
  kdsl::kernels::detail::for_row_chunks(rows, [&](int first, int count) { out.emplace_back(first, count); }, largest);
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
  // At most `largest` rows a launch (a format's few_rows_launch), rounding up only within it.
  CHECK(chunks_of(9, 2) == Chunks{{0, 2}, {2, 2}, {4, 2}, {6, 2}, {8, 1}});
  CHECK(chunks_of(7, 4) == Chunks{{0, 4}, {4, 2}, {6, 1}});
  CHECK(chunks_of(7, 8) == Chunks{{0, 7}});
  CHECK(chunks_of(3, 1) == Chunks{{0, 1}, {1, 1}, {2, 1}});
  CHECK(chunks_of(13, 4) == Chunks{{0, 4}, {4, 4}, {8, 4}, {12, 1}});
  // Every count: the chunks tile [0, rows) in order, each at most 1.5x below its rounding.
  for (int largest : {1, 2, 4, 8, 16})
    for (int rows = 1; rows <= 16; ++rows) {
      CAPTURE(largest);
      CAPTURE(rows);
      int next = 0;
      for (auto [first, count] : chunks_of(rows, largest)) {
        CHECK(first == next);
        CHECK(count >= 1);
        CHECK(int(std::bit_ceil(unsigned(count))) <= largest);  // the launch's block of rows
        next = first + count;
      }
      CHECK(next == rows);
    }
}
