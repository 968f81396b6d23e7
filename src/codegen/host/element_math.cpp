// element_math.cpp - f16 widening and bf16 rounding in LLVM IR, vectorizable
#include "codegen/host/element_math.h"

#include <llvm/IR/Intrinsics.h>

namespace kdsl::codegen {
namespace {

llvm::Value *f32(llvm::IRBuilder<> &b, double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }

}  // namespace

llvm::Value *emit_f16_bits_to_f32(llvm::IRBuilder<> &b, llvm::Value *bits) {
  llvm::Value *h = b.CreateZExt(bits, b.getInt32Ty());
  llvm::Value *magnitude = b.CreateAnd(h, b.getInt32(0x7fff));
  llvm::Value *shifted = b.CreateShl(magnitude, 13);
  // Normal numbers: the exponent re-biased from 15 to 127. Zero and subnormals: the mantissa
  // times 2^-24, exact, with no subnormal arithmetic (slow on some x86 parts).
  llvm::Value *normal = b.CreateAdd(shifted, b.getInt32((127 - 15) << 23));
  llvm::Value *small = b.CreateBitCast(b.CreateFMul(b.CreateSIToFP(magnitude, b.getFloatTy()), f32(b, 0x1p-24)), b.getInt32Ty());
  llvm::Value *value = b.CreateSelect(b.CreateICmpULT(magnitude, b.getInt32(0x400)), small, normal);
  llvm::Value *inf_nan = b.CreateOr(shifted, b.getInt32(0x7f800000));
  value = b.CreateSelect(b.CreateICmpUGE(magnitude, b.getInt32(0x7c00)), inf_nan, value);
  llvm::Value *sign = b.CreateShl(b.CreateAnd(h, b.getInt32(0x8000)), 16);
  return b.CreateBitCast(b.CreateOr(value, sign), b.getFloatTy());
}

llvm::Value *emit_round_to_bf16(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *bits = b.CreateBitCast(x, b.getInt32Ty());
  llvm::Value *lsb = b.CreateAnd(b.CreateLShr(bits, 16), b.getInt32(1));
  llvm::Value *rounded = b.CreateAnd(b.CreateAdd(bits, b.CreateAdd(lsb, b.getInt32(0x7fff))), b.getInt32(int32_t(0xffff0000u)));
  llvm::Value *result = b.CreateBitCast(rounded, b.getFloatTy());
  // NaN stays NaN: one whose payload lies only in the low 16 bits would truncate to inf, so
  // it gets the quiet bit; other payloads (every bf16 NaN) are kept, so bitcasts round-trip.
  llvm::Value *low_payload_only = b.CreateICmpEQ(b.CreateAnd(bits, b.getInt32(0x007f0000)), b.getInt32(0));
  llvm::Value *nan = b.CreateBitCast(b.CreateSelect(low_payload_only, b.CreateOr(bits, b.getInt32(0x00400000)), bits), b.getFloatTy());
  return b.CreateSelect(b.CreateFCmpUNO(x, x), nan, result);
}

}  // namespace kdsl::codegen
