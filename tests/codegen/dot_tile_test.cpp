// dot_tile_test.cpp - the host f32 dot's register tiles (dot_tile.h) and dots chained into one accumulator updated in place
#include <doctest/doctest.h>
#include <kdsl/kdsl.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "codegen/host/dot_tile.h"
#include "codegen/host/storage_plan.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace dot_tile_test {
using namespace kdsl;

// Each loop step makes PARTS dots into one accumulator, as the quantized prefill tiles do (one
// dot per part of a block): C[M, N] = sum over k of A[M, K] . B[K, N], with the k steps of
// KS columns cut into PARTS dots of KS / PARTS columns.
template <int M, int N, int KS, int PARTS>
void chained_dots(Ptr<const f32> a, Ptr<const f32> b, Ptr<f32> c, Scalar<i32> K) {
  constexpr int KP = KS / PARTS;
  auto rm = expand_dims<1>(arange<M>());
  auto rn = expand_dims<0>(arange<N>());
  auto rk = arange<KP>();
  auto acc = for_range(0, K, KS, zeros<f32, M, N>(), [&](auto k, auto acc) {
    for (int p = 0; p < PARTS; ++p) {
      auto ta = load(a + rm * K + expand_dims<0>(k + p * KP + rk));
      auto tb = load(b + expand_dims<1>(k + p * KP + rk) * N + rn);
      acc = dot(ta, tb, acc);
    }
    return acc;
  });
  store(c + rm * N + rn, acc);
}

// As chained_dots with two parts, but the first dot's result is also kept, so it cannot be
// updated in place: the step returns both.
template <int M, int N, int KP>
void chained_dots_kept(Ptr<const f32> a, Ptr<const f32> b, Ptr<f32> c, Ptr<f32> first, Scalar<i32> K) {
  auto rm = expand_dims<1>(arange<M>());
  auto rn = expand_dims<0>(arange<N>());
  auto rk = arange<KP>();
  auto [acc, kept] = for_range(0, K, 2 * KP, zeros<f32, M, N>(), zeros<f32, M, N>(), [&](auto k, auto acc, auto) {
    auto part = [&](int p) { return std::pair(load(a + rm * K + expand_dims<0>(k + p * KP + rk)), load(b + expand_dims<1>(k + p * KP + rk) * N + rn)); };
    auto [a0, b0] = part(0);
    auto [a1, b1] = part(1);
    auto mid = dot(a0, b0, acc);
    return std::tuple(dot(a1, b1, mid), mid);
  });
  store(c + rm * N + rn, acc);
  store(first + rm * N + rn, kept);
}

// C = A . B in double, the columns of A and rows of B from `k_end` on left out.
std::vector<double> reference(const std::vector<float> &a, const std::vector<float> &b, int M, int N, int K, int k_end) {
  std::vector<double> c(size_t(M) * size_t(N));
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < k_end; ++k) c[size_t(m * N + n)] += double(a[size_t(m * K + k)]) * double(b[size_t(k * N + n)]);
  return c;
}

void expect_product(const char *what, const std::vector<float> &got, const std::vector<double> &want, int K) {
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what, " element ", i);
    REQUIRE(std::fabs(double(got[i]) - want[i]) <= K * 4 * 0x1p-24 * 4);  // |a|, |b| <= 2: K products of at most 4
  }
}

std::vector<float> uniform(std::mt19937 &rng, size_t n) {
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(n);
  for (float &x : v) x = u(rng);
  return v;
}

template <int M, int N, int KS, int PARTS>
void check_chained(std::mt19937 &rng, int K) {
  INFO("M=", M, " N=", N, " step ", KS, " in ", PARTS, " parts, K=", K);
  auto a = uniform(rng, size_t(M * K)), b = uniform(rng, size_t(K * N));
  std::vector<float> c(size_t(M * N));
  compile<chained_dots<M, N, KS, PARTS>>(kdsl_test::cpu())(grid(1), a.data(), b.data(), c.data(), K);
  expect_product("chained dots", c, reference(a, b, M, N, K, K), K);
}

}  // namespace dot_tile_test

using kdsl::codegen::choose_dot_tile;
using kdsl::codegen::DotMachine;
using kdsl::codegen::DotTile;

TEST_CASE("codegen: the host dot's register tile fits the registers and keeps enough accumulators") {
  const DotMachine avx2{16, 8, 2, 2, 6}, avx512{32, 16, 2, 2, 6};
  for (const DotMachine &machine : {avx2, avx512})
    for (int64_t M : {1, 2, 3, 5, 7, 16, 64, 128, 131})
      for (int64_t N : {1, 7, 8, 20, 32, 33, 64, 100, 128, 256}) {
        INFO("registers ", machine.registers, " M=", M, " N=", N);
        const DotTile t = choose_dot_tile(M, N, machine);
        const int64_t chunks = (N + machine.lanes - 1) / machine.lanes;
        CHECK(t.rows >= 1);
        CHECK(t.rows <= M);
        CHECK(t.vectors >= 1);
        CHECK(t.vectors <= chunks);
        const int64_t b_registers = t.rows > 1 ? t.vectors : 0;  // a one-row tile's FMAs read B from memory
        CHECK(int64_t(t.rows) * t.vectors + b_registers + 1 <= machine.registers);  // accumulators, a row of B, a broadcast
        // Where C is big enough, the tile keeps enough chains in flight to cover the FMA's
        // latency (the model's latency less its cycle of slack) on every port.
        if (M >= 6 && chunks >= 2) CHECK(t.rows * t.vectors >= machine.fma_ports * (machine.fma_latency - 1));
      }
  // The prefill tiles' dots on AVX2 (128 rows of x by 64 or 32 columns of W): six rows by two
  // registers, the shape BLIS's AVX2 kernels use, where one row by all of N was the shape before.
  const DotTile wide = choose_dot_tile(128, 64, avx2), narrow = choose_dot_tile(128, 32, avx2);
  CHECK(wide.rows * wide.vectors == 12);
  CHECK(narrow.rows == 6);
  CHECK(narrow.vectors == 2);
  // A single row of C (decode attention's p . V, [1, 16] x [16, 64]): all 8 registers of it in
  // one tile, not two panels that each wait out the FMA latency.
  const DotTile one_row = choose_dot_tile(1, 64, avx2);
  CHECK(one_row.rows == 1);
  CHECK(one_row.vectors == 8);
}

// The byte dots' machines (int_dot_tile.cpp's byte_dot_machine): registers less vpmaddubsw's
// result, i16 adds beside each product, and on Zen a broadcast that issues on an FP pipe.
TEST_CASE("codegen: a byte dot's register tile counts the vector ALU its adds and broadcasts take") {
  DotMachine zen3{15, 8, 2, 2, 2};
  zen3.alu_ports = 4, zen3.alu_ops_per_product = 1, zen3.alu_ops_per_row = 1;
  DotMachine intel = zen3;
  intel.alu_ports = 3, intel.alu_ops_per_row = 0;
  DotMachine multiplies_only = zen3;
  multiplies_only.alu_ports = 0, multiplies_only.fma_ports = 1;
  // Counting multiplies and loads alone, 13 rows by one vector ties two rows by four and wins
  // as the taller: a broadcast a product, which on Zen costs an FP pipe each.
  const DotTile before = choose_dot_tile(128, 32, multiplies_only);
  CHECK(before.rows == 13);
  CHECK(before.vectors == 1);
  for (int64_t M : {16, 32, 64, 128}) {
    INFO("M=", M);
    // Zen 3: four vectors a broadcast, the most the registers hold beside 8 accumulators.
    const DotTile z = choose_dot_tile(M, 32, zen3);
    CHECK(z.rows == 2);
    CHECK(z.vectors == 4);
    // Intel: broadcasts are loads alone, the adds bound every tile alike, and of the tiles as
    // fast the fewest loads a product wins: 6 by 2 (8 loads for 12 products).
    const DotTile i = choose_dot_tile(M, 32, intel);
    CHECK(i.rows * i.vectors >= 9);
    CHECK(i.rows + i.vectors <= 8);
  }
  // The f32 machine, with no ALU ports modeled, keeps its choices: the test above checks them.
}

TEST_CASE("codegen: dots chained into one accumulator") {
  KDSL_TEST_RNG(rng);
  // Ragged register tiles: 13 rows (6 + 6 + 1) by 40 columns (5 registers: 2 + 2 + 1), and 7
  // rows by 33 columns (a last register of one lane).
  dot_tile_test::check_chained<13, 40, 16, 2>(rng, 48);
  dot_tile_test::check_chained<7, 33, 24, 3>(rng, 72);
  dot_tile_test::check_chained<128, 64, 64, 2>(rng, 128);
  dot_tile_test::check_chained<128, 32, 32, 1>(rng, 64);
}

TEST_CASE("codegen: a chain of dots is updated in place only where its links are used once") {
  using namespace kdsl;
  // The dots in the loop body that the storage plan writes into the carried accumulator.
  auto dots_in_place = [](const ir::Function &fn) {
    const codegen::StoragePlan plan = codegen::plan_storage(fn);
    int in_place = 0;
    for (const auto &op : fn.body.ops)
      for (const auto &region : op.regions)
        for (const auto &inner : region.ops)
          if (inner.kind == ir::OpKind::Dot) in_place += plan.write_into[size_t(inner.results[0])] != ir::kNoValue;
    return in_place;
  };
  CHECK(dots_in_place(kdsl_test::traced<dot_tile_test::chained_dots<16, 16, 32, 4>>()) == 4);  // every dot of the step
  CHECK(dots_in_place(kdsl_test::traced<dot_tile_test::chained_dots_kept<16, 16, 16>>()) == 0);  // the first dot's result is yielded too

  KDSL_TEST_RNG(rng);
  constexpr int M = 16, N = 16, KP = 16, K = 64;
  auto a = dot_tile_test::uniform(rng, size_t(M * K)), b = dot_tile_test::uniform(rng, size_t(K * N));
  std::vector<float> c(size_t(M * N)), first(size_t(M * N));
  kdsl::compile<dot_tile_test::chained_dots_kept<M, N, KP>>(kdsl_test::cpu())(kdsl::grid(1), a.data(), b.data(), c.data(), first.data(), K);
  dot_tile_test::expect_product("chained dots, all of K", c, dot_tile_test::reference(a, b, M, N, K, K), K);
  dot_tile_test::expect_product("the last step's first dot", first, dot_tile_test::reference(a, b, M, N, K, K - KP), K);
}
