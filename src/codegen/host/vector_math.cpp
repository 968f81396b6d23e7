// vector_math.cpp - vectorizable f32 transcendental functions: Cody-Waite reduction and fitted polynomials in LLVM IR
#include "codegen/host/vector_math.h"

#include <llvm/IR/Intrinsics.h>

namespace kdsl::codegen {
namespace {

llvm::Value *f32(llvm::IRBuilder<> &b, double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }

llvm::Value *fma(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y, llvm::Value *z) {
  return b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {x, y, z});
}

// min(max(x, lo), hi) with compares and selects (one instruction each on x86); NaN comes out
// as one of the bounds and is put back by the caller.
llvm::Value *clamp(llvm::IRBuilder<> &b, llvm::Value *x, double lo, double hi) {
  llvm::Value *upper = b.CreateSelect(b.CreateFCmpOLT(x, f32(b, hi)), x, f32(b, hi));
  return b.CreateSelect(b.CreateFCmpOGT(upper, f32(b, lo)), upper, f32(b, lo));
}

// The polynomial with these coefficients, highest degree first, at x.
llvm::Value *horner(llvm::IRBuilder<> &b, llvm::Value *x, std::initializer_list<double> coefficients) {
  llvm::Value *acc = nullptr;
  for (double c : coefficients) acc = acc ? fma(b, acc, x, f32(b, c)) : f32(b, c);
  return acc;
}

llvm::Value *nan_passes(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *result) { return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result); }

llvm::Value *copysign(llvm::IRBuilder<> &b, llvm::Value *magnitude, llvm::Value *sign) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, magnitude, sign);
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

// log(x) = e ln2 + log(m) with m in [sqrt(1/2), sqrt(2)): the exponent e (as f32) and
// log(m) (Cephes' logf polynomial on f = m - 1, relative error below 1e-7). Subnormal x are
// scaled by 2^23 first. Meaningless for x <= 0, inf and NaN: the callers select those.
struct LogParts {
  llvm::Value *exponent;
  llvm::Value *log_mantissa_hi;  // f: log(m) = f + rest, f exact
  llvm::Value *log_mantissa_rest;
};

LogParts log_parts(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *subnormal = b.CreateFCmpOLT(x, f32(b, 0x1p-126));
  llvm::Value *scaled = b.CreateSelect(subnormal, b.CreateFMul(x, f32(b, 0x1p23)), x);
  llvm::Value *bits = b.CreateBitCast(scaled, b.getInt32Ty());
  // Subtracting sqrt(1/2)'s bits makes the exponent field count from sqrt(1/2), not 1.
  llvm::Value *e = b.CreateAShr(b.CreateSub(bits, b.getInt32(0x3f3504f3)), 23);
  llvm::Value *m = b.CreateBitCast(b.CreateSub(bits, b.CreateShl(e, 23)), b.getFloatTy());
  e = b.CreateSub(e, b.CreateSelect(subnormal, b.getInt32(23), b.getInt32(0)));
  llvm::Value *f = b.CreateFSub(m, f32(b, 1.0));  // exact (Sterbenz)
  llvm::Value *z = b.CreateFMul(f, f);
  llvm::Value *p = horner(b, f, {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
                                 -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1});
  llvm::Value *rest = fma(b, z, f32(b, -0.5), b.CreateFMul(b.CreateFMul(p, f), z));
  return {b.CreateSIToFP(e, b.getFloatTy()), f, rest};
}

// log and log2 outside (0, inf): log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN kept.
llvm::Value *log_edges(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *result) {
  auto *ty = b.getFloatTy();
  result = b.CreateSelect(b.CreateFCmpOEQ(x, llvm::ConstantFP::getInfinity(ty)), x, result);
  result = b.CreateSelect(b.CreateFCmpOLT(x, f32(b, 0.0)), llvm::ConstantFP::getNaN(ty), result);
  result = b.CreateSelect(b.CreateFCmpOEQ(x, f32(b, 0.0)), llvm::ConstantFP::getInfinity(ty, true), result);
  return nan_passes(b, x, result);
}

}  // namespace

llvm::Value *emit_exp(llvm::IRBuilder<> &b, llvm::Value *x) {
  // Beyond these bounds the result is inf or 0; clamping keeps the reduction in range.
  llvm::Value *clamped = clamp(b, x, -104.0, 88.8);
  llvm::Value *n = b.CreateIntrinsic(llvm::Intrinsic::rint, {b.getFloatTy()}, {b.CreateFMul(clamped, f32(b, 1.44269504088896341))});
  // r = x - n ln2, with ln2 split in two so n * ln2_hi is exact.
  llvm::Value *r = fma(b, n, f32(b, -0.693359375), clamped);
  r = fma(b, n, f32(b, 2.12194440e-4), r);
  llvm::Value *r2 = b.CreateFMul(r, r);
  llvm::Value *p = horner(b, r, {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1});
  llvm::Value *e = b.CreateFAdd(b.CreateFAdd(b.CreateFMul(p, r2), r), f32(b, 1.0));
  return nan_passes(b, x, scale_by_power_of_two(b, e, n));
}

llvm::Value *emit_exp2(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *clamped = clamp(b, x, -150.0, 128.0);
  llvm::Value *n = b.CreateIntrinsic(llvm::Intrinsic::rint, {b.getFloatTy()}, {clamped});
  llvm::Value *f = b.CreateFSub(clamped, n);  // in [-0.5, 0.5]
  llvm::Value *p = horner(b, f, {1.535336188319500E-4, 1.339887440266574E-3, 9.618437357674640E-3, 5.550332471162809E-2,
                                 2.402264791363012E-1, 6.931472028550421E-1});
  llvm::Value *e = fma(b, p, f, f32(b, 1.0));
  return nan_passes(b, x, scale_by_power_of_two(b, e, n));
}

llvm::Value *emit_log(llvm::IRBuilder<> &b, llvm::Value *x) {
  LogParts parts = log_parts(b, x);
  // e ln2 with ln2 split (Cody-Waite): e * 0.693359375 is exact, the small part goes in first.
  llvm::Value *rest = fma(b, parts.exponent, f32(b, -2.12194440e-4), parts.log_mantissa_rest);
  llvm::Value *result = fma(b, parts.exponent, f32(b, 0.693359375), b.CreateFAdd(parts.log_mantissa_hi, rest));
  return log_edges(b, x, result);
}

llvm::Value *emit_log2(llvm::IRBuilder<> &b, llvm::Value *x) {
  LogParts parts = log_parts(b, x);
  llvm::Value *log_m = b.CreateFAdd(parts.log_mantissa_hi, parts.log_mantissa_rest);
  // e + log(m) log2(e), log2(e) split in two so the product keeps f32's precision; m = 1 for
  // powers of two, whose results are then exact.
  constexpr double log2e_hi = 1.44269502162933349609375, log2e_lo = 1.925963033500011079e-8;
  llvm::Value *result = fma(b, log_m, f32(b, log2e_hi), fma(b, log_m, f32(b, log2e_lo), parts.exponent));
  return log_edges(b, x, result);
}

llvm::Value *emit_tanh(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // |x| < 0.625: x + x^3 P(x^2) (Cephes' tanhf polynomial).
  llvm::Value *s = b.CreateFMul(x, x);
  llvm::Value *p = horner(b, s, {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1, -3.33332819422E-1});
  llvm::Value *small = fma(b, b.CreateFMul(p, s), x, x);
  // Otherwise 1 - 2 / (e^2|x| + 1): no cancellation, as the result is above 0.55; e^2|x|
  // overflows to inf past |x| = 44, giving exactly 1.
  llvm::Value *e = emit_exp(b, b.CreateFAdd(ax, ax));
  llvm::Value *large = b.CreateFSub(f32(b, 1.0), b.CreateFDiv(f32(b, 2.0), b.CreateFAdd(e, f32(b, 1.0))));
  // tanh is odd: the sign is x's (at -0, x + x^3 P would give +0).
  return nan_passes(b, x, copysign(b, b.CreateSelect(b.CreateFCmpOLT(ax, f32(b, 0.625)), small, large), x));
}

llvm::Value *emit_sigmoid(llvm::IRBuilder<> &b, llvm::Value *x) {
  // e = e^-|x| never overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below, which follows the
  // result down through the subnormals where 1 / (1 + e^-x) would give 0 (x < -88.7).
  llvm::Value *e = emit_exp(b, b.CreateFNeg(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)));
  llvm::Value *numerator = b.CreateSelect(b.CreateFCmpOGE(x, f32(b, 0.0)), f32(b, 1.0), e);
  return nan_passes(b, x, b.CreateFDiv(numerator, b.CreateFAdd(f32(b, 1.0), e)));
}

llvm::Value *emit_erf(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // |x| < 1: x P(x^2), P fitted to erf(x) / x on [0, 1] (Chebyshev fit, error 1.1e-9).
  llvm::Value *small = b.CreateFMul(x, horner(b, b.CreateFMul(x, x), {7.8758750626854883e-05, -0.00080168642871658699, 0.0051890874234339739,
                                                                        -0.026854212010626412, 0.11283594715160218, -0.37612626666720334,
                                                                        1.1283791658483509}));
  // 1 <= |x|: 1 - e^(-x^2) erfcx(|x|), erfcx fitted as a polynomial in 1/|x| on [1, 4]
  // (relative error 1.1e-8). erfc(4) = 1.5e-8 rounds away against 1, so |x| clamps to 4.
  // x^2 = sq + sq_lo exactly; e^-(sq + sq_lo) = e^-sq (1 - sq_lo) to f32's precision.
  llvm::Value *ac = clamp(b, ax, 1.0, 4.0);
  llvm::Value *g = horner(b, b.CreateFDiv(f32(b, 1.0), ac),
                          {0.025032543186535638, -0.14789844462513763, 0.36086186040483292, -0.42983374861601875, 0.14547734763553957,
                           0.28258979373368531, -0.39485958794873938, 0.024847521258800558, 0.56121463798951676, 0.00015165568581170205});
  llvm::Value *sq = b.CreateFMul(ac, ac);
  llvm::Value *sq_lo = fma(b, ac, ac, b.CreateFNeg(sq));
  llvm::Value *gauss = b.CreateFMul(emit_exp(b, b.CreateFNeg(sq)), b.CreateFSub(f32(b, 1.0), sq_lo));
  llvm::Value *large = fma(b, b.CreateFNeg(gauss), g, f32(b, 1.0));
  return nan_passes(b, x, b.CreateSelect(b.CreateFCmpOLT(ax, f32(b, 1.0)), small, copysign(b, large, x)));
}

}  // namespace kdsl::codegen
