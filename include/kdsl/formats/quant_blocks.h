// quant_blocks.h - ggml's quantized block layouts, defined once for the file readers, the reference (de)quantizers and the kernels
#pragma once
// Plain structs with no dependencies, so kernels/ and models/ both include this header. Field
// names and order follow ggml-common.h; `uint16_t` halves hold IEEE f16 bits.
#include <cstdint>

namespace kdsl::formats {

constexpr int kQK4_0 = 32, kQK4_1 = 32, kQK5_0 = 32, kQK5_1 = 32, kQK8_0 = 32, kQK_F8 = 32, kQK4_NL = 32;
constexpr int kQK_K = 256;          // elements in a k-quant super-block
constexpr int kKScaleSize = 12;     // packed 6-bit scales and mins of Q4_K and Q5_K

// x[i] = d * (q[i] - 8), q[i] the low nibbles of qs for i < 16 and the high nibbles after
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 2 + kQK4_0 / 2, "BlockQ4_0 must be 18 bytes, as in ggml");

// x[i] = d * q[i] + m
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK4_1 / 2];
};
static_assert(sizeof(BlockQ4_1) == 4 + kQK4_1 / 2, "BlockQ4_1 must be 20 bytes, as in ggml");

// x[i] = d * (q[i] - 16); bit 4 of q[i] is bit i of the little-endian 32-bit qh
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 2 + 4 + kQK5_0 / 2, "BlockQ5_0 must be 22 bytes, as in ggml");

// x[i] = d * q[i] + m
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};
static_assert(sizeof(BlockQ5_1) == 4 + 4 + kQK5_1 / 2, "BlockQ5_1 must be 24 bytes, as in ggml");

// x[i] = d * qs[i]
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 2 + kQK8_0, "BlockQ8_0 must be 34 bytes, as in ggml");

// x[i] = d * kIQ4NLValues[q[i]], q[i] the 4-bit nibbles laid out as Q4_0's: a non-linear
// 16-level grid, denser near zero, where weights are (ggml's kvalues_iq4nl)
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK4_NL / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 2 + kQK4_NL / 2, "BlockIQ4_NL must be 18 bytes, as in ggml");

// x[i] = d * e4m3(qs[i]): FP8 E4M3 values (kdsl/formats/fp8.h) times one f16 scale per 32, the
// scale d = amax / 448 putting the block's largest magnitude at E4M3's largest finite value.
// kdsl's own format (ggml has no FP8 type): its layout is Q8_0's with E4M3 codes for int8.
struct BlockF8_E4M3 {
  uint16_t d;
  uint8_t qs[kQK_F8];
};
static_assert(sizeof(BlockF8_E4M3) == 2 + kQK_F8, "BlockF8_E4M3 must be 34 bytes");

// 8 sub-blocks of 32 with 6-bit scale and min each: x = d * sc * q - dmin * m, q 4 bits.
// Sub-block pairs (2j, 2j+1) share 32 bytes of qs: low nibbles, then high nibbles.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 4 + kKScaleSize + kQK_K / 2, "BlockQ4_K must be 144 bytes, as in ggml");

// As Q4_K with a fifth bit per element from qh: sub-block s takes bit s of qh[l]
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 4 + kKScaleSize + kQK_K / 8 + kQK_K / 2, "BlockQ5_K must be 176 bytes, as in ggml");

// 16 sub-blocks of 16 with signed 8-bit scales: x = d * scales[s] * (q - 32), q 6 bits:
// 4 low bits from ql, 2 high bits from qh
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == kQK_K / 2 + kQK_K / 4 + kQK_K / 16 + 2, "BlockQ6_K must be 210 bytes, as in ggml");

}  // namespace kdsl::formats
