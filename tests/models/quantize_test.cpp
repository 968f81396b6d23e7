// quantize_test.cpp - reference quantizers: dequantize(quantize(x)) stays within the format's resolution
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_writer.h"
#include "models/gguf/quantize.h"
#include "models/sampler/rng.h"

using namespace kdsl::models;

namespace {

// Worst error relative to the block's largest magnitude: half a step of 2^bits levels
// (plus f16 rounding of the scales; k-quants also quantize their scales to 6 or 8 bits).
// Q4_0 and Q5_0 put the largest magnitude on level -8 (-16), so the opposite extreme can
// only reach +7 (+15): a whole step there.
std::map<GgmlType, double> resolution_bounds() {
  return {
      {GgmlType::F32, 0.0},     {GgmlType::F16, 1e-3},     {GgmlType::BF16, 8e-3},   {GgmlType::Q8_0, 0.5 / 127 + 1e-3},
      {GgmlType::Q4_0, 1.0 / 8 + 1e-3}, {GgmlType::Q5_0, 1.0 / 16 + 1e-3}, {GgmlType::Q4_1, 1.0 / 15 + 1e-3},
      {GgmlType::Q5_1, 1.0 / 31 + 1e-3}, {GgmlType::Q4_K, 0.08},   {GgmlType::Q5_K, 0.04},   {GgmlType::Q6_K, 0.025},
      {GgmlType::F8_E4M3, 1.0 / 16 + 1e-3},  // half of E4M3's 3-bit mantissa step
      {GgmlType::IQ4_NL, 0.125}};  // its widest gaps (24 and 23 of 240) and the top end's 14 past 113
}

// Values in [-1, 1], one in ten scaled by 4 (the outliers real weights have).
std::vector<float> weight_like_row(Rng &rng, int n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (float &v : x) v = float(rng.uniform() * 2 - 1) * (rng.uniform() < 0.1 ? 4.0f : 1.0f);
  return x;
}

std::vector<float> round_trip(GgmlType type, const std::vector<float> &x, const float *importance = nullptr) {
  const int64_t n = int64_t(x.size());
  std::vector<std::byte> q(GgufWriter::tensor_bytes(type, {n}));
  quantize_row(type, x.data(), q.data(), n, importance);
  std::vector<float> y(x.size());
  dequantize_row(type, q.data(), y.data(), n);
  return y;
}

// The worst error relative to its 32-element (or larger) block's largest magnitude.
double worst_relative_error(GgmlType type, const std::vector<float> &x, const std::vector<float> &y) {
  const size_t block = size_t(std::max<int64_t>(ggml_type_traits(type).block_elements, 32));
  double worst = 0;
  for (size_t b = 0; b < x.size(); b += block) {
    double amax = 0;
    for (size_t i = b; i < b + block; ++i) amax = std::max(amax, double(std::fabs(x[i])));
    for (size_t i = b; i < b + block; ++i) worst = std::max(worst, std::fabs(double(x[i]) - y[i]) / amax);
  }
  return worst;
}

// The types with a weighted quantizer (ggml's quantize_row_*_impl).
const GgmlType kWeightedTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                   GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL};

}  // namespace

TEST_CASE("quantize: round trips within each type's resolution") {
  Rng rng(7);
  for (auto [type, tolerance] : resolution_bounds()) {
    std::vector<float> x = weight_like_row(rng, 512);
    double worst = worst_relative_error(type, x, round_trip(type, x));
    INFO(std::string(ggml_type_traits(type).ggml_name) << " worst relative error " << worst);
    CHECK(worst <= tolerance);
  }
}

TEST_CASE("quantize with an importance matrix: round trips within each type's resolution") {
  // The weighted searches choose other scales and levels, packed by other code. They minimize
  // a weighted squared error, not the worst element's, so an extreme may land a little past
  // half a step: the bounds get a quarter more room.
  Rng rng(11);
  for (auto [type, tolerance] : resolution_bounds()) {
    std::vector<float> x = weight_like_row(rng, 512), importance(512);
    for (float &v : importance) v = float(0.25 + rng.uniform());
    double worst = worst_relative_error(type, x, round_trip(type, x, importance.data()));
    INFO(std::string(ggml_type_traits(type).ggml_name) << " worst relative error " << worst);
    CHECK(worst <= 1.25 * tolerance);
  }
}

TEST_CASE("quantize with an importance matrix: the rounding error moves off the columns the activations use") {
  // Activation statistics are heavy-tailed: a few columns carry most of the energy. Their
  // importance-weighted squared error sum(importance * (x - y)^2), what a product with such
  // activations feels, must fall well below the unweighted quantizer's.
  Rng rng(3);
  const int n = 1024, rows = 16;
  std::vector<float> importance(static_cast<size_t>(n));
  for (float &v : importance) v = rng.uniform() < 0.05 ? float(50 + 50 * rng.uniform()) : float(0.01 + 0.1 * rng.uniform());
  for (GgmlType type : kWeightedTypes) {
    double plain = 0, weighted = 0;
    for (int r = 0; r < rows; ++r) {
      std::vector<float> x = weight_like_row(rng, n), y0 = round_trip(type, x), y1 = round_trip(type, x, importance.data());
      for (size_t i = 0; i < size_t(n); ++i) {
        plain += importance[i] * (double(x[i]) - y0[i]) * (double(x[i]) - y0[i]);
        weighted += importance[i] * (double(x[i]) - y1[i]) * (double(x[i]) - y1[i]);
      }
    }
    INFO(std::string(ggml_type_traits(type).ggml_name) << ": weighted error " << weighted << " against " << plain << " unweighted, ratio " << weighted / plain);
    CHECK(weighted < 0.7 * plain);
  }
  // Q8_0 and the float types have no weighted form: the importance changes nothing.
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::F8_E4M3, GgmlType::F16, GgmlType::BF16}) {
    std::vector<float> x = weight_like_row(rng, n);
    CHECK(round_trip(type, x) == round_trip(type, x, importance.data()));
  }
}

TEST_CASE("quantize: constant and zero blocks") {
  std::vector<float> zeros(256, 0.0f), y(256, 1.0f);
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::F8_E4M3, GgmlType::IQ4_NL}) {
    std::vector<std::byte> q(GgufWriter::tensor_bytes(type, {256}));
    quantize_row(type, zeros.data(), q.data(), 256);
    dequantize_row(type, q.data(), y.data(), 256);
    for (float v : y) CHECK(v == 0.0f);
  }
}
