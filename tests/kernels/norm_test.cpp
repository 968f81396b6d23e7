// norm_test.cpp - Library::rmsnorm and add_rmsnorm against a float64 reference
#include "tests/kernels/library_test_util.h"

namespace {
using namespace kernels_test;

// y = x * rsqrt(mean(x^2) + eps) * w per row, in float64.
std::vector<double> rmsnorm_ref(const std::vector<float> &x, const std::vector<float> &w, int rows, int dim, float eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += double(x[size_t(r) * dim + i]) * x[size_t(r) * dim + i];
    double inv = 1 / std::sqrt(ss / dim + eps);
    for (int i = 0; i < dim; ++i) y[size_t(r) * dim + i] = x[size_t(r) * dim + i] * inv * w[size_t(i)];
  }
  return y;
}

TEST_CASE("kernels: rmsnorm matches the reference, in place and out of place") {
  KDSL_TEST_RNG(rng);
  for (int dim : {64, 100, 4096}) {
    for (int rows : {1, 7}) {
      CAPTURE(dim);
      CAPTURE(rows);
      auto x = random_floats(rng, size_t(rows) * dim, -2, 2);
      auto w = random_floats(rng, size_t(dim), 0.5, 1.5);
      auto ref = rmsnorm_ref(x, w, rows, dim, 1e-5f);
      std::vector<float> y(x.size());
      library().rmsnorm(x.data(), w.data(), y.data(), rows, dim, 1e-5f);
      expect_close_scaled("rmsnorm", y, ref, 1.0, 1e-5);
      library().rmsnorm(x.data(), w.data(), x.data(), rows, dim, 1e-5f);  // y == x
      expect_close_scaled("rmsnorm in place", x, ref, 1.0, 1e-5);
    }
  }
}

TEST_CASE("kernels: add_rmsnorm adds the residual into x, then normalizes") {
  KDSL_TEST_RNG(rng);
  for (int dim : {64, 100}) {
    const int rows = 5;
    CAPTURE(dim);
    auto x = random_floats(rng, size_t(rows) * dim);
    auto residual = random_floats(rng, size_t(rows) * dim);
    auto w = random_floats(rng, size_t(dim), 0.5, 1.5);
    std::vector<float> sum(x.size());
    std::vector<double> sum_ref(x.size());
    for (size_t i = 0; i < x.size(); ++i) sum[i] = x[i] + residual[i], sum_ref[i] = sum[i];
    auto ref = rmsnorm_ref(sum, w, rows, dim, 1e-6f);
    std::vector<float> y(x.size());
    library().add_rmsnorm(x.data(), residual.data(), w.data(), y.data(), rows, dim, 1e-6f);
    expect_close_scaled("x + residual", x, sum_ref, 1.0, 0);
    expect_close_scaled("rmsnorm(x + residual)", y, ref, 1.0, 1e-5);
  }
}

TEST_CASE("kernels: rmsnorm rejects a dim past the largest block, naming it") {
  std::vector<float> x(9000), w(9000);
  std::string text = kdsl_test::error_text([&] { library().rmsnorm(x.data(), w.data(), x.data(), 1, 9000, 1e-5f); });
  CHECK(kdsl_test::contains(text, "rmsnorm"));
  CHECK(kdsl_test::contains(text, "dim 9000"));
  CHECK(kdsl_test::contains(text, "8192"));
}

}  // namespace
