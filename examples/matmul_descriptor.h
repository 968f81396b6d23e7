// matmul_descriptor.h - C = A @ B read a tile at a time through tensor descriptors (Triton's make_tensor_descriptor form): TMA copies them on sm_90a
#pragma once
#include <kdsl/kdsl.h>

namespace examples {
using namespace kdsl;

// A [M][K] and B [K][N] row-major; C [M][N] in Out. The descriptors make the ragged edges
// read zeros, so the loop needs no masks; only the store is masked.
template <class T, class Out, int BM, int BN, int BK>
void matmul_descriptor(Ptr<const T> a, Ptr<const T> b, Ptr<Out> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto da = make_tensor_descriptor(a, M, K, K);
  auto db = make_tensor_descriptor(b, K, N, N);
  auto m0 = program_id(0) * BM;
  auto n0 = program_id(1) * BN;
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    return dot(da.template load<BM, BK>(m0, k), db.template load<BK, BN>(k, n0), acc);
  });
  auto row = expand_dims<1>(m0 + arange<BM>());  // [BM, 1]
  auto col = expand_dims<0>(n0 + arange<BN>());  // [1, BN]
  store(c + row * N + col, cast<Out>(acc), row < M && col < N);
}

}  // namespace examples
