// element_math.cpp - vectorizable exp/exp2 and bf16 rounding in LLVM IR
#include "codegen/host/element_math.h"

#include <llvm/IR/Intrinsics.h>

namespace kdsl::codegen {
namespace {

llvm::Value *f32(llvm::IRBuilder<> &b, double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }

// min(max(x, lo), hi) with compares and selects (one instruction each on x86); NaN comes out
// as one of the bounds and is put back by the caller.
llvm::Value *clamp(llvm::IRBuilder<> &b, llvm::Value *x, double lo, double hi) {
  llvm::Value *upper = b.CreateSelect(b.CreateFCmpOLT(x, f32(b, hi)), x, f32(b, hi));
  return b.CreateSelect(b.CreateFCmpOGT(upper, f32(b, lo)), upper, f32(b, lo));
}

llvm::Value *horner(llvm::IRBuilder<> &b, llvm::Value *x, std::initializer_list<double> coefficients) {
  llvm::Value *acc = nullptr;
  for (double c : coefficients) acc = acc ? b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {acc, x, f32(b, c)}) : f32(b, c);
  return acc;
}

// value * 2^n for integer-valued float n in [-150, 128], in two steps so that subnormal
// results and n = 128 (overflow to inf) come out right.
llvm::Value *scale_by_power_of_two(llvm::IRBuilder<> &b, llvm::Value *value, llvm::Value *n) {
  llvm::Value *ni = b.CreateFPToSI(n, b.getInt32Ty());
  llvm::Value *half = b.CreateAShr(ni, 1);
  llvm::Value *rest = b.CreateSub(ni, half);
  auto power = [&](llvm::Value *e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, b.getInt32(127)), 23), b.getFloatTy());
  };
  return b.CreateFMul(b.CreateFMul(value, power(half)), power(rest));
}

}  // namespace

llvm::Value *emit_exp(llvm::IRBuilder<> &b, llvm::Value *x) {
  // Beyond these bounds the result is inf or 0; clamping keeps the reduction in range.
  llvm::Value *clamped = clamp(b, x, -104.0, 88.8);
  llvm::Value *n = b.CreateIntrinsic(llvm::Intrinsic::rint, {b.getFloatTy()}, {b.CreateFMul(clamped, f32(b, 1.44269504088896341))});
  // r = x - n ln2, with ln2 split in two so n * ln2_hi is exact.
  llvm::Value *r = b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {n, f32(b, -0.693359375), clamped});
  r = b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {n, f32(b, 2.12194440e-4), r});
  llvm::Value *r2 = b.CreateFMul(r, r);
  llvm::Value *p = horner(b, r, {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1});
  llvm::Value *e = b.CreateFAdd(b.CreateFAdd(b.CreateFMul(p, r2), r), f32(b, 1.0));
  llvm::Value *result = scale_by_power_of_two(b, e, n);
  llvm::Value *is_nan = b.CreateFCmpUNO(x, x);
  return b.CreateSelect(is_nan, x, result);
}

llvm::Value *emit_exp2(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *clamped = clamp(b, x, -150.0, 128.0);
  llvm::Value *n = b.CreateIntrinsic(llvm::Intrinsic::rint, {b.getFloatTy()}, {clamped});
  llvm::Value *f = b.CreateFSub(clamped, n);  // in [-0.5, 0.5]
  llvm::Value *p = horner(b, f, {1.535336188319500E-4, 1.339887440266574E-3, 9.618437357674640E-3, 5.550332471162809E-2,
                                 2.402264791363012E-1, 6.931472028550421E-1});
  llvm::Value *e = b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {p, f, f32(b, 1.0)});
  llvm::Value *result = scale_by_power_of_two(b, e, n);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

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
