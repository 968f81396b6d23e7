// lower_nvptx.h - block IR to LLVM IR for one CTA of NVIDIA threads (nvptx64-nvidia-cuda)
#pragma once
#include <string>

#include <llvm/IR/Module.h>

#include "codegen/nvptx/layout.h"
#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::nvptx {

struct LoweringResult {
  int shared_bytes = 0;  // dynamic shared memory the kernel needs per block
  int threads = 0;       // threads per block: num_warps * warp size
};

// Adds to `module` the kernel `symbol`, one parameter per kdsl argument (pointers as global
// pointers, scalars by value), run as one CTA per program (program_id = %ctaid).
//
// Each thread computes the elements its layout (plan) gives it. Index arithmetic (integer,
// boolean and pointer elementwise ops, views, ranges, constants) is recomputed at each index
// it is read at; every other value lives in registers. A value read at other threads'
// elements (through a view, by dot, as a reduction's result) goes through shared memory
// between barriers. Loads and stores move plan.vector_width elements per access; masks
// guard them. Reductions combine in each thread, then across lanes with shfl.sync.bfly,
// then across warps through shared memory. A dot the plan puts on a matrix instruction runs
// on tensor cores (ldmatrix, mma.sync; its tiles copied ahead with cp.async where the plan
// pipelines them), any other multiplies from shared memory with FMAs. A value read in
// another layout than it is held in is converted through shared memory.
LoweringResult lower_to_nvptx(const ir::Function &fn, const LayoutPlan &plan, const TargetInfo &target, llvm::Module &module,
                              const std::string &symbol);

}  // namespace kdsl::codegen::nvptx
