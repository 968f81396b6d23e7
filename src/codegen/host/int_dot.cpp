// int_dot.cpp - dot4 on host vectors: vpdpbusd with the 128-offset corrections, pmaddwd, portable shuffles
#include "codegen/host/int_dot.h"

#include <algorithm>

#include <fmt/format.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <kdsl/error.h>

#include "codegen/host/i16_pair_sums.h"
#include "codegen/host/target_machine.h"

namespace kdsl::codegen {
namespace {

const char *path_name(IntDotPath p) {
  switch (p) {
    case IntDotPath::Vnni: return "VNNI (vpdpbusd)";
    case IntDotPath::Pmaddwd: return "AVX2 pmaddwd";
    case IntDotPath::Portable: return "portable";
    default: return "auto";
  }
}

// Whether vpdpbusd takes a and b as they are (a as its u8 operand, or b).
bool direct_u8_s8(ByteKind a, ByteKind b) { return (a.reads_as_u8() && b.reads_as_s8()) || (b.reads_as_u8() && a.reads_as_s8()); }

}  // namespace

IntDotPath resolve_int_dot_path(IntDotPath path) {
  const bool vnni_256 = host_has_feature("avxvnni") || (host_has_feature("avx512vnni") && host_has_feature("avx512vl"));
  const bool avx2 = host_has_feature("avx2");
  if (path == IntDotPath::Auto) return vnni_256 ? IntDotPath::Vnni : avx2 ? IntDotPath::Pmaddwd : IntDotPath::Portable;
  if ((path == IntDotPath::Vnni && !vnni_256) || (path == IntDotPath::Pmaddwd && !avx2))
    throw Error(fmt::format("the host lowering of byte dot products was asked for the {} path, which this CPU ({}) does not have", path_name(path),
                            host_target().arch));
  return path;
}

IntDotEmitter::IntDotEmitter(llvm::IRBuilder<> &b, llvm::Module &m, IntDotPath path) : b_(b), m_(m) {
  vnni_512_ = host_has_feature("avx512vnni");
  vnni_256_ = host_has_feature("avxvnni") || (vnni_512_ && host_has_feature("avx512vl"));
  path_ = resolve_int_dot_path(path);
  switch (path_) {
    case IntDotPath::Vnni: widths_ = vnni_512_ ? std::vector<int>{64, 32, 16} : std::vector<int>{32, 16}; break;
    case IntDotPath::Pmaddwd: widths_ = {32, 16}; break;
    default: widths_ = {32, 16, 8, 4}; break;
  }
}

bool IntDotEmitter::vnni_width(int n) const { return n == 64 ? vnni_512_ : (n == 32 || n == 16) && vnni_256_; }

llvm::Value *IntDotEmitter::splat_byte(int n, uint8_t value) { return b_.CreateVectorSplat(unsigned(n), b_.getInt8(value)); }

// acc + sum of 4 products u (u8) x s (s8) per i32 lane. vpdpbusd widens before multiplying and
// adds without saturating (vpdpbusds is the saturating one), so it is exact.
llvm::Value *IntDotEmitter::vpdpbusd(llvm::Value *acc, llvm::Value *u, llvm::Value *s) {
  const unsigned n = llvm::cast<llvm::FixedVectorType>(u->getType())->getNumElements();
  llvm::Intrinsic::ID id = n == 64 ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                           : n == 32 ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                                     : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
  llvm::Function *f = llvm::Intrinsic::getDeclaration(&m_, id);
  llvm::FunctionType *ty = f->getFunctionType();  // LLVM 19 types the byte operands as i32 vectors
  return b_.CreateCall(f, {b_.CreateBitCast(acc, ty->getParamType(0)), b_.CreateBitCast(u, ty->getParamType(1)), b_.CreateBitCast(s, ty->getParamType(2))});
}

llvm::Value *IntDotEmitter::correction(llvm::Value *b, ByteKind a_kind, ByteKind b_kind) {
  const int n = int(llvm::cast<llvm::FixedVectorType>(b->getType())->getNumElements());
  if (path_ != IntDotPath::Vnni || !vnni_width(n) || direct_u8_s8(a_kind, b_kind)) return nullptr;
  llvm::Value *zero = llvm::Constant::getNullValue(llvm::FixedVectorType::get(b_.getInt32Ty(), unsigned(n / 4)));
  // dot4 offsets a by 128 so that vpdpbusd can take it: s8 x s8 computes (a + 128) . b, which
  // is 128 * sum(b) too much; u8 x u8 computes b . (a - 128), which is 128 * sum(b) too little.
  // The correction depends on b alone, so a b shared by many rows pays for it once.
  if (b_kind.is_signed) return vpdpbusd(zero, splat_byte(n, 0x80), b);
  return vpdpbusd(zero, b, splat_byte(n, 0x80));
}

// Whether v repeats a shorter vector across its lanes (a shuffle of fewer elements than it
// has): the lowering's broadcast of one row's bytes to a group of rows.
static bool is_broadcast(const llvm::Value *v) {
  const auto *shuffle = llvm::dyn_cast<llvm::ShuffleVectorInst>(v);
  if (!shuffle) return false;
  const auto *source = llvm::cast<llvm::FixedVectorType>(shuffle->getOperand(0)->getType());
  return source->getNumElements() < llvm::cast<llvm::FixedVectorType>(shuffle->getType())->getNumElements();
}

llvm::Value *IntDotEmitter::dot4(llvm::Value *acc, llvm::Value *a, ByteKind a_kind, llvm::Value *b, ByteKind b_kind, llvm::Value *corr) {
  const int n = int(llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements());
  if (path_ == IntDotPath::Vnni && vnni_width(n)) {
    if (a_kind.reads_as_u8() && b_kind.reads_as_s8()) return vpdpbusd(acc, a, b);
    if (b_kind.reads_as_u8() && a_kind.reads_as_s8()) return vpdpbusd(acc, b, a);
    if (!corr) corr = correction(b, a_kind, b_kind);
    llvm::Value *flipped = b_.CreateXor(a, splat_byte(n, 0x80));
    // s8 x s8: (a + 128) . b = a . b + 128 * sum(b); u8 x u8: b . (a - 128) = a . b - 128 * sum(b).
    llvm::Value *shifted = a_kind.is_signed ? vpdpbusd(acc, flipped, b) : vpdpbusd(acc, b, flipped);
    return b_.CreateSub(shifted, corr);
  }
  if (path_ == IntDotPath::Pmaddwd && (n == 16 || n == 32)) {
    // The largest |pair sum| vpmaddubsw can make of these operands (i16_pair_sums.h reads it).
    auto magnitude = [](ByteKind k) { return std::max(-k.lo, k.hi); };
    const int pair_bound = 2 * magnitude(a_kind) * magnitude(b_kind);
    if (a_kind.below_128() && b_kind.reads_as_s8()) return maddubs_dot4(acc, a, b, pair_bound);
    if (b_kind.below_128() && a_kind.reads_as_s8()) return maddubs_dot4(acc, b, a, pair_bound);
    // s8 x s8: either operand may give its magnitude where the other is within +-127. A
    // broadcast one (x's bytes repeated for every weight row of a group) gives it once for all
    // its uses, where the other's is one vpabsb a vector.
    const bool a_gives = a_kind.reads_as_s8() && b_kind.within_127(), b_gives = b_kind.reads_as_s8() && a_kind.within_127();
    if (a_gives && (!b_gives || !is_broadcast(b) || is_broadcast(a))) return signed_maddubs_dot4(acc, a, b, pair_bound);
    if (b_gives) return signed_maddubs_dot4(acc, b, a, pair_bound);
    return pmaddwd_dot4(acc, a, a_kind.is_signed, b, b_kind.is_signed);
  }
  return portable_dot4(acc, a, a_kind.is_signed, b, b_kind.is_signed);
}

// v (<2k x i32>) -> <k x i32> with element i = v[2i] + v[2i+1].
llvm::Value *IntDotEmitter::add_adjacent_pairs(llvm::Value *v) {
  const int n = int(llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements());
  std::vector<int> even, odd;
  for (int i = 0; i < n / 2; ++i) even.push_back(2 * i), odd.push_back(2 * i + 1);
  return b_.CreateAdd(b_.CreateShuffleVector(v, even), b_.CreateShuffleVector(v, odd));
}

// Each 16 bytes widened to i16 (sign or zero as their type says: every i8 and u8 value fits),
// vpmaddwd gives exact i32 sums of pairs (only -32768 * -32768 twice could overflow, and no
// widened byte is -32768), adjacent pairs make the groups of 4.
llvm::Value *IntDotEmitter::pmaddwd_dot4(llvm::Value *acc, llvm::Value *a, bool a_signed, llvm::Value *b, bool b_signed) {
  const int n = int(llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements());
  auto *i16x16 = llvm::FixedVectorType::get(b_.getInt16Ty(), 16);
  auto widen = [&](llvm::Value *v, bool sign, int half) {
    std::vector<int> lanes;
    for (int i = 0; i < 16; ++i) lanes.push_back(16 * half + i);
    llvm::Value *part = b_.CreateShuffleVector(v, lanes);
    return sign ? b_.CreateSExt(part, i16x16) : b_.CreateZExt(part, i16x16);
  };
  std::vector<llvm::Value *> pairs;
  for (int half = 0; half < n / 16; ++half)
    pairs.push_back(b_.CreateIntrinsic(llvm::Intrinsic::x86_avx2_pmadd_wd, {}, {widen(a, a_signed, half), widen(b, b_signed, half)}));
  llvm::Value *all = pairs[0];
  if (pairs.size() == 2) {
    std::vector<int> concat;
    for (int i = 0; i < 16; ++i) concat.push_back(i);
    all = b_.CreateShuffleVector(pairs[0], pairs[1], concat);
  }
  return b_.CreateAdd(acc, add_adjacent_pairs(all));
}

// vpmaddubsw multiplies u8 `u8` by s8 `s8` and adds adjacent products into i16 lanes,
// saturating; the callers make sure no pair can reach 2^15 (int_dot.h). vpmaddwd by ones adds
// adjacent i16 lanes into dot4's groups of 4. Two instructions per 32 bytes where widening
// both operands takes six.
llvm::Value *IntDotEmitter::maddubs_dot4(llvm::Value *acc, llvm::Value *u8, llvm::Value *s8, int pair_bound) {
  const int n = int(llvm::cast<llvm::FixedVectorType>(u8->getType())->getNumElements());
  const bool wide = n == 32;
  llvm::CallInst *pairs = b_.CreateIntrinsic(wide ? llvm::Intrinsic::x86_avx2_pmadd_ub_sw : llvm::Intrinsic::x86_ssse3_pmadd_ub_sw_128, {}, {u8, s8});
  mark_pair_bound(*pairs, pair_bound);
  auto *i16s = llvm::FixedVectorType::get(b_.getInt16Ty(), unsigned(n / 2));
  llvm::Value *ones = llvm::ConstantInt::get(i16s, 1);
  llvm::Value *quads = b_.CreateIntrinsic(wide ? llvm::Intrinsic::x86_avx2_pmadd_wd : llvm::Intrinsic::x86_sse2_pmadd_wd, {}, {pairs, ones});
  return b_.CreateAdd(acc, quads);
}

// s8 x s8 as u8 x s8: any * w = |any| * (w with any's sign). |any| is at most 128, exact as a
// u8 (vpabsb of -128 is 0x80); w within +-127 keeps its negation in s8 (vpsignb; 0 where any
// is 0). Pairs then reach at most 128 * 127 * 2 = 32512 in magnitude: no saturation.
llvm::Value *IntDotEmitter::signed_maddubs_dot4(llvm::Value *acc, llvm::Value *any, llvm::Value *within_127, int pair_bound) {
  const int n = int(llvm::cast<llvm::FixedVectorType>(any->getType())->getNumElements());
  llvm::Value *magnitude = b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, any, b_.getFalse());
  llvm::Value *signed_w = b_.CreateIntrinsic(n == 32 ? llvm::Intrinsic::x86_avx2_psign_b : llvm::Intrinsic::x86_ssse3_psign_b_128, {}, {within_127, any});
  return maddubs_dot4(acc, magnitude, signed_w, pair_bound);
}

// Generic vector code: products in i32 (exact), then two rounds of adjacent sums.
llvm::Value *IntDotEmitter::portable_dot4(llvm::Value *acc, llvm::Value *a, bool a_signed, llvm::Value *b, bool b_signed) {
  const int n = int(llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements());
  auto *wide = llvm::FixedVectorType::get(b_.getInt32Ty(), unsigned(n));
  llvm::Value *wa = a_signed ? b_.CreateSExt(a, wide) : b_.CreateZExt(a, wide);
  llvm::Value *wb = b_signed ? b_.CreateSExt(b, wide) : b_.CreateZExt(b, wide);
  return b_.CreateAdd(acc, add_adjacent_pairs(add_adjacent_pairs(b_.CreateMul(wa, wb))));
}

}  // namespace kdsl::codegen
