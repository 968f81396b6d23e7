// host_bandwidth.h - measures this machine's memory bandwidth, the ceiling memory-bound kernels are judged by
#pragma once
#include <cstddef>

namespace kdsl::runtime {

// Best-of-`repeats` bandwidth in GB/s (1e9 bytes/s, bytes read plus bytes written) of a
// multi-threaded memcpy between two buffers of `bytes` each, split evenly across `threads`.
// Use buffers well past the last-level cache.
double measure_copy_bandwidth(int threads, size_t bytes = size_t(256) << 20, int repeats = 5);

// Best-of-`repeats` bandwidth in GB/s of a multi-threaded read-only stream over one buffer of
// `bytes` (each thread sums its slice with the widest vector loads the CPU has, as 1, 2, 4 and 8
// interleaved runs; the best counts): the ceiling
// of a workload that only reads, such as decode streaming its weights. On many machines it
// differs from the copy figure in both directions (copy counts two streams, and glibc's
// memcpy uses non-temporal stores), so a read-only kernel is judged by this one.
double measure_read_bandwidth(int threads, size_t bytes = size_t(256) << 20, int repeats = 5);

}  // namespace kdsl::runtime
