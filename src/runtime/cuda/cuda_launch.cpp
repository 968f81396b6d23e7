// cuda_launch.cpp - the CUDA steps of the launch path: compile_for_cuda, cache metadata, module load, cuLaunchKernel
#include "runtime/cuda/cuda_launch.h"

#include <fmt/format.h>

#include <kdsl/error.h>

#include "runtime/cuda/cuda_toolchain.h"

namespace kdsl::detail {

codegen::TargetDesc cuda_target(const codegen::TargetInfo &info, const std::string &arch) {
  codegen::TargetDesc target;
  target.backend = "cuda";
  target.arch = arch;
  target.triple = info.triple;
  target.features = cuda::toolchain_features();
  return target;
}

codegen::CudaCompileOptions cuda_compile_options(const std::string &arch, bool assemble, const CompileOptions &options) {
  codegen::CudaCompileOptions cuda_options;
  cuda_options.arch = arch;
  cuda_options.num_warps = options.num_warps;
  cuda_options.num_stages = options.num_stages;
  cuda_options.assemble = assemble;
  return cuda_options;
}

codegen::CompiledObject compile_cuda(const CudaDevice &device, const ir::Function &fn, const std::string &symbol, const CompileOptions &options,
                                     const codegen::DumpOptions &dump) {
  // An sm_90 cubin would not load on sm_100 or sm_120: those get PTX.
  return codegen::compile_for_cuda(fn, symbol, cuda_compile_options(device.info().name, !device.embeds_ptx(), options), dump);
}

void add_cuda_metadata(nlohmann::json &metadata, const codegen::CompiledObject &compiled) {
  const codegen::ResourceReport &r = compiled.resources;
  metadata["format"] = r.assembled ? "cubin" : "ptx";
  metadata["threads"] = r.threads;
  metadata["dynamic_shared_bytes"] = r.dynamic_shared_bytes;
  if (r.assembled) {
    metadata["registers"] = r.registers;
    metadata["spill_store_bytes"] = r.spill_store_bytes;
    metadata["static_shared_bytes"] = r.static_shared_bytes;
  }
}

CudaFunction load_cuda_entry(CudaDevice &device, const jit_cache::CacheEntry &entry) {
  const nlohmann::json &m = entry.metadata;
  if (!m.is_object() || !m.contains("threads") || !m["threads"].is_number_integer() || !m.contains("dynamic_shared_bytes") ||
      !m["dynamic_shared_bytes"].is_number_integer())
    throw Error(fmt::format("kernel cache entry '{}' lacks its launch shape (threads, dynamic_shared_bytes); remove it from the cache directory",
                            entry.symbol));
  CudaFunction f = device.load(entry.code, entry.symbol, m["dynamic_shared_bytes"].get<int>(), m["threads"].get<int>());
  if (m.contains("kernel") && m["kernel"].is_string()) f.name = fmt::format("{} ({})", m["kernel"].get<std::string>(), entry.symbol);
  return f;
}

void launch_cuda(CudaDevice &device, const CudaFunction &f, const std::string &kernel_name, const Grid &g, const uint64_t *slots, size_t count) {
  if (g.y > 65535 || g.z > 65535)
    throw Error(fmt::format("kernel '{}': CUDA grids allow at most 65535 programs along y and z, got ({}, {}, {})", kernel_name, g.x, g.y, g.z));
  const int32_t grid[3] = {int32_t(g.x), int32_t(g.y), int32_t(g.z)};
  device.launch(f, grid, slots, count);
}

void pointer_memory_error(const std::string &kernel_name, size_t index, bool on_gpu_device) {
  if (on_gpu_device)
    throw Error(fmt::format("kernel '{}': argument {} is a host pointer; on a CUDA device pass a kdsl::Buffer allocated on it", kernel_name, index));
  throw Error(fmt::format("kernel '{}': argument {} is in a GPU's memory; on the CPU pass host memory (a kdsl::Buffer allocated on the CPU, "
                          "or a host pointer)",
                          kernel_name, index));
}

}  // namespace kdsl::detail
