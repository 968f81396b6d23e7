// library_gpu_decode.h - the tile a GPU's decode product takes over the scaled block formats (matvec_quantized_wide)
#pragma once

namespace kdsl::kernels::detail {

// kGpuQuantRows neighbouring rows of W by kGpuQuantBlocks 32-value blocks (512 values) a step,
// as the bf16 decode's 4 x 512 (library_dense.h's kGpuDecode); kdsl-bench-cuda's Q8_0 and
// Q4_0 decode rows compare the tiles.
inline constexpr int kGpuQuantRows = 4, kGpuQuantBlocks = 16;

}  // namespace kdsl::kernels::detail
