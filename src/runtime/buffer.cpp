// buffer.cpp - GPU memory behind kdsl::Buffer: allocation (zeroed), RAII free, host copies
#include <fmt/format.h>

#include <string_view>

#include <kdsl/device.h>
#include <kdsl/error.h>

#include "runtime/cuda/cuda_device.h"
#include "support/log.h"

namespace kdsl::detail {
namespace {

CudaDevice &cuda_device(const Device &device) {
  if (device.kind() != Device::Kind::Cuda) internal_error(fmt::format("GPU memory requested on {}, which is not a CUDA device", device.name()));
  return static_cast<CudaDevice &>(device.impl());
}

}  // namespace

std::shared_ptr<void> device_alloc(const Device &device, size_t bytes) {
  CudaDevice &gpu = cuda_device(device);
  cuda::CUdeviceptr p = gpu.alloc(bytes);
  try {
    if (bytes) gpu.zero(p, bytes);
  } catch (...) {
    gpu.free(p);
    throw;
  }
  // The deleter holds the device, so memory never outlives the context it belongs to.
  return std::shared_ptr<void>(reinterpret_cast<void *>(p), [device](void *q) {
    try {
      cuda_device(device).free(reinterpret_cast<cuda::CUdeviceptr>(q));
    } catch (const Error &e) {
      // Destructors must not throw; a Buffer outliving the driver (at exit) has nothing to free.
      if (std::string_view(e.what()).find("CUDA_ERROR_DEINITIALIZED") == std::string_view::npos)
        log_warn("kdsl::Buffer: freeing GPU memory failed: {}", e.what());
    }
  });
}

void device_copy_from_host(const Device &device, void *device_dst, const void *host_src, size_t bytes) {
  cuda_device(device).copy_to_device(reinterpret_cast<cuda::CUdeviceptr>(device_dst), host_src, bytes);
}

void device_copy_to_host(const Device &device, void *host_dst, const void *device_src, size_t bytes) {
  // cuMemcpyDtoH runs on the legacy default stream, which waits for the device's (blocking)
  // stream, so the launches issued before it have finished when it reads.
  cuda_device(device).copy_to_host(host_dst, reinterpret_cast<cuda::CUdeviceptr>(device_src), bytes);
}

void buffer_size_error(const char *call, size_t given, size_t size) {
  throw Error(fmt::format("kdsl::Buffer::{}: {} elements given, the buffer holds {}", call, given, size));
}

}  // namespace kdsl::detail
