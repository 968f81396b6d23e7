// int8_test_util.h - the integer-dot products' references: the activation quantizers' specification, each format's integer levels, the quantize-then-integer-dot product, the tolerance against the f32 path
#pragma once
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include <kdsl/formats/half.h>
#include <kdsl/formats/quant_blocks.h>

#include "kernels/int_dot_policy.h"
#include "models/gguf/dequantize.h"
#include "tests/kernels/quantized_test_util.h"

namespace kernels_test {
using kdsl::kernels::WeightType;

// The most rows a default Library on this CPU sends through format t's integer kernels (the
// kernels' own default_int_dot_rows, read over the formats table), 0 where t has none.
inline int int_dot_default_rows(WeightType t) {
  using namespace kdsl::kernels;
  static const kdsl::Device cpu = kdsl::Device::cpu();
  switch (t) {
#define KDSL_INT_DOT_None(Name)
#define KDSL_INT_DOT_Plain(Name)
#define KDSL_INT_DOT_Scaled(Name) \
  case WeightType::Name: return default_int_dot_rows<Name##Format>(cpu);
#define KDSL_INT_DOT_Decoded(Name) KDSL_INT_DOT_Scaled(Name)
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) KDSL_INT_DOT_##kernels(Name)
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE
#undef KDSL_INT_DOT_None
#undef KDSL_INT_DOT_Plain
#undef KDSL_INT_DOT_Scaled
#undef KDSL_INT_DOT_Decoded
    default: return 0;
  }
}
inline bool has_int_dot(WeightType t) { return int_dot_default_rows(t) > 0; }
// The formats with an integer-dot policy (has_int_dot), in weight_types.def's order.
inline std::vector<kdsl::formats::WeightTypeInfo> int_dot_formats() {
  std::vector<kdsl::formats::WeightTypeInfo> out;
  for (const kdsl::formats::WeightTypeInfo &info : kdsl::formats::kWeightTypes)
    if (has_int_dot(info.type)) out.push_back(info);
  return out;
}

// The activation blocks each format meets: 256 values per scale with sums of 16 for the
// k-quants (ggml's Q8_K), 32 with one sum (ggml's Q8_1) for the 32-value formats.
struct ActivationBlocks {
  int block, group;
};
inline ActivationBlocks activation_blocks(WeightType t) {
  if (kdsl::kernels::weight_type_info(t).block_elements == kdsl::formats::kQK_K) return {256, 16};
  return {32, 32};
}

// The activation quantizers as quantize_activations.h specifies them, in the same f32
// operations: per block of `block` values d = amax / 127, q = floor(x * (127 / amax) + 0.5),
// and with group > 0 the integer sum of each `group` consecutive q.
struct QuantizedRows {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> sums;
};
inline QuantizedRows quantize_reference(const std::vector<float> &x, int rows, int K, int block = 32, int group = 0) {
  QuantizedRows out;
  out.q.resize(size_t(rows) * size_t(K));
  out.d.resize(size_t(rows) * size_t(K / block));
  for (size_t b = 0; b < out.d.size(); ++b) {
    const size_t at = size_t(block) * b;
    float amax = 0;
    for (size_t j = 0; j < size_t(block); ++j) amax = std::max(amax, std::fabs(x[at + j]));
    const float inverse = amax > 0 ? 127.0f / amax : 0.0f;
    for (size_t j = 0; j < size_t(block); ++j) {
      volatile float scaled = x[at + j] * inverse;  // rounded to f32 before the add, as the kernel does
      out.q[at + j] = int8_t(std::floor(scaled + 0.5f));
    }
    out.d[b] = amax / 127.0f;
  }
  if (group > 0) {
    out.sums.assign(out.q.size() / size_t(group), 0);
    for (size_t i = 0; i < out.q.size(); ++i) out.sums[i / size_t(group)] += out.q[i];
  }
  return out;
}

// A weight block as integer levels: value i = scale[i] * level[i] + offset[i] in exact
// arithmetic (the reference dequantizer's f32 value is that, rounded at most once), split as
// the integer-dot kernels split it: the level is the u8 quant dot4 takes, the offset what
// meets the activations' sums (Q5_0's -16 d, Q6_K's -32 d sc), so the terms' magnitudes are
// those the kernels' f32 rounding follows.
struct WeightLevels {
  double scale[256], offset[256];
  int level[256];
};
inline WeightLevels weight_levels(WeightType t, const std::vector<uint8_t> &w, int64_t block) {
  using namespace kdsl::formats;
  const int bytes = kdsl::kernels::weight_type_info(t).block_bytes;
  const uint8_t *p = w.data() + block * bytes;
  WeightLevels out{};
  auto half = [](uint16_t h) { return double(kdsl::f16_bits_to_f32(h)); };
  auto set = [&](int i, double scale, int level, double offset) { out.scale[i] = scale, out.level[i] = level, out.offset[i] = offset; };
  auto fifth = [](const uint8_t qh[4], int j) { return int((qh[j / 8] >> (j % 8)) & 1) << 4; };
  switch (t) {
    case WeightType::Q8_0: {
      BlockQ8_0 b;
      std::memcpy(&b, p, sizeof b);
      for (int j = 0; j < 32; ++j) set(j, half(b.d), b.qs[j], 0);
      break;
    }
    case WeightType::Q4_0: {
      BlockQ4_0 b;
      std::memcpy(&b, p, sizeof b);
      for (int j = 0; j < 16; ++j) set(j, half(b.d), (b.qs[j] & 15) - 8, 0), set(j + 16, half(b.d), (b.qs[j] >> 4) - 8, 0);
      break;
    }
    case WeightType::IQ4_NL: {
      BlockIQ4_NL b;
      std::memcpy(&b, p, sizeof b);
      for (int j = 0; j < 16; ++j)
        set(j, half(b.d), kIQ4NLValues[b.qs[j] & 15], 0), set(j + 16, half(b.d), kIQ4NLValues[b.qs[j] >> 4], 0);
      break;
    }
    case WeightType::Q4_1: {
      BlockQ4_1 b;
      std::memcpy(&b, p, sizeof b);
      for (int j = 0; j < 16; ++j) set(j, half(b.d), b.qs[j] & 15, half(b.m)), set(j + 16, half(b.d), b.qs[j] >> 4, half(b.m));
      break;
    }
    case WeightType::Q5_0: {
      BlockQ5_0 b;
      std::memcpy(&b, p, sizeof b);
      for (int j = 0; j < 16; ++j)
        set(j, half(b.d), (b.qs[j] & 15) | fifth(b.qh, j), -16 * half(b.d)), set(j + 16, half(b.d), (b.qs[j] >> 4) | fifth(b.qh, j + 16), -16 * half(b.d));
      break;
    }
    case WeightType::Q5_1: {
      BlockQ5_1 b;
      std::memcpy(&b, p, sizeof b);
      for (int j = 0; j < 16; ++j)
        set(j, half(b.d), (b.qs[j] & 15) | fifth(b.qh, j), half(b.m)), set(j + 16, half(b.d), (b.qs[j] >> 4) | fifth(b.qh, j + 16), half(b.m));
      break;
    }
    case WeightType::Q4_K:
    case WeightType::Q5_K: {
      // Q4_K and Q5_K share the scales, the mins and qs; Q5_K adds qh (bit j for sub-block j).
      BlockQ5_K b5{};
      BlockQ4_K b4;
      if (t == WeightType::Q5_K) std::memcpy(&b5, p, sizeof b5);
      else std::memcpy(&b4, p, sizeof b4), b5.d = b4.d, b5.dmin = b4.dmin, std::memcpy(b5.scales, b4.scales, sizeof b4.scales), std::memcpy(b5.qs, b4.qs, sizeof b4.qs);
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        kdsl::models::unpack_scale_min_k4(j, b5.scales, &sc, &m);
        for (int l = 0; l < 32; ++l) {
          const uint8_t byte = b5.qs[(j / 2) * 32 + l];
          const int q = (j % 2 == 0 ? byte & 15 : byte >> 4) | (((b5.qh[l] >> j) & 1) << 4);
          set(32 * j + l, half(b5.d) * sc, q, -half(b5.dmin) * m);
        }
      }
      break;
    }
    case WeightType::Q6_K: {
      BlockQ6_K b;
      std::memcpy(&b, p, sizeof b);
      for (int i = 0; i < 256; ++i) {
        const int h = i / 128, qq = (i % 128) / 32, l = i % 32;
        const uint8_t ql = b.ql[h * 64 + (qq % 2) * 32 + l];
        const int q = (qq < 2 ? ql & 15 : ql >> 4) | (((b.qh[h * 32 + l] >> (2 * qq)) & 3) << 4);
        set(i, half(b.d) * b.scales[i / 16], q, -32 * half(b.d) * b.scales[i / 16]);
      }
      break;
    }
    default: FAIL("no integer levels for this weight type");
  }
  return out;
}

// Library::matmul on the CPU through the integer-dot path (a format with a policy, rows <= 16):
// (1) against the same quantize-then-integer-dot in double, where only f32 rounding may
// differ: each block adds one or two f32 products of an exact integer sum and the scales to
// an f32 sum, so the error is a few ulps of the terms' magnitudes, sum over values of
// (|scale * level| + |offset|) * |d_x q|, per block plus one per addition; (2) against the f32
// dequantize path within the tolerance kernels/library.h writes down: the activations'
// quantization, |x - d_x q| <= d_x / 2 per value (plus the f32 rounding of x * 127 / amax, a
// few ulps of amax = 127 d_x), times the weight it meets.
inline void check_int8_matmul(std::mt19937 &rng, WeightType t, int rows, int N, int K, bool with_bias, kdsl::kernels::Library &lib = library()) {
  CAPTURE(std::string(kdsl::kernels::weight_type_info(t).name));
  CAPTURE(rows);
  CAPTURE(N);
  CAPTURE(K);
  REQUIRE(has_int_dot(t));
  auto x = random_floats(rng, size_t(rows) * size_t(K));
  auto w = random_quantized(rng, t, N, K);
  auto bias = random_floats(rng, size_t(N));
  const float *b = with_bias ? bias.data() : nullptr;
  GuardedOutput out(size_t(rows) * size_t(N), -7.0f);
  lib.matmul(x.data(), w.data(), t, b, out.data(), rows, N, K);
  std::vector<float> got = out.values();
  CHECK_MESSAGE(out.intact(), "integer-dot matmul wrote past its rows x N outputs");

  const ActivationBlocks ab = activation_blocks(t);
  QuantizedRows xq = quantize_reference(x, rows, K, ab.block, ab.group);
  const int wblock = kdsl::kernels::weight_type_info(t).block_elements, wblocks = K / wblock, xblocks = K / ab.block;
  std::vector<WeightLevels> levels;
  for (int64_t i = 0; i < int64_t(N) * wblocks; ++i) levels.push_back(weight_levels(t, w, i));
  auto wf = dequantized(t, w, N, K);
  std::vector<double> exact(got.size()), magnitude(got.size()), bound(got.size());
  for (int r = 0; r < rows; ++r)
    for (int n = 0; n < N; ++n) {
      double sum = b ? b[n] : 0, size = b ? std::fabs(b[n]) : 0, quantization = 0;
      for (int k = 0; k < K; ++k) {
        const WeightLevels &wl = levels[size_t(n) * size_t(wblocks) + size_t(k / wblock)];
        const int i = k % wblock;
        const double dx = xq.d[size_t(r) * size_t(xblocks) + size_t(k / ab.block)];
        const double xv = dx * xq.q[size_t(r) * size_t(K) + size_t(k)];
        sum += (wl.scale[i] * wl.level[i] + wl.offset[i]) * xv;
        size += (std::fabs(wl.scale[i] * wl.level[i]) + std::fabs(wl.offset[i])) * std::fabs(xv);
        quantization += std::fabs(double(wf[size_t(n) * size_t(K) + size_t(k)])) * (0.5 + 127 * 0x1p-21) * dx;
      }
      exact[size_t(r) * size_t(N) + size_t(n)] = sum;
      magnitude[size_t(r) * size_t(N) + size_t(n)] = size;
      bound[size_t(r) * size_t(N) + size_t(n)] = quantization;
    }
  // (1) tight: per 32-value block up to 8 f32 roundings (the policies' products, the 8 lanes
  // of Q8_0 / Q4_0), and one per addition into the accumulator.
  expect_close_scaled("integer-dot matmul vs quantize-then-integer-dot", got, exact, magnitude, double(K / 32 + 16) * 0x1p-24);
  // (2) the written tolerance against the f32 dequantize path, plus its f32 rounding.
  ReferenceProduct f32_path = reference_matmul(x, wf, b, rows, N, K);
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double allowed = bound[i] + 1e-5 * f32_path.scale[i];
    if (std::fabs(double(got[i]) - f32_path.values[i]) > allowed && bad++ < 3)
      FAIL_CHECK("output ", i, ": ", got[i], " vs the f32 path's ", f32_path.values[i], ", allowed ", allowed);
  }
  CHECK(bad == 0);
}

// Library::matmul checked by the right reference: the integer-dot path (a format with a
// policy, rows <= its default_rows, on the CPU) within its tolerance, everything else as the
// f32 path; past 16 rows, where a format's integer kernels take them too, the f32 tiles as
// well, through a Library that gives the integer kernels 16 rows at most.
inline void check_library_matmul(std::mt19937 &rng, WeightType t, int rows, int N, int K, bool with_bias) {
  if (rows <= int_dot_default_rows(t)) check_int8_matmul(rng, t, rows, N, K, with_bias);
  else check_quantized_matmul(rng, t, rows, N, K, with_bias);
  if (rows > 16 && rows <= int_dot_default_rows(t)) {
    static kdsl::kernels::Library &tiles = *[] {
      auto *lib = new kdsl::kernels::Library(kdsl_test::cpu());  // lives as long as the tests, as library()'s does
      lib->set_integer_dot_rows(16);
      return lib;
    }();
    check_quantized_matmul(rng, t, rows, N, K, with_bias, tiles);
  }
}

}  // namespace kernels_test
