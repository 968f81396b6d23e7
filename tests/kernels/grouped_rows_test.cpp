// grouped_rows_test.cpp - quantized matrices with rows grouped by 16, or 8 (formats/row_groups.h): the layout, and Library::matmul over it equal to the same product over rows as stored
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include <kdsl/formats/row_groups.h>

#include "kernels/library.h"
#include "tests/kernels/library_test_util.h"
#include "tests/kernels/quantized_test_util.h"

namespace {
using namespace kernels_test;
using kdsl::kernels::WeightType;

const WeightType kGroupedTypes[] = {WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K, WeightType::Q8_0, WeightType::Q4_0, WeightType::IQ4_NL, WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1};

// The rows the CPU's Library groups a matrix of t by (int_dot_policy.h: the k-quants by 8 on
// a CPU without AVX-512, one 4-byte piece of each row in a 32-byte vector).
int group_of(WeightType t) {
  const bool kquant = t == WeightType::Q4_K || t == WeightType::Q5_K || t == WeightType::Q6_K;
  return kquant && !kdsl_test::cpu().has_cpu_feature("avx512bw") ? 8 : 16;
}

// Library::matmul over W grouped and over W as stored, `rows` rows of x. Decode and few rows:
// the integer sums are exact both ways, but a grouped row keeps one lane where a stored one
// keeps dot4's four (each scaled in f32, summed after the loop), so the two differ by f32
// rounding: within 1e-5 of the largest output (measured 1.6e-7 to 2e-7 at 2048 x 768); a wrong
// byte, row or scale is off by far more. More rows: the grouped copy is put back as stored
// and the same kernels run, so the outputs are equal.
void check_grouped_equals_stored(kdsl::kernels::Library &lib, std::mt19937 &rng, WeightType t, int rows, int N, int K, bool with_bias) {
  CAPTURE(std::string(kdsl::kernels::weight_type_info(t).name));
  CAPTURE(rows);
  CAPTURE(N);
  CAPTURE(K);
  const std::vector<uint8_t> w = random_quantized(rng, t, N, K);
  REQUIRE(lib.row_group(t, N) == group_of(t));
  std::vector<uint8_t> grouped(w.size());
  lib.group_rows(w.data(), t, N, K, grouped.data());
  CHECK(grouped != w);
  const std::vector<float> x = random_floats(rng, size_t(rows) * size_t(K)), bias = random_floats(rng, size_t(N));
  const float *b = with_bias ? bias.data() : nullptr;
  std::vector<float> stored_out(size_t(rows) * size_t(N), -7.0f), grouped_out(stored_out.size() + 16, -7.0f);
  lib.matmul(x.data(), w.data(), t, b, stored_out.data(), rows, N, K);
  lib.matmul(x.data(), grouped.data(), t, b, grouped_out.data(), rows, N, K, group_of(t));
  const bool put_back = rows > 16;
  float largest = 0;
  for (float v : stored_out) largest = std::max(largest, std::fabs(v));
  size_t differ = 0;
  for (size_t i = 0; i < stored_out.size(); ++i)
    differ += put_back ? stored_out[i] != grouped_out[i] : std::fabs(stored_out[i] - grouped_out[i]) > 1e-5f * largest;
  CHECK(differ == 0);
  for (size_t i = stored_out.size(); i < grouped_out.size(); ++i) CHECK_MESSAGE(grouped_out[i] == -7.0f, "written past the rows x N outputs");
}

}  // namespace

TEST_CASE("row groups: a block's fields of 16 rows side by side at their grains, and back") {
  using kdsl::formats::BlockQ4_K;
  constexpr int R = 16;
  constexpr int64_t S = sizeof(BlockQ4_K), rows = 21, blocks = 3;  // a second, padded group
  std::vector<uint8_t> stored(size_t(rows * blocks * S));
  for (size_t i = 0; i < stored.size(); ++i) stored[i] = uint8_t(i * 7 + 1);
  const int64_t size = kdsl::formats::grouped_bytes<BlockQ4_K>(rows, blocks, R);
  CHECK(size == 2 * R * blocks * S);
  std::vector<uint8_t> grouped(size_t(size), 0xee);
  kdsl::formats::group_rows<BlockQ4_K>(stored.data(), grouped.data(), rows, blocks, R);
  // Row 19 (group 1, row 3 in it), block 2: its dmin's second byte, scale code 5, quant byte 37
  // (the grains: 2 for the f16s, 1 for the scale codes, 4 for the quants).
  const uint8_t *row_block = stored.data() + (19 * blocks + 2) * S;
  const uint8_t *group_block = grouped.data() + (1 * blocks + 2) * R * S;
  CHECK(group_block[2 * R + 3 * 2 + 1] == row_block[3]);
  CHECK(group_block[4 * R + 5 * R + 3] == row_block[4 + 5]);
  CHECK(group_block[16 * R + 36 * R + 3 * 4 + 1] == row_block[16 + 37]);
  // The padding rows (21 .. 31) are zero bytes.
  const uint8_t *padded = grouped.data() + (1 * blocks + 0) * R * S;
  CHECK(padded[16 * R + 15 * 4] == 0);
  std::vector<uint8_t> back(stored.size(), 0);
  kdsl::formats::ungroup_rows<BlockQ4_K>(grouped.data(), back.data(), rows, blocks, R);
  CHECK(back == stored);
}

// `trials` blocks of random bytes (any bytes are a block of these formats), each rewritten by
// `rewrite`, its values checked by check(stored, rewritten), then put back by `restore`: the
// block as stored again, byte for byte.
template <class Layout, class Rewrite, class Restore, class Check>
void check_block_rewrite(std::mt19937 &rng, int trials, Rewrite rewrite, Restore restore, Check check) {
  for (int t = 0; t < trials; ++t) {
    Layout stored;
    auto *bytes = reinterpret_cast<uint8_t *>(&stored);
    for (size_t i = 0; i < sizeof stored; ++i) bytes[i] = uint8_t(rng());
    Layout rewritten = stored;
    rewrite(reinterpret_cast<uint8_t *>(&rewritten));
    check(stored, rewritten);
    restore(reinterpret_cast<uint8_t *>(&rewritten));
    CHECK(std::memcmp(&rewritten, &stored, sizeof stored) == 0);
  }
}

// A [rows][blocks] matrix of Layout blocks of random bytes, and it grouped by R; ungrouped, the
// grouped copy must be the matrix again.
template <class Layout>
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> grouped_random_matrix(std::mt19937 &rng, int R, int64_t rows, int64_t blocks) {
  std::vector<uint8_t> matrix(size_t(rows * blocks * int64_t(sizeof(Layout))));
  for (uint8_t &b : matrix) b = uint8_t(rng());
  std::vector<uint8_t> grouped(size_t(kdsl::formats::grouped_bytes<Layout>(rows, blocks, R))), back(matrix.size(), 0);
  kdsl::formats::group_rows<Layout>(matrix.data(), grouped.data(), rows, blocks, R);
  kdsl::formats::ungroup_rows<Layout>(grouped.data(), back.data(), rows, blocks, R);
  CHECK(back == matrix);
  return {matrix, grouped};
}

// Q5_0's and Q5_1's five-bit bytes against ggml's definition of every element.
template <class Layout>
void check_five_bit_bytes_32(std::mt19937 &rng) {
  check_block_rewrite<Layout>(
      rng, 300, kdsl::formats::five_bit_bytes_32<Layout>, kdsl::formats::stored_bits_32<Layout>, [](const Layout &stored, const Layout &five) {
        CHECK(five.d == stored.d);
        uint32_t qh;
        std::memcpy(&qh, stored.qh, 4);
        for (int e = 0; e < 32; ++e) {
          // ggml: element e < 16 the low nibble of qs[e], else the high one of qs[e - 16]; bit e of qh above it.
          const int value = ((e < 16 ? stored.qs[e] : stored.qs[e - 16] >> 4) & 15) | int(qh >> e & 1) << 4;
          const int l = e % 16, i = l / 4, b = l % 4;
          const int read = e < 16 ? five.qs[l] & 31 : (five.qs[l] >> 5) | (i < 2 ? (five.qh[b] << (3 - 2 * i)) & 24 : (five.qh[b] >> (2 * i - 3)) & 24);
          CHECK_MESSAGE(read == value, "element " << e);
        }
      });
}

TEST_CASE("row groups: Q5_0's and Q5_1's quants as five-bit bytes, each element where the decode kernel reads it, and back as stored") {
  std::mt19937 rng(7);
  check_five_bit_bytes_32<kdsl::formats::BlockQ5_0>(rng);
  check_five_bit_bytes_32<kdsl::formats::BlockQ5_1>(rng);
  grouped_random_matrix<kdsl::formats::BlockQ5_1>(rng, 16, 19, 3);
}

TEST_CASE("row groups: Q6_K's quants as six-bit bytes, each value where the decode kernel reads it, and back as stored") {
  using kdsl::formats::BlockQ6_K;
  std::mt19937 rng(11);
  check_block_rewrite<BlockQ6_K>(rng, 200, kdsl::formats::q6_k_six_bit_bytes, kdsl::formats::q6_k_stored_bits, [](const BlockQ6_K &stored, const BlockQ6_K &six) {
    CHECK(std::memcmp(six.scales, stored.scales, sizeof stored.scales) == 0);
    CHECK(six.d == stored.d);
    for (int h = 0; h < 2; ++h)
      for (int qq = 0; qq < 4; ++qq)
        for (int l = 0; l < 32; ++l) {
          // ggml: the nibble of ql, bits 2qq and 2qq + 1 of qh above it.
          const uint8_t ql = stored.ql[64 * h + 32 * (qq % 2) + l], qh = stored.qh[32 * h + l];
          const int value = ((qq < 2 ? ql : ql >> 4) & 15) | ((qh >> (2 * qq)) & 3) << 4;
          const uint8_t e0 = six.ql[64 * h + l], e1 = six.ql[64 * h + 32 + l], e2 = six.qh[32 * h + l];
          const int read = qq == 0 ? e0 & 63 : qq == 1 ? e1 & 63 : qq == 2 ? e2 & 63 : (e0 >> 6) | ((e1 >> 4) & 12) | ((e2 >> 2) & 48);
          CHECK_MESSAGE(read == value, "half " << h << ", quarter " << qq << ", l " << l);
        }
  });
  // Grouped, the rewritten bytes are what a group holds.
  constexpr int R = 8;
  constexpr int64_t S = sizeof(BlockQ6_K), blocks = 2;
  const auto [matrix, grouped] = grouped_random_matrix<BlockQ6_K>(rng, R, 11, blocks);
  BlockQ6_K row9;  // row 9, block 1: group 1, row 1 in it
  std::memcpy(&row9, matrix.data() + (9 * blocks + 1) * S, S);
  kdsl::formats::q6_k_six_bit_bytes(reinterpret_cast<uint8_t *>(&row9));
  constexpr kdsl::formats::RowGroupPlan plan = kdsl::formats::row_group_plan<BlockQ6_K>();
  const uint8_t *group_block = grouped.data() + (1 * blocks + 1) * R * S;
  for (int offset : {int(offsetof(BlockQ6_K, ql)) + 5, int(offsetof(BlockQ6_K, ql)) + 100, int(offsetof(BlockQ6_K, qh)) + 40}) {
    const kdsl::formats::GroupedPlace p = plan.place(R, offset);
    CHECK(group_block[p.first + 1 * p.grain] == reinterpret_cast<const uint8_t *>(&row9)[offset]);
  }
}

TEST_CASE("row groups: Q5_K's quants as five-bit bytes, each value where the decode kernel reads it, and back as stored") {
  using kdsl::formats::BlockQ5_K;
  std::mt19937 rng(13);
  check_block_rewrite<BlockQ5_K>(rng, 200, kdsl::formats::q5_k_five_bit_bytes, kdsl::formats::q5_k_stored_bits, [](const BlockQ5_K &stored, const BlockQ5_K &five) {
    CHECK(std::memcmp(five.scales, stored.scales, sizeof stored.scales) == 0);
    CHECK((five.d == stored.d && five.dmin == stored.dmin));
    for (int j = 0; j < 8; ++j)
      for (int l = 0; l < 32; ++l) {
        // ggml: the nibble of qs, bit j of qh above it.
        const uint8_t qs = stored.qs[32 * (j / 2) + l];
        const int value = ((j % 2 ? qs >> 4 : qs) & 15) | ((stored.qh[l] >> j) & 1) << 4;
        const int c = j / 2;
        const uint8_t b = five.qs[32 * c + l], e = five.qh[l];
        const int read = j % 2 == 0 ? b & 31 : (b >> 5) | (c < 2 ? (e << (3 - 2 * c)) & 24 : (e >> (2 * c - 3)) & 24);
        CHECK_MESSAGE(read == value, "sub-block " << j << ", l " << l);
      }
  });
  grouped_random_matrix<BlockQ5_K>(rng, 8, 13, 2);
}

TEST_CASE("row groups: which matrices the CPU's Library groups, and grouped products refused where they cannot be") {
  kdsl::kernels::Library &lib = library();
  for (WeightType t : kGroupedTypes) {
    CHECK(lib.row_group(t, 64) == group_of(t));
    CHECK(lib.row_group(t, 36) == 1);  // not a multiple of 8 or 16: left as stored
  }
  CHECK(lib.row_group(WeightType::F8_E4M3, 64) == 1);
  CHECK(lib.row_group(WeightType::F16, 64) == 1);
  std::vector<float> x(256, 1.0f), out(64);
  std::vector<uint8_t> w(size_t(64 * kdsl::kernels::weight_bytes(WeightType::Q4_K, 256)));
  std::string text = kdsl_test::error_text([&] { lib.matmul(x.data(), w.data(), WeightType::Q4_K, nullptr, out.data(), 1, 64, 256, 4); });
  CHECK(text.find("grouped by 4 rows") != std::string::npos);
  CHECK(text.find("is grouped by " + std::to_string(group_of(WeightType::Q4_K))) != std::string::npos);
  text = kdsl_test::error_text([&] { lib.matmul(x.data(), w.data(), WeightType::F8_E4M3, nullptr, out.data(), 1, 64, 256, 16); });
  CHECK(text.find("f8_e4m3") != std::string::npos);
  CHECK(text.find("no grouped layout") != std::string::npos);
  kdsl::kernels::Library gpu_like(kdsl_test::cpu());
  gpu_like.set_gpu_forms(true);
  CHECK(gpu_like.row_group(WeightType::Q4_K, 64) == 1);
}

TEST_CASE("row groups: Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, IQ4_NL, Q4_1, Q5_0 and Q5_1 products over grouped rows equal those over rows as stored: decode, few rows, prefill") {
  KDSL_TEST_RNG(rng);
  kdsl::kernels::Library &lib = library();
  for (WeightType t : kGroupedTypes) {
    check_grouped_equals_stored(lib, rng, t, 1, 48, 512, false);
    check_grouped_equals_stored(lib, rng, t, 1, 32, 256, true);
    for (int rows : {2, 3, 7, 16}) check_grouped_equals_stored(lib, rng, t, rows, 48, 768, rows == 3);
    check_grouped_equals_stored(lib, rng, t, 40, 32, 512, true);  // a prefill: the rows put back
  }
}

TEST_CASE("row groups: given W as stored, a prefill reads it, and decode the groups") {
  // w_stored is another matrix's bytes here, so the output says which one a product read.
  KDSL_TEST_RNG(rng);
  kdsl::kernels::Library &lib = library();
  const int N = 32, K = 512;
  for (WeightType t : {WeightType::Q4_K, WeightType::Q4_0}) {
    CAPTURE(std::string(kdsl::kernels::weight_type_info(t).name));
    const std::vector<uint8_t> w = random_quantized(rng, t, N, K), other = random_quantized(rng, t, N, K);
    std::vector<uint8_t> grouped(w.size());
    lib.group_rows(w.data(), t, N, K, grouped.data());
    for (int rows : {1, 40}) {
      CAPTURE(rows);
      const std::vector<float> x = random_floats(rng, size_t(rows) * size_t(K));
      std::vector<float> want(size_t(rows) * size_t(N)), got(want.size());
      lib.matmul(x.data(), rows > 16 ? other.data() : w.data(), t, nullptr, want.data(), rows, N, K);
      lib.matmul(x.data(), grouped.data(), t, nullptr, got.data(), rows, N, K, group_of(t), other.data());
      float largest = 0;
      for (float v : want) largest = std::max(largest, std::fabs(v));
      size_t differ = 0;
      for (size_t i = 0; i < want.size(); ++i) differ += rows > 16 ? want[i] != got[i] : std::fabs(want[i] - got[i]) > 1e-5f * largest;
      CHECK(differ == 0);
    }
  }
}

TEST_CASE("row groups: a Library with integer dot products off reads grouped rows through the copy put back") {
  KDSL_TEST_RNG(rng);
  kdsl::kernels::Library lib(kdsl_test::cpu());
  std::vector<uint8_t> w = random_quantized(rng, WeightType::Q4_K, 32, 512), grouped(w.size());
  lib.group_rows(w.data(), WeightType::Q4_K, 32, 512, grouped.data());
  lib.set_integer_dot_rows(0);
  CHECK(lib.row_group(WeightType::Q4_K, 32) == 1);
  const std::vector<float> x = random_floats(rng, 512);
  std::vector<float> a(32), b(32);
  lib.matmul(x.data(), w.data(), WeightType::Q4_K, nullptr, a.data(), 1, 32, 512);
  lib.matmul(x.data(), grouped.data(), WeightType::Q4_K, nullptr, b.data(), 1, 32, 512, group_of(WeightType::Q4_K));
  CHECK(a == b);  // both the f32 path over rows as stored
}
