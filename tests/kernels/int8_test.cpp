// int8_test.cpp - the integer-dot decode and few-row products (activation quantization + dot4) against a scalar quantize-then-integer-dot reference and the f32 dequantize path
#include "kernels/quantize_activations.h"
#include "tests/kernels/int8_test_util.h"

namespace {
using namespace kernels_test;

TEST_CASE("kernels: the activation quantizer equals its scalar specification bit for bit (zero blocks, ragged block groups)") {
  KDSL_TEST_RNG(rng);
  for (auto [rows, K] : {std::pair{1, 32}, std::pair{3, 96}, std::pair{2, 800}}) {
    CAPTURE(rows);
    CAPTURE(K);
    auto x = random_floats(rng, size_t(rows) * size_t(K), -3, 3);
    for (int j = 0; j < 32; ++j) x[size_t(j)] = 0;           // a block of zeros: scale 0, quants 0
    x[size_t(K - 1)] = 1e-30f;                                // a tiny amax
    if (K > 64) x[32] = -3, x[33] = 3;                        // +-amax: quants -127 and 127
    QuantizedRows want = quantize_reference(x, rows, K);
    std::vector<int8_t> q(want.q.size(), 99);
    std::vector<float> d(want.d.size() + 1, -5.0f);
    auto k = kdsl::compile<kdsl::kernels::quantize_activations_q8<8>>(kdsl_test::cpu());
    k(kdsl::grid(kdsl::cdiv(K / 32, 8), rows), x.data(), q.data(), d.data(), K);
    CHECK(std::memcmp(q.data(), want.q.data(), q.size()) == 0);
    CHECK(std::memcmp(d.data(), want.d.data(), want.d.size() * sizeof(float)) == 0);
    CHECK(d.back() == -5.0f);  // nothing past the last scale
    for (int8_t v : q) CHECK(v >= -127);
  }
}

TEST_CASE("kernels: integer-dot decode (one row) and few-row products, Q8_0 / Q4_0, aligned and ragged N, several K, with and without bias") {
  KDSL_TEST_RNG(rng);
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0}) {
    for (int rows : {1, 2, 3, 8, 13, 16})
      for (auto [N, K] : {std::pair{64, 256}, std::pair{37, 96}, std::pair{37, 416}, std::pair{5, 32}}) check_int8_matmul(rng, t, rows, N, K, rows % 2 == 1);
  }
}

}  // namespace
