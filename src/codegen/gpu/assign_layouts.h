// assign_layouts.h - gives every block value of a kernel a distributed layout: blocked, or a matrix instruction's accumulator layout
#pragma once
#include "codegen/gpu/layout.h"
#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::gpu {

// Assumes a verified function after the block-IR pipeline. Guarantees:
//  - every value of rank >= 1 gets a blocked layout over num_warps * warp_size threads, one
//    layout per shape, chosen so that consecutive lanes hold consecutive elements of the
//    last axis, each thread holding size_per_thread[last] of them: as many as fill the
//    target's widest global access for the narrowest element type this shape is loaded or
//    stored with;
//  - except: a dot that one of the target's matrix instructions computes (matching operand
//    and accumulator types, whole instruction tiles, enough for every warp) is listed in
//    plan.dot_instruction, and its result takes that instruction's accumulator layout (Mma),
//    as do the values that must share a layout with it (its accumulator operand, a loop's
//    carried value, an if's result), elementwise ops of Mma values, and the pointers and
//    masks of stores of Mma values with elements of 4 bytes or more. Where an op reads a
//    value held in another layout the lowering converts it through shared memory;
//  - every load, store and atomic gets the number of consecutive elements a thread moves at
//    once: more than 1 only where axis analysis proves the addresses contiguous, the first
//    one aligned to the whole access, and the mask constant over it.
LayoutPlan assign_layouts(const ir::Function &fn, const TargetInfo &target, int num_warps);

}  // namespace kdsl::codegen::gpu
