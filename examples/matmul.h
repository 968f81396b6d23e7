// matmul.h - tiled matrix product C = A @ B with dot over BM x BN tiles and a run-time K loop
#pragma once
#include <kdsl/kdsl.h>

namespace examples {
using namespace kdsl;

template <int BM, int BN, int BK>
void matmul(Ptr<const f16> a, Ptr<const f16> b, Ptr<f32> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto rm = program_id(0) * BM + arange<BM>();
  auto rn = program_id(1) * BN + arange<BN>();
  auto rk = arange<BK>();
  auto row = expand_dims<1>(rm);  // [BM, 1]
  auto col = expand_dims<0>(rn);  // [1, BN]
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    auto ka = expand_dims<0>(k + rk);  // [1, BK]
    auto kb = expand_dims<1>(k + rk);  // [BK, 1]
    auto ta = load(a + row * K + ka, row < M && ka < K, 0);
    auto tb = load(b + kb * N + col, kb < K && col < N, 0);
    return dot(ta, tb, acc);
  });
  store(c + row * N + col, acc, row < M && col < N);
}

}  // namespace examples
