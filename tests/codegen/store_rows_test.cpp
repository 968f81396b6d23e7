// store_rows_test.cpp - the host's stores row by row: consecutive rows as vector stores, masked rows cut at ragged edges, strided and clamped pointers element by element
#include <doctest/doctest.h>
#include <kdsl/compile_for.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace store_rows_test {
using namespace kdsl;

// out[r * C * STRIDE + c * STRIDE] = (a . b)[r, c] for r < rows, c < cols (every element
// where !MASKED); the product lives in an array, as a tile's accumulator does. CLAMP reads
// the column through minimum(), which has no last-axis stride.
template <int R, int C, int K, int STRIDE, bool MASKED, bool CLAMP>
void store_tile(Ptr<const f32> a, Ptr<const f32> b, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> cols) {
  auto r = expand_dims<1>(arange<R>());
  auto c = expand_dims<0>(arange<C>());
  auto product = dot(load(a + r * K + expand_dims<0>(arange<K>())), load(b + expand_dims<1>(arange<K>()) * C + c));
  auto column = [&] {
    if constexpr (CLAMP) return minimum(c, cols - 1);
    else return c;
  }();
  auto at = out + (r * (C * STRIDE) + column * STRIDE);
  if constexpr (MASKED) store(at, product, r < rows && c < cols);
  else store(at, product);
}

template <int R, int C, int K, int STRIDE, bool MASKED, bool CLAMP>
void check(std::mt19937 &rng, int rows, int cols) {
  INFO(R, "x", C, " stride ", STRIDE, std::string(MASKED ? " masked" : ""), std::string(CLAMP ? " clamped" : ""), ", rows ", rows, ", cols ", cols);
  auto a = kdsl_test::random_values<f32>(rng, size_t(R) * K, -1, 1);
  auto b = kdsl_test::random_values<f32>(rng, size_t(K) * C, -1, 1);
  const float sentinel = -12345.0f;
  std::vector<float> out(static_cast<size_t>(R * C * STRIDE), sentinel), want(out.size(), sentinel);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      if (MASKED && (r >= rows || c >= cols)) continue;
      double s = 0;
      for (int k = 0; k < K; ++k) s += double(a[size_t(r * K + k)]) * double(b[size_t(k * C + c)]);
      const int column = CLAMP ? std::min(c, cols - 1) : c;
      want[size_t(r * C * STRIDE + column * STRIDE)] = float(s);  // clamped: the last column written wins, as in order
    }
  compile<store_tile<R, C, K, STRIDE, MASKED, CLAMP>>(kdsl_test::cpu())(grid(1), a.data(), b.data(), out.data(), rows, cols);
  int bad = 0;
  for (size_t i = 0; i < out.size() && bad < 5; ++i) {
    const bool ok = want[i] == sentinel ? out[i] == sentinel : std::abs(out[i] - want[i]) <= 1e-5f;
    if (!ok) {
      ++bad;
      FAIL_CHECK("out[", i, "]: got ", out[i], ", want ", want[i]);
    }
  }
  CHECK(bad == 0);
}

}  // namespace store_rows_test

using namespace store_rows_test;

TEST_CASE("host stores by rows: vector rows, masks cutting ragged edges, strided and clamped pointers, against a float64 reference") {
  KDSL_TEST_RNG(rng);
  check<8, 32, 8, 1, false, false>(rng, 8, 32);   // every row one vector store
  check<8, 32, 8, 1, true, false>(rng, 8, 32);    // masked, every row whole
  check<8, 32, 8, 1, true, false>(rng, 5, 32);    // rows past the edge
  check<8, 32, 8, 1, true, false>(rng, 8, 19);    // every row cut
  check<8, 32, 8, 1, true, false>(rng, 3, 7);     // both
  check<8, 32, 8, 1, true, false>(rng, 0, 32);    // nothing stored
  check<6, 12, 4, 2, true, false>(rng, 4, 9);     // stride 2: element by element
  check<6, 12, 4, 2, false, false>(rng, 6, 12);
  check<4, 16, 4, 1, true, true>(rng, 4, 11);     // clamped columns: element by element
}
