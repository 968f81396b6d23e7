// plan_pipelining.h - picks the loads in for_range bodies to copy into shared memory with cp.async, num_stages - 1 iterations ahead
#pragma once
#include "codegen/gpu/layout.h"
#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::gpu {

// Assumes `plan` from assign_layouts. Lists in plan.pipelined each load that
//  - sits at the top level of a for_range body and whose tile is read only as the A or B
//    operand of a dot the plan put on a matrix instruction, in the same body, in the
//    orientation the dot stages it in (A always; B as trans(x) of a load; B [k][n] where the
//    instruction reads it as stored, staged_tile.h: b_as_stored);
//  - moves 16 bytes per access (plan vector width: contiguous, aligned, mask constant over
//    the group), with `other` 0 where masked (cp.async zero-fills the masked groups);
//  - has pointers and mask that are index arithmetic of the loop's induction variable and
//    values from outside the loop, so they can be computed for a later iteration.
// Only where the target has cp.async and num_stages >= 2; sets plan.num_stages.
// A TileLoad (descriptor tile) is taken where the target copies tiles by TMA (tensor_copy),
// the dot reads by descriptor and the tile fits one (tensor_copy_fits); its base, extents and
// stride are the kernel's arguments or constants (plan_gpu_kernel expands the others first).
void plan_pipelining(const ir::Function &fn, const TargetInfo &target, int num_stages, LayoutPlan &plan);

// Whether TMA can copy a tile of this type as the swizzled tile a descriptor operand is staged
// in: at most 256 rows (a box's limit), rows whose bytes are a multiple of 32 (the narrowest
// swizzle), each box one swizzle slab wide.
bool tensor_copy_fits(const ir::Type &tile);

}  // namespace kdsl::codegen::gpu
