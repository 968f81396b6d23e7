// library_gpu_decode.h - the tile a GPU's decode product takes over the scaled block formats (matvec_quantized_wide)
#pragma once

namespace kdsl::kernels::detail {

// kGpuQuantRows neighbouring rows of W by kGpuQuantBlocks 32-value blocks (1024 values) a
// step: on an H200 the fastest for Q8_0 and Q4_0 of the tiles kdsl-bench-cuda's quantized
// decode rows compare (bench/RESULTS.md, 2026-12-04).
inline constexpr int kGpuQuantRows = 4, kGpuQuantBlocks = 32;

}  // namespace kdsl::kernels::detail
