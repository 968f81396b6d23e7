// element_semantics.h - what one element of each elementwise op computes, shared by every backend's lowering
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <span>

#include "ir/ir.h"

namespace kdsl::codegen {

// The scalar meaning of the block IR, independent of how a backend distributes elements:
// the types values compute in (f16, bf16 and f8e4m3 in f32, rounded after each op), how elements
// sit in memory, casts (round to nearest even; float to integer truncates), and every
// elementwise op. A backend lowering owns one, and supplies what differs per target: its
// pointer address space, how f16 widens, and the transcendental functions.
class ElementSemantics {
 public:
  ElementSemantics(llvm::IRBuilder<> &b, llvm::Module &m, unsigned pointer_address_space)
      : b_(b), m_(m), pointer_address_space_(pointer_address_space) {}
  virtual ~ElementSemantics() = default;

  llvm::Type *compute_type(DType t) const;
  llvm::Type *compute_type(const ir::Type &t) const;
  llvm::Type *storage_type(DType t) const;  // in memory: f16 as half, bf16 as i16, f8e4m3 and i1 as i8
  llvm::Value *from_storage(llvm::Value *v, DType t);
  llvm::Value *to_storage(llvm::Value *v, DType t);
  llvm::Value *round_to(llvm::Value *v, DType t);  // an f32 to the precision of f16 / bf16 / f8e4m3
  llvm::Value *constant(const ir::Type &t, int64_t i, double f) const;
  llvm::Value *cast(llvm::Value *v, DType from, DType to);

  // One element of an elementwise op other than ptr_add, given its operands' elements.
  llvm::Value *elementwise(OpKind kind, const ir::Type &out, std::span<const ir::Type *const> arg_types, std::span<llvm::Value *const> args);
  // The same for `op` in `fn`, reading operand i's element with operand(i).
  llvm::Value *elementwise(const ir::Op &op, const ir::Function &fn, const std::function<llvm::Value *(size_t)> &operand);

 protected:
  // f16 bits (as half) to f32.
  virtual llvm::Value *widen_f16(llvm::Value *half_value) { return b_.CreateFPExt(half_value, b_.getFloatTy()); }
  // exp, exp2, log, log2, sqrt, rsqrt, sin, cos, tanh, sigmoid, erf of an f32; fmod for rem, powf for pow.
  virtual llvm::Value *math(OpKind kind, llvm::Value *x, llvm::Value *y) = 0;
  // x / y of f32s: IEEE-rounded unless the target divides otherwise (GpuTarget::divide).
  virtual llvm::Value *divide(llvm::Value *x, llvm::Value *y) { return b_.CreateFDiv(x, y); }
  // f8e4m3 bytes (i8) to f32 and back, and the byte a widened value came from (null if none):
  // fp8_conversions.h's integer IR unless the target has instructions (GpuTarget::e4m3_to_f32).
  virtual llvm::Value *widen_e4m3(llvm::Value *byte);
  virtual llvm::Value *narrow_to_e4m3(llvm::Value *x);
  virtual llvm::Value *e4m3_byte_of(llvm::Value *v);

  llvm::IRBuilder<> &b_;
  llvm::Module &m_;

 private:
  llvm::Value *int_to_f32_for_bf16(llvm::Value *v, bool is_signed);
  unsigned pointer_address_space_;
};

}  // namespace kdsl::codegen
