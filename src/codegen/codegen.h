// codegen.h - the compiler's interface to the rest of kdsl: block IR in, machine code out (no LLVM types)
#pragma once
#include <cstdint>
#include <map>
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

// Which stages KDSL_DUMP=ir,llvm,asm asks for, and where they go: files in `dir` (empty: none
// written), and with keep_text in CompiledObject::stages too (compile_for hands them back).
struct DumpOptions {
  std::string dir;
  bool ir = false, llvm = false, asm_text = false;
  bool keep_text = false;
  static DumpOptions from_env();
};

// The host entry point every compiled kernel exports:
//   for each linear program id in [begin, end): run the kernel at that grid coordinate.
// `args` holds one 8-byte slot per kernel argument; `grid` the three grid extents.
using HostEntry = void (*)(const uint64_t *args, int64_t begin, int64_t end, const int32_t *grid);

// What ptxas reported for a kernel, plus the shared memory kdsl's lowering allocates
// dynamically. -1: not known (no ptxas).
struct ResourceReport {
  int registers = -1, spill_store_bytes = -1, spill_load_bytes = -1, stack_frame_bytes = -1, static_shared_bytes = -1;
  int dynamic_shared_bytes = 0;  // passed at launch
  int threads = 0;               // per block: num_warps * warp size
  bool assembled = false;        // a cubin was made; false: PTX left to the driver's JIT
  std::string ptxas_log;
};

struct CompiledObject {
  std::vector<uint8_t> object;  // host: a relocatable object file; cuda: a cubin, or PTX (NUL-terminated) for the driver's JIT
  std::string symbol;
  double passes_ms = 0, lower_ms = 0, llvm_ms = 0;
  std::string ptx;             // cuda only
  ResourceReport resources;    // cuda only
  std::map<std::string, std::string> stages;  // DumpOptions::keep_text: each stage's text by its file's extension (".kir", ".ptx")
};

// Checked mode on the host. A kernel compiled with bounds checks reads, past its n argument
// slots, n check bases (slot n + i: argument i's address, or 0 when its extent is not known),
// n extents in bytes (slot 2n + i: UINT64_MAX when not known) and, in slot 3n, the address of
// a BoundsViolation. An access to argument i's memory is allowed when its byte offset from the
// base, and its last byte, lie inside the extent; any other is skipped (a load gives 0) and the
// first one is recorded.
struct BoundsViolation {
  int64_t failed = 0;       // set to 1 by the first violation (an atomic exchange); the rest is its record
  int64_t arg = 0;          // the argument the pointer came from
  int64_t op = 0;           // OpKind of the access
  int64_t byte_offset = 0;  // from the argument's address
  int64_t program[3] = {0, 0, 0};
};
inline size_t checked_slot_count(size_t args) { return 3 * args + 1; }

// How the host lowers dot4 (int_dot.h): Auto takes the fastest the CPU has (VNNI, then
// AVX2's pmaddwd, then portable vector code); the others force one, so tests can check each
// path on one machine. Only compile_for_host takes it: kernels launched on a device always use
// Auto, whose choice follows from the CPU features already in every cache key.
enum class IntDotPath { Auto, Vnni, Pmaddwd, Portable };

struct HostCompileOptions {
  bool bounds_checks = false;  // checked mode: see BoundsViolation
  IntDotPath int_dot = IntDotPath::Auto;
};

// Runs the pass pipeline and the host lowering, optimizes at O3 for the host CPU and emits an
// object file exporting `symbol` as a HostEntry.
CompiledObject compile_for_host(const ir::Function &fn, const std::string &symbol, const DumpOptions &dump, const HostCompileOptions &options = {});

// Starts the process's JIT (target set-up, symbol search of the process); the CPU device
// calls it when created so that the first kernel load does not pay for it.
void start_host_jit();

// Links an object into the process's JIT and returns its entry point. Thread-safe.
HostEntry load_host_object(const std::vector<uint8_t> &object, const std::string &symbol);

struct CudaCompileOptions {
  std::string arch = "sm_80";  // a name target_info() knows: sm_80, sm_90
  int num_warps = 4;           // threads per program: num_warps * 32
  int num_stages = 2;          // >= 2: loads feeding tensor-core dots in for_range copied ahead with cp.async (sm_80+)
  bool assemble = true;        // run ptxas when found (else the object is PTX for the driver JIT)
};

// Runs the pass pipeline, assigns layouts, lowers to LLVM IR for nvptx64-nvidia-cuda, links
// libdevice, optimizes at O3, emits PTX and, where ptxas is found, assembles a cubin with its
// resource report. DumpOptions: ir writes .traced.kir and .kir, llvm .ll and .opt.ll,
// asm_text .ptx, .cubin and .resources.txt.
CompiledObject compile_for_cuda(const ir::Function &fn, const std::string &symbol, const CudaCompileOptions &options, const DumpOptions &dump);

}  // namespace kdsl::codegen
