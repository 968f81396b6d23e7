// host_bandwidth.cpp - threaded memcpy and read-stream timings, the references for "fraction of bandwidth"
#include "runtime/host_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/host_memory.h"

namespace kdsl::runtime {
namespace {

// Runs body(thread, begin, end) on `threads` threads over even slices of [0, bytes), each a
// multiple of 256 bytes (bytes itself is one).
template <class F>
void on_threads(int threads, size_t bytes, F &&body) {
  std::vector<std::thread> pool;
  size_t slice = bytes / size_t(threads) / 256 * 256;
  for (int t = 0; t < threads; ++t) {
    size_t begin = size_t(t) * slice, end = t == threads - 1 ? bytes : begin + slice;
    pool.emplace_back([&, t, begin, end] { body(t, begin, end); });
  }
  for (auto &th : pool) th.join();
}

// A buffer from the CPU device's allocator (host_memory.h), released with it.
struct ReleaseHostBuffer {
  void operator()(char *p) const noexcept { release_host_buffer(p); }
};
using HostBytes = std::unique_ptr<char[], ReleaseHostBuffer>;
HostBytes host_bytes(size_t bytes) { return HostBytes(static_cast<char *>(allocate_host_buffer(bytes))); }

template <class F>
double best_gbs(int repeats, double bytes_moved, F &&run) {
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    run();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, bytes_moved / seconds / 1e9);
  }
  return best;
}

// Sums `streams` interleaved runs of [p, p + n): run s is [s * n / streams, (s + 1) * n / streams),
// read 256 bytes from each in turn (n a multiple of 64 * streams floats), into one accumulator a
// vector of the 256 bytes so the loop is bound by loads in flight rather than by the add latency.
// Several runs per thread keep more DRAM pages and prefetch streams busy than one (bench/RESULTS.md,
// the engine entry whose read stream is "the best of 1, 2, 4 and 8 interleaved runs"). The decode
// products read 8 rows far apart per thread (kernels/common.h, spread_rows), so the ceiling
// they are judged by includes 8 runs.
//
// V is a GCC vector of the target's own register width. A vector wider than the registers is
// moved through the stack: a 64-byte vector on AVX2 made this loop a shuffle through memory,
// slower than the memory it was to measure (the RESULTS entry of 2026-12-06 on the read
// stream's AVX2 code), and every "fraction of the stream" judged against it read high.
template <class V>
[[gnu::always_inline]] inline float sum_runs(const float *p, size_t n, int streams) {
  constexpr size_t kLanes = sizeof(V) / sizeof(float), kStep = 64;  // floats a run a turn
  V acc[kStep / kLanes] = {};
  const size_t run = n / size_t(streams);
  for (size_t i = 0; i < run; i += kStep) {
    for (int s = 0; s < streams; ++s) {
      const float *q = p + size_t(s) * run + i;
      for (size_t k = 0; k < kStep / kLanes; ++k) {
        V v;
        std::memcpy(&v, q + k * kLanes, sizeof(V));
        acc[k] += v;
      }
    }
  }
  float total = 0;
  for (size_t k = 0; k < kStep / kLanes; ++k)
    for (size_t l = 0; l < kLanes; ++l) total += acc[k][l];
  return total;
}

using f32x4 = float __attribute__((vector_size(16)));
#if defined(__x86_64__) && defined(__GNUC__)
using f32x8 = float __attribute__((vector_size(32)));
using f32x16 = float __attribute__((vector_size(64)));
[[gnu::target("avx512f")]] float sum_runs_avx512(const float *p, size_t n, int streams) {
  return sum_runs<f32x16>(p, n, streams);
}
[[gnu::target("avx2")]] float sum_runs_avx2(const float *p, size_t n, int streams) {
  return sum_runs<f32x8>(p, n, streams);
}
#endif

float sum_stream(const float *p, size_t n, int streams) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f")) return sum_runs_avx512(p, n, streams);
  if (__builtin_cpu_supports("avx2")) return sum_runs_avx2(p, n, streams);
#endif
  return sum_runs<f32x4>(p, n, streams);
}

}  // namespace

double measure_copy_bandwidth(int threads, size_t bytes, int repeats) {
  if (threads < 1) threads = int(std::thread::hardware_concurrency());
  bytes = bytes / 256 * 256;
  // On the pages kernels' buffers get (measure_read_bandwidth says why), every page touched
  // first by the thread that will copy it, so the timing sees no faults.
  const HostBytes src = host_bytes(bytes), dst = host_bytes(bytes);
  on_threads(threads, bytes, [&](int, size_t b, size_t e) {
    std::memset(src.get() + b, 1, e - b);
    std::memset(dst.get() + b, 0, e - b);
  });
  return best_gbs(repeats, 2.0 * double(bytes), [&] {
    on_threads(threads, bytes, [&](int, size_t b, size_t e) { std::memcpy(dst.get() + b, src.get() + b, e - b); });
  });
}

double measure_read_bandwidth(int threads, size_t bytes, int repeats) {
  if (threads < 1) threads = int(std::thread::hardware_concurrency());
  bytes = bytes / (2048 * size_t(threads)) * (2048 * size_t(threads));  // every slice splits into 8 runs of 256-byte steps
  // On the pages the weights and the KV cache get (host_memory.h: 2 MiB where the kernel grants
  // them), so the ceiling and what is judged by it pay the same TLB costs; every page touched
  // first, by the thread that reads it, so the timing sees no faults.
  const HostBytes memory = host_bytes(bytes);
  on_threads(threads, bytes, [&](int, size_t b, size_t e) { std::memset(memory.get() + b, 0, e - b); });
  const auto *data = reinterpret_cast<const float *>(memory.get());
  std::vector<float> sums(size_t(threads) * 16);  // one cache line per thread: the result stays live
  double best = 0;
  for (int streams : {1, 2, 4, 8})
    best = std::max(best, best_gbs(repeats, double(bytes), [&] {
                      on_threads(threads, bytes, [&](int t, size_t b, size_t e) { sums[size_t(t) * 16] = sum_stream(data + b / 4, (e - b) / 4, streams); });
                    }));
  return best;
}

}  // namespace kdsl::runtime
