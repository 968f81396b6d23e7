// library_gpu_decode.h - the tile a GPU's decode product takes over the scaled block formats (matvec_quantized_wide)
#pragma once

namespace kdsl::kernels::detail {

// kGpuQuantRows neighbouring rows of W by kGpuQuantBlocks 32-value blocks (1024 values) a
// step. On an H200 this tile read Q8_0 and Q4_0 [14336 x 4096] faster than 4 x 16 (1290 and
// 736 GB/s against 1036 and 397, with integer-to-float conversions; bench/RESULTS.md,
// 2026-12-04, kdsl-bench-cuda's quantized decode rows).
inline constexpr int kGpuQuantRows = 4, kGpuQuantBlocks = 32;

}  // namespace kdsl::kernels::detail
