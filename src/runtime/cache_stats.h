// cache_stats.h - the process's compile, cache-hit and launch counters behind kdsl::cache_stats()
#pragma once
#include <atomic>
#include <cstdint>

namespace kdsl::detail {

// Shared by every launch path: DSL kernels on each device (kernel.cpp) and NVRTC kernels
// (cuda/cuda_source.cpp).
struct Stats {
  std::atomic<int64_t> compiled{0}, memory_hits{0}, disk_hits{0}, launches{0};
  std::atomic<int64_t> compile_us{0};
};
Stats &stats();

}  // namespace kdsl::detail
