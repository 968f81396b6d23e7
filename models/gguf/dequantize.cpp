// dequantize.cpp - block-by-block reference dequantization, following ggml-quants.c
#include "models/gguf/dequantize.h"

#include <cstring>
#include <type_traits>
#include <fmt/format.h>
#include <kdsl/error.h>
#include <kdsl/formats/fp8.h>

namespace kdsl::models {

using namespace kdsl::formats;

void unpack_scale_min_k4(int j, const uint8_t *q, uint8_t *scale, uint8_t *min) {
  // sub-blocks 0..3 keep 6 bits in bytes 0..7; 4..7 put their low 4 bits in bytes 8..11 and
  // their high 2 bits in the spare top bits of bytes 0..7
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void dequantize_block(const BlockQ4_0 &b, float *y) {
  float d = f16_bits_to_f32(b.d);
  for (int j = 0; j < kQK4_0 / 2; ++j) {
    y[j] = float((b.qs[j] & 0xF) - 8) * d;
    y[j + kQK4_0 / 2] = float((b.qs[j] >> 4) - 8) * d;
  }
}

void dequantize_block(const BlockQ4_1 &b, float *y) {
  float d = f16_bits_to_f32(b.d), m = f16_bits_to_f32(b.m);
  for (int j = 0; j < kQK4_1 / 2; ++j) {
    y[j] = float(b.qs[j] & 0xF) * d + m;
    y[j + kQK4_1 / 2] = float(b.qs[j] >> 4) * d + m;
  }
}

void dequantize_block(const BlockQ5_0 &b, float *y) {
  float d = f16_bits_to_f32(b.d);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < kQK5_0 / 2; ++j) {
    int x0 = (b.qs[j] & 0xF) | int(((qh >> j) << 4) & 0x10);
    int x1 = (b.qs[j] >> 4) | int((qh >> (j + 12)) & 0x10);
    y[j] = float(x0 - 16) * d;
    y[j + kQK5_0 / 2] = float(x1 - 16) * d;
  }
}

void dequantize_block(const BlockQ5_1 &b, float *y) {
  float d = f16_bits_to_f32(b.d), m = f16_bits_to_f32(b.m);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < kQK5_1 / 2; ++j) {
    int x0 = (b.qs[j] & 0xF) | int(((qh >> j) << 4) & 0x10);
    int x1 = (b.qs[j] >> 4) | int((qh >> (j + 12)) & 0x10);
    y[j] = float(x0) * d + m;
    y[j + kQK5_1 / 2] = float(x1) * d + m;
  }
}

void dequantize_block(const BlockQ8_0 &b, float *y) {
  float d = f16_bits_to_f32(b.d);
  for (int j = 0; j < kQK8_0; ++j) y[j] = float(b.qs[j]) * d;
}

void dequantize_block(const BlockIQ4_NL &b, float *y) {
  float d = f16_bits_to_f32(b.d);
  for (int j = 0; j < kQK4_NL / 2; ++j) {
    y[j] = d * float(kIQ4NLValues[b.qs[j] & 0x0F]);
    y[j + kQK4_NL / 2] = d * float(kIQ4NLValues[b.qs[j] >> 4]);
  }
}

void dequantize_block(const BlockF8_E4M3 &b, float *y) {
  float d = f16_bits_to_f32(b.d);
  for (int j = 0; j < kQK_F8; ++j) y[j] = e4m3_bits_to_f32(b.qs[j]) * d;
}

void dequantize_block(const BlockQ4_K &b, float *y) {
  float d = f16_bits_to_f32(b.d), dmin = f16_bits_to_f32(b.dmin);
  const uint8_t *q = b.qs;
  for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, q += 32) {
    uint8_t sc, m;
    unpack_scale_min_k4(is, b.scales, &sc, &m);
    float d1 = d * sc, m1 = dmin * m;
    unpack_scale_min_k4(is + 1, b.scales, &sc, &m);
    float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
  }
}

void dequantize_block(const BlockQ5_K &b, float *y) {
  float d = f16_bits_to_f32(b.d), dmin = f16_bits_to_f32(b.dmin);
  const uint8_t *ql = b.qs;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, ql += 32, u1 = uint8_t(u1 << 2), u2 = uint8_t(u2 << 2)) {
    uint8_t sc, m;
    unpack_scale_min_k4(is, b.scales, &sc, &m);
    float d1 = d * sc, m1 = dmin * m;
    unpack_scale_min_k4(is + 1, b.scales, &sc, &m);
    float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * float((ql[l] & 0xF) + (b.qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float((ql[l] >> 4) + (b.qh[l] & u2 ? 16 : 0)) - m2;
  }
}

void dequantize_block(const BlockQ6_K &b, float *y) {
  float d = f16_bits_to_f32(b.d);
  const uint8_t *ql = b.ql, *qh = b.qh;
  const int8_t *sc = b.scales;
  for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      int is = l / 16;
      int q1 = int((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = int((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * float(sc[is]) * float(q1);
      y[l + 32] = d * float(sc[is + 2]) * float(q2);
      y[l + 64] = d * float(sc[is + 4]) * float(q3);
      y[l + 96] = d * float(sc[is + 6]) * float(q4);
    }
  }
}

namespace {

// Plain floats as blocks of one, beside the block layouts' overloads.
using models::dequantize_block;
void dequantize_block(const float &v, float *out) { *out = v; }
void dequantize_block(const half &v, float *out) { *out = float(v); }
void dequantize_block(const bfloat16 &v, float *out) { *out = float(v); }

template <class Block, int N>
void dequantize_blocks(const void *src, float *out, int64_t n) {
  if constexpr (std::is_void_v<Block>) {
    throw Error("dequantize: a type with no layout; this is a bug in kdsl");  // refused by dequantize_row
  } else if constexpr (std::is_same_v<Block, float>) {
    std::memcpy(out, src, size_t(n) * sizeof(float));
  } else {
    const auto *bytes = static_cast<const unsigned char *>(src);
    for (int64_t i = 0; i < n / N; ++i) {
      Block b;  // copied: GGUF data is only guaranteed aligned to the file's alignment
      std::memcpy(&b, bytes + i * int64_t(sizeof(Block)), sizeof(Block));
      dequantize_block(b, out + i * N);
    }
  }
}

}  // namespace

void dequantize_row(GgmlType type, const void *src, float *out, int64_t n) {
  const GgmlTypeTraits &traits = ggml_type_traits(type);
  if (!traits.readable) throw Error(fmt::format("dequantize: tensor type {} is not supported", traits.ggml_name));
  if (n < 0 || n % traits.block_elements != 0)
    throw Error(fmt::format("dequantize: {} elements of type {}: expected a multiple of the block size {}", n,
                            traits.ggml_name, traits.block_elements));
  switch (type) {
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) \
  case GgmlType::Name: return dequantize_blocks<Layout, elements>(src, out, n);
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE
  }
  throw Error(fmt::format("dequantize: tensor type {} is not supported", traits.ggml_name));
}

}  // namespace kdsl::models
