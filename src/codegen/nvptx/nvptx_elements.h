// nvptx_elements.h - the shared element semantics with NVIDIA's math: ex2.approx, libdevice, global pointers
#pragma once
#include "codegen/element_semantics.h"
#include "codegen/nvptx/nvptx_intrinsics.h"

namespace kdsl::codegen::nvptx {

// Pointers are global (address space 1); f16 widens with cvt (fpext); transcendental
// functions come from nvptx_intrinsics (ex2.approx for exp, libdevice for the rest).
class NvptxElements final : public ElementSemantics {
 public:
  NvptxElements(llvm::IRBuilder<> &b, llvm::Module &m) : ElementSemantics(b, m, kGlobalAddressSpace) {}

 protected:
  llvm::Value *math(OpKind kind, llvm::Value *x, llvm::Value *y) override { return emit_math(b_, m_, kind, x, y); }
};

}  // namespace kdsl::codegen::nvptx
