// matmul_descriptor.h - C = A @ B read a tile at a time through tensor descriptors (Triton's make_tensor_descriptor form): TMA copies them on sm_90a, and writes C
#pragma once
#include <kdsl/kdsl.h>

namespace examples {
using namespace kdsl;

// A [M][K] and B [K][N] row-major; C [M][N] in Out. The descriptors make the ragged edges
// read zeros and leave the elements past them unwritten, so neither the loop nor the store
// needs masks. On sm_90a the C tile goes out by one TMA store.
template <class T, class Out, int BM, int BN, int BK>
void matmul_descriptor(Ptr<const T> a, Ptr<const T> b, Ptr<Out> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto da = make_tensor_descriptor(a, M, K, K);
  auto db = make_tensor_descriptor(b, K, N, N);
  auto dc = make_tensor_descriptor(c, M, N, N);
  auto m0 = program_id(0) * BM;
  auto n0 = program_id(1) * BN;
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    return dot(da.template load<BM, BK>(m0, k), db.template load<BK, BN>(k, n0), acc);
  });
  dc.store(m0, n0, cast<Out>(acc));
}

}  // namespace examples
