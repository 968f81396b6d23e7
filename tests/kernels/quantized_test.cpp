// quantized_test.cpp - Library::matmul and Library::embedding over the scaled block formats (Q8_0, Q4_0, F8_E4M3) read in place, against the reference dequantizer
#include "tests/kernels/int8_test_util.h"

namespace {
using namespace kernels_test;
using kdsl::formats::WeightKernels;
using kdsl::kernels::WeightType;

// The decode kernel steps one block at a time; the few-row and tiled kernels two: K = 256 is
// whole 2-block steps, 96 (3 blocks) and 416 (13 blocks) end in a masked one-block step. N = 37 is not a
// multiple of the 8-row or 64-column blocks.
TEST_CASE("kernels: quantized matmul, one row (decode), aligned and ragged, Q8_0 / Q4_0 / F8_E4M3") {
  KDSL_TEST_RNG(rng);
  for (WeightType t : kernel_formats(WeightKernels::Scaled)) {
    for (auto [N, K] : {std::pair{64, 256}, std::pair{37, 96}, std::pair{37, 416}}) check_library_matmul(rng, t, 1, N, K, false);
    check_library_matmul(rng, t, 1, 37, 416, true);
  }
}

TEST_CASE("kernels: quantized matmul, a few rows (2..8) and batched rows (prefill tiles), Q8_0 / Q4_0 / F8_E4M3") {
  KDSL_TEST_RNG(rng);
  for (WeightType t : kernel_formats(WeightKernels::Scaled)) {
    for (int rows : {3, 8, 13, 70}) {
      check_library_matmul(rng, t, rows, 64, 256, false);
      check_library_matmul(rng, t, rows, 37, 416, rows == 8);
    }
    check_library_matmul(rng, t, 131, 70, 256, true);  // on the CPU a full 128-row tile and a ragged one
    check_library_matmul(rng, t, 2, 37, 96, true);
    check_library_matmul(rng, t, 20, 37, 96, false);  // 17..32 rows: the short tiles
    check_library_matmul(rng, t, 33, 37, 96, true);
  }
}

TEST_CASE("kernels: quantized embedding rows equal the reference dequantizer's, Q8_0 / Q4_0 / F8_E4M3") {
  KDSL_TEST_RNG(rng);
  const int vocab = 50;
  // 256 columns are one whole 8-block program; 416 are two, the second ragged.
  for (WeightType t : kernel_formats(WeightKernels::Scaled))
    for (int dim : {32, 256, 416}) check_quantized_embedding(rng, t, vocab, dim);
}

// E4M3's NaN codes (0x7f, 0xff) decode to NaN, as the reference dequantizer has it, in every
// kernel that reads them: the decode, few-row and tiled products and the embedding. A NaN in one
// weight row spoils that row's output and no other.
TEST_CASE("kernels: F8_E4M3's NaN codes read as NaN in products and embeddings") {
  KDSL_TEST_RNG(rng);
  const int N = 5, K = 64;
  auto w = random_quantized(rng, WeightType::F8_E4M3, N, K);
  w[2 * 2 * 34 + 2 + 7] = 0x7f;  // row 2 (two 34-byte blocks a row), its first block's 8th value
  w[4 * 2 * 34 + 34 + 2 + 30] = 0xff;  // row 4, second block
  for (int rows : {1, 3, 40}) {
    CAPTURE(rows);
    auto x = random_floats(rng, size_t(rows) * K);
    std::vector<float> out(size_t(rows) * N);
    library().matmul(x.data(), w.data(), WeightType::F8_E4M3, nullptr, out.data(), rows, N, K);
    for (int r = 0; r < rows; ++r)
      for (int n = 0; n < N; ++n) CHECK(std::isnan(out[size_t(r * N + n)]) == (n == 2 || n == 4));
  }
  std::vector<int32_t> ids{2, 0};
  std::vector<float> rows(2 * K);
  library().embedding(ids.data(), w.data(), WeightType::F8_E4M3, rows.data(), 2, K);
  for (int i = 0; i < 2 * K; ++i) CHECK(std::isnan(rows[size_t(i)]) == (i == 7));
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
