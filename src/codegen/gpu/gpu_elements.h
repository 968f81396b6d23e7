// gpu_elements.h - the shared element semantics with a GPU's own math: global pointers, the target's math hook
#pragma once
#include "codegen/element_semantics.h"
#include "codegen/gpu/gpu_target.h"

namespace kdsl::codegen::gpu {

// Pointers are global (the target's global address space); f16 widens with fpext;
// transcendental functions come from the target's math hook (NVIDIA: ex2.approx and
// libdevice; AMD: its instructions and ocml).
class GpuElements final : public ElementSemantics {
 public:
  GpuElements(llvm::IRBuilder<> &b, llvm::Module &m, GpuTarget &target)
      : ElementSemantics(b, m, target.global_address_space()), target_(target) {}

 protected:
  llvm::Value *math(OpKind kind, llvm::Value *x, llvm::Value *y) override { return target_.math(b_, m_, kind, x, y); }
  llvm::Value *divide(llvm::Value *x, llvm::Value *y) override { return target_.divide(b_, x, y); }

 private:
  GpuTarget &target_;
};

}  // namespace kdsl::codegen::gpu
