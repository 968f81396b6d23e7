// assign_layouts.h - gives every block value of a kernel a blocked distributed layout
#pragma once
#include "codegen/nvptx/layout.h"
#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::nvptx {

// Assumes a verified function after the block-IR pipeline. Guarantees:
//  - every value of rank >= 1 gets a blocked layout over num_warps * warp_size threads, one
//    layout per shape (so elementwise ops never move data between threads), chosen so that
//    consecutive lanes hold consecutive elements of the last axis, each thread holding
//    size_per_thread[last] of them: as many as fill the target's widest global access for
//    the narrowest element type this shape is loaded or stored with;
//  - every load, store and atomic gets the number of consecutive elements a thread moves at
//    once: more than 1 only where axis analysis proves the addresses contiguous, the first
//    one aligned to the whole access, and the mask constant over it.
LayoutPlan assign_layouts(const ir::Function &fn, const TargetInfo &target, int num_warps);

}  // namespace kdsl::codegen::nvptx
