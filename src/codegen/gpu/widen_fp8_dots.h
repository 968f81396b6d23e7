// widen_fp8_dots.h - fp8 dots a target's fp8 tensor cores cannot take (or that it has none for): the operands widened to f16 (exactly) so that the f16 ones multiply them
#pragma once
#include "codegen/gpu/layout.h"
#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::gpu {

// After a layout plan: every dot of f8e4m3 operands into f32 that the plan left on FMAs (the
// target has no fp8 instruction: sm_80, sm_90, CDNA; or the dot is too small for sm_90a's
// warpgroups) gets casts of both operands to f16 in front of it, where the target has an f16
// instruction. Every E4M3 value is an f16 (3 of f16's 10 mantissa bits, exponents -9 .. 8
// inside f16's -24 .. 15), and products of f16s are exact in the f32 accumulator, so the dot
// computes the same sums, on tensor cores instead of FMAs. Its operands' loads are then not
// copied ahead (they feed a cast, not the dot). True when any dot was widened: the plan points
// at ops that moved, and must be made again (plan_gpu_kernel does).
bool widen_fp8_dots_left_on_fmas(ir::Function &fn, const TargetInfo &target, const LayoutPlan &plan);

}  // namespace kdsl::codegen::gpu
