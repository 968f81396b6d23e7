// bandwidth_record.h - a device's memory-bandwidth ceiling, measured once per machine and kept beside the kernel cache
#pragma once
#include <filesystem>

#include "runtime/device_bandwidth.h"

namespace kdsl::runtime {

// The ceiling kdsl-run's summary judges decode by. Measuring it costs most of a second and a
// 512 MiB buffer (1 GiB on a GPU), far more than a short run itself, and one sample on a busy
// machine is noisy; so it is measured once per device (its name: CPU model and threads, or GPU)
// and kept as a small JSON record in `dir` (the kernel cache directory), and read back on later
// runs. `remeasure` measures again and replaces the record. A record that is missing, unreadable,
// not this user's, for another device or from another way of measuring (an earlier kdsl's) is
// measured anew; a failure to store it is not an error.
MeasuredBandwidth recorded_device_bandwidth(const Device &device, const std::filesystem::path &dir, bool remeasure = false);

}  // namespace kdsl::runtime
