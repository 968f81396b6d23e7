// layer_norm.cpp - checks the layer norm kernel against a scalar reference and prints the result
#include "layer_norm.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace kdsl;
using examples::layer_norm;

int main() {
  const int rows = 129, cols = 777;
  const float eps = 1e-5f;
  std::vector<float> x(size_t(rows) * cols), w(cols), b(cols), y(x.size());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2, 2);
  for (float &v : x) v = dist(rng);
  for (int j = 0; j < cols; ++j) w[j] = dist(rng), b[j] = dist(rng);

  Device dev = Device::best();  // a CUDA GPU where one is present, else the CPU
  Buffer<float> dx(dev, x), dw(dev, w), db(dev, b), dy(dev, y.size());
  auto kernel = compile<layer_norm<1024>>(dev);
  kernel(grid(rows), dx, dw, db, dy, cols, eps);
  dy.copy_to_host(y);

  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    const float *row = &x[size_t(r) * cols];
    double mean = 0, var = 0;
    for (int j = 0; j < cols; ++j) mean += row[j];
    mean /= cols;
    for (int j = 0; j < cols; ++j) var += (row[j] - mean) * (row[j] - mean);
    double rstd = 1 / std::sqrt(var / cols + eps);
    for (int j = 0; j < cols; ++j) {
      double ref = (row[j] - mean) * rstd * w[j] + b[j];
      worst = std::max(worst, std::fabs(y[size_t(r) * cols + j] - ref) / (1 + std::fabs(ref)));
    }
  }
  bool ok = worst < 1e-5;
  std::printf("layer_norm: %d x %d %s (max error %.2e)\n", rows, cols, ok ? "matches the reference" : "MISMATCH", worst);
  return ok ? 0 : 1;
}
