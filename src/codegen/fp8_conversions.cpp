// fp8_conversions.cpp - FP8 E4M3 <-> f32 in integer IR: no target has to have an fp8 instruction, and every target gets the same bits
#include "codegen/fp8_conversions.h"

#include <llvm/IR/PatternMatch.h>

namespace kdsl::codegen {

// Bit operations rather than a 256-entry table: they vectorize on the host and need no
// constant memory on a GPU. kdsl/formats/fp8.h has the same steps in C++.
llvm::Value *emit_e4m3_to_f32(llvm::IRBuilder<> &b, llvm::Value *byte) {
  llvm::Type *i32 = b.getInt32Ty(), *f32 = b.getFloatTy();
  llvm::Value *x = b.CreateZExt(byte, i32);
  llvm::Value *magnitude = b.CreateAnd(x, b.getInt32(0x7f));
  // Normal: the exponent rebiased 7 -> 127 and the mantissa widened, by one add of 120 << 23
  // to the magnitude moved up 20 bits.
  llvm::Value *normal = b.CreateBitCast(b.CreateAdd(b.CreateShl(magnitude, 20), b.getInt32(120 << 23)), f32);
  // Subnormal (exponent 0): mantissa * 2^-9, exact.
  llvm::Value *subnormal = b.CreateFMul(b.CreateUIToFP(magnitude, f32), llvm::ConstantFP::get(f32, 1.0 / 512.0));
  llvm::Value *value = b.CreateSelect(b.CreateICmpULT(magnitude, b.getInt32(8)), subnormal, normal);
  value = b.CreateSelect(b.CreateICmpEQ(magnitude, b.getInt32(0x7f)), llvm::ConstantFP::getNaN(f32), value);
  llvm::Value *sign = b.CreateShl(b.CreateAnd(x, b.getInt32(0x80)), 24);
  return b.CreateBitCast(b.CreateOr(b.CreateBitCast(value, i32), sign), f32);
}

llvm::Value *emit_f32_to_e4m3(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Type *i32 = b.getInt32Ty(), *f32 = b.getFloatTy();
  llvm::Value *bits = b.CreateBitCast(x, i32);
  llvm::Value *sign = b.CreateAnd(b.CreateLShr(bits, 24), b.getInt32(0x80));
  llvm::Value *magnitude = b.CreateAnd(bits, b.getInt32(0x7fffffff));
  // Below 2^-6 (the smallest normal): steps of 2^-9. Scaling by 2^9 is exact; adding 2^23
  // rounds to an integer (ties to even) in the low mantissa bits. 8 comes out as 0x08, the
  // smallest normal's code, which is right too.
  llvm::Value *scaled = b.CreateFAdd(b.CreateFMul(b.CreateBitCast(magnitude, f32), llvm::ConstantFP::get(f32, 512.0)), llvm::ConstantFP::get(f32, 8388608.0));
  llvm::Value *subnormal = b.CreateSub(b.CreateBitCast(scaled, i32), b.getInt32(0x4b000000));
  // Normal: keep 3 of the 23 mantissa bits, the 20 dropped rounded to nearest even; a carry
  // moves the exponent up, as it should. Then rebias 127 -> 7.
  llvm::Value *odd = b.CreateAnd(b.CreateLShr(magnitude, 20), b.getInt32(1));
  llvm::Value *rounded = b.CreateLShr(b.CreateAdd(magnitude, b.CreateAdd(odd, b.getInt32(0x7ffff))), 20);
  llvm::Value *normal = b.CreateSub(rounded, b.getInt32(120 << 3));
  llvm::Value *code = b.CreateSelect(b.CreateICmpULT(magnitude, b.getInt32(0x3c800000)), subnormal, normal);
  code = b.CreateSelect(b.CreateICmpUGE(magnitude, b.getInt32(0x43e00000)), b.getInt32(0x7e), code);  // >= 448, infinity: saturate
  code = b.CreateSelect(b.CreateICmpUGT(magnitude, b.getInt32(0x7f800000)), b.getInt32(0x7f), code);  // NaN
  return b.CreateTrunc(b.CreateOr(code, sign), b.getInt8Ty());
}

llvm::Value *e4m3_byte_of_widened(llvm::Value *v) {
  using namespace llvm::PatternMatch;
  llvm::Value *byte = nullptr;
  if (match(v, m_BitCast(m_c_Or(m_Value(), m_Shl(m_And(m_ZExt(m_Value(byte)), m_SpecificInt(0x80)), m_SpecificInt(24))))) && byte->getType()->isIntegerTy(8))
    return byte;
  return nullptr;
}

}  // namespace kdsl::codegen
