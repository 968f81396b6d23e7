// control_test.cpp - for_range with 0, 1 and 2 carried values, zero-trip and nested loops; if_ with and without results
#include <kdsl/kdsl.h>

#include <numeric>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace control_test {

constexpr int kBlock = 32;

// No carried values: the body only stores. out[i] = 10 i for i in range(lo, hi, step).
void strided_store(Ptr<i32> out, Scalar<i32> lo, Scalar<i32> hi, Scalar<i32> step) {
  for_range(lo, hi, step, [&](auto i) { store(out + i, i * 10); });
}

// One program per row. A block carried (row sums), a scalar carried (trip count) and two
// carried at once (running max and count of positives), then a C++ loop unrolled at trace time.
void row_stats(Ptr<f32> x, Ptr<f32> sums, Ptr<i32> trips, Ptr<f32> maxima, Ptr<i32> positives, Ptr<f32> unrolled, Scalar<i32> cols) {
  auto row = program_id(0);
  auto base = x + row * cols;
  auto total = for_range(0, cols, kBlock, zeros<f32, kBlock>(), [&](auto c, auto acc) {
    auto offs = c + arange<kBlock>();
    return acc + load(base + offs, offs < cols, 0);
  });
  store(sums + row, sum(total));
  store(trips + row, for_range(0, cols, kBlock, full<i32>(0), [](auto, auto k) { return k + 1; }));
  auto [mx, count] = for_range(0, cols, kBlock, full<f32, kBlock>(-inf<f32>()), full<i32>(0), [&](auto c, auto m, auto k) {
    auto offs = c + arange<kBlock>();
    auto v = load(base + offs, offs < cols, -inf<f32>());
    return std::make_tuple(maximum(m, v), k + sum(cast<i32>(v > 0)));
  });
  store(maxima + row, max(mx));
  store(positives + row, count);
  auto first = load(base + arange<4>(), arange<4>() < cols, 0);
  auto acc = zeros<f32, 4>();
  for (int k = 1; k <= 3; ++k) acc = acc + first * k;  // unrolled: 6 * first
  store(unrolled + row * 4 + arange<4>(), acc);
}

// Nested loops: a matrix total through an outer loop over rows, carrying a scalar, and an
// inner loop over column blocks, carrying a block; the inner loop also stores per row.
void nested(Ptr<f32> x, Ptr<f32> row_sums, Ptr<f32> total, Scalar<i32> rows, Scalar<i32> cols) {
  auto t = for_range(0, rows, 1, full<f32>(0.0), [&](auto r, auto acc) {
    auto s = for_range(0, cols, kBlock, zeros<f32, kBlock>(), [&](auto c, auto a) {
      auto offs = c + arange<kBlock>();
      return a + load(x + r * cols + offs, offs < cols, 0);
    });
    store(row_sums + r, sum(s));
    return acc + sum(s);
  });
  store(total, t);
}

// if_ without results (then only, and then/else), with one result and with two.
void branches(Ptr<i32> flags, Ptr<i32> out, Ptr<f32> values, Ptr<f32> picked, Scalar<i32> threshold) {
  auto p = program_id(0);
  auto even = p % 2 == 0;
  if_(even, [&] { store(flags + p, 1); });
  if_(p < threshold, [&] { store(out + p, p * 100); }, [&] { store(out + p, -p); });
  auto v = load(values + p * 4 + arange<4>());
  auto chosen = if_(even, [&] { return v * 2; }, [&] { return v - 1; });
  store(picked + p * 4 + arange<4>(), chosen);
  auto [lo, hi] = if_(p < threshold, [&] { return std::make_tuple(min(v), max(v)); }, [&] { return std::make_tuple(max(v), min(v)); });
  store(picked + 1000 + p * 2, lo);
  store(picked + 1001 + p * 2, hi);
  // A conditional inside a loop: odd iterations store.
  for_range(0, 6, 1, [&](auto i) { if_(i % 2 == 1, [&] { store(flags + 1000 + p * 6 + i, i); }); });
}

// Carried values that trade places each iteration (scalars: Fibonacci; blocks: a swap), so
// the next values alias the current ones.
void swaps(Ptr<i64> fib, Ptr<i32> blocks, Scalar<i32> n) {
  auto [a, b] = for_range(0, n, 1, full<i64>(0), full<i64>(1), [](auto, auto x, auto y) { return std::make_tuple(y, x + y); });
  store(fib, a), store(fib + 1, b);
  auto [p, q] = for_range(0, n, 1, arange<8>(), zeros<i32, 8>() + 100, [](auto, auto x, auto y) { return std::make_tuple(y, x); });
  store(blocks + arange<8>(), p), store(blocks + 8 + arange<8>(), q);
}

}  // namespace control_test

TEST_CASE("frontend: for_range without carried values, including zero-trip loops") {
  struct Case {
    int lo, hi, step;
  };
  for (Case c : {Case{2, 17, 3}, Case{0, 40, 1}, Case{5, 5, 1}, Case{7, 3, 1}, Case{0, 1, 4}, Case{-3, 30, 16}}) {
    INFO("range(", c.lo, ", ", c.hi, ", ", c.step, ")");
    std::vector<int32_t> buffer(50, -1), ref(50, -1);
    int32_t *out = buffer.data() + 5;  // room for the negative start
    for (int i = c.lo; i < c.hi; i += c.step) ref[size_t(i + 5)] = 10 * i;
    compile<control_test::strided_store>(cpu())(grid(1), out, c.lo, c.hi, c.step);
    expect_equal("stored", buffer, ref);
  }
}

TEST_CASE("frontend: for_range carries one block, one scalar or two values") {
  KDSL_TEST_RNG(rng);
  constexpr int kB = control_test::kBlock;
  for (int cols : {4 * kB, 3 * kB + 7, 5, 0}) {
    CAPTURE(cols);
    const int rows = 6;
    auto x = random_values<f32>(rng, size_t(rows * cols) + 4, -10, 10);
    std::vector<float> sums(rows), maxima(rows), unrolled(size_t(rows) * 4);
    std::vector<int32_t> trips(rows), positives(rows);
    compile<control_test::row_stats>(cpu())(grid(rows), x.data(), sums.data(), trips.data(), maxima.data(), positives.data(), unrolled.data(),
                                            cols);
    for (int r = 0; r < rows; ++r) {
      double s = 0, scale = 0, mx = -INFINITY;
      int pos = 0;
      for (int c = 0; c < cols; ++c) {
        double v = x[size_t(r * cols + c)];
        s += v, scale += std::fabs(v), mx = std::max(mx, v), pos += v > 0;
      }
      CHECK(close_enough(sums[size_t(r)], s, 1e-6, scale));
      CHECK(trips[size_t(r)] == int(cdiv(cols, kB)));
      CHECK(maxima[size_t(r)] == mx);
      CHECK(positives[size_t(r)] == pos);
      for (int k = 0; k < 4; ++k) CHECK(unrolled[size_t(r * 4 + k)] == (k < cols ? 6 * x[size_t(r * cols + k)] : 0.0f));
    }
  }
}

TEST_CASE("frontend: nested for_range") {
  KDSL_TEST_RNG(rng);
  for (auto [rows, cols] : {std::pair{5, 2 * control_test::kBlock}, std::pair{3, 45}, std::pair{0, 10}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    auto x = random_values<f32>(rng, size_t(rows * cols) + 1, -1, 1);
    std::vector<float> row_sums(size_t(rows) + 1, 42.0f);
    float total = -1;
    compile<control_test::nested>(cpu())(grid(1), x.data(), row_sums.data(), &total, rows, cols);
    double all = 0, scale = 0;
    for (int r = 0; r < rows; ++r) {
      double s = 0;
      for (int c = 0; c < cols; ++c) s += x[size_t(r * cols + c)], scale += std::fabs(x[size_t(r * cols + c)]);
      CHECK(close_enough(row_sums[size_t(r)], s, 1e-6, scale));
      all += s;
    }
    CHECK(row_sums[size_t(rows)] == 42.0f);
    CHECK(close_enough(total, all, 1e-6, scale));
  }
}

TEST_CASE("frontend: if_ with and without results") {
  KDSL_TEST_RNG(rng);
  const int programs = 9, threshold = 4;
  auto values = random_values<f32>(rng, programs * 4, -8, 8);
  std::vector<int32_t> flags(1000 + programs * 6, -1), out(programs, 7);
  std::vector<float> picked(1000 + programs * 2, 0.0f);
  compile<control_test::branches>(cpu())(grid(programs), flags.data(), out.data(), values.data(), picked.data(), threshold);
  for (int p = 0; p < programs; ++p) {
    CAPTURE(p);
    bool even = p % 2 == 0;
    CHECK(flags[size_t(p)] == (even ? 1 : -1));
    CHECK(out[size_t(p)] == (p < threshold ? p * 100 : -p));
    float lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < 4; ++k) {
      float v = values[size_t(p * 4 + k)];
      lo = std::min(lo, v), hi = std::max(hi, v);
      CHECK(picked[size_t(p * 4 + k)] == (even ? v * 2 : v - 1));
    }
    CHECK(picked[size_t(1000 + p * 2)] == (p < threshold ? lo : hi));
    CHECK(picked[size_t(1001 + p * 2)] == (p < threshold ? hi : lo));
    for (int i = 0; i < 6; ++i) CHECK(flags[size_t(1000 + p * 6 + i)] == (i % 2 ? i : -1));
  }
}

TEST_CASE("frontend: for_range carried values that swap places") {
  for (int n : {10, 7, 0}) {
    CAPTURE(n);
    int64_t fib[2] = {-1, -1}, a = 0, b = 1;
    std::vector<int32_t> blocks(16, -1), ref(16);
    compile<control_test::swaps>(cpu())(grid(1), fib, blocks.data(), n);
    for (int i = 0; i < n; ++i) b = a + b, a = b - a;
    CHECK(fib[0] == a);
    CHECK(fib[1] == b);
    for (int k = 0; k < 8; ++k) ref[size_t(k)] = n % 2 ? 100 : k, ref[size_t(8 + k)] = n % 2 ? k : 100;
    expect_equal("swapped blocks", blocks, ref);
  }
}
