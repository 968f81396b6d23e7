// device.cpp - Device handles (CPU, CUDA, HIP, the best present), each answered by its Backend
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <kdsl/error.h>

#include "runtime/cuda/cuda_device.h"
#include "runtime/hip/hip_device.h"
#include "runtime/host_backend.h"
#include "support/log.h"

namespace kdsl {

Device Device::cpu(int threads) { return Device(std::make_shared<detail::CpuDevice>(threads)); }

namespace {

// One backend (stream, events) per GPU of a kind; a failed open is retried on the next call.
template <class GpuBackend>
std::shared_ptr<detail::Backend> opened_once(int ordinal) {
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<detail::Backend>> opened;
  std::lock_guard lock(mutex);
  auto &device = opened[ordinal];
  if (!device) {
    try {
      device = std::make_shared<GpuBackend>(ordinal);
    } catch (...) {
      opened.erase(ordinal);
      throw;
    }
  }
  return device;
}

}  // namespace

Device Device::cuda(int ordinal) { return Device(opened_once<detail::CudaDevice>(ordinal)); }

Device Device::hip(int ordinal) { return Device(opened_once<detail::HipDevice>(ordinal)); }

Device Device::best() {
  static Device chosen = [] {
    const char *forced = std::getenv("KDSL_DEVICE");
    if (forced && std::string(forced) == "cpu") return cpu();
    try {
      return cuda(0);
    } catch (const Error &e) {
      log_info("Device::best(): no CUDA device ({})", e.what());
    }
    try {
      return hip(0);
    } catch (const Error &e) {
      log_info("Device::best(): no HIP device ({}); using the CPU", e.what());
    }
    return cpu();
  }();
  return chosen;
}

Device::Kind Device::kind() const { return impl_->kind(); }
std::string Device::name() const { return impl_->name(); }
int Device::threads() const { return impl_->threads(); }
MemorySpace Device::memory_space() const { return impl_->memory_space(); }
size_t Device::free_memory() const { return impl_->free_memory(); }
void Device::synchronize() const {
  if (impl_->capturing()) detail::capture_refusal("Device::synchronize", name());
  impl_->synchronize();
}

bool Device::has_cpu_feature(std::string_view feature) const {
  if (kind() != Kind::Cpu) return false;
  // Every CPU device compiles for the one host target (host_backend.h); its enabled features
  // are read into a set once, since the kernel library asks per product (int_dot_policy.h).
  static const std::set<std::string, std::less<>> enabled = [&] {
    const std::vector<std::string_view> names = impl_->target().enabled_features();
    return std::set<std::string, std::less<>>(names.begin(), names.end());
  }();
  return enabled.contains(feature);
}

}  // namespace kdsl
