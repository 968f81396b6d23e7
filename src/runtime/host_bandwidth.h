// host_bandwidth.h - measures this machine's memory bandwidth, the ceiling memory-bound kernels are judged by
#pragma once
#include <cstddef>

namespace kdsl::runtime {

// Best-of-`repeats` bandwidth in GB/s (1e9 bytes/s, bytes read plus bytes written) of a
// multi-threaded memcpy between two buffers of `bytes` each, split evenly across `threads`.
// Use buffers well past the last-level cache.
double measure_copy_bandwidth(int threads, size_t bytes = size_t(256) << 20, int repeats = 5);

}  // namespace kdsl::runtime
