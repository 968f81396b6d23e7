// widen_fp8_dots.h - fp8 dots on GPUs without fp8 tensor cores: the operands widened to f16 (exactly) so that the f16 ones multiply them
#pragma once
#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::gpu {

// Every dot of f8e4m3 operands into f32, on a target with no matrix instruction for f8e4m3
// but one for f16 into f32 (sm_80, sm_90, CDNA), gets casts of both operands to f16 in front
// of it. Every E4M3 value is an f16 (3 of f16's 10 mantissa bits, exponents -9 .. 8 inside
// f16's -24 .. 15), and the products of f16s are exact in the f32 accumulator, so the dot
// computes the same sums it would on an fp8 instruction, on tensor cores instead of FMAs.
// The operands' loads are then not copied ahead by cp.async (they feed a cast, not the dot).
void widen_fp8_dots(ir::Function &fn, const TargetInfo &target);

}  // namespace kdsl::codegen::gpu
