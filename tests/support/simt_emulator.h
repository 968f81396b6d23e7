// simt_emulator.h - runs the GPU lowering of a kernel on CPU threads, one OS thread per GPU thread, for NVIDIA (warp 32) and AMD (wave64) targets alike
//
// A test tool, not a backend: it checks the generic lowering's per-thread logic (layouts,
// shared memory, barriers, cross-lane shuffles, reductions, scans, dot) and each vendor's
// hook output on machines without a GPU. It is slow, and it models neither memory
// coalescing, alignment faults nor the vendors' back ends (PTX, the AMDGPU ISA).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/tensor_map.h"
#include "ir/ir.h"
#include "tests/support/simt_machine.h"

namespace kdsl::simt {

struct Emulation {
  // A GPU target of codegen::target_info: its warp size, shared-memory (LDS) size and hooks.
  // "sm_80" runs the NVPTX hooks (warp 32), "gfx942" / "gfx90a" the AMDGPU hooks (wave64).
  std::string arch = "sm_80";
  int num_warps = 4;
  // NVIDIA targets only: dots the plan puts on mma.sync run as emulated ldmatrix and
  // mma.sync (fp8 too on sm_89+), on wgmma (sm_90a) as wgmma reading shared memory through its descriptors, both
  // following the PTX ISA's fragment tables, their loads pipelined over `num_stages` with
  // cp.async (a copy that completes at once, so a missing wait_group goes unnoticed; wgmma
  // likewise, so a missing fence or wait_group does too). On sm_90a, tiles read through
  // tensor descriptors are copied by TMA through mbarriers (simt_tma.cpp), at once as well.
  // Otherwise the target's matrix instructions are left out and dot takes the FMA path.
  bool matrix_instructions = false;
  int num_stages = 2;
};

struct EmulatedKernel {
  void (*entry)(const uint64_t *slots) = nullptr;  // one 8-byte slot per parameter, values in the low bytes
  int threads = 0;
  int warp_size = 0;
  int shared_bytes = 0;
  // sm_90a with TMA: the tensor maps the kernel takes after its `arguments` (one slot each,
  // the address of an EmulatedTensorMap), which emulate_launch encodes from the arguments.
  int arguments = 0;
  std::vector<codegen::TensorMapSpec> tensor_maps;
};

// Runs the block-IR passes, the layout plan and the generic GPU lowering with the target's
// own hooks, then rewrites the module for the host: the vendor's ids, barriers and shuffles
// become calls into the emulator (NVVM: nvvm_on_host.cpp, AMDGCN: amdgcn_on_host.cpp), its
// math library's functions libm's, shared memory one buffer.
EmulatedKernel compile_for_emulation(const ir::Function &fn, const std::string &symbol, const Emulation &emulation);

// Runs every program of the grid, one after another, each on `threads` CPU threads. `slots`:
// the kernel's arguments only; its tensor maps are encoded from them (encode_tensor_map) and
// passed after them. The mbarriers start afresh at each launch, and a barrier left valid at the
// end of a program is a fault, as is anything the machine faults on (simt_machine.h).
void emulate_launch(const EmulatedKernel &k, const int32_t grid[3], const uint64_t *slots);

// The emulator's form of one tensor map for these argument slots: the base from slot `base`,
// rows, cols and stride from their i32 arguments (a slot's low 32 bits, signed) or constants.
// What cuTensorMapEncodeTiled would reject, and the launcher checks (runtime/cuda/
// cuda_tensor_maps.h), is a kdsl::Error: a base not 16-byte aligned, a row stride that is not
// a positive multiple of 16 bytes, an extent below 1.
EmulatedTensorMap encode_tensor_map(const codegen::TensorMapSpec &spec, const uint64_t *slots);

}  // namespace kdsl::simt
