// simt_emulator.h - runs the NVIDIA lowering of a kernel on CPU threads, one OS thread per GPU
// thread, to check the lowering's per-thread logic (layouts, shared memory, barriers,
// shuffles, reductions, dot) on machines without a GPU. A test tool, not a backend: it is
// slow, and it does not model memory coalescing, alignment faults or the PTX back end.
#pragma once
#include <cstdint>
#include <string>

#include "ir/ir.h"

namespace kdsl::codegen::nvptx {

struct EmulatedKernel {
  void (*entry)(const uint64_t *slots) = nullptr;  // one 8-byte slot per argument, values in the low bytes
  int threads = 0;
  int shared_bytes = 0;
};

// Runs the pipeline and the NVPTX lowering for `num_warps`, then rewrites the module for the
// host: NVVM special registers, barriers and shuffles become calls into the emulator,
// ex2.approx becomes exp2, libdevice functions become libm's, shared memory one buffer.
// The target is sm_80; without `tensor_cores` its matrix instructions are left out, so dot
// takes the FMA path. With them, ldmatrix and mma.sync run as warp-wide emulator calls that
// follow the PTX ISA's fragment tables (mma_fragments.h): the tensor-core lowering, run;
// loads feeding them are pipelined over `num_stages` as on the GPU, cp.async emulated as a
// copy that completes at once (so a missing wait_group goes unnoticed here).
EmulatedKernel compile_for_emulation(const ir::Function &fn, const std::string &symbol, int num_warps, bool tensor_cores = false, int num_stages = 2);

// Runs every program of the grid, one after another, each on `threads` CPU threads.
void emulate_launch(const EmulatedKernel &k, const int32_t grid[3], const uint64_t *slots);

}  // namespace kdsl::codegen::nvptx
