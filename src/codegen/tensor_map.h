// tensor_map.h - a TMA tensor map a compiled kernel takes after its arguments: which arguments describe the tensor, and the box and swizzle it is read in
#pragma once
#include <cstdint>

#include <kdsl/dtype.h>

namespace kdsl::codegen {

// An extent or stride in elements: the integer kernel argument `param` (its slot's value) or,
// where param < 0, the constant `value` (the kernel's trace fixed it).
struct TensorMapField {
  int param = -1;
  int64_t value = 0;
  bool operator==(const TensorMapField &) const = default;
};

// One tensor map (CUtensorMap, 128 bytes, 64-byte aligned) of a kernel compiled for sm_90a
// with tile loads copied by TMA (gpu/lower_pipeline.cpp). The kernel's parameters are its
// arguments, then one `.param .align 64 .b8 [128]` grid constant per map, in the order of
// CompiledObject::tensor_maps; the launcher encodes each from its arguments' values:
// a 2-D tiled map of `elem` over [rows][cols] (cols contiguous, rows `row_stride` elements
// apart) starting at argument `base`, copied `box_rows` x `box_cols` at a time into shared
// memory with the `swizzle_bytes`-byte swizzle (128, 64 or 32: box_cols * elem bytes; 0: none),
// reads outside the tensor filled with zeros. A 3-D map (rank 3, a TensorDescriptor3D's) has
// `planes` of those tensors, plane_stride elements apart, and a box one plane deep.
// `written`: TMA stores write through the map
// (tile stores) rather than copies reading it, which decides the stand-in an empty tensor gets
// (tensor_map_limits.h).
struct TensorMapSpec {
  int base = -1;
  TensorMapField rows, cols, row_stride;
  DType elem = DType::F16;
  int box_rows = 0, box_cols = 0;
  int swizzle_bytes = 0;
  bool written = false;
  int rank = 2;
  TensorMapField planes{-1, 1}, plane_stride{-1, 0};  // rank 3 only
  bool operator==(const TensorMapSpec &) const = default;
};

}  // namespace kdsl::codegen
