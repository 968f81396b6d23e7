// host_bandwidth.cpp - a threaded memcpy timing, the reference for "fraction of bandwidth"
#include "runtime/host_bandwidth.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace kdsl::runtime {

double measure_copy_bandwidth(int threads, size_t bytes, int repeats) {
  if (threads < 1) threads = int(std::thread::hardware_concurrency());
  std::unique_ptr<char[]> src(new char[bytes]), dst(new char[bytes]);
  // Touch every page first (from the threads that will copy them), so the timing sees no faults.
  auto run = [&](auto &&body) {
    std::vector<std::thread> pool;
    size_t slice = bytes / size_t(threads);
    for (int t = 0; t < threads; ++t) {
      size_t begin = size_t(t) * slice, end = t == threads - 1 ? bytes : begin + slice;
      pool.emplace_back([&, begin, end] { body(begin, end); });
    }
    for (auto &th : pool) th.join();
  };
  run([&](size_t b, size_t e) {
    std::memset(src.get() + b, 1, e - b);
    std::memset(dst.get() + b, 0, e - b);
  });
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    run([&](size_t b, size_t e) { std::memcpy(dst.get() + b, src.get() + b, e - b); });
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double gbs = 2.0 * double(bytes) / seconds / 1e9;
    if (gbs > best) best = gbs;
  }
  return best;
}

}  // namespace kdsl::runtime
