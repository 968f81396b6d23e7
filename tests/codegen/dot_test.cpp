// dot_test.cpp - dot for f32, f16 and bf16 (f32 accumulation) and i8 (i32 accumulation) at several tile shapes
#include <kdsl/kdsl.h>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace dot_test {

// C[M, N] = A[M, K] @ B[K, N], one BM x BN tile per program, a run-time loop over K.
template <class T, class A, int BM, int BN, int BK>
void matmul(Ptr<T> a, Ptr<T> b, Ptr<A> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto row = expand_dims<1>(program_id(0) * BM + arange<BM>());
  auto col = expand_dims<0>(program_id(1) * BN + arange<BN>());
  auto rk = arange<BK>();
  auto acc = for_range(0, K, BK, zeros<A, BM, BN>(), [&](auto k, auto acc) {
    auto ka = expand_dims<0>(k + rk);
    auto kb = expand_dims<1>(k + rk);
    auto ta = load(a + row * K + ka, row < M && ka < K, 0);
    auto tb = load(b + kb * N + col, kb < K && col < N, 0);
    return dot(ta, tb, acc);
  });
  store(c + row * N + col, acc, row < M && col < N);
}

// The two-argument form on one tile, with b given transposed ([N, K] in memory).
template <class T, class A, int M, int N, int K>
void dot_transposed(Ptr<T> a, Ptr<T> bt, Ptr<A> c) {
  auto m = expand_dims<1>(arange<M>());
  auto n = expand_dims<0>(arange<N>());
  auto k0 = expand_dims<0>(arange<K>());
  auto ta = load(a + m * K + k0);
  auto tbt = load(bt + expand_dims<1>(arange<N>()) * K + k0);
  store(c + m * N + n, dot(ta, trans(tbt)) + 1);
}

template <class T, class A>
void check_product(const char *what, const HostArray<storage_t<T>> &a, const HostArray<storage_t<T>> &b, const HostArray<storage_t<A>> &c,
                   int M, int N, int K, bool b_transposed, double offset) {
  std::vector<double> ref(size_t(M) * size_t(N)), scale(ref.size());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        double p = as_double(a[size_t(i * K + k)]) * as_double(b_transposed ? b[size_t(j * K + k)] : b[size_t(k * N + j)]);
        s += p, magnitude += std::fabs(p);
      }
      ref[size_t(i * N + j)] = s + offset, scale[size_t(i * N + j)] = magnitude;
    }
  // f32 accumulation of K products (exact for f16 / bf16 inputs) in any order; i8: exact.
  double rtol = std::is_same_v<A, i32> ? 0 : K * 0x1p-24;
  expect_close_scaled(
      what, rtol, ref.size(), [&](size_t i) { return as_double(c[i]); }, [&](size_t i) { return ref[i]; }, [](size_t) { return true; },
      [&](size_t i) { return scale[i]; });
}

template <class T>
HostArray<storage_t<T>> operands(std::mt19937 &rng, size_t n) {
  return std::is_same_v<T, i8> || std::is_same_v<T, u8> ? random_full_range<T>(rng, n) : random_values<T>(rng, n, -2, 2);
}

template <class T, class A, int BM, int BN, int BK>
void check_matmul(std::mt19937 &rng, int M, int N, int K) {
  INFO("tiles ", BM, "x", BN, "x", BK, ", sizes M=", M, " N=", N, " K=", K);
  auto a = operands<T>(rng, size_t(M) * size_t(K));
  auto b = operands<T>(rng, size_t(K) * size_t(N));
  HostArray<storage_t<A>> c(size_t(M) * size_t(N));
  compile<matmul<T, A, BM, BN, BK>>(cpu())(grid(cdiv(M, BM), cdiv(N, BN)), a.data(), b.data(), c.data(), M, N, K);
  check_product<T, A>("matmul", a, b, c, M, N, K, false, 0);
}

// Aligned sizes (a multiple of every tile extent) and ragged ones in every dimension.
template <class T, class A, int BM, int BN, int BK>
void check_matmul_sizes(std::mt19937 &rng) {
  check_matmul<T, A, BM, BN, BK>(rng, 2 * BM, 3 * BN, 4 * BK);
  check_matmul<T, A, BM, BN, BK>(rng, 2 * BM + 3, BN + 5, 3 * BK + 1);
}

template <class T, class A, int M, int N, int K>
void check_dot_transposed(std::mt19937 &rng) {
  INFO("M=", M, " N=", N, " K=", K);
  auto a = operands<T>(rng, size_t(M * K));
  auto bt = operands<T>(rng, size_t(N * K));
  HostArray<storage_t<A>> c(size_t(M * N));
  compile<dot_transposed<T, A, M, N, K>>(cpu())(grid(1), a.data(), bt.data(), c.data());
  check_product<T, A>("dot(a, trans(bt)) + 1", a, bt, c, M, N, K, true, 1);
}

}  // namespace dot_test

TEST_CASE("codegen: dot of f32 blocks") {
  KDSL_TEST_RNG(rng);
  dot_test::check_matmul_sizes<f32, f32, 16, 16, 16>(rng);
  dot_test::check_matmul_sizes<f32, f32, 32, 8, 4>(rng);
  dot_test::check_dot_transposed<f32, f32, 8, 24, 16>(rng);
  // The host computes dot in register tiles of rows by vectors of columns (dot_tile.h): rows
  // left over after the whole strips, panels and a last vector narrower than the register,
  // and one-column and one-row products (dot_tile_test.cpp has more ragged tiles).
  dot_test::check_dot_transposed<f32, f32, 15, 20, 3>(rng);
  dot_test::check_dot_transposed<f32, f32, 13, 64, 5>(rng);
  dot_test::check_dot_transposed<f32, f32, 9, 1, 7>(rng);
  dot_test::check_dot_transposed<f32, f32, 1, 33, 2>(rng);
}

TEST_CASE("codegen: dot of f16 and bf16 blocks accumulates in f32") {
  KDSL_TEST_RNG(rng);
  dot_test::check_matmul_sizes<f16, f32, 16, 32, 16>(rng);
  dot_test::check_matmul_sizes<f16, f32, 64, 16, 32>(rng);
  dot_test::check_matmul_sizes<bf16, f32, 32, 16, 16>(rng);
  dot_test::check_dot_transposed<bf16, f32, 16, 8, 32>(rng);
}

TEST_CASE("codegen: dot of i8 blocks accumulates in i32") {
  KDSL_TEST_RNG(rng);
  dot_test::check_matmul_sizes<i8, i32, 16, 16, 16>(rng);
  dot_test::check_matmul_sizes<i8, i32, 32, 32, 8>(rng);
  dot_test::check_dot_transposed<i8, i32, 16, 16, 64>(rng);
}

TEST_CASE("codegen: dot of u8 blocks accumulates in i32 (zero-extended, wrapping)") {
  KDSL_TEST_RNG(rng);
  dot_test::check_matmul_sizes<u8, i32, 16, 16, 16>(rng);
  dot_test::check_dot_transposed<u8, i32, 16, 16, 64>(rng);
}
