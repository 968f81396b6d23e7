// scan_gather_test.cpp - cumsum / cummax / cummin (forward and reverse, 1-D and each axis of 2-D) and gather, against scalar references
#include <kdsl/kdsl.h>

#include "tests/scan_gather_kernels.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace scan_test {

// One program per BLOCK elements; past n the block holds `other` (7), which the scans see.
template <class T, int BLOCK, bool REVERSE>
void scan_1d(Ptr<T> x, Ptr<T> sums, Ptr<T> maxes, Ptr<T> mins, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto m = offs < n;
  auto v = load(x + offs, m, 7);
  store(sums + offs, cumsum(v, 0, REVERSE), m);
  store(maxes + offs, cummax(v, -1, REVERSE), m);  // -1: the last axis
  store(mins + offs, scan(v, ScanCombine::Min, 0, REVERSE), m);
}

using scan_gather_kernels::scan_2d;

// a + b as T adds: f32 (also for f16, which accumulates in f32), integers wrapping.
template <class T>
double sum_as(double a, double b) {
  if constexpr (is_float(T::dtype)) return double(float(a + b));
  else return double(storage_t<T>(uint64_t(int64_t(a)) + uint64_t(int64_t(b))));
}

// The scans of one padded block (row-major, extents dims) along axis, as the kernels define them.
template <class T>
std::vector<double> reference_scan(const std::vector<double> &block, std::array<int, 2> dims, int axis, bool reverse, ScanCombine how) {
  std::vector<double> out(block.size());
  const int n = dims[size_t(axis)], other = dims[size_t(1 - axis)];
  for (int o = 0; o < other; ++o) {
    double acc = 0;
    for (int step = 0; step < n; ++step) {
      int i = reverse ? n - 1 - step : step;
      size_t at = axis == 1 ? size_t(o) * size_t(n) + size_t(i) : size_t(i) * size_t(other) + size_t(o);
      double x = block[at];
      if (step == 0) acc = x;
      else if (how == ScanCombine::Sum) acc = sum_as<T>(acc, x);
      else if (how == ScanCombine::Max) acc = std::max(acc, x);
      else acc = std::min(acc, x);
      out[at] = acc;
    }
  }
  return out;
}

template <class T, int BLOCK, bool REVERSE>
void check_scan_1d(std::mt19937 &rng, int n) {
  using S = storage_t<T>;
  CAPTURE(n);
  CAPTURE(BLOCK);
  CAPTURE(REVERSE);
  auto x = random_values<T>(rng, size_t(n), -20, 20);
  HostArray<S> sums{size_t(n)}, maxes{size_t(n)}, mins{size_t(n)};
  compile<scan_1d<T, BLOCK, REVERSE>>(cpu())(grid(cdiv(n, BLOCK)), x.data(), sums.data(), maxes.data(), mins.data(), n);
  for (int p = 0; p * BLOCK < n; ++p) {
    std::vector<double> block(BLOCK);
    for (int i = 0; i < BLOCK; ++i) block[size_t(i)] = p * BLOCK + i < n ? as_double(x[size_t(p * BLOCK + i)]) : 7;
    const HostArray<S> *outs[] = {&sums, &maxes, &mins};
    const ScanCombine hows[] = {ScanCombine::Sum, ScanCombine::Max, ScanCombine::Min};
    for (int k = 0; k < 3; ++k) {
      std::vector<double> want = reference_scan<T>(block, {1, BLOCK}, 1, REVERSE, hows[k]);
      for (int i = 0; i < BLOCK && p * BLOCK + i < n; ++i) {
        double got = as_double((*outs[k])[size_t(p * BLOCK + i)]);
        // f32 sums: the same sequential order, so the same rounding
        CHECK_MESSAGE(got == doctest::Approx(want[size_t(i)]).epsilon(1e-6), "scan ", k, " program ", p, " element ", i);
      }
    }
  }
}

template <class T, int R, int C, int AXIS, bool REVERSE>
void check_scan_2d(std::mt19937 &rng, int rows, int cols) {
  using S = storage_t<T>;
  CAPTURE(rows);
  CAPTURE(cols);
  CAPTURE(AXIS);
  CAPTURE(REVERSE);
  size_t n = size_t(rows) * size_t(cols);
  auto x = random_values<T>(rng, n, -20, 20);
  HostArray<S> sums(n), maxes(n), mins(n);
  compile<scan_2d<T, R, C, AXIS, REVERSE>>(cpu())(grid(cdiv(rows, R)), x.data(), sums.data(), maxes.data(), mins.data(), rows, cols);
  for (int p = 0; p * R < rows; ++p) {
    std::vector<double> block(size_t(R * C));
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) block[size_t(i * C + j)] = p * R + i < rows && j < cols ? as_double(x[size_t(p * R + i) * size_t(cols) + size_t(j)]) : 0;
    const HostArray<S> *outs[] = {&sums, &maxes, &mins};
    const ScanCombine hows[] = {ScanCombine::Sum, ScanCombine::Max, ScanCombine::Min};
    for (int k = 0; k < 3; ++k) {
      std::vector<double> want = reference_scan<T>(block, {R, C}, AXIS, REVERSE, hows[k]);
      for (int i = 0; i < R && p * R + i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
          double got = as_double((*outs[k])[size_t(p * R + i) * size_t(cols) + size_t(j)]);
          double w = want[size_t(i * C + j)];
          if (std::is_same_v<T, f16>) w = round_as<f16>(w);  // f16 sums accumulate in f32, each output rounded once
          CHECK_MESSAGE(got == doctest::Approx(w).epsilon(std::is_same_v<T, f16> ? 1e-3 : 1e-6), "scan ", k, " at ", p * R + i, ", ", j);
        }
    }
  }
}

// gather_2d: indices run from -2 to extent + 1, so some are out of range and read 0.
using scan_gather_kernels::gather_2d;

// A lookup table in registers: out[i] = table[codes[i]], u8 codes, masked ragged tail.
template <int BLOCK>
void lookup(Ptr<f32> table, Ptr<u8> codes, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto m = offs < n;
  auto t = load(table + arange<16>());
  store(out + offs, gather(t, load(codes + offs, m, 0), 0), m);
}

}  // namespace scan_test

using namespace scan_test;

TEST_CASE_TEMPLATE("frontend: cumsum, cummax and cummin of 1-D blocks, forward and reverse, at aligned and ragged sizes", T, f32, i32, u32, i64) {
  KDSL_TEST_RNG(rng);
  for (int n : {256, 300, 5}) {
    check_scan_1d<T, 64, false>(rng, n);
    check_scan_1d<T, 64, true>(rng, n);
    check_scan_1d<T, 1, false>(rng, n);
  }
}

TEST_CASE_TEMPLATE("frontend: scans along each axis of 2-D blocks, forward and reverse, with ragged rows and columns", T, f32, i32, f16) {
  KDSL_TEST_RNG(rng);
  check_scan_2d<T, 8, 16, 0, false>(rng, 19, 13);
  check_scan_2d<T, 8, 16, 1, false>(rng, 19, 13);
  check_scan_2d<T, 8, 16, 0, true>(rng, 16, 16);
  check_scan_2d<T, 8, 16, 1, true>(rng, 19, 16);
  check_scan_2d<T, 4, 32, 1, false>(rng, 4, 32);
}

TEST_CASE("frontend: cummax and cummin pass NaNs over as max and min do; a run of NaNs stays NaN") {
  std::vector<float> x{NAN, NAN, 1, NAN, -2, 5, NAN, 0};
  HostArray<float> sums(8), maxes(8), mins(8);
  compile<scan_1d<f32, 8, false>>(cpu())(grid(1), x.data(), sums.data(), maxes.data(), mins.data(), 8);
  std::vector<float> want_max{NAN, NAN, 1, 1, 1, 5, 5, 5}, want_min{NAN, NAN, 1, 1, -2, -2, -2, -2};
  for (size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(std::isnan(maxes[i]) == std::isnan(want_max[i]));
    if (!std::isnan(want_max[i])) CHECK(maxes[i] == want_max[i]);
    if (!std::isnan(want_min[i])) CHECK(mins[i] == want_min[i]);
    CHECK(std::isnan(sums[i]));  // a NaN poisons the sum from there on
  }
}

TEST_CASE_TEMPLATE("frontend: gather along each axis of a 2-D block; indices out of range read 0", T, f32, i32, f16) {
  KDSL_TEST_RNG(rng);
  using S = storage_t<T>;
  constexpr int R = 8, C = 16, K = 12;
  auto src = random_values<T>(rng, size_t(R) * C, -50, 50);
  std::uniform_int_distribution<int> row_pick(-2, R + 1), col_pick(-2, C + 1);
  std::vector<int32_t> rows_index(size_t(K) * C), cols_index(size_t(R) * K);
  for (auto &i : rows_index) i = row_pick(rng);
  for (auto &i : cols_index) i = col_pick(rng);
  HostArray<S> by_rows(size_t(K) * C), by_cols(size_t(R) * K);
  compile<gather_2d<T, R, C, K>>(cpu())(grid(1), src.data(), rows_index.data(), cols_index.data(), by_rows.data(), by_cols.data());
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < C; ++j) {
      int i = rows_index[size_t(k * C + j)];
      double want = i >= 0 && i < R ? as_double(src[size_t(i * C + j)]) : 0;
      CHECK_MESSAGE(as_double(by_rows[size_t(k * C + j)]) == want, "axis 0 at ", k, ", ", j, " index ", i);
    }
  for (int i = 0; i < R; ++i)
    for (int k = 0; k < K; ++k) {
      int j = cols_index[size_t(i * K + k)];
      double want = j >= 0 && j < C ? as_double(src[size_t(i * C + j)]) : 0;
      CHECK_MESSAGE(as_double(by_cols[size_t(i * K + k)]) == want, "axis 1 at ", i, ", ", k, " index ", j);
    }
}

TEST_CASE("frontend: gather as a table lookup with u8 codes (code 16 and up read 0)") {
  KDSL_TEST_RNG(rng);
  std::vector<float> table(16);
  for (auto &t : table) t = std::uniform_real_distribution<float>(-1, 1)(rng);
  for (int n : {512, 333}) {
    CAPTURE(n);
    std::vector<uint8_t> codes(n);
    for (auto &c : codes) c = uint8_t(std::uniform_int_distribution<int>(0, 20)(rng));
    HostArray<float> out(size_t(n), -99.0f);
    compile<lookup<128>>(cpu())(grid(cdiv(n, 128)), table.data(), codes.data(), out.data(), n);
    for (int i = 0; i < n; ++i) CHECK(out[size_t(i)] == (codes[size_t(i)] < 16 ? table[codes[size_t(i)]] : 0.0f));
  }
}

namespace scan_test {
template <int AXIS>
void scan_bad_axis(Ptr<f32> x) {
  store(x + arange<8>(), cumsum(load(x + arange<8>()), AXIS));
}
template <int AXIS>
void gather_bad_axis(Ptr<f32> x) {
  auto s = load(x + expand_dims<1>(arange<4>()) * 8 + expand_dims<0>(arange<8>()));
  auto i = zeros<i32, 4, 4>();
  store(x + expand_dims<1>(arange<4>()) * 8 + expand_dims<0>(arange<4>()), gather(s, i, AXIS));
}
}  // namespace scan_test

TEST_CASE("frontend: a scan or gather axis out of range, and gather extents that differ off the axis, are errors naming the shapes") {
  std::vector<float> x(64);
  CHECK_THROWS_WITH_AS(compile<scan_bad_axis<1>>(cpu())(grid(1), x.data()),
                       doctest::Contains("scan: axis 1 is out of range for a block of shape [8]"), Error);
  CHECK_THROWS_WITH_AS(compile<scan_bad_axis<-2>>(cpu())(grid(1), x.data()), doctest::Contains("axis -2 is out of range"), Error);
  // index [4, 4] against src [4, 8]: along axis 0 the columns differ; along axis 1 it is fine
  CHECK_THROWS_WITH_AS(compile<gather_bad_axis<0>>(cpu())(grid(1), x.data()),
                       doctest::Contains("index [4, 4] and src [4, 8] must have the same extent on every other axis (axis 1 differs)"), Error);
  CHECK_NOTHROW(compile<gather_bad_axis<1>>(cpu())(grid(1), x.data()));
}
