// scan_gather_kernels.h - the 2-D scan and gather kernels that both the host tests and the SIMT emulator tests run
#pragma once
#include <kdsl/kdsl.h>

namespace scan_gather_kernels {
using namespace kdsl;

// One program per R rows of a [rows, cols] matrix (cols <= C); padding holds 0.
template <class T, int R, int C, int AXIS, bool REVERSE>
void scan_2d(Ptr<T> x, Ptr<T> sums, Ptr<T> maxes, Ptr<T> mins, Scalar<i32> rows, Scalar<i32> cols) {
  auto r = program_id(0) * R + expand_dims<1>(arange<R>());
  auto c = expand_dims<0>(arange<C>());
  auto m = r < rows && c < cols;
  auto at = r * cols + c;
  auto v = load(x + at, m, 0);
  store(sums + at, cumsum(v, AXIS, REVERSE), m);
  store(maxes + at, cummax(v, AXIS, REVERSE), m);
  store(mins + at, cummin(v, AXIS, REVERSE), m);
}

// gather along axis 0 of a [R, C] tile with a [K, C] index, and along axis 1 with [R, K].
template <class T, int R, int C, int K>
void gather_2d(Ptr<T> src, Ptr<i32> rows_index, Ptr<i32> cols_index, Ptr<T> by_rows, Ptr<T> by_cols) {
  auto r = expand_dims<1>(arange<R>());
  auto c = expand_dims<0>(arange<C>());
  auto s = load(src + r * C + c);
  auto kr = expand_dims<1>(arange<K>());
  auto kc = expand_dims<0>(arange<K>());
  store(by_rows + kr * C + c, gather(s, load(rows_index + kr * C + c), 0));
  store(by_cols + r * K + kc, gather(s, load(cols_index + r * K + kc), 1));
}

}  // namespace scan_gather_kernels
