// gpu_elements.h - the shared element semantics with a GPU's own math: global pointers, the target's math hook
#pragma once
#include "codegen/element_semantics.h"
#include "codegen/gpu/gpu_target.h"

namespace kdsl::codegen::gpu {

// Pointers are global (the target's global address space); f16 widens with fpext;
// transcendental functions come from the target's math hook (NVIDIA: ex2.approx and
// libdevice; AMD: its instructions and ocml), division and fp8 conversions from its hooks.
class GpuElements final : public ElementSemantics {
 public:
  GpuElements(llvm::IRBuilder<> &b, llvm::Module &m, GpuTarget &target)
      : ElementSemantics(b, m, target.global_address_space()), target_(target) {}

 protected:
  llvm::Value *math(OpKind kind, llvm::Value *x, llvm::Value *y) override { return target_.math(b_, m_, kind, x, y); }
  llvm::Value *divide(llvm::Value *x, llvm::Value *y) override { return target_.divide(b_, x, y); }
  llvm::Value *widen_e4m3(llvm::Value *byte) override { return target_.e4m3_to_f32(b_, byte); }
  llvm::Value *narrow_to_e4m3(llvm::Value *x) override { return target_.f32_to_e4m3(b_, x); }
  llvm::Value *e4m3_byte_of(llvm::Value *v) override { return target_.e4m3_byte_of(v); }

 private:
  GpuTarget &target_;
};

}  // namespace kdsl::codegen::gpu
