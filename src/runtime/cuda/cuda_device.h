// cuda_device.h - an NVIDIA GPU as a kdsl device: context, memory, modules, launches, queries
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/target_info.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/device_impl.h"

namespace kdsl::detail {

// One kernel loaded into the device's context.
struct CudaFunction {
  cuda::CUmodule module = nullptr;
  cuda::CUfunction function = nullptr;
  int shared_bytes = 0;  // dynamic shared memory per block
  int threads = 0;       // per block
};

class CudaDevice final : public DeviceImpl {
 public:
  // Opens GPU `ordinal` (its primary context). Throws kdsl::Error when there is no driver,
  // no such GPU, or the GPU is older than sm_80.
  explicit CudaDevice(int ordinal) : CudaDevice(ordinal, cuda::driver()) {}
  // The same through an explicit driver, which must outlive the device (tests load a fake one).
  CudaDevice(int ordinal, const cuda::Driver &driver);
  Device::Kind kind() const override { return Device::Kind::Cuda; }
  int ordinal() const { return ordinal_; }
  // Loaded modules belong to a context: in-memory cache keys carry this ("cuda:0@0x...").
  std::string context_key() const;
  std::string name() const override { return name_; }
  const codegen::TargetDesc &target() const override { return target_; }
  int threads() const override { return info_.sm_count; }
  // The compiler's target description with this GPU's queried limits.
  const codegen::TargetInfo &info() const { return info_; }

  cuda::CUdeviceptr alloc(size_t bytes);
  void free(cuda::CUdeviceptr p);
  void copy_to_device(cuda::CUdeviceptr dst, const void *src, size_t bytes);
  void copy_to_host(void *dst, cuda::CUdeviceptr src, size_t bytes);
  void copy_on_device(cuda::CUdeviceptr dst, cuda::CUdeviceptr src, size_t bytes);
  void zero(cuda::CUdeviceptr dst, size_t bytes);

  // Loads a cubin or NUL-terminated PTX (the driver JIT-compiles it) and finds `symbol`.
  CudaFunction load(const std::vector<uint8_t> &image, const std::string &symbol, int shared_bytes, int threads);
  void unload(const CudaFunction &f);
  // Lets f use `bytes` of dynamic shared memory per block (beyond 48 KB needs this opt-in).
  void allow_shared(const CudaFunction &f, int bytes);
  // The sizes of f's parameters, in order; nullopt where the driver cannot say (before 12.4).
  std::optional<std::vector<size_t>> parameter_sizes(const CudaFunction &f);
  // Launches over grid[3] with f.threads threads per block and one 8-byte slot per kernel
  // argument (values in the low bytes).
  void launch(const CudaFunction &f, const int32_t grid[3], const uint64_t *slots, size_t count);
  // Launches with an explicit block shape; params[i] points at argument i's value, as
  // cuLaunchKernel takes them.
  void launch(const CudaFunction &f, const unsigned grid[3], const unsigned block[3], int shared_bytes, void **params);
  void synchronize();
  size_t free_memory();
  // Milliseconds `body` takes on the device's stream, timed with CUDA events.
  template <class F>
  double time_ms(F &&body) {
    begin_timing();
    body();
    return end_timing();
  }

 private:
  void make_current() const;
  void begin_timing();
  double end_timing();

  const cuda::Driver &drv_;
  int ordinal_ = 0;
  cuda::CUdevice device_ = 0;
  cuda::CUcontext context_ = nullptr;
  cuda::CUstream stream_ = nullptr;
  cuda::CUevent start_ = nullptr, stop_ = nullptr;
  std::string name_;
  codegen::TargetDesc target_;
  codegen::TargetInfo info_;
};

}  // namespace kdsl::detail
