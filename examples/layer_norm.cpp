// layer_norm.cpp - layer normalization of each row with weight and bias, in one pass over a block
#include <kdsl/kdsl.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace kdsl;

template <int BLOCK>
void layer_norm(Ptr<f32> x, Ptr<f32> weight, Ptr<f32> bias, Ptr<f32> out, Scalar<i32> cols, Scalar<f32> eps) {
  auto c = arange<BLOCK>();
  auto mask = c < cols;
  auto row = program_id(0) * cols;
  auto v = load(x + row + c, mask);
  auto n = cast<f32>(cols);
  auto mean = sum(v) / n;
  auto centered = where(mask, v - mean, 0.0f);
  auto rstd = rsqrt(sum(centered * centered) / n + eps);
  auto y = centered * rstd * load(weight + c, mask) + load(bias + c, mask);
  store(out + row + c, y, mask);
}

int main() {
  const int rows = 129, cols = 777;
  const float eps = 1e-5f;
  std::vector<float> x(size_t(rows) * cols), w(cols), b(cols), y(x.size());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2, 2);
  for (float &v : x) v = dist(rng);
  for (int j = 0; j < cols; ++j) w[j] = dist(rng), b[j] = dist(rng);

  auto kernel = compile<layer_norm<1024>>(Device::best());
  kernel(grid(rows), x.data(), w.data(), b.data(), y.data(), cols, eps);

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
