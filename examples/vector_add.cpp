// vector_add.cpp - checks the vector add kernel against a scalar reference and prints the result
#include "vector_add.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace kdsl;
using examples::add;

int main() {
  constexpr int kBlock = 1024;
  const int n = 1'000'003;  // ragged: the last program is masked
  std::vector<float> x(n), y(n), out(n);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng);

  Device dev = Device::best();  // a CUDA GPU where one is present, else the CPU
  Buffer<float> dx(dev, x), dy(dev, y), dout(dev, n);
  auto kernel = compile<add<kBlock>>(dev);
  auto start = std::chrono::steady_clock::now();
  kernel(grid(cdiv(n, kBlock)), dx, dy, dout, n);
  dev.synchronize();
  double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  start = std::chrono::steady_clock::now();
  kernel(grid(cdiv(n, kBlock)), dx, dy, dout, n);
  dev.synchronize();
  double second_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  dout.copy_to_host(out);

  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += out[i] != x[i] + y[i];
  std::printf("vector_add on %s: n=%d %s (first launch %.2f ms incl. compile, second %.3f ms)\n", dev.name().c_str(), n,
              wrong ? "MISMATCH" : "matches the reference", first_ms, second_ms);
  return wrong ? 1 : 0;
}
