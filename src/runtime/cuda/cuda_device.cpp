// cuda_device.cpp - the CUDA device: queries into TargetInfo, memory, module loading, launches
#include "runtime/cuda/cuda_device.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

#include <kdsl/error.h>

#include "runtime/cuda/cuda_target.h"
#include "runtime/launch_profile.h"

namespace kdsl::detail {
namespace {

// The code a GPU of compute capability major.minor runs: sm_80 cubins on 8.0-8.7 (forward
// compatible within a major), sm_89 on 8.9 (Ada: fp8 conversions), sm_90a on 9.0 (H100, H200:
// wgmma), sm_90 PTX, which the driver compiles at load, on later majors (sm_90a code runs on
// 9.0 alone). KDSL_CUDA_ARCH=<target>
// asks for another target the GPU can run (sm_80 or sm_90 on an H200, to set mma.sync against
// wgmma), as PTX where its cubin would not load.
struct DeviceCode {
  std::string arch;
  bool ptx = false;
};

DeviceCode code_for(int major, int minor, const std::string &device) {
  const char *asked = std::getenv("KDSL_CUDA_ARCH");
  if (!asked || !*asked) {
    if (major > 9) return {"sm_90", true};
    if (major == 9) return {"sm_90a", false};
    return {minor >= 9 ? "sm_89" : "sm_80", false};
  }
  std::vector<std::string> nvidia;
  for (const std::string &name : codegen::target_names())
    if (codegen::target_info(name).backend == "cuda") nvidia.push_back(name);
  if (std::find(nvidia.begin(), nvidia.end(), asked) == nvidia.end())
    throw Error(fmt::format("KDSL_CUDA_ARCH={}: not an NVIDIA target kdsl knows ({})", asked, fmt::join(nvidia, ", ")));
  int cc = codegen::target_info(asked).compute_capability, have = major * 10 + minor;
  bool specific = std::string(asked).ends_with("a");  // sm_90a: that GPU alone
  if (cc > have || (specific && cc != have))
    throw Error(fmt::format("KDSL_CUDA_ARCH={}: {} (compute capability {}.{}) cannot run it{}", asked, device, major, minor,
                            specific ? fmt::format(" (its code runs on compute capability {}.{} alone)", cc / 10, cc % 10) : ""));
  return {asked, cc / 10 != major};
}

}  // namespace

CudaDevice::CudaDevice(int ordinal, const cuda::Driver &driver) : drv_(driver), ordinal_(ordinal) {
  int count = 0;
  drv_.check(drv_.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw Error(fmt::format("no CUDA device found (CUDA_ERROR_NO_DEVICE): the driver ({}) sees no GPU", drv_.library));
  if (ordinal < 0 || ordinal >= count)
    throw Error(fmt::format("CUDA device {} requested; the driver ({}) sees {} device(s)", ordinal, drv_.library, count));
  drv_.check(drv_.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  char name[256] = {};
  drv_.check(drv_.cuDeviceGetName(name, sizeof name, device_), "cuDeviceGetName");
  auto attribute = [&](int which, const char *what) {
    int v = 0;
    drv_.check(drv_.cuDeviceGetAttribute(&v, which, device_), what);
    return v;
  };
  int major = attribute(cuda::kAttrComputeCapabilityMajor, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  int minor = attribute(cuda::kAttrComputeCapabilityMinor, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  if (major < 8) throw Error(fmt::format("CUDA device {} ({}) is sm_{}{}; kdsl's NVIDIA backend needs sm_80 or newer", ordinal, name, major, minor));
  DeviceCode code = code_for(major, minor, fmt::format("CUDA device {} ({})", ordinal, name));
  info_ = codegen::target_info(code.arch);
  embeds_ptx_ = code.ptx;
  info_.sm_count = attribute(cuda::kAttrMultiprocessorCount, "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  info_.warp_size = attribute(cuda::kAttrWarpSize, "cuDeviceGetAttribute(WARP_SIZE)");
  info_.max_threads_per_block = attribute(cuda::kAttrMaxThreadsPerBlock, "cuDeviceGetAttribute(MAX_THREADS_PER_BLOCK)");
  info_.shared_bytes_static = attribute(cuda::kAttrMaxSharedPerBlock, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK)");
  info_.shared_bytes_optin = attribute(cuda::kAttrMaxSharedPerBlockOptin, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
  name_ = fmt::format("cuda:{} ({}, sm_{}{}, {} SMs)", ordinal, name, major, minor, info_.sm_count);
  // The cache key's arch: a GPU that gets PTX must not load another's cubin of the same code.
  target_ = cuda_target(info_, embeds_ptx_ ? fmt::format("sm_{}{} ({} PTX)", major, minor, info_.name) : info_.name);
  drv_.check(drv_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  make_current();
  drv_.check(drv_.cuStreamCreate(&stream_, 0), "cuStreamCreate");
  drv_.check(drv_.cuEventCreate(&start_, 0), "cuEventCreate");
  drv_.check(drv_.cuEventCreate(&stop_, 0), "cuEventCreate");
}

std::string CudaDevice::context_key() const { return fmt::format("cuda:{}@{}", ordinal_, static_cast<const void *>(context_)); }

std::string CudaDevice::loaded_code_scope() const { return fmt::format("@{}", context_key()); }

// The primary context is current per host thread: every entry point makes it so.
void CudaDevice::make_current() const { check(drv_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

std::string CudaDevice::last_launch_note() const {
  std::lock_guard lock(last_mutex_);
  if (last_.shared_bytes < 0) return "";
  return fmt::format("; the last kernel launched on {} was '{}' (grid ({}, {}, {}), block ({}, {}, {}), {} bytes of dynamic shared memory): "
                     "launches are asynchronous, so rerun with CUDA_LAUNCH_BLOCKING=1 to find the launch that failed",
                     name_, last_.name, last_.grid[0], last_.grid[1], last_.grid[2], last_.block[0], last_.block[1], last_.block[2], last_.shared_bytes);
}

void CudaDevice::check(cuda::CUresult result, const char *call) const {
  if (result == 0) return;
  try {
    drv_.check(result, call);
  } catch (const Error &e) {
    throw Error(e.what() + last_launch_note());
  }
}

cuda::CUdeviceptr CudaDevice::alloc(size_t bytes) {
  make_current();
  cuda::CUdeviceptr p = 0;
  check(drv_.cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
  return p;
}
void CudaDevice::free(cuda::CUdeviceptr p) {
  make_current();
  check(drv_.cuMemFree(p), "cuMemFree");
}
void CudaDevice::copy_to_device(cuda::CUdeviceptr dst, const void *src, size_t bytes) {
  make_current();
  check(drv_.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}
void CudaDevice::copy_to_host(void *dst, cuda::CUdeviceptr src, size_t bytes) {
  make_current();
  check(drv_.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
  if (!profiled_.empty()) read_profile();
}
void CudaDevice::zero(cuda::CUdeviceptr dst, size_t bytes) {
  make_current();
  check(drv_.cuMemsetD8(dst, 0, bytes), "cuMemsetD8");
}
void CudaDevice::copy_on_device(cuda::CUdeviceptr dst, cuda::CUdeviceptr src, size_t bytes) {
  make_current();
  check(drv_.cuMemcpyDtoD(dst, src, bytes), "cuMemcpyDtoD");
}

CudaFunction CudaDevice::load(const std::vector<uint8_t> &image, const std::string &symbol, int shared_bytes, int threads) {
  make_current();
  CudaFunction f;
  f.shared_bytes = shared_bytes;
  f.threads = threads;
  f.name = symbol;
  check(drv_.cuModuleLoadData(&f.module, image.data()), "cuModuleLoadData");
  check(drv_.cuModuleGetFunction(&f.function, f.module, symbol.c_str()), "cuModuleGetFunction");
  allow_shared(f, shared_bytes);
  return f;
}

void CudaDevice::allow_shared(const CudaFunction &f, int bytes) {
  if (bytes <= 0) return;
  make_current();
  // The default limit (48 KB) and the opt-in limit both count static and dynamic shared memory together.
  int static_bytes = 0;
  check(drv_.cuFuncGetAttribute(&static_bytes, cuda::kFuncAttrSharedSizeBytes, f.function), "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
  if (int64_t(static_bytes) + bytes > info_.shared_bytes_optin)
    throw Error(fmt::format("kernel '{}' needs {} bytes of static and {} bytes of dynamic shared memory per block; {} allows {} in all", f.name,
                            static_bytes, bytes, name_, info_.shared_bytes_optin));
  if (static_bytes + bytes <= info_.shared_bytes_static) return;
  check(drv_.cuFuncSetAttribute(f.function, cuda::kFuncAttrMaxDynamicSharedBytes, bytes), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

std::optional<std::vector<size_t>> CudaDevice::parameter_sizes(const CudaFunction &f) {
  if (!drv_.cuFuncGetParamInfo) return std::nullopt;
  make_current();
  std::vector<size_t> sizes;
  size_t offset = 0, size = 0;
  for (;;) {
    cuda::CUresult r = drv_.cuFuncGetParamInfo(f.function, sizes.size(), &offset, &size);
    if (r == 0) {
      sizes.push_back(size);
      continue;
    }
    // CUDA_ERROR_INVALID_VALUE past the last parameter. At index 0 it may also be a query the
    // driver cannot answer (no parameter information in the module): a kernel without
    // parameters is rare, and "unknown" only leaves the check off, where an empty list would
    // refuse every launch.
    if (r == 1 && !sizes.empty()) return sizes;
    return std::nullopt;
  }
}

void CudaDevice::unload(const CudaFunction &f) {
  make_current();
  check(drv_.cuModuleUnload(f.module), "cuModuleUnload");
}

void CudaDevice::launch(const CudaFunction &f, const int32_t grid[3], const uint64_t *slots, size_t count, const cuda::CUtensorMap *maps,
                        size_t map_count) {
  // Little-endian: each value sits in its slot's low bytes. The driver only reads through these.
  void *stack_params[32];
  std::vector<void *> heap_params;
  void **params = stack_params;
  if (count + map_count > 32) {
    heap_params.resize(count + map_count);
    params = heap_params.data();
  }
  for (size_t i = 0; i < count; ++i) params[i] = const_cast<uint64_t *>(&slots[i]);
  for (size_t i = 0; i < map_count; ++i) params[count + i] = const_cast<cuda::CUtensorMap *>(&maps[i]);
  const unsigned g[3] = {unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2])}, block[3] = {unsigned(f.threads), 1, 1};
  launch(f, g, block, f.shared_bytes, params);
}

void CudaDevice::launch(const CudaFunction &f, const unsigned grid[3], const unsigned block[3], int shared_bytes, void **params) {
  if (uint64_t(grid[0]) * grid[1] * grid[2] == 0) return;
  make_current();
  cuda::CUevent start = profile_begin();
  cuda::CUresult r =
      drv_.cuLaunchKernel(f.function, grid[0], grid[1], grid[2], block[0], block[1], block[2], unsigned(shared_bytes), stream_, params, nullptr);
  if (r != 0) {
    if (start) spare_events_.push_back(start);
    std::string why;
    try {
      drv_.check(r, "cuLaunchKernel");
    } catch (const Error &e) {
      why = e.what();
    }
    throw Error(fmt::format("kernel '{}' did not launch on {} (grid ({}, {}, {}), block ({}, {}, {}), {} bytes of dynamic shared memory): {}{}", f.name,
                            name_, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, why, last_launch_note()));
  }
  profile_end(start, f.name);
  note_last_launch(f.name, grid, block, shared_bytes);
  // CUDA_LAUNCH_BLOCKING=1 makes the driver wait here, so a fault names this launch.
}

size_t CudaDevice::free_memory() {
  make_current();
  size_t free_bytes = 0, total_bytes = 0;
  check(drv_.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
  return free_bytes;
}

void CudaDevice::synchronize() {
  make_current();
  check(drv_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  if (!profiled_.empty()) read_profile();
}

// KDSL_PROFILE: each launch is bracketed by events and left to run as it would unprofiled,
// so the table shows the kernels' own times and, apart, the device's idle time between them
// (what launching costs where the host does not keep ahead of the device). A capture records
// launches, not events.
cuda::CUevent CudaDevice::profile_begin() {
  if (!launch_profile_enabled() || capturing()) return nullptr;
  cuda::CUevent start = take_event();
  check(drv_.cuEventRecord(start, stream_), "cuEventRecord");
  return start;
}

void CudaDevice::profile_end(cuda::CUevent start, const std::string &name) {
  if (!start) return;
  cuda::CUevent stop = take_event();
  check(drv_.cuEventRecord(stop, stream_), "cuEventRecord");
  profiled_.push_back({name, start, stop});
  constexpr size_t kProfileBatch = 4096;  // events held before a batch is read (a full one waits)
  if (profiled_.size() >= kProfileBatch) read_profile();
}

void CudaDevice::note_last_launch(const std::string &name, const unsigned grid[3], const unsigned block[3], int shared_bytes) {
  std::lock_guard lock(last_mutex_);
  last_.name.assign(name);  // reuses its capacity: no allocation per launch
  for (int i = 0; i < 3; ++i) last_.grid[i] = grid[i], last_.block[i] = block[i];
  last_.shared_bytes = shared_bytes;
}

cuda::CUevent CudaDevice::take_event() {
  cuda::CUevent e = nullptr;
  if (!spare_events_.empty()) {
    e = spare_events_.back();
    spare_events_.pop_back();
  } else {
    check(drv_.cuEventCreate(&e, 0), "cuEventCreate");
  }
  return e;
}

void CudaDevice::read_profile() {
  std::vector<ProfiledLaunch> batch;
  batch.swap(profiled_);  // emptied first: a failure below must not read the batch again
  for (ProfiledLaunch &p : batch) spare_events_.push_back(p.start), spare_events_.push_back(p.stop);
  check(drv_.cuEventSynchronize(batch.back().stop), "cuEventSynchronize");
  auto elapsed_us = [&](cuda::CUevent from, cuda::CUevent to) {
    float ms = 0;
    check(drv_.cuEventElapsedTime(&ms, from, to), "cuEventElapsedTime");
    return 1000.0 * double(ms);
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    record_launch(batch[i].name, elapsed_us(batch[i].start, batch[i].stop));
    if (i > 0) record_launch(kIdleBetweenLaunches, elapsed_us(batch[i - 1].stop, batch[i].start));
  }
  profiled_.swap(batch);  // keeps the vector's capacity for the next batch
  profiled_.clear();
}

void CudaDevice::begin_timing() {
  make_current();
  check(drv_.cuEventRecord(start_, stream_), "cuEventRecord");
}
double CudaDevice::end_timing() {
  check(drv_.cuEventRecord(stop_, stream_), "cuEventRecord");
  check(drv_.cuEventSynchronize(stop_), "cuEventSynchronize");
  float ms = 0;
  check(drv_.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
  return ms;
}

}  // namespace kdsl::detail
