// cuda_backend.cpp - the CUDA device's Backend side: compile for its architecture, load cache entries, launch, memory
#include <fmt/format.h>

#include <string_view>
#include <vector>

#include <kdsl/error.h>

#include "codegen/tensor_map_limits.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/tensor_map_json.h"
#include "runtime/compile_target.h"
#include "support/log.h"

namespace kdsl::detail {
namespace {

cuda::CUdeviceptr address(const void *p) { return reinterpret_cast<cuda::CUdeviceptr>(p); }

}  // namespace

codegen::CompiledObject CudaDevice::compile(const ir::Function &traced, const std::string &symbol, const CompileOptions &options, bool,
                                            const codegen::DumpOptions &dump) const {
  codegen::Options to = codegen_options(options, false);
  to.assemble = !embeds_ptx_;  // an sm_90 cubin would not load on sm_100 or sm_120: those get PTX
  return codegen::compile(traced, symbol, codegen::Target::named(info_.name), to, dump);
}

std::shared_ptr<LoadedCode> CudaDevice::load(const jit_cache::CacheEntry &entry) {
  const nlohmann::json &m = entry.metadata;
  if (!m.is_object() || !m.contains("threads") || !m["threads"].is_number_integer() || !m.contains("dynamic_shared_bytes") ||
      !m["dynamic_shared_bytes"].is_number_integer())
    throw Error(fmt::format("kernel cache entry '{}' lacks its launch shape (threads, dynamic_shared_bytes); remove it from the cache directory",
                            entry.symbol));
  const std::string name =
      m.contains("kernel") && m["kernel"].is_string() ? fmt::format("{} ({})", m["kernel"].get<std::string>(), entry.symbol) : entry.symbol;
  // Read before the module loads: a malformed entry is refused with nothing to unload.
  std::vector<codegen::TensorMapSpec> maps;
  if (m.contains("tensor_maps")) maps = tensor_maps_from_json(m["tensor_maps"], name);
  auto code = std::make_shared<CudaCode>(std::move(maps));
  code->function = load(entry.code, entry.symbol, m["dynamic_shared_bytes"].get<int>(), m["threads"].get<int>());
  code->function.name = name;
  return code;
}

void CudaDevice::unload(const LoadedCode &code) { unload(static_cast<const CudaCode &>(code).function); }

void CudaDevice::launch(const LoadedCode &code, const LaunchRequest &r) {
  const Grid &g = r.grid;
  if (g.y > 65535 || g.z > 65535)
    throw Error(fmt::format("kernel '{}': CUDA grids allow at most 65535 programs along y and z, got ({}, {}, {})", r.kernel.name, g.x, g.y, g.z));
  const int32_t grid[3] = {int32_t(g.x), int32_t(g.y), int32_t(g.z)};
  const CudaCode &c = static_cast<const CudaCode &>(code);
  if (c.tensor_maps.empty()) return launch(c.function, grid, r.slots, r.count);
  // The driver copies the parameters at cuLaunchKernel: maps on this stack outlive their use.
  constexpr size_t kMapsOnStack = 4;
  cuda::CUtensorMap stack_maps[kMapsOnStack];
  std::vector<cuda::CUtensorMap> heap_maps;
  cuda::CUtensorMap *maps = stack_maps;
  if (c.tensor_maps.size() > kMapsOnStack) {
    heap_maps.resize(c.tensor_maps.size());
    maps = heap_maps.data();
  }
  c.tensor_maps.encode(drv_, r, maps, [this] { return tensor_map_stand_ins(); });
  launch(c.function, grid, r.slots, r.count, maps, c.tensor_maps.size());
}

CudaTensorMaps::StandIns CudaDevice::tensor_map_stand_ins() {
  std::lock_guard lock(stand_ins_mutex_);
  if (!stand_ins_) stand_ins_ = cuda::CUdeviceptr(reinterpret_cast<uintptr_t>(allocate(2 * codegen::kTensorMapStandInBytes)));  // zeroed
  return {uint64_t(stand_ins_), uint64_t(stand_ins_) + uint64_t(codegen::kTensorMapStandInBytes)};
}

void *CudaDevice::allocate(size_t bytes) {
  cuda::CUdeviceptr p = alloc(bytes);
  try {
    if (bytes) zero(p, bytes);
  } catch (...) {
    free(p);
    throw;
  }
  return reinterpret_cast<void *>(p);
}

void CudaDevice::release(void *memory) noexcept {
  try {
    free(address(memory));
  } catch (const Error &e) {
    // A Buffer outliving the driver (at exit) has nothing to free.
    if (std::string_view(e.what()).find("CUDA_ERROR_DEINITIALIZED") == std::string_view::npos)
      log_warn("kdsl::Buffer: freeing GPU memory failed: {}", e.what());
  }
}

void CudaDevice::copy_from_host(void *device_dst, const void *host_src, size_t bytes) { copy_to_device(address(device_dst), host_src, bytes); }

void CudaDevice::copy_to_host(void *host_dst, const void *device_src, size_t bytes) { copy_to_host(host_dst, address(device_src), bytes); }

}  // namespace kdsl::detail
