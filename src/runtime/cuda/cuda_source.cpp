// cuda_source.cpp - kdsl::cuda_source: NVRTC compiles through the kernel cache, argument checks, launches
#include <fmt/format.h>

#include <chrono>

#include <kdsl/cuda_source.h>
#include <kdsl/error.h>

#include "codegen/codegen.h"
#include "jit_cache/cache_key.h"
#include "jit_cache/memory_cache.h"
#include "runtime/cache_stats.h"
#include "runtime/code_cache.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/kernel_cache_key.h"
#include "runtime/pointer_placement.h"
#include "support/log.h"

namespace kdsl {
namespace detail {

class CudaSourceImpl {
 public:
  CudaSourceImpl(const Device &handle, std::string name, CudaFunction function, int shared_bytes)
      : handle(handle),
        device(static_cast<CudaDevice &>(handle.impl())),
        name(std::move(name)),
        function(function),
        shared_bytes(shared_bytes),
        parameter_sizes(device.parameter_sizes(function)) {}

  Device handle;  // keeps the device alive
  CudaDevice &device;
  std::string name;
  CudaFunction function;
  int shared_bytes;
  std::optional<std::vector<size_t>> parameter_sizes;
};

namespace {

jit_cache::MemoryCache<CudaFunction> &source_memory_cache() {
  static jit_cache::MemoryCache<CudaFunction> cache;
  return cache;
}

// The kernel recipe's key, the source's text for traced IR; NVRTC's version for the toolkit's.
jit_cache::CacheKey source_key(const CudaDevice &device, const std::string &name, const std::string &source, const CudaSourceOptions &options) {
  const nvrtc::Library &lib = nvrtc::library();
  codegen::TargetDesc target = device.target();
  target.features = fmt::format("nvrtc {}.{}", lib.major, lib.minor);
  return cache_key(name, source, "cuda_source", fmt::format("{}", fmt::join(options.flags, "\n")), target);
}

std::shared_ptr<CudaFunction> load_source(CudaDevice &device, const std::string &name, const std::string &source, const CudaSourceOptions &options) {
  auto start = std::chrono::steady_clock::now();
  jit_cache::CacheKey key = source_key(device, name, source, options);
  CodeSource<CudaFunction> chain;
  chain.what = "cuda_source " + name;
  // Threads come with each launch; dynamic shared memory is opted in per kernel object.
  chain.load = [&](const jit_cache::CacheEntry &entry) { return std::make_shared<CudaFunction>(device.load(entry.code, entry.symbol, 0, 0)); };
  chain.compile = [&](bool) {
    // A virtual architecture (compute_90) gives PTX only, which GPUs newer than sm_90 compile at load.
    std::string arch = device.embeds_ptx() ? "compute_" + device.info().name.substr(3) : device.info().name;
    nvrtc::Output out = nvrtc::compile(name, source, options.flags, arch);
    if (!out.log.empty()) log_info("cuda_source {}: NVRTC says:\n{}", name, out.log);
    bool cubin = !out.cubin.empty();
    FreshCode fresh;
    fresh.entry.symbol = out.lowered_name;
    if (cubin) fresh.entry.code = std::move(out.cubin);
    else fresh.entry.code.assign(out.ptx.c_str(), out.ptx.c_str() + out.ptx.size() + 1);  // NUL-terminated for the driver's JIT
    fresh.entry.metadata = {{"kernel", name}, {"compile_ms", elapsed_ms(start)}, {"format", cubin ? "cubin" : "ptx"}, {"nvrtc", key.features}};
    fresh.details = " by " + key.features;
    return fresh;
  };
  return find_or_compile(source_memory_cache(), key, key.digest() + device.loaded_code_scope(), chain, start);
}

}  // namespace

std::shared_ptr<CudaSourceImpl> make_cuda_source(const Device &device, std::string name, std::string source, CudaSourceOptions options) {
  if (device.kind() != Device::Kind::Cuda)
    throw Error(fmt::format("kdsl::cuda_source('{}'): {} is not a CUDA device; hand-written CUDA kernels run on Device::cuda()", name, device.name()));
  auto &gpu = static_cast<CudaDevice &>(device.impl());
  if (options.shared_bytes < 0 || options.shared_bytes > gpu.info().shared_bytes_optin)
    throw Error(fmt::format("kdsl::cuda_source('{}'): shared_bytes {} is outside [0, {}] for {}", name, options.shared_bytes,
                            gpu.info().shared_bytes_optin, gpu.name()));
  CudaFunction function = *load_source(gpu, name, source, options);
  function.name = name;
  gpu.allow_shared(function, options.shared_bytes);
  return std::make_shared<CudaSourceImpl>(device, std::move(name), function, options.shared_bytes);
}

void launch_source(CudaSourceImpl &k, const Grid &g, const ThreadBlock &block, const SourceArg *args, size_t count) {
  if (k.parameter_sizes && k.parameter_sizes->size() != count)
    throw Error(fmt::format("kernel '{}' takes {} arguments, {} were given", k.name, k.parameter_sizes->size(), count));
  void *stack_params[32];
  std::vector<void *> heap_params;
  void **params = stack_params;
  if (count > 32) {
    heap_params.resize(count);
    params = heap_params.data();
  }
  for (size_t i = 0; i < count; ++i) {
    const SourceArg &a = args[i];
    if (a.kind == SourceArg::Kind::HostPointer) pointer_memory_error(k.name, i, MemorySpace::Device);
    if (k.parameter_sizes && (*k.parameter_sizes)[i] != a.size)
      throw Error(fmt::format("kernel '{}': argument {} is {} of {} bytes; the kernel's parameter {} takes {} bytes (pass the type it declares)", k.name,
                              i, a.type, a.size, i, (*k.parameter_sizes)[i]));
    params[i] = a.kind == SourceArg::Kind::Value ? const_cast<void *>(a.value) : const_cast<uint64_t *>(&a.address);
  }
  const codegen::TargetInfo &info = k.device.info();
  int64_t threads = block.x * block.y * block.z;
  if (block.x < 1 || block.y < 1 || block.z < 1 || block.z > 64 || threads > info.max_threads_per_block)
    throw Error(fmt::format("kernel '{}': threads({}, {}, {}) per block; CUDA allows 1 to {} threads in all (z at most 64)", k.name, block.x,
                            block.y, block.z, info.max_threads_per_block));
  if (g.x < 0 || g.x > (int64_t(1) << 31) - 1 || g.y < 0 || g.y > 65535 || g.z < 0 || g.z > 65535)
    throw Error(fmt::format("kernel '{}': grid ({}, {}, {}); CUDA allows x below 2^31, y and z at most 65535", k.name, g.x, g.y, g.z));
  stats().launches.fetch_add(1, std::memory_order_relaxed);
  const unsigned grid[3] = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
  const unsigned shape[3] = {unsigned(block.x), unsigned(block.y), unsigned(block.z)};
  k.device.launch(k.function, grid, shape, k.shared_bytes, params);
}

const std::string &source_kernel_name(const CudaSourceImpl &k) { return k.name; }

}  // namespace detail

CudaSourceKernel cuda_source(const Device &device, std::string name, std::string source, CudaSourceOptions options) {
  return CudaSourceKernel(detail::make_cuda_source(device, std::move(name), std::move(source), std::move(options)));
}

}  // namespace kdsl
