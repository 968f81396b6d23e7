// grouped_bits.h - quant bits rewritten in place for the CPU's grouped decode kernels, so that most values are one byte's low bits
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include <kdsl/formats/quant_blocks.h>

namespace kdsl::formats {

// How a row's whole block is written before its fields are moved: as it is, or with its
// quants' bits moved so that most values are one byte's low bits, where as stored each value
// is a nibble of one byte and one or two bits of another: SixBitBytes (Q6_K,
// q6_k_six_bit_bytes), FiveBitBytes (Q5_K, Q5_0 and Q5_1: q5_k_five_bit_bytes,
// five_bit_bytes_32, below). The decode kernels are bound by their instructions on AVX2, and each
// such value costs one AND instead of 3-6 operations. The bytes stay where they were, so the
// fields and their grains do not change.
enum class BlockBits { AsStored, SixBitBytes, FiveBitBytes };

// Q5_0's and Q5_1's five-bit bytes (BlockBits::FiveBitBytes). As stored, element l (l < 16)
// is the low nibble of qs[l] and element 16 + l its high one, each with bit l or 16 + l of qh
// (a little-endian 32-bit word) above it. Rewritten, for l = 4i + b (piece i, byte lane b of
// the 4 bytes a grouped kernel reads a row at a time),
//   qs[l] = v(l) | (bits 0-2 of v(16 + l)) << 5
//   qh    = bits 3-4 of v(16 + l) at bits 2i, 2i + 1 of byte b
// so that the low elements are a byte's low 5 bits and a high one is its top 3 below two bits
// of qh in the same lane, at one place for every lane of a piece.
template <class Layout>
void five_bit_bytes_32(uint8_t *block) {
  uint8_t *qs = block + offsetof(Layout, qs), *qh = block + offsetof(Layout, qh);
  const uint32_t fifth = uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
  uint8_t high[4] = {};
  for (int l = 0; l < 16; ++l) {
    const int low = (qs[l] & 15) | int(fifth >> l & 1) << 4, up = (qs[l] >> 4) | int(fifth >> (16 + l) & 1) << 4;
    qs[l] = uint8_t(low | (up & 7) << 5);
    high[l % 4] = uint8_t(high[l % 4] | (up >> 3) << (2 * (l / 4)));
  }
  std::memcpy(qh, high, 4);
}
// The inverse: qs and qh as ggml stores them again.
template <class Layout>
void stored_bits_32(uint8_t *block) {
  uint8_t *qs = block + offsetof(Layout, qs), *qh = block + offsetof(Layout, qh);
  uint32_t fifth = 0;
  for (int l = 0; l < 16; ++l) {
    const int low = qs[l] & 31, up = (qs[l] >> 5) | (qh[l % 4] >> (2 * (l / 4)) & 3) << 3;
    qs[l] = uint8_t((low & 15) | (up & 15) << 4);
    fifth |= uint32_t(low >> 4) << l | uint32_t(up >> 4) << (16 + l);
  }
  for (int k = 0; k < 4; ++k) qh[k] = uint8_t(fifth >> (8 * k));
}

// Q6_K's six-bit bytes (BlockBits::SixBitBytes). As stored, value 128h + 32qq + l (half h,
// quarter qq, l < 32) is the low (qq 0, 1) or high (qq 2, 3) nibble of ql[64h + 32(qq % 2) + l]
// with bits 2qq, 2qq + 1 of qh[32h + l] above it: the 4 values at (h, l) take 12 bits of
// three bytes. Rewritten, the same three bytes hold
//   ql[64h + l]      = v0 | (bits 0-1 of v3) << 6
//   ql[64h + 32 + l] = v1 | (bits 2-3 of v3) << 6
//   qh[32h + l]      = v2 | (bits 4-5 of v3) << 6
// so that v0, v1 and v2 are a byte's low 6 bits (one AND) and v3 its three top bit pairs.
// The scales and d are untouched.
inline void q6_k_six_bit_bytes(uint8_t *block) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      uint8_t &a = block[offsetof(BlockQ6_K, ql) + 64 * h + l], &b = block[offsetof(BlockQ6_K, ql) + 64 * h + 32 + l];
      uint8_t &c = block[offsetof(BlockQ6_K, qh) + 32 * h + l];
      const int v0 = (a & 15) | (c & 3) << 4, v1 = (b & 15) | (c >> 2 & 3) << 4;
      const int v2 = (a >> 4) | (c >> 4 & 3) << 4, v3 = (b >> 4) | (c >> 6) << 4;
      a = uint8_t(v0 | (v3 & 3) << 6), b = uint8_t(v1 | (v3 >> 2 & 3) << 6), c = uint8_t(v2 | (v3 >> 4) << 6);
    }
}
// The inverse: a block's ql and qh as ggml stores them again.
inline void q6_k_stored_bits(uint8_t *block) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      uint8_t &a = block[offsetof(BlockQ6_K, ql) + 64 * h + l], &b = block[offsetof(BlockQ6_K, ql) + 64 * h + 32 + l];
      uint8_t &c = block[offsetof(BlockQ6_K, qh) + 32 * h + l];
      const int v0 = a & 63, v1 = b & 63, v2 = c & 63, v3 = (a >> 6) | (b >> 6) << 2 | (c >> 6) << 4;
      a = uint8_t((v0 & 15) | (v2 & 15) << 4), b = uint8_t((v1 & 15) | (v3 & 15) << 4);
      c = uint8_t((v0 >> 4) | (v1 >> 4) << 2 | (v2 >> 4) << 4 | (v3 >> 4) << 6);
    }
}

// Q5_K's five-bit bytes (BlockBits::FiveBitBytes). As stored, sub-block j's value at l
// (l < 32) is the low (j even) or high (j odd) nibble of qs[32(j / 2) + l], with bit j of
// qh[l] above it. Rewritten, the same bytes hold, for c < 4,
//   qs[32c + l] = v(2c) | (bits 0-2 of v(2c + 1)) << 5
//   qh[l]       = bits 3-4 of v(2c + 1) at bits 2c, 2c + 1
// so that an even sub-block's value is a byte's low 5 bits, and an odd one's the top 3 bits of
// that byte below 2 bits of qh.
inline void q5_k_five_bit_bytes(uint8_t *block) {
  for (int l = 0; l < 32; ++l) {
    uint8_t &qh = block[offsetof(BlockQ5_K, qh) + l];
    uint8_t high = 0;
    for (int c = 0; c < 4; ++c) {
      uint8_t &qs = block[offsetof(BlockQ5_K, qs) + 32 * c + l];
      const int even = (qs & 15) | (qh >> (2 * c) & 1) << 4, odd = (qs >> 4) | (qh >> (2 * c + 1) & 1) << 4;
      qs = uint8_t(even | (odd & 7) << 5);
      high = uint8_t(high | (odd >> 3) << (2 * c));
    }
    qh = high;
  }
}
// The inverse: a block's qs and qh as ggml stores them again.
inline void q5_k_stored_bits(uint8_t *block) {
  for (int l = 0; l < 32; ++l) {
    uint8_t &qh = block[offsetof(BlockQ5_K, qh) + l];
    uint8_t fifth = 0;
    for (int c = 0; c < 4; ++c) {
      uint8_t &qs = block[offsetof(BlockQ5_K, qs) + 32 * c + l];
      const int even = qs & 31, odd = (qs >> 5) | (qh >> (2 * c) & 3) << 3;
      qs = uint8_t((even & 15) | (odd & 15) << 4);
      fifth = uint8_t(fifth | (even >> 4) << (2 * c) | (odd >> 4) << (2 * c + 1));
    }
    qh = fifth;
  }
}
// A row's block to its rewritten bits (to_rewritten) or back as stored, where its plan says so.
template <class Layout>
void rewrite_block_bits(uint8_t *block, BlockBits bits, bool to_rewritten) {
  if constexpr (std::is_same_v<Layout, BlockQ6_K>) {
    if (bits == BlockBits::SixBitBytes) return to_rewritten ? q6_k_six_bit_bytes(block) : q6_k_stored_bits(block);
  } else if constexpr (std::is_same_v<Layout, BlockQ5_K>) {
    if (bits == BlockBits::FiveBitBytes) return to_rewritten ? q5_k_five_bit_bytes(block) : q5_k_stored_bits(block);
  } else if constexpr (std::is_same_v<Layout, BlockQ5_0> || std::is_same_v<Layout, BlockQ5_1>) {
    if (bits == BlockBits::FiveBitBytes) return to_rewritten ? five_bit_bytes_32<Layout>(block) : stored_bits_32<Layout>(block);
  }
  if (bits != BlockBits::AsStored) throw std::logic_error("grouped_bits.h: a block rewrite of another format");
}

}  // namespace kdsl::formats
