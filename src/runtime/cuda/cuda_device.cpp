// cuda_device.cpp - the CUDA device: queries into TargetInfo, memory, module loading, launches
#include "runtime/cuda/cuda_device.h"

#include <fmt/format.h>

#include <kdsl/error.h>

namespace kdsl::detail {

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
  // sm_8x runs sm_80 code, sm_9x and later sm_90 code (cubins are forward compatible within a major).
  info_ = codegen::target_info(major >= 9 ? "sm_90" : "sm_80");
  info_.sm_count = attribute(cuda::kAttrMultiprocessorCount, "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  info_.warp_size = attribute(cuda::kAttrWarpSize, "cuDeviceGetAttribute(WARP_SIZE)");
  info_.max_threads_per_block = attribute(cuda::kAttrMaxThreadsPerBlock, "cuDeviceGetAttribute(MAX_THREADS_PER_BLOCK)");
  info_.shared_bytes_static = attribute(cuda::kAttrMaxSharedPerBlock, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK)");
  info_.shared_bytes_optin = attribute(cuda::kAttrMaxSharedPerBlockOptin, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
  name_ = fmt::format("cuda:{} ({}, sm_{}{}, {} SMs)", ordinal, name, major, minor, info_.sm_count);
  target_.backend = "cuda";
  target_.arch = info_.name;
  target_.triple = info_.triple;
  drv_.check(drv_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  make_current();
  drv_.check(drv_.cuStreamCreate(&stream_, 0), "cuStreamCreate");
  drv_.check(drv_.cuEventCreate(&start_, 0), "cuEventCreate");
  drv_.check(drv_.cuEventCreate(&stop_, 0), "cuEventCreate");
}

std::string CudaDevice::context_key() const { return fmt::format("cuda:{}@{}", ordinal_, static_cast<const void *>(context_)); }

// The primary context is current per host thread: every entry point makes it so.
void CudaDevice::make_current() const { drv_.check(drv_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

cuda::CUdeviceptr CudaDevice::alloc(size_t bytes) {
  make_current();
  cuda::CUdeviceptr p = 0;
  drv_.check(drv_.cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
  return p;
}
void CudaDevice::free(cuda::CUdeviceptr p) {
  make_current();
  drv_.check(drv_.cuMemFree(p), "cuMemFree");
}
void CudaDevice::copy_to_device(cuda::CUdeviceptr dst, const void *src, size_t bytes) {
  make_current();
  drv_.check(drv_.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}
void CudaDevice::copy_to_host(void *dst, cuda::CUdeviceptr src, size_t bytes) {
  make_current();
  drv_.check(drv_.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}
void CudaDevice::zero(cuda::CUdeviceptr dst, size_t bytes) {
  make_current();
  drv_.check(drv_.cuMemsetD8(dst, 0, bytes), "cuMemsetD8");
}
void CudaDevice::copy_on_device(cuda::CUdeviceptr dst, cuda::CUdeviceptr src, size_t bytes) {
  make_current();
  drv_.check(drv_.cuMemcpyDtoD(dst, src, bytes), "cuMemcpyDtoD");
}

CudaFunction CudaDevice::load(const std::vector<uint8_t> &image, const std::string &symbol, int shared_bytes, int threads) {
  make_current();
  CudaFunction f;
  f.shared_bytes = shared_bytes;
  f.threads = threads;
  drv_.check(drv_.cuModuleLoadData(&f.module, image.data()), "cuModuleLoadData");
  drv_.check(drv_.cuModuleGetFunction(&f.function, f.module, symbol.c_str()), "cuModuleGetFunction");
  allow_shared(f, shared_bytes);
  return f;
}

void CudaDevice::allow_shared(const CudaFunction &f, int bytes) {
  if (bytes <= info_.shared_bytes_static) return;
  make_current();
  drv_.check(drv_.cuFuncSetAttribute(f.function, cuda::kFuncAttrMaxDynamicSharedBytes, bytes), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

std::optional<std::vector<size_t>> CudaDevice::parameter_sizes(const CudaFunction &f) {
  if (!drv_.cuFuncGetParamInfo) return std::nullopt;
  make_current();
  std::vector<size_t> sizes;
  size_t offset = 0, size = 0;
  // The driver answers CUDA_ERROR_INVALID_VALUE past the last parameter.
  while (drv_.cuFuncGetParamInfo(f.function, sizes.size(), &offset, &size) == 0) sizes.push_back(size);
  return sizes;
}

void CudaDevice::unload(const CudaFunction &f) {
  make_current();
  drv_.check(drv_.cuModuleUnload(f.module), "cuModuleUnload");
}

void CudaDevice::launch(const CudaFunction &f, const int32_t grid[3], const uint64_t *slots, size_t count) {
  // Little-endian: each value sits in its slot's low bytes. The driver only reads through these.
  void *stack_params[32];
  std::vector<void *> heap_params;
  void **params = stack_params;
  if (count > 32) {
    heap_params.resize(count);
    params = heap_params.data();
  }
  for (size_t i = 0; i < count; ++i) params[i] = const_cast<uint64_t *>(&slots[i]);
  const unsigned g[3] = {unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2])}, block[3] = {unsigned(f.threads), 1, 1};
  launch(f, g, block, f.shared_bytes, params);
}

void CudaDevice::launch(const CudaFunction &f, const unsigned grid[3], const unsigned block[3], int shared_bytes, void **params) {
  if (uint64_t(grid[0]) * grid[1] * grid[2] == 0) return;
  make_current();
  drv_.check(drv_.cuLaunchKernel(f.function, grid[0], grid[1], grid[2], block[0], block[1], block[2], unsigned(shared_bytes), stream_, params,
                                 nullptr),
             "cuLaunchKernel");
}

size_t CudaDevice::free_memory() {
  make_current();
  size_t free_bytes = 0, total_bytes = 0;
  drv_.check(drv_.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
  return free_bytes;
}

void CudaDevice::synchronize() {
  make_current();
  drv_.check(drv_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void CudaDevice::begin_timing() {
  make_current();
  drv_.check(drv_.cuEventRecord(start_, stream_), "cuEventRecord");
}
double CudaDevice::end_timing() {
  drv_.check(drv_.cuEventRecord(stop_, stream_), "cuEventRecord");
  drv_.check(drv_.cuEventSynchronize(stop_), "cuEventSynchronize");
  float ms = 0;
  drv_.check(drv_.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
  return ms;
}

}  // namespace kdsl::detail
