// device.cpp - Device handles (CPU, CUDA, the best present) and the CPU device's grid runner
#include "runtime/device_impl.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include <kdsl/error.h>

#include "runtime/cuda/cuda_device.h"
#include "support/log.h"

namespace kdsl {
namespace detail {

CpuDevice::CpuDevice(int threads) : pool_(threads) { codegen::start_host_jit(); }

std::string CpuDevice::name() const { return fmt::format("cpu ({}, {} threads)", codegen::host_target().arch, pool_.size()); }

void CpuDevice::run(codegen::HostEntry entry, const uint64_t *args, const int32_t grid[3]) {
  int64_t programs = int64_t(grid[0]) * grid[1] * grid[2];
  if (programs <= 0) return;
  // One pointer of capture fits std::function's inline storage, so a launch allocates nothing.
  struct Launch {
    codegen::HostEntry entry;
    const uint64_t *args;
    const int32_t *grid;
  } launch{entry, args, grid};
  pool_.parallel_for(programs, [l = &launch](int64_t begin, int64_t end) { l->entry(l->args, begin, end, l->grid); });
}

}  // namespace detail

Device Device::cpu(int threads) { return Device(std::make_shared<detail::CpuDevice>(threads)); }

Device Device::cuda(int ordinal) {
  // One CudaDevice (stream, events) per GPU; a failed open is retried on the next call.
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<detail::DeviceImpl>> opened;
  std::lock_guard lock(mutex);
  auto &device = opened[ordinal];
  if (!device) {
    try {
      device = std::make_shared<detail::CudaDevice>(ordinal);
    } catch (...) {
      opened.erase(ordinal);
      throw;
    }
  }
  return Device(device);
}

Device Device::best() {
  static Device chosen = [] {
    const char *forced = std::getenv("KDSL_DEVICE");
    if (forced && std::string(forced) == "cpu") return cpu();
    try {
      return cuda(0);
    } catch (const Error &e) {
      log_info("Device::best(): no CUDA device ({}); using the CPU", e.what());
      return cpu();
    }
  }();
  return chosen;
}

Device::Kind Device::kind() const { return impl_->kind(); }
std::string Device::name() const { return impl_->name(); }
int Device::threads() const { return impl_->threads(); }

size_t Device::free_memory() const {
  if (kind() == Kind::Cuda) return static_cast<detail::CudaDevice &>(*impl_).free_memory();
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  size_t kb = 0;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

void Device::synchronize() const {
  if (kind() == Kind::Cuda) static_cast<detail::CudaDevice &>(*impl_).synchronize();
}

}  // namespace kdsl
