// fp8_conversions.h - FP8 E4M3 <-> f32 as LLVM IR integer operations, the same on every backend (kdsl/formats/fp8.h is the host's reference)
#pragma once
#include <llvm/IR/IRBuilder.h>

namespace kdsl::codegen {

// The f32 an E4M3 byte (i8) holds: exact. Subnormals, signed zeros and the NaN (0x7F / 0xFF)
// included.
llvm::Value *emit_e4m3_to_f32(llvm::IRBuilder<> &b, llvm::Value *byte);

// An f32 rounded to the nearest E4M3 (ties to even), as an i8: magnitudes past 448 and
// infinities saturate to +-448 (cvt.rn.satfinite's rule), NaN becomes 0x7F.
llvm::Value *emit_f32_to_e4m3(llvm::IRBuilder<> &b, llvm::Value *x);

// The byte emit_e4m3_to_f32 widened to `v` (whose last step ORs the sign, (zext(byte) & 0x80)
// << 24, into the magnitude's bits); null when v is not its result.
llvm::Value *e4m3_byte_of_widened(llvm::Value *v);

}  // namespace kdsl::codegen
