// softmax.cpp - checks the softmax kernel against a scalar reference and prints the result
#include "softmax.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace kdsl;
using examples::softmax;

int main() {
  const int rows = 333, cols = 1000;  // ragged: the block is 1024 wide
  std::vector<float> x(size_t(rows) * cols), y(x.size());
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0, 3);
  for (float &v : x) v = dist(rng);

  Device dev = Device::best();  // a CUDA GPU where one is present, else the CPU
  Buffer<float> dx(dev, x), dy(dev, y.size());
  auto kernel = compile<softmax<1024>>(dev);
  kernel(grid(rows), dx, dy, cols, cols);
  dy.copy_to_host(y);

  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    const float *row = &x[size_t(r) * cols];
    double m = -INFINITY, s = 0;
    for (int j = 0; j < cols; ++j) m = std::max(m, double(row[j]));
    for (int j = 0; j < cols; ++j) s += std::exp(row[j] - m);
    for (int j = 0; j < cols; ++j) worst = std::max(worst, std::fabs(y[size_t(r) * cols + j] - std::exp(row[j] - m) / s) / (std::exp(row[j] - m) / s));
  }
  bool ok = worst < 1e-5;
  std::printf("softmax: %d x %d %s (max relative error %.2e)\n", rows, cols, ok ? "matches the reference" : "MISMATCH", worst);
  return ok ? 0 : 1;
}
