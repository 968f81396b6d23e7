// tensor_map_limits.h - what TMA (cuTensorMapEncodeTiled) accepts of a 2-D tensor map's launch values, for the CUDA launcher and the SIMT emulator alike
#pragma once
#include <cstdint>

namespace kdsl::codegen {

constexpr int64_t kTensorMapMaxExtent = int64_t(1) << 32;       // globalDim: at most 2^32
constexpr int64_t kTensorMapMaxStrideBytes = int64_t(1) << 40;  // globalStrides: below 2^40

// The tensor's first element: 16-byte aligned.
inline bool tensor_map_address_ok(uint64_t address) { return address % 16 == 0; }
// Rows or columns: in [0, 2^32].
inline bool tensor_map_extent_ok(int64_t extent) { return extent >= 0 && extent <= kTensorMapMaxExtent; }

// TMA cannot describe a tensor with no rows or no columns (its extents start at 1), yet a
// kernel may take one (a matmul with K = 0 reads no tile of A or B, but its maps are passed
// all the same). Such a map is encoded over a 1 x 1 stand-in of kTensorMapStandInBytes (16:
// one aligned row of any element type): for a map that is read, zeros, so every tile read
// through it is zeros, as from the empty tensor; for a map that is written, bytes of its own,
// so its stores land there and in no tensor of the user's. Each launcher (the CUDA device,
// the SIMT emulator) keeps one of each.
inline bool tensor_map_empty(int64_t rows, int64_t cols) { return rows == 0 || cols == 0; }
constexpr int64_t kTensorMapStandInBytes = 16;
// Elements between rows, each `element_bytes`: a positive multiple of 16 bytes below 2^40.
inline bool tensor_map_stride_fits(int64_t row_stride, int element_bytes) { return row_stride >= 1 && row_stride < kTensorMapMaxStrideBytes / element_bytes; }
inline bool tensor_map_stride_ok(int64_t row_stride, int element_bytes) {
  return tensor_map_stride_fits(row_stride, element_bytes) && row_stride * element_bytes % 16 == 0;
}

}  // namespace kdsl::codegen
