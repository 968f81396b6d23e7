// matmul_persistent.h - C = A @ B by a persistent kernel: a fixed grid (one program per multiprocessor) walks the output tiles, reading and writing them through tensor descriptors, as Triton's persistent TMA matmul
#pragma once
#include <kdsl/kdsl.h>

namespace examples {
using namespace kdsl;

// A [M][K] and B [K][N] row-major; C [M][N] in Out. Launch it on fewer programs than tiles
// (persistent_grid below): program p takes tiles p, p + programs, p + 2 * programs, ... so a
// GPU keeps one program resident per multiprocessor instead of retiring and launching one
// per tile, and a tile's epilogue (its TMA store) overlaps the next tile's first loads.
// Tiles go in groups of GROUP_M rows of tiles, column by column within a group, so the
// programs running at once read the same few rows of A and columns of B (L2 reuse), as
// Triton's tutorials order them. The descriptors make every edge need no mask.
template <class T, class Out, int BM, int BN, int BK, int GROUP_M = 8>
void matmul_persistent(Ptr<const T> a, Ptr<const T> b, Ptr<Out> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto da = make_tensor_descriptor(a, M, K, K);
  auto db = make_tensor_descriptor(b, K, N, N);
  auto dc = make_tensor_descriptor(c, M, N, N);
  auto tiles_m = cdiv(M, BM), tiles_n = cdiv(N, BN);
  auto per_group = tiles_n * GROUP_M;  // tiles in a group of GROUP_M rows of tiles
  for_range(program_id(0), tiles_m * tiles_n, num_programs(0), [&](auto tile) {
    auto first_m = tile / per_group * GROUP_M;
    auto group_m = minimum(tiles_m - first_m, GROUP_M);  // the last group may be shorter
    auto in_group = tile % per_group;
    auto m0 = (first_m + in_group % group_m) * BM;
    auto n0 = in_group / group_m * BN;
    auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
      return dot(da.template load<BM, BK>(m0, k), db.template load<BK, BN>(k, n0), acc);
    });
    dc.store(m0, n0, cast<Out>(acc));
  });
}

// The grid a persistent matmul runs on: one program per multiprocessor of `dev` (worker thread
// on the CPU), or one per tile where there are fewer tiles.
inline Grid persistent_grid(const Device &dev, int64_t M, int64_t N, int BM, int BN) {
  return grid(std::max<int64_t>(1, std::min<int64_t>(dev.threads(), cdiv(M, BM) * cdiv(N, BN))));
}

}  // namespace examples
