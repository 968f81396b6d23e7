// device.cpp - Device handles and the CPU device's grid runner
#include "runtime/device_impl.h"

#include <fmt/format.h>

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

Device Device::best() {
  // GPU devices join here as their backends land; the CPU is always present.
  static Device host = cpu();
  return host;
}

Device::Kind Device::kind() const { return impl_->kind(); }
std::string Device::name() const { return impl_->name(); }
int Device::threads() const { return impl_->threads(); }

}  // namespace kdsl
