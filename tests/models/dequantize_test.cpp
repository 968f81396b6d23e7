// dequantize_test.cpp - each block format decoded element by element from its definition, on random and hand-made blocks
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <kdsl/error.h>

#include "models/gguf/dequantize.h"
#include <kdsl/formats/half.h>
#include "models/sampler/rng.h"

using namespace kdsl;
using namespace kdsl::models;
using namespace kdsl::formats;

namespace {

// A block of random bytes whose f16 scale fields hold finite values in [-0.1, 0.1].
template <class Block>
Block random_block(Rng &rng) {
  Block b;
  auto *p = reinterpret_cast<uint8_t *>(&b);
  for (size_t i = 0; i < sizeof b; ++i) p[i] = uint8_t(rng.next());
  return b;
}
uint16_t random_half(Rng &rng) { return f32_to_f16_bits(float(rng.uniform() * 0.2 - 0.1)); }

// Element i of each format, indexed directly instead of looped over, from ggml's definitions.
float q4_0(const BlockQ4_0 &b, int i) {
  int q = i < 16 ? b.qs[i] & 15 : b.qs[i - 16] >> 4;
  return float(q - 8) * f16_bits_to_f32(b.d);
}
float q4_1(const BlockQ4_1 &b, int i) {
  int q = i < 16 ? b.qs[i] & 15 : b.qs[i - 16] >> 4;
  return float(q) * f16_bits_to_f32(b.d) + f16_bits_to_f32(b.m);
}
int five_bit(const uint8_t *qs, const uint8_t *qh, int i) {
  uint32_t high = (uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24) >> i & 1;
  int low = i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
  return low + 16 * int(high);
}
float q5_0(const BlockQ5_0 &b, int i) { return float(five_bit(b.qs, b.qh, i) - 16) * f16_bits_to_f32(b.d); }
float q5_1(const BlockQ5_1 &b, int i) { return float(five_bit(b.qs, b.qh, i)) * f16_bits_to_f32(b.d) + f16_bits_to_f32(b.m); }
float q8_0(const BlockQ8_0 &b, int i) { return float(b.qs[i]) * f16_bits_to_f32(b.d); }

// Q4_K/Q5_K scales: 8 six-bit scales then 8 six-bit mins, as a 96-bit layout where sub-blocks
// 0-3 sit in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins), and sub-blocks 4-7 take 4
// low bits from bytes 8-11 (scale low nibble, min high nibble) and 2 high bits from the top
// of bytes 0-3 (scales) and 4-7 (mins).
void scale_min(const uint8_t *s, int sub, int *scale, int *min) {
  if (sub < 4) {
    *scale = s[sub] % 64;
    *min = s[sub + 4] % 64;
  } else {
    *scale = s[sub + 4] % 16 + 16 * (s[sub - 4] / 64);
    *min = s[sub + 4] / 16 + 16 * (s[sub] / 64);
  }
}
float q4_k(const BlockQ4_K &b, int i) {
  int sub = i / 32, sc, m;
  scale_min(b.scales, sub, &sc, &m);
  uint8_t byte = b.qs[(sub / 2) * 32 + i % 32];
  int q = sub % 2 ? byte >> 4 : byte & 15;
  return f16_bits_to_f32(b.d) * float(sc) * float(q) - f16_bits_to_f32(b.dmin) * float(m);
}
float q5_k(const BlockQ5_K &b, int i) {
  int sub = i / 32, sc, m;
  scale_min(b.scales, sub, &sc, &m);
  uint8_t byte = b.qs[(sub / 2) * 32 + i % 32];
  int q = (sub % 2 ? byte >> 4 : byte & 15) + 16 * ((b.qh[i % 32] >> sub) & 1);
  return f16_bits_to_f32(b.d) * float(sc) * float(q) - f16_bits_to_f32(b.dmin) * float(m);
}
float q6_k(const BlockQ6_K &b, int i) {
  int half = i / 128, quarter = (i % 128) / 32, l = i % 32;
  uint8_t low_byte = b.ql[half * 64 + l + (quarter % 2) * 32];
  int low = quarter < 2 ? low_byte & 15 : low_byte >> 4;
  int high = (b.qh[half * 32 + l] >> (2 * quarter)) & 3;
  int scale = b.scales[half * 8 + quarter * 2 + l / 16];
  return f16_bits_to_f32(b.d) * float(scale) * float(low + 16 * high - 32);
}

float iq4_nl(const BlockIQ4_NL &b, int i) {
  static const int grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};  // ggml's kvalues_iq4nl
  uint8_t byte = b.qs[i % 16];
  return f16_bits_to_f32(b.d) * float(grid[i < 16 ? byte & 15 : byte >> 4]);
}

template <class Block, int N>
void check_random(GgmlType type, float (*element)(const Block &, int), void (*fix)(Block &, Rng &)) {
  Rng rng(uint64_t(type) + 100);
  for (int trial = 0; trial < 200; ++trial) {
    Block blocks[2] = {random_block<Block>(rng), random_block<Block>(rng)};
    for (Block &b : blocks) fix(b, rng);
    float out[2 * N];
    dequantize_row(type, blocks, out, 2 * N);
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < N; ++i) {
        float want = element(blocks[k], i), got = out[k * N + i];
        if (std::fabs(got - want) > 1e-6f * (1 + std::fabs(want))) {
          FAIL_CHECK(ggml_type_traits(type).ggml_name << " block " << k << " element " << i << ": got " << got
                                                 << ", expected " << want);
          return;
        }
      }
  }
}

}  // namespace

TEST_CASE("dequantize: random blocks match the per-element definitions") {
  check_random<BlockQ4_0, 32>(GgmlType::Q4_0, q4_0, [](BlockQ4_0 &b, Rng &r) { b.d = random_half(r); });
  check_random<BlockQ4_1, 32>(GgmlType::Q4_1, q4_1, [](BlockQ4_1 &b, Rng &r) { b.d = random_half(r), b.m = random_half(r); });
  check_random<BlockQ5_0, 32>(GgmlType::Q5_0, q5_0, [](BlockQ5_0 &b, Rng &r) { b.d = random_half(r); });
  check_random<BlockQ5_1, 32>(GgmlType::Q5_1, q5_1, [](BlockQ5_1 &b, Rng &r) { b.d = random_half(r), b.m = random_half(r); });
  check_random<BlockQ8_0, 32>(GgmlType::Q8_0, q8_0, [](BlockQ8_0 &b, Rng &r) { b.d = random_half(r); });
  check_random<BlockIQ4_NL, 32>(GgmlType::IQ4_NL, iq4_nl, [](BlockIQ4_NL &b, Rng &r) { b.d = random_half(r); });
  check_random<BlockQ4_K, 256>(GgmlType::Q4_K, q4_k, [](BlockQ4_K &b, Rng &r) { b.d = random_half(r), b.dmin = random_half(r); });
  check_random<BlockQ5_K, 256>(GgmlType::Q5_K, q5_k, [](BlockQ5_K &b, Rng &r) { b.d = random_half(r), b.dmin = random_half(r); });
  check_random<BlockQ6_K, 256>(GgmlType::Q6_K, q6_k, [](BlockQ6_K &b, Rng &) { b.d = f32_to_f16_bits(0.01f); });
}

TEST_CASE("dequantize: hand-made blocks give hand-computed values") {
  BlockQ4_0 a{};
  a.d = f32_to_f16_bits(0.5f);
  a.qs[0] = 0x3A;  // element 0: nibble A (10) -> (10 - 8) * 0.5 = 1; element 16: 3 -> -2.5
  float out[256];
  dequantize_row(GgmlType::Q4_0, &a, out, 32);
  CHECK(out[0] == 1.0f);
  CHECK(out[16] == -2.5f);
  CHECK(out[1] == -4.0f);  // nibble 0

  BlockQ5_0 c{};
  c.d = f32_to_f16_bits(2.0f);
  c.qs[1] = 0x0F;
  c.qh[0] = 0x02;  // bit 1: element 1 becomes 15 + 16 = 31 -> (31 - 16) * 2 = 30
  c.qh[2] = 0x01;  // bit 16: element 16 becomes 0 + 16 -> 0
  dequantize_row(GgmlType::Q5_0, &c, out, 32);
  CHECK(out[1] == 30.0f);
  CHECK(out[16] == 0.0f);
  CHECK(out[0] == -32.0f);

  BlockQ4_K k{};
  k.d = f32_to_f16_bits(1.0f);
  k.dmin = f32_to_f16_bits(0.25f);
  k.scales[1] = 3;             // sub-block 1 scale 3
  k.scales[5] = 8;             // sub-block 1 min 8
  k.scales[9] = 0x21;          // sub-block 5: scale low 1, min low 2
  k.scales[1] |= 0x40;         // sub-block 5 scale high bits 01 -> scale 1 + 16 = 17
  k.qs[0] = 0x70;              // element 32 (sub-block 1, high nibble of byte 0): q = 7
  k.qs[64 + 3] = 0x50;         // element 160 + 3 (sub-block 5): q = 5
  dequantize_row(GgmlType::Q4_K, &k, out, 256);
  CHECK(out[32] == 3.0f * 7 - 0.25f * 8);
  CHECK(out[163] == 17.0f * 5 - 0.25f * 2);
  CHECK(out[0] == 0.0f);

  BlockQ6_K s{};
  s.d = f32_to_f16_bits(0.5f);
  s.scales[2] = -4;   // elements 32..47 of the first half
  s.ql[32] = 0x09;    // element 32: low 9
  s.qh[0] = 0x04;     // element 32: high bits (bits 2-3) = 1 -> q = 9 + 16 - 32 = -7
  dequantize_row(GgmlType::Q6_K, &s, out, 256);
  CHECK(out[32] == 0.5f * -4 * -7);
}

TEST_CASE("dequantize: f16 and bf16 conversions") {
  CHECK(f16_bits_to_f32(0x3C00) == 1.0f);
  CHECK(f16_bits_to_f32(0xC000) == -2.0f);
  CHECK(f16_bits_to_f32(0x7BFF) == 65504.0f);
  CHECK(f16_bits_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(std::isinf(f16_bits_to_f32(0x7C00)));
  CHECK(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);      // tie: to even
  CHECK(f32_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);  // tie: to even (up)
  CHECK(f32_to_f16_bits(65520.0f) == 0x7C00);
  CHECK(f32_to_f16_bits(std::ldexp(1.0f, -25)) == 0x0000);  // tie between 0 and the least subnormal
  CHECK(f32_to_f16_bits(std::ldexp(3.0f, -26)) == 0x0001);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    if (!nan && f32_to_f16_bits(f16_bits_to_f32(uint16_t(h))) != h) FAIL_CHECK("f16 " << h << " does not round-trip");
  }
  CHECK(bf16_bits_to_f32(0x3F80) == 1.0f);
  CHECK(f32_to_bf16_bits(1.0f) == 0x3F80);
  CHECK(f32_to_bf16_bits(std::bit_cast<float>(0x3F808000u)) == 0x3F80);  // tie: to even
  CHECK(f32_to_bf16_bits(std::bit_cast<float>(0x3F818000u)) == 0x3F82);
  uint16_t h[3] = {0x3C00, 0xC000, 0x3800};
  float out[3];
  dequantize_row(GgmlType::F16, h, out, 3);
  CHECK(out[2] == 0.5f);
  CHECK_THROWS_WITH_AS(dequantize_row(GgmlType::Q8_0, h, out, 3),
                       "dequantize: 3 elements of type Q8_0: expected a multiple of the block size 32", kdsl::Error);
  CHECK_THROWS_WITH_AS(dequantize_row(GgmlType::Q2_K, h, out, 256), "dequantize: tensor type Q2_K is not supported",
                       kdsl::Error);
}
