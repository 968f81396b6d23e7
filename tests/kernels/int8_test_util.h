// int8_test_util.h - the integer-dot products' references: the activation quantizer's specification, the quantize-then-integer-dot product, the tolerance against the f32 path
#pragma once
#include <cmath>
#include <cstring>

#include <kdsl/formats/half.h>
#include <kdsl/formats/quant_blocks.h>
#include "tests/kernels/quantized_test_util.h"

namespace kernels_test {
using kdsl::kernels::WeightType;
// The activation quantizer as quantize_activations.h specifies it, in the same f32 operations.
struct QuantizedRows {
  std::vector<int8_t> q;
  std::vector<float> d;
};
inline QuantizedRows quantize_reference(const std::vector<float> &x, int rows, int K) {
  QuantizedRows out;
  out.q.resize(size_t(rows) * size_t(K));
  out.d.resize(size_t(rows) * size_t(K / 32));
  for (size_t b = 0; b < out.d.size(); ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    const float inverse = amax > 0 ? 127.0f / amax : 0.0f;
    for (size_t j = 0; j < 32; ++j) {
      volatile float scaled = x[32 * b + j] * inverse;  // rounded to f32 before the add, as the kernel does
      out.q[32 * b + j] = int8_t(std::floor(scaled + 0.5f));
    }
    out.d[b] = amax / 127.0f;
  }
  return out;
}

// Weight row n's block b as (d, 32 integer levels): Q8_0's qs, Q4_0's nibble - 8.
struct WeightBlock {
  float d;
  int levels[32];
};
inline WeightBlock weight_block(WeightType t, const std::vector<uint8_t> &w, int64_t block) {
  WeightBlock out;
  if (t == WeightType::Q8_0) {
    kdsl::formats::BlockQ8_0 blk;
    std::memcpy(&blk, w.data() + block * int64_t(sizeof blk), sizeof blk);
    out.d = kdsl::f16_bits_to_f32(blk.d);
    for (int j = 0; j < 32; ++j) out.levels[j] = blk.qs[j];
  } else {
    kdsl::formats::BlockQ4_0 blk;
    std::memcpy(&blk, w.data() + block * int64_t(sizeof blk), sizeof blk);
    out.d = kdsl::f16_bits_to_f32(blk.d);
    for (int j = 0; j < 16; ++j) out.levels[j] = (blk.qs[j] & 15) - 8, out.levels[j + 16] = (blk.qs[j] >> 4) - 8;
  }
  return out;
}

// Library::matmul for rows <= 16 on the CPU (the integer-dot path): (1) against the same
// quantize-then-integer-dot in double, where only f32 rounding may differ: each output is an f32
// sum over its blocks and 8 lanes of products float(isum) * (d_w * d_x); (2) against the f32
// dequantize path within the tolerance kernels/library.h writes down: the activations'
// quantization error, |x - d_x q| <= d_x / 2 per value, times the weights it meets.
inline void check_int8_matmul(std::mt19937 &rng, WeightType t, int rows, int N, int K, bool with_bias) {
  CAPTURE(std::string(kdsl::kernels::weight_type_info(t).name));
  CAPTURE(rows);
  CAPTURE(N);
  CAPTURE(K);
  auto x = random_floats(rng, size_t(rows) * size_t(K));
  auto w = random_quantized(rng, t, N, K);
  auto bias = random_floats(rng, size_t(N));
  const float *b = with_bias ? bias.data() : nullptr;
  GuardedOutput out(size_t(rows) * size_t(N), -7.0f);
  library().matmul(x.data(), w.data(), t, b, out.data(), rows, N, K);
  std::vector<float> got = out.values();
  CHECK_MESSAGE(out.intact(), "integer-dot matmul wrote past its rows x N outputs");

  QuantizedRows xq = quantize_reference(x, rows, K);
  const int blocks = K / 32;
  std::vector<double> exact(got.size()), exact_scale(got.size()), bound(got.size());
  for (int r = 0; r < rows; ++r)
    for (int n = 0; n < N; ++n) {
      double sum = b ? b[n] : 0, magnitude = b ? std::fabs(b[n]) : 0, quantization = 0;
      for (int blk = 0; blk < blocks; ++blk) {
        WeightBlock wb = weight_block(t, w, int64_t(n) * blocks + blk);
        int64_t isum = 0, wsum = 0, abs_sum = 0;
        for (int j = 0; j < 32; ++j) {
          const int64_t p = int64_t(wb.levels[j]) * xq.q[size_t(r) * size_t(K) + size_t(blk) * 32 + size_t(j)];
          isum += p, abs_sum += p < 0 ? -p : p;
          wsum += std::abs(wb.levels[j]);
        }
        const float dx = xq.d[size_t(r) * size_t(blocks) + size_t(blk)];
        const float scale = wb.d * dx;
        sum += double(float(isum) * scale);
        // The kernel scales each of its lanes (a part of the block's products) and sums them in
        // f32, so its rounding follows the lanes' sizes: at most the products' absolute sum.
        magnitude += double(abs_sum) * std::fabs(double(scale));
        // Each value's quantization error: d_x / 2, and the f32 rounding of x * 127 / amax (a few ulp of amax = 127 d_x).
        quantization += double(std::fabs(wb.d)) * double(wsum) * (0.5 + 127 * 0x1p-21) * double(dx);
      }
      exact[size_t(r) * size_t(N) + size_t(n)] = sum;
      exact_scale[size_t(r) * size_t(N) + size_t(n)] = magnitude;
      bound[size_t(r) * size_t(N) + size_t(n)] = quantization;
    }
  // (1) tight: f32 rounding of blocks + 8 + 1 additions and one product per block.
  expect_close_scaled("integer-dot matmul vs quantize-then-integer-dot", got, exact, exact_scale, double(blocks + 16) * 0x1p-24);
  // (2) the written tolerance against the f32 dequantize path, plus its f32 rounding.
  ReferenceProduct f32_path = reference_matmul(x, dequantized(t, w, N, K), b, rows, N, K);
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double allowed = bound[i] + 1e-5 * f32_path.scale[i];
    if (std::fabs(double(got[i]) - f32_path.values[i]) > allowed && bad++ < 3)
      FAIL_CHECK("output ", i, ": ", got[i], " vs the f32 path's ", f32_path.values[i], ", allowed ", allowed);
  }
  CHECK(bad == 0);
}

// Library::matmul checked by the right reference: the integer-dot path (Q8_0 / Q4_0, rows <= 16,
// on the CPU) within its tolerance, everything else as the f32 path.
inline void check_library_matmul(std::mt19937 &rng, WeightType t, int rows, int N, int K, bool with_bias) {
  if (rows <= 16 && (t == WeightType::Q8_0 || t == WeightType::Q4_0)) check_int8_matmul(rng, t, rows, N, K, with_bias);
  else check_quantized_matmul(rng, t, rows, N, K, with_bias);
}

}  // namespace kernels_test
