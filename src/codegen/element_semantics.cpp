// element_semantics.cpp - the scalar meaning of every elementwise op, types and casts, for all backends
#include "codegen/element_semantics.h"

#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/PatternMatch.h>

#include <bit>

#include <kdsl/error.h>
#include <kdsl/formats/fp8.h>

#include "codegen/fp8_conversions.h"
#include "codegen/host/element_math.h"

namespace kdsl::codegen {
namespace {

// The bf16 bits of `v` where v is known to be a bf16 value widened (from_storage), a constant
// bf16 holds exactly, or a phi of those (masked loads): rounding it is the identity, and
// LLVM does not see through the rounding's bit operations. Null otherwise.
llvm::Value *exact_bf16_bits(llvm::IRBuilder<> &b, llvm::Value *v, int depth = 0) {
  using namespace llvm::PatternMatch;
  llvm::Value *x = nullptr;
  if (match(v, m_BitCast(m_Shl(m_ZExt(m_Value(x)), m_SpecificInt(16)))) && x->getType()->isIntegerTy(16)) return x;
  if (auto *c = llvm::dyn_cast<llvm::ConstantFP>(v)) {
    uint32_t bits = uint32_t(c->getValueAPF().bitcastToAPInt().getZExtValue());
    return bits & 0xffff ? nullptr : b.getInt16(uint16_t(bits >> 16));
  }
  auto *phi = llvm::dyn_cast<llvm::PHINode>(v);
  if (!phi || depth > 2) return nullptr;
  std::vector<llvm::Value *> in;
  for (llvm::Value *incoming : phi->incoming_values()) {
    llvm::Value *bits = exact_bf16_bits(b, incoming, depth + 1);
    if (!bits) return nullptr;
    in.push_back(bits);
  }
  llvm::PHINode *out = llvm::PHINode::Create(b.getInt16Ty(), phi->getNumIncomingValues(), "", phi->getIterator());
  for (unsigned i = 0; i < phi->getNumIncomingValues(); ++i) out->addIncoming(in[i], phi->getIncomingBlock(i));
  return out;
}

// The E4M3 byte of `v` where v is a byte widened (`byte_of` finds the byte the target's
// widening took), a constant E4M3 holds exactly, or a select or phi of those: storing it again
// is the byte itself, which LLVM does not see through the conversions. Null otherwise.
llvm::Value *exact_e4m3_bits(llvm::IRBuilder<> &b, llvm::Value *v, llvm::function_ref<llvm::Value *(llvm::Value *)> byte_of, int depth = 0) {
  if (llvm::Value *x = byte_of(v)) return x;
  if (auto *c = llvm::dyn_cast<llvm::ConstantFP>(v)) {
    const float f = c->getValueAPF().convertToFloat();
    const uint8_t code = f32_to_e4m3_bits(f);
    return std::bit_cast<uint32_t>(e4m3_bits_to_f32(code)) == std::bit_cast<uint32_t>(f) ? b.getInt8(code) : nullptr;
  }
  if (depth > 2) return nullptr;
  if (auto *select = llvm::dyn_cast<llvm::SelectInst>(v)) {
    llvm::Value *t = exact_e4m3_bits(b, select->getTrueValue(), byte_of, depth + 1);
    llvm::Value *f = t ? exact_e4m3_bits(b, select->getFalseValue(), byte_of, depth + 1) : nullptr;
    return f ? b.CreateSelect(select->getCondition(), t, f) : nullptr;
  }
  auto *phi = llvm::dyn_cast<llvm::PHINode>(v);
  if (!phi) return nullptr;
  std::vector<llvm::Value *> in;
  for (llvm::Value *incoming : phi->incoming_values()) {
    llvm::Value *bits = exact_e4m3_bits(b, incoming, byte_of, depth + 1);
    if (!bits) return nullptr;
    in.push_back(bits);
  }
  llvm::PHINode *out = llvm::PHINode::Create(b.getInt8Ty(), phi->getNumIncomingValues(), "", phi->getIterator());
  for (unsigned i = 0; i < phi->getNumIncomingValues(); ++i) out->addIncoming(in[i], phi->getIncomingBlock(i));
  return out;
}

}  // namespace

llvm::Value *ElementSemantics::widen_e4m3(llvm::Value *byte) { return emit_e4m3_to_f32(b_, byte); }
llvm::Value *ElementSemantics::narrow_to_e4m3(llvm::Value *x) { return emit_f32_to_e4m3(b_, x); }
llvm::Value *ElementSemantics::e4m3_byte_of(llvm::Value *v) { return e4m3_byte_of_widened(v); }

llvm::Type *ElementSemantics::compute_type(DType t) const {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::F8E4M3: return b_.getFloatTy();
    case DType::Bool: return b_.getInt1Ty();
    case DType::I8: case DType::U8: return b_.getInt8Ty();
    case DType::I16: return b_.getInt16Ty();
    case DType::I32: case DType::U32: return b_.getInt32Ty();
    case DType::I64: return b_.getInt64Ty();
  }
  return nullptr;
}

llvm::Type *ElementSemantics::compute_type(const ir::Type &t) const {
  return t.is_ptr ? llvm::PointerType::get(b_.getContext(), pointer_address_space_) : compute_type(t.elem);
}

llvm::Type *ElementSemantics::storage_type(DType t) const {
  switch (t) {
    case DType::F16: return b_.getHalfTy();
    case DType::BF16: return b_.getInt16Ty();
    case DType::F8E4M3: return b_.getInt8Ty();
    case DType::Bool: return b_.getInt8Ty();
    default: return compute_type(t);
  }
}

llvm::Value *ElementSemantics::from_storage(llvm::Value *v, DType t) {
  switch (t) {
    case DType::F16: return widen_f16(v);
    case DType::BF16: {  // a scalar, or a vector of them (the host's rows of a dot's B)
      llvm::Type *type = v->getType();
      return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, type->getWithNewType(b_.getInt32Ty())), 16), type->getWithNewType(b_.getFloatTy()));
    }
    case DType::F8E4M3: return widen_e4m3(v);
    case DType::Bool: return b_.CreateICmpNE(v, b_.getInt8(0));
    default: return v;
  }
}

llvm::Value *ElementSemantics::to_storage(llvm::Value *v, DType t) {
  switch (t) {
    case DType::F16: return b_.CreateFPTrunc(v, b_.getHalfTy());
    case DType::BF16:
      // A value that is a bf16 already (a copy, a masked load) is stored as its bits.
      if (llvm::Value *bits = exact_bf16_bits(b_, v)) return bits;
      return b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(emit_round_to_bf16(b_, v), b_.getInt32Ty()), 16), b_.getInt16Ty());
    case DType::F8E4M3:
      // A copy, a masked load: its byte.
      if (llvm::Value *bits = exact_e4m3_bits(b_, v, [this](llvm::Value *x) { return e4m3_byte_of(x); })) return bits;
      return narrow_to_e4m3(v);
    case DType::Bool: return b_.CreateZExt(v, b_.getInt8Ty());
    default: return v;
  }
}

llvm::Value *ElementSemantics::round_to(llvm::Value *v, DType t) {
  if (t == DType::F16) return b_.CreateFPExt(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getFloatTy());
  if (t == DType::BF16) return emit_round_to_bf16(b_, v);
  if (t == DType::F8E4M3) return widen_e4m3(narrow_to_e4m3(v));
  return v;
}

llvm::Value *ElementSemantics::constant(const ir::Type &t, int64_t i, double f) const {
  llvm::Type *ty = compute_type(t);
  if (is_float(t.elem)) return llvm::ConstantFP::get(ty, f);
  return llvm::ConstantInt::get(ty, uint64_t(i), !is_unsigned(t.elem));
}

llvm::Value *ElementSemantics::cast(llvm::Value *v, DType from, DType to) {
  if (is_float(from)) {
    if (is_float(to)) return round_to(v, to);
    if (to == DType::Bool) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(b_.getFloatTy(), 0.0));
    return is_unsigned(to) ? b_.CreateFPToUI(v, compute_type(to)) : b_.CreateFPToSI(v, compute_type(to));
  }
  if (to == DType::BF16 && v->getType()->getIntegerBitWidth() > 24) return round_to(int_to_f32_for_bf16(v, !is_unsigned(from)), to);
  if (is_float(to)) return round_to(is_unsigned(from) ? b_.CreateUIToFP(v, b_.getFloatTy()) : b_.CreateSIToFP(v, b_.getFloatTy()), to);
  if (to == DType::Bool) return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  return b_.CreateIntCast(v, compute_type(to), !is_unsigned(from));
}

// An integer wider than f32's significand, converted for a bf16 result. Rounding it to f32
// and then to bf16 would round twice (2^24 + 2^16 + 1 would become 2^24); keeping 10
// significant bits, the last one sticky, gives an exact f32 with the same bf16 rounding.
llvm::Value *ElementSemantics::int_to_f32_for_bf16(llvm::Value *v, bool is_signed) {
  llvm::Type *ty = v->getType();
  auto c = [&](uint64_t x) { return llvm::ConstantInt::get(ty, x); };
  llvm::Value *negative = is_signed ? b_.CreateICmpSLT(v, c(0)) : b_.getFalse();
  llvm::Value *magnitude = is_signed ? b_.CreateSelect(negative, b_.CreateNeg(v), v) : v;
  llvm::Value *bits = b_.CreateSub(c(ty->getIntegerBitWidth()), b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, magnitude, b_.getFalse()));
  llvm::Value *shift = b_.CreateSelect(b_.CreateICmpUGT(bits, c(10)), b_.CreateSub(bits, c(10)), c(0));
  llvm::Value *low_mask = b_.CreateSub(b_.CreateShl(c(1), shift), c(1));
  llvm::Value *sticky = b_.CreateZExt(b_.CreateICmpNE(b_.CreateAnd(magnitude, low_mask), c(0)), ty);
  llvm::Value *kept = b_.CreateOr(b_.CreateAnd(magnitude, b_.CreateNot(low_mask)), b_.CreateShl(sticky, shift));
  llvm::Value *f = b_.CreateUIToFP(kept, b_.getFloatTy());
  return b_.CreateSelect(negative, b_.CreateFNeg(f), f);
}

llvm::Value *ElementSemantics::elementwise(const ir::Op &op, const ir::Function &fn, const std::function<llvm::Value *(size_t)> &operand) {
  std::vector<llvm::Value *> args;
  std::vector<const ir::Type *> types;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    args.push_back(operand(i));
    types.push_back(&fn.type(op.operands[i]));
  }
  return elementwise(op.kind, fn.type(op.results[0]), types, args);
}

llvm::Value *ElementSemantics::elementwise(OpKind kind, const ir::Type &out, std::span<const ir::Type *const> arg_types,
                                           std::span<llvm::Value *const> args) {
  auto a = [&](size_t i) { return args[i]; };
  bool fp = !out.is_ptr && is_float(out.elem);
  bool arg_fp = !arg_types[0]->is_ptr && is_float(arg_types[0]->elem);
  bool sign = !is_unsigned(arg_types[0]->elem);
  auto fin = [&](llvm::Value *v) { return fp ? round_to(v, out.elem) : v; };
  auto intrinsic = [&](llvm::Intrinsic::ID id, std::vector<llvm::Value *> operands) {
    return b_.CreateIntrinsic(id, {operands[0]->getType()}, operands);
  };
  switch (kind) {
    case OpKind::Add: return fp ? fin(b_.CreateFAdd(a(0), a(1))) : b_.CreateAdd(a(0), a(1));
    case OpKind::Sub: return fp ? fin(b_.CreateFSub(a(0), a(1))) : b_.CreateSub(a(0), a(1));
    case OpKind::Mul: return fp ? fin(b_.CreateFMul(a(0), a(1))) : b_.CreateMul(a(0), a(1));
    case OpKind::Div: return fp ? fin(divide(a(0), a(1))) : sign ? b_.CreateSDiv(a(0), a(1)) : b_.CreateUDiv(a(0), a(1));
    case OpKind::Rem: return fp ? fin(math(OpKind::Rem, a(0), a(1))) : sign ? b_.CreateSRem(a(0), a(1)) : b_.CreateURem(a(0), a(1));
    case OpKind::Min:
      return fp ? intrinsic(llvm::Intrinsic::minnum, {a(0), a(1)}) : intrinsic(sign ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, {a(0), a(1)});
    case OpKind::Max:
      return fp ? intrinsic(llvm::Intrinsic::maxnum, {a(0), a(1)}) : intrinsic(sign ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, {a(0), a(1)});
    case OpKind::And: return b_.CreateAnd(a(0), a(1));
    case OpKind::Or: return b_.CreateOr(a(0), a(1));
    case OpKind::Xor: return b_.CreateXor(a(0), a(1));
    case OpKind::Shl: return b_.CreateShl(a(0), a(1));
    case OpKind::Shr: return sign ? b_.CreateAShr(a(0), a(1)) : b_.CreateLShr(a(0), a(1));
    case OpKind::CmpLt: return arg_fp ? b_.CreateFCmpOLT(a(0), a(1)) : sign ? b_.CreateICmpSLT(a(0), a(1)) : b_.CreateICmpULT(a(0), a(1));
    case OpKind::CmpLe: return arg_fp ? b_.CreateFCmpOLE(a(0), a(1)) : sign ? b_.CreateICmpSLE(a(0), a(1)) : b_.CreateICmpULE(a(0), a(1));
    case OpKind::CmpGt: return arg_fp ? b_.CreateFCmpOGT(a(0), a(1)) : sign ? b_.CreateICmpSGT(a(0), a(1)) : b_.CreateICmpUGT(a(0), a(1));
    case OpKind::CmpGe: return arg_fp ? b_.CreateFCmpOGE(a(0), a(1)) : sign ? b_.CreateICmpSGE(a(0), a(1)) : b_.CreateICmpUGE(a(0), a(1));
    case OpKind::CmpEq: return arg_fp ? b_.CreateFCmpOEQ(a(0), a(1)) : b_.CreateICmpEQ(a(0), a(1));
    case OpKind::CmpNe: return arg_fp ? b_.CreateFCmpUNE(a(0), a(1)) : b_.CreateICmpNE(a(0), a(1));
    case OpKind::Neg: return fp ? b_.CreateFNeg(a(0)) : b_.CreateNeg(a(0));
    case OpKind::Not: return b_.CreateNot(a(0));
    case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt:
    case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh: case OpKind::Sigmoid: case OpKind::Erf:
      return fin(math(kind, a(0), nullptr));
    case OpKind::Pow: return fin(math(kind, a(0), a(1)));
    // Exact in every float type, and one instruction on each target (roundss, cvt.rmi / cvt.rpi).
    case OpKind::Floor: return intrinsic(llvm::Intrinsic::floor, {a(0)});
    case OpKind::Ceil: return intrinsic(llvm::Intrinsic::ceil, {a(0)});
    // Pointers are untyped in LLVM: the pointee only changes how later offsets scale.
    case OpKind::PtrCast: return a(0);
    case OpKind::Abs:
      if (fp) return intrinsic(llvm::Intrinsic::fabs, {a(0)});
      return sign ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a(0), b_.getFalse()) : a(0);  // unsigned: identity
    case OpKind::Cast: return cast(a(0), arg_types[0]->elem, out.elem);
    case OpKind::Bitcast: return from_storage(b_.CreateBitCast(to_storage(a(0), arg_types[0]->elem), storage_type(out.elem)), out.elem);
    case OpKind::Fma: return fin(intrinsic(llvm::Intrinsic::fma, {a(0), a(1), a(2)}));
    case OpKind::Select: return b_.CreateSelect(a(0), a(1), a(2));
    default:
      internal_error(fmt::format("{} is not an elementwise op with a scalar meaning", ir::op_name(kind)));
  }
}

}  // namespace kdsl::codegen
