// device.cpp - Device handles (CPU, CUDA, the best present), each answered by its Backend
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include <kdsl/error.h>

#include "runtime/cuda/cuda_device.h"
#include "runtime/host_backend.h"
#include "support/log.h"

namespace kdsl {

Device Device::cpu(int threads) { return Device(std::make_shared<detail::CpuDevice>(threads)); }

Device Device::cuda(int ordinal) {
  // One CudaDevice (stream, events) per GPU; a failed open is retried on the next call.
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<detail::Backend>> opened;
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
MemorySpace Device::memory_space() const { return impl_->memory_space(); }
size_t Device::free_memory() const { return impl_->free_memory(); }
void Device::synchronize() const { impl_->synchronize(); }

}  // namespace kdsl
