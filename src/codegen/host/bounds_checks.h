// bounds_checks.h - checked mode's lowering: an access's address tested against its root arguments' extents
#pragma once
#include <array>
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "ir/ir.h"

namespace kdsl::codegen {

// Emits checked mode's tests into a host kernel body. The extents arrive in the argument slots
// (codegen.h's BoundsViolation says how); which argument an access goes through is found in
// the IR (pointer_roots.h), never by searching the buffers for its address.
class BoundsChecks {
 public:
  // Reads the check bases, extents and the violation record's address from `slots`; call it
  // where the body starts. `program` holds the program id's three coordinates (i32).
  BoundsChecks(const ir::Function &fn, llvm::IRBuilder<> &b, llvm::Module &m, llvm::Value *slots, std::array<llvm::Value *, 3> program);

  // The i1 that holds when an access of `bytes` bytes at `address`, made by `op` through the
  // pointer value `pointer`, lies inside one of the pointer's root arguments (or a root's
  // extent is not known). Where it does not, the violation is recorded before the i1 is
  // returned; the caller skips the access.
  llvm::Value *in_bounds(const ir::Op &op, ir::ValueId pointer, llvm::Value *address, int64_t bytes);

 private:
  llvm::Function *report_function();

  llvm::IRBuilder<> &b_;
  llvm::Module &m_;
  std::vector<std::vector<int>> roots_;  // by ValueId
  std::vector<llvm::Value *> base_, extent_;  // by argument: i64, loaded once
  llvm::Value *record_ = nullptr;
  std::array<llvm::Value *, 3> program_;
  llvm::Function *report_ = nullptr;
};

}  // namespace kdsl::codegen
