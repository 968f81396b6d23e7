// quantize.cpp - round-to-nearest quantization per block, the inverse of dequantize.cpp's layouts
#include "models/gguf/quantize.h"

#include <kdsl/formats/weight_types.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <fmt/format.h>
#include <kdsl/error.h>


namespace kdsl::models {

using namespace kdsl::formats;

namespace {

int nearest(float v) { return int(std::lround(v)); }

// The value with the largest magnitude, keeping its sign (ggml's choice for symmetric types,
// so that value lands exactly on the extreme level).
float signed_absmax(const float *x, int n) {
  float best = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(best)) best = x[i];
  return best;
}

void quantize(const float *x, BlockQ8_0 &b) {
  float amax = std::fabs(signed_absmax(x, kQK8_0));
  b.d = f32_to_f16_bits(amax / 127);
  float d = f16_bits_to_f32(b.d), id = d ? 1 / d : 0;
  for (int i = 0; i < kQK8_0; ++i) b.qs[i] = int8_t(std::clamp(nearest(x[i] * id), -127, 127));
}

// Symmetric 4/5-bit: levels -half..half-1 scaled by d = max / -half.
template <class Block>
void quantize_symmetric(const float *x, Block &b, int half) {
  b.d = f32_to_f16_bits(signed_absmax(x, 32) / float(-half));
  float d = f16_bits_to_f32(b.d), id = d ? 1 / d : 0;
  uint32_t qh = 0;
  std::memset(b.qs, 0, sizeof b.qs);
  for (int i = 0; i < 32; ++i) {
    int q = std::clamp(nearest(x[i] * id) + half, 0, 2 * half - 1);
    b.qs[i % 16] |= uint8_t((q & 15) << (i < 16 ? 0 : 4));
    qh |= uint32_t(q >> 4) << i;
  }
  if constexpr (requires { b.qh; }) std::memcpy(b.qh, &qh, 4);
}

// Asymmetric 4/5-bit: x = d * q + m with m the block minimum.
template <class Block>
void quantize_affine(const float *x, Block &b, int levels) {
  float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
  b.d = f32_to_f16_bits((hi - lo) / float(levels - 1));
  b.m = f32_to_f16_bits(lo);
  float d = f16_bits_to_f32(b.d), m = f16_bits_to_f32(b.m), id = d ? 1 / d : 0;
  uint32_t qh = 0;
  std::memset(b.qs, 0, sizeof b.qs);
  for (int i = 0; i < 32; ++i) {
    int q = std::clamp(nearest((x[i] - m) * id), 0, levels - 1);
    b.qs[i % 16] |= uint8_t((q & 15) << (i < 16 ? 0 : 4));
    qh |= uint32_t(q >> 4) << i;
  }
  if constexpr (requires { b.qh; }) std::memcpy(b.qh, &qh, 4);
}

// Q4_K and Q5_K: 8 sub-blocks of 32, x = d * sc * q - dmin * m with 6-bit sc and m.
template <class Block>
void quantize_k(const float *x, Block &b, int levels) {
  float scale[8], min[8];
  for (int s = 0; s < 8; ++s) {
    const float *v = x + 32 * s;
    float lo = std::min(0.0f, *std::min_element(v, v + 32)), hi = *std::max_element(v, v + 32);
    scale[s] = (hi - lo) / float(levels - 1);
    min[s] = -lo;
  }
  float max_scale = *std::max_element(scale, scale + 8), max_min = *std::max_element(min, min + 8);
  b.d = f32_to_f16_bits(max_scale / 63);
  b.dmin = f32_to_f16_bits(max_min / 63);
  float d = f16_bits_to_f32(b.d), dmin = f16_bits_to_f32(b.dmin);
  std::memset(b.scales, 0, sizeof b.scales);
  std::memset(b.qs, 0, sizeof b.qs);
  if constexpr (requires { b.qh; }) std::memset(b.qh, 0, sizeof b.qh);
  for (int s = 0; s < 8; ++s) {
    int sc = d ? std::clamp(nearest(scale[s] / d), 0, 63) : 0;
    int m = dmin ? std::clamp(nearest(min[s] / dmin), 0, 63) : 0;
    if (s < 4) {
      b.scales[s] = uint8_t(sc);
      b.scales[s + 4] = uint8_t(m);
    } else {
      b.scales[s + 4] = uint8_t((sc & 15) | ((m & 15) << 4));
      b.scales[s - 4] |= uint8_t((sc >> 4) << 6);
      b.scales[s] |= uint8_t((m >> 4) << 6);
    }
    float step = d * float(sc), offset = dmin * float(m);
    for (int l = 0; l < 32; ++l) {
      int q = step ? std::clamp(nearest((x[32 * s + l] + offset) / step), 0, levels - 1) : 0;
      b.qs[(s / 2) * 32 + l] |= uint8_t((q & 15) << (s % 2 ? 4 : 0));
      if constexpr (requires { b.qh; }) b.qh[l] |= uint8_t((q >> 4) << s);
    }
  }
}

// Q6_K: 16 sub-blocks of 16, x = d * sc * (q - 32) with signed 8-bit sc.
void quantize(const float *x, BlockQ6_K &b) {
  float scale[16];
  for (int s = 0; s < 16; ++s) scale[s] = std::fabs(signed_absmax(x + 16 * s, 16)) / 31;
  float max_scale = *std::max_element(scale, scale + 16);
  b.d = f32_to_f16_bits(max_scale / 127);
  float d = f16_bits_to_f32(b.d);
  std::memset(b.ql, 0, sizeof b.ql);
  std::memset(b.qh, 0, sizeof b.qh);
  for (int s = 0; s < 16; ++s) b.scales[s] = int8_t(d ? std::clamp(nearest(scale[s] / d), 0, 127) : 0);
  for (int i = 0; i < kQK_K; ++i) {
    float step = d * float(b.scales[i / 16]);
    int q = (step ? std::clamp(nearest(x[i] / step), -32, 31) : 0) + 32;
    int half = i / 128, quarter = (i % 128) / 32, l = i % 32;
    b.ql[half * 64 + l + (quarter % 2) * 32] |= uint8_t((q & 15) << (quarter < 2 ? 0 : 4));
    b.qh[half * 32 + l] |= uint8_t((q >> 4) << (2 * quarter));
  }
}

// One overload per layout of weight_types.def: plain floats are blocks of one.
void quantize_block(const float *x, float &b) { b = *x; }
void quantize_block(const float *x, half &b) { b = half(*x); }
void quantize_block(const float *x, bfloat16 &b) { b = bfloat16(*x); }
void quantize_block(const float *x, BlockQ8_0 &b) { quantize(x, b); }
void quantize_block(const float *x, BlockQ4_0 &b) { quantize_symmetric(x, b, 8); }
void quantize_block(const float *x, BlockQ5_0 &b) { quantize_symmetric(x, b, 16); }
void quantize_block(const float *x, BlockQ4_1 &b) { quantize_affine(x, b, 16); }
void quantize_block(const float *x, BlockQ5_1 &b) { quantize_affine(x, b, 32); }
void quantize_block(const float *x, BlockQ4_K &b) { quantize_k(x, b, 16); }
void quantize_block(const float *x, BlockQ5_K &b) { quantize_k(x, b, 32); }
void quantize_block(const float *x, BlockQ6_K &b) { quantize(x, b); }

template <class Block, int N>
void quantize_blocks(const float *x, void *dst, int64_t n) {
  if constexpr (std::is_void_v<Block>) {
    throw Error("quantize: a type with no layout; this is a bug in kdsl");  // refused by quantize_row
  } else if constexpr (std::is_same_v<Block, float>) {
    std::memcpy(dst, x, size_t(n) * sizeof(float));
  } else {
    auto *out = static_cast<unsigned char *>(dst);
    for (int64_t i = 0; i < n / N; ++i) {
      Block b{};
      quantize_block(x + i * N, b);
      std::memcpy(out + i * int64_t(sizeof(Block)), &b, sizeof(Block));
    }
  }
}

}  // namespace

void quantize_row(GgmlType type, const float *x, void *dst, int64_t n) {
  const GgmlTypeTraits &traits = ggml_type_traits(type);
  if (!traits.readable) throw Error(fmt::format("quantize: tensor type {} is not supported", traits.ggml_name));
  if (n < 0 || n % traits.block_elements != 0)
    throw Error(fmt::format("quantize: {} elements of type {}: expected a multiple of the block size {}", n,
                            traits.ggml_name, traits.block_elements));
  switch (type) {
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) \
  case GgmlType::Name: return quantize_blocks<Layout, elements>(x, dst, n);
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE
  }
  throw Error(fmt::format("quantize: tensor type {} is not supported", traits.ggml_name));
}

}  // namespace kdsl::models
