// quantize_test.cpp - reference quantizers: dequantize(quantize(x)) stays within the format's resolution
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_writer.h"
#include "models/gguf/quantize.h"
#include "models/sampler/rng.h"

using namespace kdsl::models;

TEST_CASE("quantize: round trips within each type's resolution") {
  // Worst error relative to the block's largest magnitude: half a step of 2^bits levels
  // (plus f16 rounding of the scales; k-quants also quantize their scales to 6 or 8 bits).
  // Q4_0 and Q5_0 put the largest magnitude on level -8 (-16), so the opposite extreme can
  // only reach +7 (+15): a whole step there.
  const std::map<GgmlType, double> bound = {
      {GgmlType::F32, 0.0},     {GgmlType::F16, 1e-3},     {GgmlType::BF16, 8e-3},   {GgmlType::Q8_0, 0.5 / 127 + 1e-3},
      {GgmlType::Q4_0, 1.0 / 8 + 1e-3}, {GgmlType::Q5_0, 1.0 / 16 + 1e-3}, {GgmlType::Q4_1, 1.0 / 15 + 1e-3},
      {GgmlType::Q5_1, 1.0 / 31 + 1e-3}, {GgmlType::Q4_K, 0.08},   {GgmlType::Q5_K, 0.04},   {GgmlType::Q6_K, 0.025},
      {GgmlType::F8_E4M3, 1.0 / 16 + 1e-3},  // half of E4M3's 3-bit mantissa step
      {GgmlType::IQ4_NL, 0.125}};  // its widest gaps (24 and 23 of 240) and the top end's 14 past 113
  Rng rng(7);
  for (auto [type, tolerance] : bound) {
    const int n = 512;
    std::vector<float> x(n), y(n);
    for (float &v : x) v = float(rng.uniform() * 2 - 1) * (rng.uniform() < 0.1 ? 4.0f : 1.0f);
    std::vector<std::byte> q(GgufWriter::tensor_bytes(type, {n}));
    quantize_row(type, x.data(), q.data(), n);
    dequantize_row(type, q.data(), y.data(), n);
    double worst = 0;
    int block = int(ggml_type_traits(type).block_elements);
    for (int b = 0; b < n; b += std::max(block, 32)) {
      double amax = 0;
      for (int i = b; i < b + std::max(block, 32); ++i) amax = std::max(amax, double(std::fabs(x[size_t(i)])));
      for (int i = b; i < b + std::max(block, 32); ++i)
        worst = std::max(worst, std::fabs(double(x[size_t(i)]) - y[size_t(i)]) / amax);
    }
    INFO(std::string(ggml_type_traits(type).ggml_name) << " worst relative error " << worst);
    CHECK(worst <= tolerance);
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
