// quantized_test.cpp - Library::matmul and Library::embedding over Q8_0 / Q4_0 weights read in place, against the reference dequantizer
#include <cstring>

#include "models/gguf/dequantize.h"
#include "models/gguf/half.h"
#include "tests/kernels/library_test_util.h"

namespace {
using namespace kernels_test;
using kdsl::kernels::WeightType;
using kdsl::models::GgmlType;

GgmlType ggml_type(WeightType t) { return t == WeightType::Q8_0 ? GgmlType::Q8_0 : GgmlType::Q4_0; }

// rows x cols values of type t as random blocks: every quant byte random (so every level,
// -128 and all nibbles included), every f16 scale finite in [-0.1, 0.1].
std::vector<uint8_t> random_quantized(std::mt19937 &rng, WeightType t, int64_t rows, int64_t cols) {
  auto info = kdsl::kernels::weight_type_info(t);
  std::vector<uint8_t> bytes(size_t(kdsl::kernels::weight_bytes(t, rows * cols)));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.1f, 0.1f);
  for (uint8_t &b : bytes) b = uint8_t(byte(rng));
  for (size_t at = 0; at < bytes.size(); at += size_t(info.block_bytes)) {
    uint16_t d = kdsl::models::f32_to_f16(scale(rng));
    std::memcpy(&bytes[at], &d, 2);  // d leads both block layouts
  }
  return bytes;
}

// The reference dequantizer's values, rows x cols.
std::vector<float> dequantized(WeightType t, const std::vector<uint8_t> &bytes, int64_t rows, int64_t cols) {
  std::vector<float> out(size_t(rows * cols));
  kdsl::models::dequantize_row(ggml_type(t), bytes.data(), out.data(), rows * cols);
  return out;
}

void check_matmul(std::mt19937 &rng, WeightType t, int rows, int N, int K, bool with_bias) {
  CAPTURE(std::string(kdsl::kernels::weight_type_info(t).name));
  CAPTURE(rows);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(with_bias);
  auto x = random_floats(rng, size_t(rows) * K);
  auto w = random_quantized(rng, t, N, K);
  auto wf = dequantized(t, w, N, K);
  auto bias = random_floats(rng, size_t(N));
  const float *b = with_bias ? bias.data() : nullptr;
  ReferenceProduct ref = reference_matmul(x, wf, b, rows, N, K);
  std::vector<float> out(ref.values.size(), -7.0f);
  library().matmul(x.data(), w.data(), t, b, out.data(), rows, N, K);
  // d * q is exact in f32 (an 11-bit by 8-bit product), so the kernel differs from the
  // reference only by f32 rounding in its sums: the same bound as the f32 matmul test.
  expect_close_scaled("quantized matmul", out, ref.values, ref.scale, 1e-5);
}

// The decode kernel steps one block at a time; the few-row and tiled kernels two: K = 256 is
// whole 2-block steps, 96 (3 blocks) and 416 (13 blocks) end in a masked one-block step. N = 37 is not a
// multiple of the 8-row or 64-column blocks.
TEST_CASE("kernels: quantized matmul, one row (decode), aligned and ragged, Q8_0 / Q4_0") {
  KDSL_TEST_RNG(rng);
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0}) {
    for (auto [N, K] : {std::pair{64, 256}, std::pair{37, 96}, std::pair{37, 416}}) check_matmul(rng, t, 1, N, K, false);
    check_matmul(rng, t, 1, 37, 416, true);
  }
}

TEST_CASE("kernels: quantized matmul, a few rows (2..8) and batched rows (prefill tiles), Q8_0 / Q4_0") {
  KDSL_TEST_RNG(rng);
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0}) {
    for (int rows : {3, 8, 70}) {
      check_matmul(rng, t, rows, 64, 256, false);
      check_matmul(rng, t, rows, 37, 416, rows == 8);
    }
    check_matmul(rng, t, 2, 37, 96, true);
    check_matmul(rng, t, 20, 37, 96, false);  // 9..32 rows: the short tiles
    check_matmul(rng, t, 33, 37, 96, true);
  }
}

TEST_CASE("kernels: quantized embedding rows equal the reference dequantizer's, Q8_0 / Q4_0") {
  KDSL_TEST_RNG(rng);
  const int vocab = 50;
  // 256 columns are one whole 8-block program; 416 are two, the second ragged.
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0})
    for (int dim : {32, 256, 416}) {
      CAPTURE(std::string(kdsl::kernels::weight_type_info(t).name));
      CAPTURE(dim);
      auto table = random_quantized(rng, t, vocab, dim);
      auto tf = dequantized(t, table, vocab, dim);
      std::vector<int32_t> ids = {7, 0, vocab - 1, 7, 23};
      std::vector<float> out(ids.size() * size_t(dim), -7.0f);
      library().embedding(ids.data(), table.data(), t, out.data(), int(ids.size()), dim);
      size_t bad = 0;
      for (size_t r = 0; r < ids.size(); ++r)
        for (int c = 0; c < dim; ++c) bad += out[r * size_t(dim) + size_t(c)] != tf[size_t(ids[r]) * size_t(dim) + size_t(c)];
      CHECK(bad == 0);  // d * q is exact in f32
    }
}

TEST_CASE("kernels: quantized matmul and embedding reject sizes that are not whole blocks, naming them") {
  std::vector<float> x(40), out(64);
  std::vector<uint8_t> w(1024);
  std::vector<int32_t> ids(1);
  std::string text = kdsl_test::error_text([&] { library().matmul(x.data(), w.data(), WeightType::Q8_0, nullptr, out.data(), 1, 4, 40); });
  CHECK(kdsl_test::contains(text, "matmul"));
  CHECK(kdsl_test::contains(text, "K 40 is not a multiple of 32"));
  CHECK(kdsl_test::contains(text, "q8_0"));
  text = kdsl_test::error_text([&] { library().embedding(ids.data(), w.data(), WeightType::Q4_0, out.data(), 1, 48); });
  CHECK(kdsl_test::contains(text, "embedding"));
  CHECK(kdsl_test::contains(text, "dim 48 is not a multiple of 32"));
  CHECK(kdsl_test::contains(text, "q4_0"));
}

}  // namespace
