// rope_scaling.cpp - per-frequency RoPE divisors and the magnitude for linear and YaRN scaling
#include "models/arch/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace kdsl::models {
namespace {

// The pair index at which a dimension makes `rotations` full turns over `context` positions.
double yarn_correction_dim(double n_rot, double context, double rotations, double theta) {
  return n_rot * std::log(context / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta));
}

}  // namespace

RopeFrequencies rope_frequencies(const ModelHParams &h, std::span<const float> freq_factors) {
  size_t pairs = size_t(h.n_rot / 2);
  std::vector<double> divisor(pairs, 1.0);
  RopeFrequencies out;
  if (h.rope_scaling == RopeScaling::Linear) {
    std::fill(divisor.begin(), divisor.end(), double(h.rope_scaling_factor));
  } else if (h.rope_scaling == RopeScaling::Yarn && h.rope_scaling_factor != 1.0f) {
    double factor = h.rope_scaling_factor, n_rot = double(h.n_rot), context = double(h.rope_original_context);
    double low = std::max(0.0, std::floor(yarn_correction_dim(n_rot, context, h.yarn_beta_fast, h.rope_freq_base)));
    double high = std::min(n_rot - 1, std::ceil(yarn_correction_dim(n_rot, context, h.yarn_beta_slow, h.rope_freq_base)));
    for (size_t i = 0; i < pairs; ++i) {
      double ramp = 1 - std::clamp((double(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
      double mix = ramp * h.yarn_ext_factor;
      divisor[i] = 1 / ((1 - mix) / factor + mix);
    }
    if (h.yarn_ext_factor != 0.0f) out.magnitude = float(h.yarn_attn_factor * (1 + 0.1 * std::log(factor)));
  }
  for (size_t i = 0; i < freq_factors.size() && i < pairs; ++i) divisor[i] *= double(freq_factors[i]);
  if (std::any_of(divisor.begin(), divisor.end(), [](double d) { return d != 1.0; }))
    for (double d : divisor) out.divisors.push_back(float(d));
  return out;
}

}  // namespace kdsl::models
