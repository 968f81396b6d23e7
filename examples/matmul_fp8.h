// matmul_fp8.h - C = scale * (A W^T) for fp8 e4m3 A [M][K] and W [N][K], accumulated in f32: Hopper's fp8 GEMM (torch._scaled_mm with per-tensor scales)
#pragma once
#include <kdsl/kdsl.h>

namespace examples {
using namespace kdsl;

// A and W both K-major (W a weight matrix by output row), the one layout fp8 tensor cores
// read: on sm_90a each tile is a TMA copy into the tiles wgmma m64nNk32 .e4m3 reads, and C goes
// out by a TMA store; GPUs without fp8 tensor cores multiply the operands widened to f16, which
// holds every E4M3 value, and the CPU in f32. `scale` is the product of A's and W's per-tensor
// scales (each tensor's values times its scale are what was quantized), applied once to the
// f32 accumulator. Ragged edges read zeros and are not written (the descriptors' rule).
template <class Out, int BM, int BN, int BK>
void matmul_fp8(Ptr<const f8e4m3> a, Ptr<const f8e4m3> w, Ptr<Out> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K, Scalar<f32> scale) {
  auto da = make_tensor_descriptor(a, M, K, K);
  auto dw = make_tensor_descriptor(w, N, K, K);
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    return dot(da.template load<BM, BK>(m0, k), trans(dw.template load<BN, BK>(n0, k)), acc);
  });
  make_tensor_descriptor(c, M, N, N).store(m0, n0, cast<Out>(acc * scale));
}

}  // namespace examples
