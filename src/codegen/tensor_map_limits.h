// tensor_map_limits.h - what TMA (cuTensorMapEncodeTiled) accepts of a 2-D tensor map's launch values, for the CUDA launcher and the SIMT emulator alike
#pragma once
#include <cstdint>

namespace kdsl::codegen {

constexpr int64_t kTensorMapMaxExtent = int64_t(1) << 32;       // globalDim: at most 2^32
constexpr int64_t kTensorMapMaxStrideBytes = int64_t(1) << 40;  // globalStrides: below 2^40

// The tensor's first element: 16-byte aligned.
inline bool tensor_map_address_ok(uint64_t address) { return address % 16 == 0; }
// Rows or columns: in [1, 2^32] (an empty tensor cannot be described).
inline bool tensor_map_extent_ok(int64_t extent) { return extent >= 1 && extent <= kTensorMapMaxExtent; }
// Elements between rows, each `element_bytes`: a positive multiple of 16 bytes below 2^40.
inline bool tensor_map_stride_fits(int64_t row_stride, int element_bytes) { return row_stride >= 1 && row_stride < kTensorMapMaxStrideBytes / element_bytes; }
inline bool tensor_map_stride_ok(int64_t row_stride, int element_bytes) {
  return tensor_map_stride_fits(row_stride, element_bytes) && row_stride * element_bytes % 16 == 0;
}

}  // namespace kdsl::codegen
