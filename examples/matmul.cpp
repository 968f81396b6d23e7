// matmul.cpp - checks the matmul kernel against a scalar reference and prints the result
#include "matmul.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace kdsl;
using examples::matmul;

int main() {
  const int M = 257, N = 190, K = 301;  // ragged in every dimension
  std::vector<half> a(size_t(M) * K), b(size_t(K) * N);
  std::vector<float> c(size_t(M) * N);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto &v : a) v = half(dist(rng));
  for (auto &v : b) v = half(dist(rng));

  constexpr int BM = 32, BN = 32, BK = 32;
  Device dev = Device::best();  // a CUDA GPU where one is present, else the CPU
  Buffer<half> da(dev, a), db(dev, b);
  Buffer<float> dc(dev, c.size());
  auto kernel = compile<matmul<BM, BN, BK>>(dev);
  auto start = std::chrono::steady_clock::now();
  kernel(grid(cdiv(M, BM), cdiv(N, BN)), da, db, dc, M, N, K);
  dev.synchronize();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  dc.copy_to_host(c);

  double worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += double(float(a[size_t(i) * K + k])) * double(float(b[size_t(k) * N + j]));
      worst = std::max(worst, std::fabs(c[size_t(i) * N + j] - ref) / (1 + std::fabs(ref)));
    }
  bool ok = worst < 1e-4;
  std::printf("matmul: %dx%dx%d f16 -> f32 %s (max error %.2e, first launch %.1f ms incl. compile)\n", M, N, K,
              ok ? "matches the reference" : "MISMATCH", worst, ms);
  return ok ? 0 : 1;
}
