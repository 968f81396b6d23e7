// reduce_test.cpp - sum, max, min, argmax, argmin over each axis of a 2-D block and over all of it
#include <kdsl/kdsl.h>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace reduce_test {

constexpr int R = 16, C = 32;

// The identity of max (lowest) and of min (highest) for masked-off elements.
template <class T>
constexpr auto lowest() {
  if constexpr (is_float(T::dtype)) return -inf<T>();
  else return std::numeric_limits<storage_t<T>>::lowest();
}
template <class T>
constexpr auto highest() {
  if constexpr (is_float(T::dtype)) return inf<T>();
  else return std::numeric_limits<storage_t<T>>::max();
}

// One [R, C] tile of a rows x cols matrix (row-major), masked where it runs past the matrix.
// values: sum<0> [C], sum<1> [R], max<0>, max<1>, min<0>, min<1>, then sum, max, min of all.
// indices: argmax<0> [C], argmax<1> [R], argmin<0>, argmin<1>.
template <class T>
void reduce2d(Ptr<T> in, Ptr<T> values, Ptr<i32> indices, Scalar<i32> rows, Scalar<i32> cols) {
  auto r = expand_dims<1>(arange<R>());
  auto c = expand_dims<0>(arange<C>());
  auto valid = r < rows && c < cols;
  auto p = in + r * cols + c;
  auto x = load(p, valid, 0), hi = load(p, valid, lowest<T>()), lo = load(p, valid, highest<T>());
  auto rr = arange<R>();
  auto cc = arange<C>();
  auto mr = rr < rows;
  auto mc = cc < cols;
  store(values + cc, sum<0>(x), mc), store(values + C + rr, sum<1>(x), mr);
  store(values + (C + R) + cc, max<0>(hi), mc), store(values + (2 * C + R) + rr, max<1>(hi), mr);
  store(values + (2 * C + 2 * R) + cc, min<0>(lo), mc), store(values + (3 * C + 2 * R) + rr, min<1>(lo), mr);
  store(values + (3 * C + 3 * R), sum(x)), store(values + (3 * C + 3 * R + 1), max(hi)), store(values + (3 * C + 3 * R + 2), min(lo));
  store(indices + cc, argmax<0>(hi), mc), store(indices + C + rr, argmax<1>(hi), mr);
  store(indices + (C + R) + cc, argmin<0>(lo), mc), store(indices + (2 * C + R) + rr, argmin<1>(lo), mr);
}

template <class T>
void check_reductions(std::mt19937 &rng, int rows, int cols) {
  using S = storage_t<T>;
  constexpr bool fp = is_float(T::dtype);
  CAPTURE(rows);
  CAPTURE(cols);
  const size_t n = size_t(rows) * size_t(cols);
  // Half the elements come from a few values (ties for argmax / argmin: the first index
  // wins), half from the whole range (sums wrap for integers).
  auto in = fp ? random_values<T>(rng, n, -4, 4) : random_full_range<T>(rng, n);
  auto few = fp ? random_values<T>(rng, n, -3, 3) : random_values<T>(rng, n, 0, 3);
  for (size_t i = 0; i < n; i += 2) {
    if constexpr (fp) in[i] = to_storage<T>(std::round(as_double(few[i])));
    else in[i] = few[i] < 2 ? S(std::numeric_limits<S>::lowest() + few[i]) : S(std::numeric_limits<S>::max() - (few[i] - 2));
  }
  std::vector<S> values(size_t(3 * C + 3 * R + 3), to_storage<T>(77));
  std::vector<int32_t> indices(size_t(2 * C + 2 * R), -1);
  compile<reduce2d<T>>(cpu())(grid(1), in.data(), values.data(), indices.data(), rows, cols);

  auto at = [&](int i, int j) { return in[size_t(i) * size_t(cols) + size_t(j)]; };
  // The reference of one reduction over `count` elements at(i), as (sum, |sum| scale, max, argmax, min, argmin).
  struct Reduced {
    double sum = 0, scale = 0, max = 0, min = 0;
    int argmax = 0, argmin = 0;
  };
  auto reduce = [&](int count, auto element) {
    Reduced out;
    uint64_t wrapped = 0;
    for (int i = 0; i < count; ++i) {
      S v = element(i);
      double d = as_double(v);
      out.sum += d, out.scale += std::fabs(d), wrapped += uint64_t(v);
      if (i == 0 || d > out.max) out.max = d, out.argmax = i;
      if (i == 0 || d < out.min) out.min = d, out.argmin = i;
    }
    out.sum = fp ? round_as<T>(out.sum) : as_double(S(wrapped));
    return out;
  };
  std::vector<Reduced> over_rows, over_cols;  // over_rows[j]: column j reduced over axis 0
  for (int j = 0; j < cols; ++j) over_rows.push_back(reduce(rows, [&](int i) { return at(i, j); }));
  for (int i = 0; i < rows; ++i) over_cols.push_back(reduce(cols, [&](int j) { return at(i, j); }));
  Reduced all = reduce(int(n), [&](int i) { return in[size_t(i)]; });

  // Float sums: one rounding to T after an f32 sum in any order.
  const double rtol = std::is_same_v<T, f32> ? 8 * epsilon<T>() : epsilon<T>();
  const double scale_factor = std::is_same_v<T, f32> ? 1 : 0x1p-10;
  auto check = [&](const char *what, int offset, const std::vector<Reduced> &ref, double Reduced::*field, bool sum) {
    expect_close_scaled(
        what, sum && fp ? rtol : 0, ref.size(), [&](size_t k) { return as_double(values[size_t(offset) + k]); },
        [&](size_t k) { return ref[k].*field; }, [](size_t) { return true; }, [&](size_t k) { return ref[k].scale * scale_factor; });
  };
  check("sum<0>", 0, over_rows, &Reduced::sum, true), check("sum<1>", C, over_cols, &Reduced::sum, true);
  check("max<0>", C + R, over_rows, &Reduced::max, false), check("max<1>", 2 * C + R, over_cols, &Reduced::max, false);
  check("min<0>", 2 * C + 2 * R, over_rows, &Reduced::min, false), check("min<1>", 3 * C + 2 * R, over_cols, &Reduced::min, false);
  check("sum of all", 3 * C + 3 * R, {all}, &Reduced::sum, true);
  check("max of all", 3 * C + 3 * R + 1, {all}, &Reduced::max, false);
  check("min of all", 3 * C + 3 * R + 2, {all}, &Reduced::min, false);
  auto check_index = [&](const char *what, int offset, const std::vector<Reduced> &ref, int Reduced::*field) {
    std::vector<int32_t> got(indices.begin() + offset, indices.begin() + offset + int(ref.size())), want;
    for (const Reduced &r : ref) want.push_back(r.*field);
    expect_equal(what, got, want);
  };
  check_index("argmax<0>", 0, over_rows, &Reduced::argmax), check_index("argmax<1>", C, over_cols, &Reduced::argmax);
  check_index("argmin<0>", C + R, over_rows, &Reduced::argmin), check_index("argmin<1>", 2 * C + R, over_cols, &Reduced::argmin);
  // Masked-off outputs keep their sentinel.
  CHECK(indices[size_t(C - 1)] == (cols < C ? -1 : over_rows[size_t(C - 1)].argmax));
}

}  // namespace reduce_test

TEST_CASE_TEMPLATE("codegen: reductions over each axis and over a whole block", T, f32, f16, bf16, i8, u8, i32) {
  KDSL_TEST_RNG(rng);
  reduce_test::check_reductions<T>(rng, reduce_test::R, reduce_test::C);          // the whole tile
  reduce_test::check_reductions<T>(rng, reduce_test::R - 3, reduce_test::C - 5);  // ragged: masked rows and columns
}
