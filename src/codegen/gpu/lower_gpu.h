// lower_gpu.h - block IR to LLVM IR for one block of GPU threads, the target's differences behind GpuTarget hooks
#pragma once
#include <string>

#include <llvm/IR/Module.h>

#include "codegen/gpu/layout.h"
#include "codegen/tensor_map.h"
#include "codegen/gpu/gpu_target.h"
#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::gpu {

struct LoweringResult {
  int shared_bytes = 0;  // dynamic shared memory the kernel needs per block
  int threads = 0;       // threads per block: num_warps * warp size
  // The TMA tensor maps the kernel takes after its arguments (codegen/tensor_map.h).
  std::vector<TensorMapSpec> tensor_maps;
};

// Adds to `module` the kernel `symbol`, one parameter per kdsl argument (pointers as global
// pointers, scalars by value), run as one block of threads per program (program_id = the block id).
//
// Each thread computes the elements its layout (plan) gives it. Index arithmetic (integer,
// boolean and pointer elementwise ops, views, ranges, constants) is recomputed at each index
// it is read at; every other value lives in registers. A value read at other threads'
// elements (through a view, by dot, as a reduction's result) goes through shared memory
// between barriers. Loads and stores move plan.vector_width elements per access; masks
// guard them. Reductions combine in each thread, then across lanes with the target's xor
// shuffle (shfl.sync.bfly, ds_bpermute),
// then across warps through shared memory. A dot the plan puts on a matrix instruction runs
// on the target's matrix instructions (GpuTarget::matrix_dot; its tiles copied ahead
// with async copies where the plan pipelines them), any other multiplies from shared memory with FMAs. A value read in
// another layout than it is held in is converted through shared memory.
LoweringResult lower_to_gpu(const ir::Function &fn, const LayoutPlan &plan, GpuTarget &target, llvm::Module &module,
                              const std::string &symbol);

}  // namespace kdsl::codegen::gpu
