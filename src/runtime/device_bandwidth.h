// device_bandwidth.h - the memory bandwidth of a device, measured now: the ceiling decode is judged by on the CPU or a GPU
#pragma once
#include <string>

#include <kdsl/device.h>

namespace kdsl::runtime {

struct MeasuredBandwidth {
  double gbs = 0;      // 1e9 bytes per second
  std::string what;    // how it was measured, for the reports ("read stream, 512 MiB, 2 threads")
};

// The CPU: a threaded read-only stream over `bytes` (measure_read_bandwidth). A GPU: a
// device-to-device copy of `bytes`, counting bytes read plus bytes written, timed with CUDA
// events (what a kernel that reads its weights once and writes little can reach at best).
MeasuredBandwidth measure_device_bandwidth(const Device &device, size_t bytes = size_t(512) << 20, int repeats = 3);

}  // namespace kdsl::runtime
