// hip_source.cpp - kdsl::hip_source: hipRTC compiles through the kernel cache (as cuda_source does), launches on a HIP device
#include <fmt/format.h>

#include <chrono>

#include <kdsl/error.h>
#include <kdsl/hip_source.h>

#include "jit_cache/cache_key.h"
#include "jit_cache/memory_cache.h"
#include "runtime/cache_stats.h"
#include "runtime/code_cache.h"
#include "runtime/hip/hip_device.h"
#include "runtime/hip/hiprtc.h"
#include "runtime/kernel_cache_key.h"
#include "support/log.h"

namespace kdsl {
namespace detail {

class HipSourceImpl {
 public:
  HipSourceImpl(const Device &handle, std::string name, std::shared_ptr<HipCode> code, int shared_bytes)
      : handle(handle), device(static_cast<HipDevice &>(handle.impl())), name(std::move(name)), code(std::move(code)), shared_bytes(shared_bytes) {}

  Device handle;  // keeps the device alive
  HipDevice &device;
  std::string name;
  std::shared_ptr<HipCode> code;
  int shared_bytes;
};

namespace {

jit_cache::MemoryCache<HipCode> &source_memory_cache() {
  static jit_cache::MemoryCache<HipCode> cache;
  return cache;
}

// The kernel recipe's key, the source's text for traced IR; hipRTC's version for the toolchain's.
jit_cache::CacheKey source_key(const HipDevice &device, const std::string &name, const std::string &source, const HipSourceOptions &options) {
  const hiprtc::Library &lib = hiprtc::library();
  codegen::TargetDesc target = device.target();
  target.features = fmt::format("hiprtc {}.{}", lib.major, lib.minor);
  return cache_key(name, source, "hip_source", fmt::format("{}", fmt::join(options.flags, "\n")), target);
}

std::shared_ptr<HipCode> load_source(HipDevice &device, const std::string &name, const std::string &source, const HipSourceOptions &options) {
  auto start = std::chrono::steady_clock::now();
  jit_cache::CacheKey key = source_key(device, name, source, options);
  CodeSource<HipCode> chain;
  chain.what = "hip_source " + name;
  // Threads and LDS come with each launch; the entry's launch shape is left at zero.
  chain.load = [&](const jit_cache::CacheEntry &entry) { return std::static_pointer_cast<HipCode>(device.load(entry)); };
  chain.compile = [&](bool) {
    hiprtc::Output out = hiprtc::compile(name, source, options.flags, device.info().name);
    if (!out.log.empty()) log_info("hip_source {}: hipRTC says:\n{}", name, out.log);
    FreshCode fresh;
    fresh.entry.symbol = out.lowered_name;
    fresh.entry.code = std::move(out.code);
    fresh.entry.metadata = {{"kernel", name}, {"compile_ms", elapsed_ms(start)}, {"format", "hsaco"}, {"hiprtc", key.features},
                            {"threads", 0},   {"dynamic_shared_bytes", 0}};
    fresh.details = " by " + key.features;
    return fresh;
  };
  return find_or_compile(source_memory_cache(), key, key.digest() + device.loaded_code_scope(), chain, start);
}

}  // namespace

std::shared_ptr<HipSourceImpl> make_hip_source(const Device &device, std::string name, std::string source, HipSourceOptions options) {
  if (device.kind() != Device::Kind::Hip)
    throw Error(fmt::format("kdsl::hip_source('{}'): {} is not a HIP device; hand-written HIP kernels run on Device::hip()", name, device.name()));
  auto &gpu = static_cast<HipDevice &>(device.impl());
  if (options.shared_bytes < 0 || options.shared_bytes > gpu.info().shared_bytes_optin)
    throw Error(fmt::format("kdsl::hip_source('{}'): shared_bytes {} is outside [0, {}] for {}", name, options.shared_bytes,
                            gpu.info().shared_bytes_optin, gpu.name()));
  std::shared_ptr<HipCode> code = load_source(gpu, name, source, options);
  return std::make_shared<HipSourceImpl>(device, std::move(name), std::move(code), options.shared_bytes);
}

void launch_hip_source(HipSourceImpl &k, const Grid &g, const ThreadBlock &block, const SourceArg *args, size_t count) {
  std::vector<void *> params(count);
  for (size_t i = 0; i < count; ++i) {
    const SourceArg &a = args[i];
    if (a.kind == SourceArg::Kind::HostPointer)
      throw Error(fmt::format("kernel '{}': argument {} is a host pointer; on a HIP device pass a kdsl::Buffer allocated on it", k.name, i));
    params[i] = a.kind == SourceArg::Kind::Value ? const_cast<void *>(a.value) : const_cast<uint64_t *>(&a.address);
  }
  const codegen::TargetInfo &info = k.device.info();
  int64_t threads = block.x * block.y * block.z;
  if (block.x < 1 || block.y < 1 || block.z < 1 || threads > info.max_threads_per_block)
    throw Error(fmt::format("kernel '{}': threads({}, {}, {}) per workgroup; {} allows 1 to {} threads in all", k.name, block.x, block.y, block.z,
                            k.device.name(), info.max_threads_per_block));
  int64_t limit = (int64_t(1) << 32) - 1;
  if (g.x < 0 || g.y < 0 || g.z < 0 || g.x * threads > limit || g.y * block.y > limit || g.z * block.z > limit)
    throw Error(fmt::format("kernel '{}': grid ({}, {}, {}) of {} threads; HIP counts work-items in 32 bits per axis", k.name, g.x, g.y, g.z, threads));
  if (g.x * g.y * g.z == 0) return;
  stats().launches.fetch_add(1, std::memory_order_relaxed);
  const unsigned grid[3] = {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
  const unsigned shape[3] = {unsigned(block.x), unsigned(block.y), unsigned(block.z)};
  k.device.launch_with(*k.code, grid, shape, k.shared_bytes, params.data());
}

const std::string &hip_source_kernel_name(const HipSourceImpl &k) { return k.name; }

}  // namespace detail

HipSourceKernel hip_source(const Device &device, std::string name, std::string source, HipSourceOptions options) {
  auto impl = detail::make_hip_source(device, std::move(name), std::move(source), std::move(options));
  return HipSourceKernel(std::move(impl));
}

}  // namespace kdsl
