// int8_test.cpp - the integer-dot decode and few-row products (activation quantization + dot4) of every format with a policy against a scalar quantize-then-integer-dot reference and the f32 dequantize path
#include <algorithm>

#include "kernels/quantize_activations.h"
#include "tests/kernels/int8_test_util.h"

namespace {
using namespace kernels_test;

TEST_CASE("kernels: the activation quantizer with group sums equals its scalar specification bit for bit (Q8_K- and Q8_1-style, zero blocks, one to 26 blocks a row)") {
  KDSL_TEST_RNG(rng);
  struct Case {
    int rows, K;
  };
  auto check = [&]<int BLOCK, int GROUP>(Case c) {
    CAPTURE(BLOCK);
    CAPTURE(c.rows);
    CAPTURE(c.K);
    auto x = random_floats(rng, size_t(c.rows) * size_t(c.K), -3, 3);
    for (int j = 0; j < BLOCK; ++j) x[size_t(j)] = 0;  // a block of zeros: scale 0, quants and sums 0
    x[size_t(c.K - 1)] = 1e-30f;                       // a tiny amax
    if (c.rows > 1) x[size_t(c.K)] = -3, x[size_t(c.K) + 1] = 3;  // (row 1) +-amax: quants -127 and 127
    QuantizedRows want = quantize_reference(x, c.rows, c.K, BLOCK, GROUP);
    std::vector<int8_t> q(want.q.size(), 99);
    std::vector<float> d(want.d.size() + 1, -5.0f);
    std::vector<int32_t> sums(want.sums.size() + 1, -5);
    auto k = kdsl::compile<kdsl::kernels::quantize_activations_sums<BLOCK, GROUP>>(kdsl_test::cpu());
    k(kdsl::grid(c.rows), x.data(), q.data(), d.data(), sums.data(), c.K);
    CHECK(std::memcmp(q.data(), want.q.data(), q.size()) == 0);
    CHECK(std::memcmp(d.data(), want.d.data(), want.d.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(sums.data(), want.sums.data(), want.sums.size() * sizeof(int32_t)) == 0);
    CHECK(d.back() == -5.0f);  // nothing past the last scale or sum
    CHECK(sums.back() == -5);
    const int8_t lowest = *std::min_element(q.begin(), q.end());
    CHECK(lowest >= -127);                  // never -128
    if (c.rows > 1) CHECK(lowest == -127);  // row 1's -amax
  };
  // Q8_K: 1 and 3 super-blocks a row; Q8_1: 1 and 13 blocks a row, and a decode row of 26.
  for (Case c : {Case{2, 256}, Case{3, 768}}) check.template operator()<256, 16>(c);
  for (Case c : {Case{2, 32}, Case{3, 416}, Case{1, 832}}) check.template operator()<32, 32>(c);
}

// Every format with an integer-dot policy: decode and 2..16 rows (the few-row kernels' 2, 4,
// 8 and 16-row specializations), N aligned (64) and ragged (37, 5), K of 1, 3 and 13 blocks
// (13: more than one prefetch distance).
TEST_CASE("kernels: integer-dot decode (one row) and few-row products of every format with a policy, aligned and ragged N, several K, with and without bias") {
  KDSL_TEST_RNG(rng);
  const auto formats = int_dot_formats();
  for (const kdsl::formats::WeightTypeInfo &info : formats) {
    const int block = info.block_elements;
    for (int rows : {1, 2, 3, 8, 13, 16})
      for (auto [N, blocks] : {std::pair{64, 1}, std::pair{37, 3}, std::pair{5, 13}}) check_int8_matmul(rng, info.type, rows, N, blocks * block, rows % 2 == 1);
  }
  CHECK(formats.size() == 9);  // Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL
}

// Prefill-sized products: the formats whose policy says so take any row count through their
// few-row programs by default (a grid of them along the rows), the others when the Library is
// told to; the reference's bound is the integer path's, which the f32 dequantize path would
// not meet.
TEST_CASE("kernels: integer-dot products of prefill size (40 and 67 rows), by default where the format's policy says so, when set for every format") {
  KDSL_TEST_RNG(rng);
  kdsl::kernels::Library every_row(kdsl_test::cpu());
  every_row.set_integer_dot_rows(1000);
  for (const kdsl::formats::WeightTypeInfo &info : int_dot_formats()) {
    for (int rows : {40, 67})
      check_int8_matmul(rng, info.type, rows, 37, 3 * info.block_elements, rows == 67, rows <= int_dot_default_rows(info.type) ? library() : every_row);
  }
}

// Every format's prefill tiles (matmul_int_tiles.h), on any CPU: taken by default where the
// CPU has AVX2; here on a CPU without it too (element by element), against the same reference.
// The s8 x s8 ones, Q8_0's and IQ4_NL's, run through vpsignb and vpmaddubsw without VNNI.
TEST_CASE("kernels: every format's byte-dot prefill tiles (33 and 67 rows, ragged N) on any CPU, against the integer reference") {
  KDSL_TEST_RNG(rng);
  kdsl::kernels::Library tiles(kdsl_test::cpu());
  tiles.set_integer_dot_rows(1000);
  tiles.set_prefill_tiles_everywhere(true);
  const auto formats = int_dot_formats();
  for (const kdsl::formats::WeightTypeInfo &info : formats)
    for (int rows : {33, 67}) check_int8_matmul(rng, info.type, rows, 37, 2 * info.block_elements, rows == 67, tiles);
  CHECK(formats.size() == 9);
}

}  // namespace
