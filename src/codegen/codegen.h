// codegen.h - the compiler's interface to the rest of kdsl: compile(block IR, Target, Options) to machine code (no LLVM types)
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/target_info.h"
#include "codegen/tensor_map.h"
#include "ir/ir.h"

namespace kdsl::codegen {

// The machine code is compiled for; part of every cache key.
struct TargetDesc {
  std::string backend;   // "host", "cuda", "hip"
  std::string arch;      // host CPU name ("znver3"), "sm_90" or "gfx942"
  std::string features;  // host CPU features ("+avx2,+fma,..."); GPUs: the toolchain's versions (ptxas, libdevice; ld.lld, device libraries)
  std::string triple;

  // The LLVM features `features` lists as enabled ("+avx2" gives "avx2"), in its order: for the
  // host, what its kernels are compiled for. Views into `features`.
  std::vector<std::string_view> enabled_features() const;
  // Whether `name` is one of them.
  bool has_feature(std::string_view name) const;
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

// What ptxas (NVIDIA) or the code object's metadata (AMD) reported for a kernel, plus the
// shared memory kdsl's lowering allocates dynamically. -1: not known (no ptxas; a field the
// target does not have).
struct ResourceReport {
  int registers = -1;            // NVIDIA: registers per thread; AMD: VGPRs
  int spill_store_bytes = -1, spill_load_bytes = -1;  // NVIDIA
  int stack_frame_bytes = -1;    // NVIDIA: stack frame; AMD: scratch (private segment) per work-item
  int static_shared_bytes = -1;  // NVIDIA: static smem; AMD: static LDS (group segment)
  int scalar_registers = -1, accumulation_registers = -1;  // AMD: SGPRs, AGPRs
  int vector_spills = -1, scalar_spills = -1;             // AMD: VGPRs and SGPRs spilled
  int kernarg_bytes = -1;        // AMD: the kernel-argument segment
  int wavefront_size = -1;       // AMD: as the code object records it
  int dynamic_shared_bytes = 0;  // passed at launch
  int threads = 0;               // per block: num_warps * warp size
  bool assembled = false;        // machine code was made (cubin, HSACO); false: PTX left to the driver's JIT
  std::string ptxas_log;
};

// The warning for a kernel whose registers spilled (ptxas's spill bytes, AMD's VGPR/SGPR
// spill counts), naming the kernel, the target and the figures; nullopt when nothing spilled
// or nothing is known (no ptxas).
std::optional<std::string> spill_warning(const ResourceReport &r, const std::string &kernel, const std::string &target);

struct CompiledObject {
  std::vector<uint8_t> object;  // host: a relocatable object file; cuda: a cubin, or PTX (NUL-terminated) for the driver's JIT; hip: a code object (HSACO)
  std::string symbol;
  std::string format;           // "object" (host: relocatable, for the JIT), "cubin", "ptx", "hsaco"
  double passes_ms = 0, lower_ms = 0, llvm_ms = 0;
  std::string ptx;             // cuda only
  std::string assembly;        // hip only: the amdgcn assembly LLVM printed for the code object
  ResourceReport resources;    // GPUs only
  // What the user should know about the code, also logged at KDSL_LOG=warn when it is made:
  // registers spilled to local memory (spill_warning), a dot left on FMAs although the target
  // has a matrix instruction of its types (the layout plan says why).
  std::vector<std::string> warnings;
  // NVIDIA: the TMA tensor maps the kernel takes after its arguments, which the launcher
  // encodes from the argument values (tensor_map.h); empty for every other kernel.
  std::vector<TensorMapSpec> tensor_maps;
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
// path on one machine. Kernels launched on a device always use Auto, whose choice follows
// from the CPU features already in every cache key.
enum class IntDotPath { Auto, Vnni, Pmaddwd, Portable };

// The machine code is compiled for: this host's CPU, or a GPU of target_info.cpp's table. The
// pipeline (pipeline.cpp) gates its steps on `kind`; a GPU's details are data, its TargetInfo.
struct Target {
  enum class Kind { Host, Nvptx, Amdgpu };
  Kind kind = Kind::Host;
  const TargetInfo *gpu = nullptr;  // the GPU's description; null for the host

  static Target host() { return {}; }
  // "host", or a GPU target_info() knows ("sm_80", "sm_90", "gfx942"); throws kdsl::Error naming them.
  static Target named(const std::string &name);
  // "host", then every GPU: what named() accepts.
  static std::vector<std::string> names();
  std::string name() const { return gpu ? gpu->name : "host"; }
  bool is_host() const { return kind == Kind::Host; }
  bool is_gpu() const { return kind != Kind::Host; }
};

// How to compile, beside the target: each field is read by the targets it names.
struct Options {
  int num_warps = 4;           // GPU: threads per program, num_warps * warp size
  int num_stages = 2;          // GPU: >= 2 copies loads feeding tensor-core dots in for_range ahead with cp.async (sm_80+)
  bool assemble = true;        // NVPTX: run ptxas where found (else the object is PTX for the driver's JIT); AMDGPU always links
  bool bounds_checks = false;  // host: checked mode, see BoundsViolation
  IntDotPath int_dot = IntDotPath::Auto;  // host: dot4's lowering (tests force one)
};

// Block IR in, machine code out: the block-IR passes of pipeline.cpp, the target's own steps
// (GPU: layouts and pipelining), lowering to LLVM IR, O3, and code exporting `symbol`:
//   host: a relocatable object whose `symbol` is a HostEntry;
//   NVPTX: PTX (libdevice linked where its math is called) and, where ptxas is found and
//   options.assemble asks, a cubin with its resource report; threads and dynamic shared
//   memory in `resources`;
//   AMDGPU: a code object (HSACO) linked by ld.lld (ROCm's ocml linked where its math is
//   called), its resources from the object's amdhsa metadata.
// DumpOptions: ir writes .traced.kir and .kir, llvm .ll and .opt.ll, asm_text .s (host) or
// .ptx, .cubin and .resources.txt (NVPTX), .amdgcn, .hsaco and .resources.txt (AMDGPU).
// Throws kdsl::Error for a kernel that does not fit the target (shared memory, libdevice or
// ocml missing, no ld.lld for AMDGPU).
CompiledObject compile(const ir::Function &traced, const std::string &symbol, const Target &target, const Options &options = {},
                       const DumpOptions &dump = {});

// Starts the process's JIT (target set-up, symbol search of the process); the CPU device
// calls it when created so that the first kernel load does not pay for it.
void start_host_jit();

// Links an object into the process's JIT and returns its entry point. Thread-safe.
HostEntry load_host_object(const std::vector<uint8_t> &object, const std::string &symbol);

}  // namespace kdsl::codegen
