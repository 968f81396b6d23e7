// device_bandwidth.cpp - read stream on the host, device-to-device copy on a GPU
#include "runtime/device_bandwidth.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/cuda/cuda_device.h"
#include "runtime/host_bandwidth.h"

namespace kdsl::runtime {

MeasuredBandwidth measure_device_bandwidth(const Device &device, size_t bytes, int repeats) {
  MeasuredBandwidth m;
  if (device.kind() == Device::Kind::Cpu) {
    m.gbs = measure_read_bandwidth(device.threads(), bytes, repeats);
    m.what = fmt::format("read stream of {} MiB on {} threads", bytes >> 20, device.threads());
    return m;
  }
  if (device.kind() != Device::Kind::Cuda) throw Error(fmt::format("no bandwidth probe for {}: kdsl measures the CPU and CUDA devices", device.name()));
  auto &gpu = static_cast<detail::CudaDevice &>(device.impl());
  Buffer<uint8_t> src(device, bytes), dst(device, bytes);
  auto address = [](const Buffer<uint8_t> &b) { return cuda::CUdeviceptr(reinterpret_cast<uintptr_t>(b.data())); };
  gpu.copy_on_device(address(dst), address(src), bytes);  // warm-up
  double best_ms = 0;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    double ms = gpu.time_ms([&] { gpu.copy_on_device(address(dst), address(src), bytes); });
    best_ms = r == 0 ? ms : std::min(best_ms, ms);
  }
  m.gbs = best_ms > 0 ? 2.0 * double(bytes) / (best_ms * 1e6) : 0;
  m.what = fmt::format("device-to-device copy of {} MiB (read + write)", bytes >> 20);
  return m;
}

}  // namespace kdsl::runtime
