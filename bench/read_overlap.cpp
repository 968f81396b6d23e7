// read_overlap.cpp - does this machine overlap a read stream with compute? A plain byte-dot loop's rate from cache and from memory, against the two models
//
// Not part of the build: it asks whether a decode product's reads and its arithmetic can
// overlap on a given machine, so that a product whose compute alone outruns the stream should
// run at the stream. Each thread walks its half of a buffer, 128 bytes a step, with W rounds of
// vpmaddubsw + vpaddw per 32 bytes (W sets the compute per byte) and, where PF > 0, a
// prefetch PF bytes ahead. "cache" walks 512 KiB (in L2) over and over: the loop's own rate;
// "memory" walks 1 GiB once. "additive" is the memory rate if reads and compute took turns,
// 1 / (1/cache + 1/stream); "overlap" the rate if they overlapped, min(cache, stream).
// Build and run:
//   g++ -O2 -mavx2 -std=c++20 bench/read_overlap.cpp -o /tmp/read_overlap -lpthread && /tmp/read_overlap
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 2;

template <int W, int PF>
__attribute__((noinline)) int walk(const uint8_t *p, size_t n) {
  __m256i sums[4] = {};
  const __m256i x = _mm256_set1_epi8(3), low = _mm256_set1_epi8(15);
  for (size_t i = 0; i < n; i += 128) {
    if (PF) {
      _mm_prefetch(reinterpret_cast<const char *>(p + i + PF), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char *>(p + i + PF + 64), _MM_HINT_T0);
    }
    for (int k = 0; k < 4; ++k) {
      __m256i q = _mm256_and_si256(_mm256_load_si256(reinterpret_cast<const __m256i *>(p + i + 32 * k)), low);
      __m256i pairs = q;
      for (int w = 0; w < W; ++w) {
        pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(q, x));
        q = _mm256_srli_epi16(q, 1);
      }
      sums[k] = _mm256_add_epi32(sums[k], _mm256_madd_epi16(pairs, x));
    }
  }
  __m256i all = _mm256_add_epi32(_mm256_add_epi32(sums[0], sums[1]), _mm256_add_epi32(sums[2], sums[3]));
  return _mm256_extract_epi32(all, 0);
}

// GB/s of the best of `tries`, each thread walking its half `passes` times.
template <int W, int PF>
double rate(const uint8_t *buf, size_t bytes, int tries, int passes) {
  double best = 0;
  for (int t = 0; t < tries; ++t) {
    std::vector<int> sink(kThreads);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([&, i] {
        for (int p = 0; p < passes; ++p) sink[size_t(i)] += walk<W, PF>(buf + size_t(i) * bytes / kThreads, bytes / kThreads);
      });
    for (std::thread &th : threads) th.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, double(passes) * double(bytes) / seconds / 1e9);
  }
  return best;
}

struct Buffers {
  uint8_t *big, *small;
  size_t big_bytes, small_bytes;
  double stream;
};

template <int W, int PF>
void row(const Buffers &b) {
  const double cache = rate<W, PF>(b.small, b.small_bytes, 5, 400), memory = rate<W, PF>(b.big, b.big_bytes, 5, 1);
  std::printf("W=%d PF=%5d  cache %6.2f GB/s  memory %6.2f GB/s  additive %6.2f  overlap %6.2f\n", W, PF, cache, memory,
              1 / (1 / cache + 1 / b.stream), std::min(cache, b.stream));
}

}  // namespace

int main() {
  Buffers b{nullptr, nullptr, size_t(1) << 30, size_t(512) << 10, 0};
  b.big = static_cast<uint8_t *>(mmap(nullptr, b.big_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (b.big == MAP_FAILED) return 1;
  madvise(b.big, b.big_bytes, MADV_HUGEPAGE);
  std::memset(b.big, 1, b.big_bytes);
  b.small = static_cast<uint8_t *>(std::aligned_alloc(64, b.small_bytes));
  std::memset(b.small, 1, b.small_bytes);
  b.stream = rate<0, 0>(b.big, b.big_bytes, 5, 1);
  std::printf("%d threads; the stream (W=0 from memory): %.2f GB/s\n", kThreads, b.stream);
  row<1, 0>(b), row<1, 2048>(b), row<1, 8192>(b);
  row<2, 0>(b), row<2, 2048>(b), row<2, 8192>(b);
  row<3, 0>(b), row<3, 2048>(b), row<3, 8192>(b);
  row<4, 0>(b), row<4, 2048>(b);
}
