// elementwise_test.cpp - Library::swiglu, softmax and argmax against float64 references
#include <limits>

#include "tests/kernels/library_test_util.h"

namespace {
using namespace kernels_test;

TEST_CASE("kernels: swiglu, aligned and ragged, out of place and in place") {
  KDSL_TEST_RNG(rng);
  for (int64_t n : {int64_t(1), int64_t(4096), int64_t(5003)}) {
    CAPTURE(n);
    auto gate = random_floats(rng, size_t(n), -6, 6);
    auto up = random_floats(rng, size_t(n), -2, 2);
    std::vector<double> ref(gate.size()), scale(gate.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      double g = gate[i];
      ref[i] = g / (1 + std::exp(-g)) * up[i];
      scale[i] = std::fabs(ref[i]) + 1e-30;
    }
    std::vector<float> out(gate.size());
    library().swiglu(gate.data(), up.data(), out.data(), n);
    expect_close_scaled("swiglu", out, ref, scale, 1e-5);
    library().swiglu(gate.data(), up.data(), gate.data(), n);  // out == gate
    expect_close_scaled("swiglu in place", gate, ref, scale, 1e-5);
  }
}

TEST_CASE("kernels: softmax of rows, short (one block) and long (online), aligned and ragged") {
  KDSL_TEST_RNG(rng);
  for (int cols : {10, 64, 1000, 20000}) {
    const int rows = 3;
    CAPTURE(cols);
    auto x = random_floats(rng, size_t(rows) * cols, -10, 10);
    std::vector<double> ref(x.size()), scale(x.size());
    for (int r = 0; r < rows; ++r) {
      const float *row = x.data() + size_t(r) * cols;
      double m = *std::max_element(row, row + cols), s = 0;
      for (int c = 0; c < cols; ++c) s += std::exp(row[c] - m);
      for (int c = 0; c < cols; ++c) ref[size_t(r) * cols + c] = std::exp(row[c] - m) / s, scale[size_t(r) * cols + c] = ref[size_t(r) * cols + c];
    }
    library().softmax(x.data(), rows, cols);
    expect_close_scaled("softmax", x, ref, scale, 1e-5);
  }
}

TEST_CASE("kernels: argmax returns the first index of the maximum") {
  KDSL_TEST_RNG(rng);
  for (int n : {1, 100, 512, 32003}) {
    CAPTURE(n);
    auto x = random_floats(rng, size_t(n), -5, 5);
    int expect = int(std::max_element(x.begin(), x.end()) - x.begin());
    CHECK(library().argmax(x.data(), n) == expect);
    // Ties: the earliest of several equal maxima, in different lanes and blocks.
    std::vector<int> at = {n - 1, n / 2, std::min(n / 3 + 1, n - 1), n / 7};
    for (int i : at) x[size_t(i)] = 6;
    CHECK(library().argmax(x.data(), n) == *std::min_element(at.begin(), at.end()));
  }
  std::vector<float> same(1000, 0.25f);
  CHECK(library().argmax(same.data(), 1000) == 0);
  std::vector<float> minus_inf(700, -std::numeric_limits<float>::infinity());
  CHECK(library().argmax(minus_inf.data(), 700) == 0);
  minus_inf[650] = -1e30f;
  CHECK(library().argmax(minus_inf.data(), 700) == 650);
}

}  // namespace
