// cuda_launch.h - the CUDA steps of kernel.cpp's launch path: compile, cache entry, load, launch
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include <kdsl/kernel.h>

#include "codegen/codegen.h"
#include "jit_cache/cache_entry.h"
#include "runtime/cuda/cuda_device.h"

namespace kdsl::detail {

// The cache identity of code compiled for `info`'s architecture, as a CudaDevice of it reports
// target(): `arch` is the key's arch (info.name, or a newer GPU's "sm_100 (sm_90 PTX)"), features
// the toolkit (ptxas, libdevice). compile_for("sm_90") and a launch on an sm_90 GPU share it.
codegen::TargetDesc cuda_target(const codegen::TargetInfo &info, const std::string &arch);

// What compile_for_cuda is given for `arch` ("sm_90"): the launch options, and whether ptxas
// assembles a cubin (false: PTX for the driver's JIT).
codegen::CudaCompileOptions cuda_compile_options(const std::string &arch, bool assemble, const CompileOptions &options);

// Compiles a traced kernel for the device's architecture with compile_for_cuda: a cubin where
// ptxas is found, else PTX that the driver JIT-compiles at load; PTX always on GPUs newer than
// sm_90 (CudaDevice::embeds_ptx).
codegen::CompiledObject compile_cuda(const CudaDevice &device, const ir::Function &fn, const std::string &symbol, const CompileOptions &options,
                                     const codegen::DumpOptions &dump);

// What a CUDA cache entry records beside its code: the launch shape (threads per block,
// dynamic shared bytes) that load_cuda_entry needs, the code's format and ptxas's report.
void add_cuda_metadata(nlohmann::json &metadata, const codegen::CompiledObject &compiled);

// Loads a cache entry (cubin or PTX) into the device's context, opting in to dynamic shared
// memory beyond 48 KB where the kernel needs it; errors name it "kernel (symbol)".
CudaFunction load_cuda_entry(CudaDevice &device, const jit_cache::CacheEntry &entry);

// Checks the grid against CUDA's limits (y and z at most 65535) and launches on the device's
// stream: num_warps * 32 threads per block, one 8-byte slot per argument.
void launch_cuda(CudaDevice &device, const CudaFunction &f, const std::string &kernel_name, const Grid &grid, const uint64_t *slots, size_t count);

// The error for a pointer argument in the wrong memory: a host pointer given to a GPU kernel,
// or GPU memory given to a CPU kernel.
[[noreturn]] void pointer_memory_error(const std::string &kernel_name, size_t index, bool on_gpu_device);

}  // namespace kdsl::detail
