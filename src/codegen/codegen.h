// codegen.h - the compiler's interface to the rest of kdsl: block IR in, machine code out (no LLVM types)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kdsl::codegen {

// The machine code is compiled for; part of every cache key.
struct TargetDesc {
  std::string backend;   // "host", "cuda"
  std::string arch;      // host CPU name ("znver3") or "sm_90"
  std::string features;  // host CPU features ("+avx2,+fma,..."), empty for GPUs
  std::string triple;
};

const TargetDesc &host_target();
std::string llvm_version();

// Where KDSL_DUMP=ir,llvm,asm writes each stage (empty: nothing written).
struct DumpOptions {
  std::string dir;
  bool ir = false, llvm = false, asm_text = false;
  static DumpOptions from_env();
};

// The host entry point every compiled kernel exports:
//   for each linear program id in [begin, end): run the kernel at that grid coordinate.
// `args` holds one 8-byte slot per kernel argument; `grid` the three grid extents.
using HostEntry = void (*)(const uint64_t *args, int64_t begin, int64_t end, const int32_t *grid);

struct CompiledObject {
  std::vector<uint8_t> object;  // a relocatable object file for the host
  std::string symbol;
  double passes_ms = 0, lower_ms = 0, llvm_ms = 0;
};

// Runs the pass pipeline and the host lowering, optimizes at O3 for the host CPU and emits an
// object file exporting `symbol` as a HostEntry.
CompiledObject compile_for_host(const ir::Function &fn, const std::string &symbol, const DumpOptions &dump);

// Starts the process's JIT (target set-up, symbol search of the process); the CPU device
// calls it when created so that the first kernel load does not pay for it.
void start_host_jit();

// Links an object into the process's JIT and returns its entry point. Thread-safe.
HostEntry load_host_object(const std::vector<uint8_t> &object, const std::string &symbol);

}  // namespace kdsl::codegen
