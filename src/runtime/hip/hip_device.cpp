// hip_device.cpp - the HIP device: its gfx architecture and limits into TargetInfo, memory, code-object loading, launches
#include "runtime/hip/hip_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <kdsl/error.h>

#include "runtime/compile_target.h"
#include "runtime/hip/hip_target.h"
#include "support/log.h"

namespace kdsl::detail {
namespace {

// "gfx942" from hipDeviceProp_t's gcnArchName ("gfx942:sramecc+:xnack-").
std::string architecture(const hip::Runtime &rt, int ordinal) {
  std::vector<char> properties(hip::kPropertiesBytes + 1024, 0);  // room for runtimes whose struct grew at its end
  rt.check(rt.hipGetDeviceProperties(properties.data(), ordinal), "hipGetDeviceProperties");
  const char *arch = properties.data() + hip::kPropertiesGcnArchNameOffset;
  std::string name(arch, strnlen(arch, 256));
  return name.substr(0, name.find(':'));
}

}  // namespace

HipDevice::HipDevice(int ordinal, const hip::Runtime &runtime) : rt_(runtime), ordinal_(ordinal) {
  int count = 0;
  rt_.check(rt_.hipGetDeviceCount(&count), "hipGetDeviceCount");
  if (count == 0) throw Error(fmt::format("no HIP device found (hipErrorNoDevice): the HIP runtime ({}) sees no AMD GPU", rt_.library));
  if (ordinal < 0 || ordinal >= count)
    throw Error(fmt::format("HIP device {} requested; the HIP runtime ({}) sees {} device(s)", ordinal, rt_.library, count));
  make_current();
  char name[256] = {};
  rt_.check(rt_.hipDeviceGetName(name, sizeof name, ordinal), "hipDeviceGetName");
  std::string arch = architecture(rt_, ordinal);
  std::vector<std::string> known;
  for (const std::string &t : codegen::target_names())
    if (t.rfind("gfx", 0) == 0) known.push_back(t);
  if (std::find(known.begin(), known.end(), arch) == known.end())
    throw Error(fmt::format("HIP device {} ({}) is {}; kdsl's AMDGPU backend compiles for {}", ordinal, name, arch.empty() ? "of an unknown architecture" : arch,
                            fmt::join(known, ", ")));
  info_ = codegen::target_info(arch);
  auto attribute = [&](int which, const char *what) {
    int v = 0;
    rt_.check(rt_.hipDeviceGetAttribute(&v, which, ordinal), what);
    return v;
  };
  info_.sm_count = attribute(hip::kAttrMultiprocessorCount, "hipDeviceGetAttribute(MultiprocessorCount)");
  int wave = attribute(hip::kAttrWarpSize, "hipDeviceGetAttribute(WarpSize)");
  if (wave != info_.warp_size)
    throw Error(fmt::format("HIP device {} ({}, {}) runs waves of {}; kdsl compiles {} for waves of {}", ordinal, name, arch, wave, arch, info_.warp_size));
  info_.max_threads_per_block = attribute(hip::kAttrMaxThreadsPerBlock, "hipDeviceGetAttribute(MaxThreadsPerBlock)");
  info_.shared_bytes_static = info_.shared_bytes_optin = attribute(hip::kAttrMaxSharedMemoryPerBlock, "hipDeviceGetAttribute(MaxSharedMemoryPerBlock)");
  name_ = fmt::format("hip:{} ({}, {}, {} CUs)", ordinal, name, arch, info_.sm_count);
  target_ = hip_target(info_);
  rt_.check(rt_.hipStreamCreate(&stream_), "hipStreamCreate");
}

// Modules stay loaded for the process's runtime; each device object loads its own, so that
// its in-memory table never holds another's (tests open several on one GPU).
std::string HipDevice::loaded_code_scope() const { return fmt::format("@hip:{}@{}", ordinal_, static_cast<const void *>(this)); }

// The current device is per host thread: every entry point makes it this one.
void HipDevice::make_current() const { rt_.check(rt_.hipSetDevice(ordinal_), "hipSetDevice"); }

codegen::CompiledObject HipDevice::compile(const ir::Function &traced, const std::string &symbol, const CompileOptions &options, bool,
                                           const codegen::DumpOptions &dump) const {
  return codegen::compile(traced, symbol, codegen::Target::named(info_.name), codegen_options(options, false), dump);
}

std::shared_ptr<LoadedCode> HipDevice::load(const jit_cache::CacheEntry &entry) {
  const nlohmann::json &m = entry.metadata;
  if (!m.is_object() || !m.contains("threads") || !m["threads"].is_number_integer() || !m.contains("dynamic_shared_bytes") ||
      !m["dynamic_shared_bytes"].is_number_integer())
    throw Error(fmt::format("kernel cache entry '{}' lacks its launch shape (threads, dynamic_shared_bytes); remove it from the cache directory",
                            entry.symbol));
  auto code = std::make_shared<HipCode>();
  code->threads = m["threads"].get<int>();
  code->shared_bytes = m["dynamic_shared_bytes"].get<int>();
  code->name = m.contains("kernel") && m["kernel"].is_string() ? fmt::format("{} ({})", m["kernel"].get<std::string>(), entry.symbol) : entry.symbol;
  if (code->shared_bytes > info_.shared_bytes_optin)
    throw Error(fmt::format("kernel '{}' needs {} bytes of LDS per workgroup; {} allows {}", code->name, code->shared_bytes, name_, info_.shared_bytes_optin));
  make_current();
  rt_.check(rt_.hipModuleLoadData(&code->module, entry.code.data()), "hipModuleLoadData");
  rt_.check(rt_.hipModuleGetFunction(&code->function, code->module, entry.symbol.c_str()), "hipModuleGetFunction");
  return code;
}

void HipDevice::unload(const LoadedCode &code) {
  make_current();
  rt_.check(rt_.hipModuleUnload(static_cast<const HipCode &>(code).module), "hipModuleUnload");
}

void HipDevice::launch(const LoadedCode &loaded, const LaunchRequest &r) {
  const HipCode &code = static_cast<const HipCode &>(loaded);
  const Grid &g = r.grid;
  if (uint64_t(g.x) * g.y * g.z == 0) return;
  // Little-endian: each value sits in its slot's low bytes. The runtime only reads through these.
  std::vector<void *> params(r.count);
  for (size_t i = 0; i < r.count; ++i) params[i] = &r.slots[i];
  const unsigned grid[3] = {unsigned(g.x), unsigned(g.y), unsigned(g.z)}, block[3] = {unsigned(code.threads), 1, 1};
  launch_with(code, grid, block, code.shared_bytes, params.data());
}

void HipDevice::launch_with(const HipCode &code, const unsigned grid[3], const unsigned block[3], int shared_bytes, void **params) {
  make_current();
  hip::hipError_t result = rt_.hipModuleLaunchKernel(code.function, grid[0], grid[1], grid[2], block[0], block[1], block[2], unsigned(shared_bytes),
                                                     stream_, params, nullptr);
  if (result != 0) {
    std::string why;
    try {
      rt_.check(result, "hipModuleLaunchKernel");
    } catch (const Error &e) {
      why = e.what();
    }
    throw Error(fmt::format("kernel '{}' did not launch on {} (grid ({}, {}, {}), {} threads per workgroup, {} bytes of dynamic LDS): {}", code.name, name_,
                            grid[0], grid[1], grid[2], block[0] * block[1] * block[2], shared_bytes, why));
  }
}

void *HipDevice::allocate(size_t bytes) {
  make_current();
  void *p = nullptr;
  rt_.check(rt_.hipMalloc(&p, bytes ? bytes : 1), "hipMalloc");
  if (hip::hipError_t r = rt_.hipMemset(p, 0, bytes ? bytes : 1); r != 0) {
    rt_.hipFree(p);
    rt_.check(r, "hipMemset");
  }
  return p;
}

void HipDevice::release(void *memory) noexcept {
  try {
    make_current();
    rt_.check(rt_.hipFree(memory), "hipFree");
  } catch (const Error &e) {
    log_warn("kdsl::Buffer: freeing GPU memory failed: {}", e.what());
  }
}

void HipDevice::copy_from_host(void *device_dst, const void *host_src, size_t bytes) {
  make_current();
  rt_.check(rt_.hipMemcpyHtoD(device_dst, host_src, bytes), "hipMemcpyHtoD");
}

void HipDevice::copy_to_host(void *host_dst, const void *device_src, size_t bytes) {
  make_current();
  rt_.check(rt_.hipStreamSynchronize(stream_), "hipStreamSynchronize");
  rt_.check(rt_.hipMemcpyDtoH(host_dst, device_src, bytes), "hipMemcpyDtoH");
}

void HipDevice::synchronize() {
  make_current();
  rt_.check(rt_.hipStreamSynchronize(stream_), "hipStreamSynchronize");
}

size_t HipDevice::free_memory() {
  make_current();
  size_t free_bytes = 0, total_bytes = 0;
  rt_.check(rt_.hipMemGetInfo(&free_bytes, &total_bytes), "hipMemGetInfo");
  return free_bytes;
}

}  // namespace kdsl::detail
