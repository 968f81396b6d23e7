// compile_for.h - ahead-of-time compile: a kernel traced for one specialization and compiled for any target, no device needed
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <kdsl/kernel.h>
#include <kdsl/specialization.h>

namespace kdsl {

// What code is compiled for: "host" (this machine's CPU, as Device::cpu() runs it), a CUDA
// architecture kdsl knows ("sm_80": A100 and every sm_8x GPU; "sm_90a": H100/H200 with
// wgmma, what a 9.0 GPU loads; "sm_90": PTX for GPUs newer than Hopper) or an AMD one
// ("gfx90a": MI200; "gfx942": MI300; "gfx1100": RX 7900).
class Target {
 public:
  // Throws kdsl::Error naming the known targets when `name` is none of them.
  explicit Target(std::string name);
  static Target host() { return Target("host"); }
  // "host", then every GPU architecture: what Target accepts.
  static std::vector<std::string> names();

  const std::string &name() const { return name_; }
  bool is_host() const { return name_ == "host"; }
  bool operator==(const Target &) const = default;

 private:
  std::string name_;
};

// What the compiled code needs per program, CUDA's from ptxas -v, AMD's from the code object's
// metadata; -1 where not known (the host, no ptxas found, a field the target does not have).
struct KernelResources {
  int threads = 0;  // per block: num_warps * warp size (0 on the host)
  int registers = -1;            // CUDA: registers per thread; AMD: VGPRs
  int spill_store_bytes = -1, spill_load_bytes = -1;  // CUDA
  int stack_frame_bytes = -1;    // CUDA: stack frame; AMD: scratch per work-item
  int static_shared_bytes = -1;  // CUDA: static smem; AMD: static LDS
  int scalar_registers = -1, accumulation_registers = -1, vector_spills = -1, scalar_spills = -1;  // AMD: SGPRs, AGPRs, spilled VGPRs and SGPRs
  int kernarg_bytes = -1;        // AMD: the kernel-argument segment
  int wavefront_size = -1;       // AMD: as the code object records it
  int dynamic_shared_bytes = 0;  // allocated by kdsl's lowering, passed at launch
  bool assembled = false;        // CUDA: ptxas made a cubin (false: `object` is PTX for the driver's JIT); AMD: always
  std::string report;            // GPUs: the above as text, CUDA's with ptxas's own log (kdsl-compile's .resources.txt)
};

// Every stage of one ahead-of-time compile.
struct CompileResult {
  std::string kernel;          // the name launches and the log use: "examples::add<1024>"
  std::string target;          // "sm_90", "host"
  std::string specialization;  // one class per argument: "16,16,16,_"
  std::string symbol;          // the entry point inside `object`
  std::string traced_ir;       // block IR as traced
  std::string optimized_ir;    // block IR after the passes (CUDA: with layouts and pipelining)
  std::string llvm_ir;         // LLVM IR as lowered
  std::string optimized_llvm_ir;
  std::string ptx;             // CUDA only
  std::string assembly;        // host: the object's machine code as assembly text; AMD: the amdgcn assembly
  std::vector<uint8_t> object;  // host: a relocatable object; CUDA: a cubin, or NUL-terminated PTX without ptxas; AMD: a code object (HSACO)
  std::string format;           // what `object` is: "object" (host), "cubin", "ptx" (the PTX, for the driver's JIT) or "hsaco"
  KernelResources resources;
  // CUDA sm_90a with tiles copied by TMA: the tensor maps the kernel takes after its arguments
  // (one 128-byte grid constant each, in this order), as JSON: which arguments give each map's
  // base, extents and stride, its element type, box and swizzle; what a launcher outside kdsl
  // must encode (cuTensorMapEncodeTiled) and pass. Empty when the kernel takes none.
  std::string tensor_maps;
  std::string cache_digest;    // the kernel cache key a launch on this target computes (32 hex digits)
  std::string cache_file;      // where the entry was stored; empty when the disk cache refused it (logged)
  double compile_ms = 0;       // tracing and compiling
};

// What cache_for did with one specialization.
struct CacheFill {
  std::string kernel, target, specialization;
  std::string cache_digest;   // the key a launch on the target looks up
  bool already_cached = false;  // a valid entry was there: nothing compiled
  bool stored = false;          // the entry is on disk now (false: the cache refused it, logged)
  double ms = 0;                // tracing, checking the cache and compiling
};

namespace detail {
CompileResult compile_for(const KernelSignature &signature, const Target &target, const Specialization &spec, const CompileOptions &options);
// cache_for below, for a kernel given by its signature (a recorded kernel plan's).
CacheFill cache_for(const KernelSignature &signature, const Target &target, const Specialization &spec, const CompileOptions &options);
}  // namespace detail

// Makes sure the kernel cache holds K compiled for `target` and `spec`: traces it, and compiles
// and stores it (as compile_for does, keeping no stages) unless a valid entry is already stored
// under that key. What kdsl-prewarm runs, from several threads at once: each compile has an
// LLVM context of its own, and entries are published atomically.
template <auto K>
CacheFill cache_for(const Target &target, const Specialization &spec = {}, const CompileOptions &options = {}) {
  return detail::cache_for(detail::kernel_signature<K>(), target, spec, options);
}

// Traces kernel K for `spec` and compiles it for `target` without a device, returning every
// stage, and stores the code in the kernel cache ($KDSL_CACHE_DIR, ...) under the key a launch
// of K with the same options on that target computes: a later launch there loads it instead of
// compiling. Throws kdsl::Error for a bad specialization, a kernel that does not trace or does
// not fit the target (shared memory, num_warps).
template <auto K>
CompileResult compile_for(const Target &target, const Specialization &spec = {}, const CompileOptions &options = {}) {
  return detail::compile_for(detail::kernel_signature<K>(), target, spec, options);
}

// The same for a kernel registered by name (kdsl/registry.h), with its registered options unless
// `options` are given. Throws kdsl::Error naming the registered kernels for an unknown name.
CompileResult compile_for(const std::string &name, const Target &target, const Specialization &spec = {},
                          const std::optional<CompileOptions> &options = std::nullopt);

}  // namespace kdsl
