// quantize.cpp - ggml's quantizers (round to nearest with ggml's scale choices; the k-quants' scale searches; the importance-weighted fits), one block at a time
#include "models/gguf/quantize.h"

#include "models/gguf/dequantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <kdsl/error.h>
#include <kdsl/formats/fp8.h>
#include <kdsl/formats/weight_types.h>
#include <type_traits>

namespace kdsl::models {

using namespace kdsl::formats;

namespace {

// These follow the algorithms of ggml's quantize_row_*_ref (ggml-quants.c), which llama.cpp's
// quantize tool runs when it has no importance matrix, and of its weighted quantize_row_*_impl
// where it has one, so a file written here matches one written there up to float rounding.
// Where ggml truncates x + 0.5 (non-negative x) or rounds half to even, so do these.

// Round half to even, as ggml's nearest_int does. Adding 1.5 * 2^23 leaves the rounded integer
// in the low mantissa bits (the FPU rounds to even); std::nearbyint is a libm call on baseline
// x86-64, which made the k-quant searches 5x slower. Values past 2^22 take the slow path.
int nearest_even(float v) {
  if (!(std::fabs(v) < 4194303.0f)) return int(std::clamp(std::nearbyint(v), -2147483648.0f, 2147483520.0f));
  float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, 4);
  return (bits & 0x007fffff) - 0x00400000;
}

// Returns the value with the largest magnitude, sign kept (the first of equals).
float signed_absmax(const float *x, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  return max;
}

// An importance matrix's say in one block (quantize.h): the block's slice of per-column
// importances and the row statistic ggml scales them with. Null: the reference algorithms.
struct Importance {
  const float *columns;  // this block's per-column importance (mean squared activation)
  float row_sigma2;      // sum of x^2 over the whole row / its length (the 32-element types use it)
};

// ggml's error weights from an importance matrix: importance * sqrt(sigma2 + x^2), so columns
// the activations use much, and large weights within them, count for more.
void importance_weights(const float *importance, float sigma2, const float *x, int n, float *out) {
  for (int i = 0; i < n; ++i) out[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

// The symmetric fit x ~ scale * (L - nmax), L in 0..2 nmax - 1, minimizing the error weighted
// by w (x^2 where w is null): the range's scale and 18 nearby ones (nmax + 0.1 is, is -9..9),
// each with its least-squares scale, keeping the one that explains most of x. (ggml's
// make_qx_quants with rmse_type 1.)
float fit_scale_symmetric(int n, int nmax, const float *x, uint8_t *L, const float *w = nullptr) {
  float max = signed_absmax(x, n);
  if (std::fabs(max) < 1e-15f) {  // ggml's GROUP_MAX_EPS
    std::fill(L, L + n, uint8_t(0));
    return 0;
  }
  auto fit = [&](float iscale, float &sum_lx, float &sum_l2) {
    sum_lx = sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = std::clamp(nearest_even(iscale * x[i]), -nmax, nmax - 1);
      float wi = w ? w[i] : x[i] * x[i];
      sum_lx += wi * x[i] * float(l), sum_l2 += wi * float(l) * float(l);
    }
  };
  auto assign = [&](float iscale) {
    for (int i = 0; i < n; ++i) L[i] = uint8_t(nmax + std::clamp(nearest_even(iscale * x[i]), -nmax, nmax - 1));
  };
  float iscale = float(-nmax) / max, sum_lx, sum_l2;
  fit(iscale, sum_lx, sum_l2);
  assign(iscale);
  float scale = sum_l2 ? sum_lx / sum_l2 : 0, best = scale * sum_lx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(is)) / max;
    fit(iscale, sum_lx, sum_l2);
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      assign(iscale);
      scale = sum_lx / sum_l2, best = scale * sum_lx;
    }
  }
  return scale;
}

// The affine fit x ~ scale * L + min, L in 0..nmax, min <= 0, minimizing the weighted squared
// error: start from the range's scale, then try nstep + 1 nearby inverse scales (rmin + rdelta *
// is added to nmax), solving each one's least-squares scale and min for its rounding and
// keeping the best. Returns the scale, sets *neg_min = -min. (ggml's make_qkx2_quants without
// the MAD option; with rmin -0.9, rdelta 0.05, nstep 36, its make_qkx3_quants.)
float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min, float rmin, float rdelta,
                    int nstep) {
  float min = x[0], max = x[0], sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]), max = std::max(max, x[i]);
    sum_w += w[i], sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t(0));
    *neg_min = -min;
    return 0;
  }
  float iscale = float(nmax) / (max - min), scale = 1 / iscale, best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = uint8_t(std::clamp(nearest_even(iscale * (x[i] - min)), 0, nmax));
    float diff = scale * float(L[i]) + min - x[i];
    best_error += w[i] * diff * diff;
  }
  uint8_t trial[kQK_K];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = std::clamp(nearest_even(iscale * (x[i] - min)), 0, nmax);
      trial[i] = uint8_t(l);
      sum_l += w[i] * float(l), sum_l2 += w[i] * float(l) * float(l), sum_xl += w[i] * float(l) * x[i];
    }
    float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) this_min = 0, this_scale = sum_xl / sum_l2;
    float error = 0;
    for (int i = 0; i < n; ++i) {
      float diff = this_scale * float(trial[i]) + this_min - x[i];
      error += w[i] * diff * diff;
    }
    if (error < best_error) {
      std::copy(trial, trial + n, L);
      best_error = error, scale = this_scale, min = this_min;
    }
  }
  *neg_min = -min;
  return scale;
}

// The weighted fit of non-negative x ~ scale * L, L in 0..nmax (the k-quants' sub-block scales
// and mins, weighted by their sub-blocks' total error weight): the range's scale and 8 nearby
// ones (nmax + 0.1 is, is -4..4) by weighted error, then up to 5 sweeps moving single levels
// where that explains more of x, and the least-squares scale for the levels. (ggml's
// make_qp_quants, which its quantizers run with an importance matrix.) Levels are stored as
// ggml stores them, uint8 of the rounded value.
float fit_scale_positive(int n, int nmax, const float *x, uint8_t *L, const float *w) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max < 1e-15f) {  // ggml's GROUP_MAX_EPS
    std::fill(L, L + n, uint8_t(0));
    return 0;
  }
  auto weighted_error = [&](float iscale) {
    float scale = 1 / iscale, error = 0;
    for (int i = 0; i < n; ++i) {
      float diff = x[i] - scale * float(std::min(nmax, nearest_even(iscale * x[i])));
      error += w[i] * diff * diff;
    }
    return error;
  };
  float iscale = float(nmax) / max, best_error = weighted_error(iscale);
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    float trial = (0.1f * float(is) + float(nmax)) / max, error = weighted_error(trial);
    if (error < best_error) best_error = error, iscale = trial;
  }
  int level[kQK_K / 16];
  float sum_lx = 0, sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    level[i] = std::min(nmax, nearest_even(iscale * x[i]));
    sum_lx += w[i] * x[i] * float(level[i]), sum_l2 += w[i] * float(level[i]) * float(level[i]);
  }
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      float lx = sum_lx - w[i] * x[i] * float(level[i]), l2 = sum_l2 - w[i] * float(level[i]) * float(level[i]);
      if (!(lx > 0 && l2 > 0)) continue;
      int moved = std::min(nmax, nearest_even(x[i] * l2 / lx));
      if (moved == level[i]) continue;
      lx += w[i] * x[i] * float(moved), l2 += w[i] * float(moved) * float(moved);
      if (lx * lx * sum_l2 > sum_lx * sum_lx * l2) level[i] = moved, sum_lx = lx, sum_l2 = l2, ++changed;
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = uint8_t(level[i]);
  return sum_l2 > 0 ? sum_lx / sum_l2 : 0;
}

// Q8_0: d = amax / 127, q = round(x / d) (half away from zero). ggml gives it no weighted form.
void quantize_block(const float *x, BlockQ8_0 &b, const Importance *) {
  float amax = std::fabs(signed_absmax(x, kQK8_0));
  float d = amax / 127, id = d ? 1 / d : 0;
  b.d = f32_to_f16_bits(d);
  for (int i = 0; i < kQK8_0; ++i) b.qs[i] = int8_t(std::round(x[i] * id));
}

// 32 levels (0 .. 2^bits - 1) into Q4's nibbles (element i < 16 the low half of byte i, i >= 16
// the high half of byte i - 16) and Q5's fifth bits (bit i of qh).
template <class Block>
void pack_levels_32(const uint8_t *L, Block &b) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    b.qs[j] = uint8_t((L[j] & 15) | ((L[j + 16] & 15) << 4));
    qh |= uint32_t((L[j] >> 4) & 1) << j | uint32_t((L[j + 16] >> 4) & 1) << (j + 16);
  }
  if constexpr (requires { b.qh; }) std::memcpy(b.qh, &qh, 4);
}

// Q4_0 / Q5_0: the largest magnitude maps to level -half (d = max / -half), so it is exact;
// q = trunc(x / d + half + 0.5) clamped to 2 * half - 1. With an importance matrix, the
// weighted symmetric fit instead.
template <class Block>
void quantize_symmetric(const float *x, Block &b, int half, const Importance *imp) {
  uint8_t L[32];
  if (imp) {
    float w[32];
    importance_weights(imp->columns, imp->row_sigma2, x, 32, w);
    b.d = f32_to_f16_bits(fit_scale_symmetric(32, half, x, L, w));
  } else {
    float max = signed_absmax(x, 32);
    float d = max / float(-half), id = d ? 1 / d : 0;
    b.d = f32_to_f16_bits(d);
    for (int j = 0; j < 32; ++j) L[j] = uint8_t(std::min(2 * half - 1, int(x[j] * id + (float(half) + 0.5f))));
  }
  pack_levels_32(L, b);
}

// Q4_1 / Q5_1: x = d * q + m with m the block minimum and d = (max - min) / (levels - 1);
// q = trunc((x - min) / d + 0.5). With an importance matrix, the weighted affine fit.
template <class Block>
void quantize_affine(const float *x, Block &b, int levels, const Importance *imp) {
  uint8_t L[32];
  if (imp) {
    float w[32], neg_min;
    importance_weights(imp->columns, imp->row_sigma2, x, 32, w);
    b.d = f32_to_f16_bits(fit_scale_min(32, levels - 1, x, w, L, &neg_min, -0.9f, 0.05f, 36));
    b.m = f32_to_f16_bits(-neg_min);
  } else {
    float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
    float d = (hi - lo) / float(levels - 1), id = d ? 1 / d : 0;
    b.d = f32_to_f16_bits(d);
    b.m = f32_to_f16_bits(lo);
    for (int j = 0; j < 32; ++j) L[j] = uint8_t(std::min(levels - 1, int((x[j] - lo) * id + 0.5f)));
  }
  pack_levels_32(L, b);
}

// F8_E4M3: d = amax / 448 (as f16), e = E4M3(x / d) rounded to nearest even. The scale's own
// rounding may put the largest value a little past 448; it saturates there.
void quantize_block(const float *x, BlockF8_E4M3 &b, const Importance *) {
  float amax = std::fabs(signed_absmax(x, kQK_F8));
  b.d = f32_to_f16_bits(amax / kE4M3Max);
  float d = f16_bits_to_f32(b.d), id = d ? 1 / d : 0;
  for (int i = 0; i < kQK_F8; ++i) b.qs[i] = f32_to_e4m3_bits(x[i] * id);
}

// IQ4_NL's grid level nearest to v (the lower of two at equal distance), by bisection.
int nearest_iq4_nl_level(float v) {
  const int8_t *grid = kIQ4NLValues;
  if (v <= grid[0]) return 0;
  if (v >= grid[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    (v < grid[mid] ? hi : lo) = mid;
  }
  return v - grid[lo] < grid[hi] - v ? lo : hi;
}

// IQ4_NL (ggml's quantize_row_iq4_nl): each x / d goes to its nearest grid level; d is the
// weighted least-squares fit (weights x^2, or the importance weights with sigma2 = twice the
// block's mean square) for the levels chosen at the best of several trial scales: the largest
// magnitude on the grid's top (+127 would clamp to 113) and on its bottom end moved by -7..7
// levels. Levels are then chosen again with the fitted d.
void quantize_block(const float *x, BlockIQ4_NL &b, const Importance *imp) {
  float w[kQK4_NL];
  if (imp) {
    float sum_x2 = 0;
    for (int j = 0; j < kQK4_NL; ++j) sum_x2 += x[j] * x[j];
    importance_weights(imp->columns, sum_x2 * 2 / kQK4_NL, x, kQK4_NL, w);
  } else {
    for (int j = 0; j < kQK4_NL; ++j) w[j] = x[j] * x[j];
  }
  const float max = signed_absmax(x, kQK4_NL);
  float d = 0;
  if (std::fabs(max) >= 1e-15f) {  // ggml's GROUP_MAX_EPS; below it d stays 0
    auto fit = [&](float inverse_scale, float &sum_qx, float &sum_q2) {
      sum_qx = sum_q2 = 0;
      for (int j = 0; j < kQK4_NL; ++j) {
        float q = kIQ4NLValues[nearest_iq4_nl_level(inverse_scale * x[j])];
        sum_qx += w[j] * q * x[j], sum_q2 += w[j] * q * q;
      }
    };
    float sum_qx, sum_q2;
    fit(1 / (-max / float(kIQ4NLValues[0])), sum_qx, sum_q2);
    d = sum_q2 > 0 ? sum_qx / sum_q2 : 0;
    float best = d * sum_qx;
    for (int step = -7; step <= 7; ++step) {
      fit(float(step + kIQ4NLValues[0]) / max, sum_qx, sum_q2);
      if (sum_q2 > 0 && sum_qx * sum_qx > best * sum_q2) d = sum_qx / sum_q2, best = d * sum_qx;
    }
  }
  b.d = f32_to_f16_bits(d);
  const float id = d ? 1 / d : 0;
  for (int j = 0; j < kQK4_NL / 2; ++j)
    b.qs[j] = uint8_t(nearest_iq4_nl_level(id * x[j]) | nearest_iq4_nl_level(id * x[j + kQK4_NL / 2]) << 4);
}

void quantize_block(const float *x, BlockQ4_0 &b, const Importance *imp) { quantize_symmetric(x, b, 8, imp); }
void quantize_block(const float *x, BlockQ5_0 &b, const Importance *imp) { quantize_symmetric(x, b, 16, imp); }
void quantize_block(const float *x, BlockQ4_1 &b, const Importance *imp) { quantize_affine(x, b, 16, imp); }
void quantize_block(const float *x, BlockQ5_1 &b, const Importance *imp) { quantize_affine(x, b, 32, imp); }

// Sub-block j's 6-bit scale and min into Q4_K's / Q5_K's 12 packed bytes (the inverse of
// unpack_scale_min_k4).
void pack_scale_min_k4(int j, int sc, int m, uint8_t *q) {
  if (j < 4) {
    q[j] = uint8_t(sc), q[j + 4] = uint8_t(m);
  } else {
    q[j + 4] = uint8_t((sc & 15) | ((m & 15) << 4));
    q[j - 4] |= uint8_t((sc >> 4) << 6);
    q[j] |= uint8_t((m >> 4) << 6);
  }
}

// Q4_K / Q5_K. Without an importance matrix (ggml's quantize_row_q*_K_ref): each sub-block of
// 32 fitted with weights av + |x| (av the sub-block's RMS), the 8 scales and mins quantized to
// 6 bits against the block's largest. With one (ggml's quantize_row_q*_K_impl): weights from
// the importance (sigma2 twice the super-block's mean square), the finer affine search, and
// the 6-bit scales and mins fitted by weighted error, each sub-block weighing its weights'
// sum. Either way every value is then requantized with the scale and min as stored.
template <class Block>
void quantize_k(const float *x, Block &b, int nmax, float rmin, int nstep, const Importance *imp) {
  uint8_t L[kQK_K];
  float scales[8], mins[8], weights[32], sub_block_weight[8];
  float sigma2 = 0;  // the importance weights' scale: twice the super-block's mean square
  if (imp) {
    for (int l = 0; l < kQK_K; ++l) sigma2 += x[l] * x[l];
    sigma2 = sigma2 * 2 / kQK_K;
  }
  for (int j = 0; j < 8; ++j) {
    const float *v = x + 32 * j;
    if (imp) {
      importance_weights(imp->columns + 32 * j, sigma2, v, 32, weights);
      sub_block_weight[j] = 0;
      for (int l = 0; l < 32; ++l) sub_block_weight[j] += weights[l];
      scales[j] = fit_scale_min(32, nmax, v, weights, L + 32 * j, &mins[j], -0.9f, 0.05f, 36);
    } else {
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += v[l] * v[l];
      float av = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av + std::fabs(v[l]);
      scales[j] = fit_scale_min(32, nmax, v, weights, L + 32 * j, &mins[j], rmin, 0.1f, nstep);
    }
  }
  std::memset(b.scales, 0, sizeof b.scales);
  if (imp) {
    uint8_t scale_levels[8], min_levels[8];
    b.d = f32_to_f16_bits(fit_scale_positive(8, 63, scales, scale_levels, sub_block_weight));
    b.dmin = f32_to_f16_bits(fit_scale_positive(8, 63, mins, min_levels, sub_block_weight));
    for (int j = 0; j < 8; ++j) pack_scale_min_k4(j, std::min<int>(63, scale_levels[j]), std::min<int>(63, min_levels[j]), b.scales);
  } else {
    float max_scale = *std::max_element(scales, scales + 8), max_min = *std::max_element(mins, mins + 8);
    max_scale = std::max(max_scale, 0.0f), max_min = std::max(max_min, 0.0f);
    float inv_scale = max_scale > 0 ? 63 / max_scale : 0, inv_min = max_min > 0 ? 63 / max_min : 0;
    for (int j = 0; j < 8; ++j)
      pack_scale_min_k4(j, std::min(63, nearest_even(inv_scale * scales[j])), std::min(63, nearest_even(inv_min * mins[j])), b.scales);
    b.d = f32_to_f16_bits(max_scale / 63);
    b.dmin = f32_to_f16_bits(max_min / 63);
  }
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpack_scale_min_k4(j, b.scales, &sc, &m);
    float d = f16_bits_to_f32(b.d) * float(sc);
    if (!d) continue;
    float dm = f16_bits_to_f32(b.dmin) * float(m);
    for (int l = 0; l < 32; ++l) L[32 * j + l] = uint8_t(std::clamp(nearest_even((x[32 * j + l] + dm) / d), 0, nmax));
  }
  // Sub-blocks 2c and 2c + 1 share qs[32c .. 32c + 31]: low and high nibbles; Q5_K's bit 4 of
  // sub-block j's lane l goes to bit j of qh[l].
  if constexpr (requires { b.qh; }) std::memset(b.qh, 0, sizeof b.qh);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
      b.qs[32 * c + l] = uint8_t((lo & 15) | ((hi & 15) << 4));
      if constexpr (requires { b.qh; }) b.qh[l] |= uint8_t(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
}

void quantize_block(const float *x, BlockQ4_K &b, const Importance *imp) { quantize_k(x, b, 15, -1.0f, 20, imp); }
void quantize_block(const float *x, BlockQ5_K &b, const Importance *imp) { quantize_k(x, b, 31, -0.5f, 15, imp); }

// Q6_K: 16 sub-blocks of 16 fitted symmetrically (levels -32..31; weighted by x^2, or by the
// importances themselves, as ggml weighs them here); their scales quantized to signed 8 bits
// against the largest magnitude (d = -max / 128); values requantized with the stored scales.
// Element i = 128h + 32qq + l: its low 4 bits go to nibble qq / 2 of ql[64h + 32(qq % 2) + l],
// its high 2 bits to bits 2qq of qh[32h + l].
void quantize_block(const float *x, BlockQ6_K &b, const Importance *imp) {
  uint8_t L[kQK_K];
  float scales[16], max_scale = 0, max_abs_scale = 0;
  for (int s = 0; s < 16; ++s) {
    scales[s] = fit_scale_symmetric(16, 32, x + 16 * s, L + 16 * s, imp ? imp->columns + 16 * s : nullptr);
    if (std::fabs(scales[s]) > max_abs_scale) max_abs_scale = std::fabs(scales[s]), max_scale = scales[s];
  }
  std::memset(&b, 0, sizeof b);
  if (max_abs_scale < 1e-15f) return;  // all zeros: d = 0
  float iscale = -128.0f / max_scale;
  b.d = f32_to_f16_bits(1 / iscale);
  for (int s = 0; s < 16; ++s) b.scales[s] = int8_t(std::min(127, nearest_even(iscale * scales[s])));
  for (int s = 0; s < 16; ++s) {
    float d = f16_bits_to_f32(b.d) * float(b.scales[s]);
    if (!d) continue;
    for (int l = 0; l < 16; ++l) L[16 * s + l] = uint8_t(std::clamp(nearest_even(x[16 * s + l] / d), -32, 31) + 32);
  }
  for (int i = 0; i < kQK_K; ++i) {
    int h = i / 128, qq = (i % 128) / 32, l = i % 32;
    b.ql[64 * h + 32 * (qq % 2) + l] |= uint8_t((L[i] & 15) << (qq < 2 ? 0 : 4));
    b.qh[32 * h + l] |= uint8_t((L[i] >> 4) << (2 * qq));
  }
}

// Plain floats are blocks of one (f32 is copied whole, below).
void quantize_block(const float *x, half &b, const Importance *) { b = half(*x); }
void quantize_block(const float *x, bfloat16 &b, const Importance *) { b = bfloat16(*x); }

template <class Block, int N>
void quantize_blocks(const float *x, void *dst, int64_t n, const float *importance) {
  if constexpr (std::is_void_v<Block>) {
    throw Error("quantize: a type with no layout; this is a bug in kdsl");  // refused by quantize_row
  } else if constexpr (std::is_same_v<Block, float>) {
    std::memcpy(dst, x, size_t(n) * sizeof(float));
  } else {
    float row_sigma2 = 0;
    if (importance) {
      for (int64_t i = 0; i < n; ++i) row_sigma2 += x[i] * x[i];
      row_sigma2 /= float(n);
    }
    auto *out = static_cast<unsigned char *>(dst);
    for (int64_t i = 0; i < n / N; ++i) {
      Block b{};
      Importance imp{importance ? importance + i * N : nullptr, row_sigma2};
      quantize_block(x + i * N, b, importance ? &imp : nullptr);
      std::memcpy(out + i * int64_t(sizeof(Block)), &b, sizeof(Block));
    }
  }
}

}  // namespace

void quantize_row(GgmlType type, const float *x, void *dst, int64_t n, const float *importance) {
  const GgmlTypeTraits &traits = ggml_type_traits(type);
  if (!traits.readable) throw Error(fmt::format("quantize: tensor type {} is not supported", traits.ggml_name));
  if (n < 0 || n % traits.block_elements != 0)
    throw Error(fmt::format("quantize: {} elements of type {}: expected a multiple of the block size {}", n,
                            traits.ggml_name, traits.block_elements));
  switch (type) {
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) \
  case GgmlType::Name: return quantize_blocks<Layout, elements>(x, dst, n, importance);
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE
  }
  throw Error(fmt::format("quantize: tensor type {} is not supported", traits.ggml_name));
}

}  // namespace kdsl::models
