// row_chunks.h - a few rows of x cut into power-of-two launches, so a few-row kernel computes no padded rows
#pragma once
#include <algorithm>
#include <bit>

#include "kernels/library_device.h"

namespace kdsl::kernels::detail {

// Calls f(first_row, count) over [0, rows) in chunks of a power of two rows, largest first
// (9 = 8 + 1, 12 = 8 + 4) and at most `largest` (a power of two), except that a remainder past
// 1.5x its power of two (7, 13-15) is one chunk, rounded up by the caller's kernel choice,
// where that stays within `largest`. Why: at these row counts the few-row kernels are bound by
// arithmetic (their time grows with BR: bench/RESULTS.md's autotuning tables), and a kernel of
// BR rows computes all BR, clamped copies included: 9 rows in a 16-row kernel wasted 7/16 of
// it. Each further chunk reads W again, mostly from the cache; past 1.5x that costs more than
// the rounding saves.
template <class F>
void for_row_chunks(int rows, F &&f, int largest = 1 << 30) {
  for (int first = 0; first < rows;) {
    const int left = rows - first;
    int count = std::min(int(std::bit_floor(unsigned(left))), largest);
    if (count < largest && 2 * left > 3 * count) count = left;
    f(first, count);
    first += count;
  }
}

// The few-row launches of one product over `rows` rows of x: cut as above on the CPU, one
// launch f(0, rows) on a GPU (or for the GPU a plan's recording stands for), whose few-row
// kernels are bound by reading W: there a clamped row costs little and a second launch would
// read W again.
template <class F>
void for_few_row_launches(const Library::Impl &im, int rows, F &&f, int largest = 1 << 30) {
  if (dispatches_for_cpu(im)) for_row_chunks(rows, f, largest);
  else f(0, rows);
}

}  // namespace kdsl::kernels::detail
