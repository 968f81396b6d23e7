// axis_info.h - what is known of a value along its last (contiguous) axis, for vector accesses
#pragma once
#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace kdsl::codegen::gpu {

// For the last axis of a block (Triton's AxisInfo, one axis only), in aligned groups:
//   contiguity: each aligned group of this many elements is x, x+1, x+2, ... (pointers: in
//               elements of the pointee);
//   constancy:  each aligned group of this many elements holds one value;
//   divisibility: the first element of each contiguous group (every element when contiguity
//               is 1) is a multiple of this (pointers: the address, in bytes).
// All three are powers of two. Rank-0 values are constant over any group.
struct AxisInfo {
  int64_t contiguity = 1, constancy = 1, divisibility = 1;
};

// Analyses every value of `fn` from its arguments' specialization classes (Divisible16 on a
// pointer: 16-byte aligned; on an integer: a multiple of 16), constants, ranges and loop
// bounds. Unknown values get {1, 1, 1} (pointers: divisibility of their element size).
std::vector<AxisInfo> analyze_axis_info(const ir::Function &fn);

}  // namespace kdsl::codegen::gpu
