// rope_scaling.h - what RoPE scaling (linear, YaRN, Llama 3.1 frequency factors) makes of each rotary frequency
#pragma once
#include <span>
#include <vector>

#include "models/arch/hparams.h"

namespace kdsl::models {

// Every scaling kdsl supports keeps RoPE's form, angle_i = pos * theta^(-2i/n_rot) / divisor_i,
// and may scale the rotated vector by a magnitude (YaRN's "mscale", applied to cos and sin as
// llama.cpp and Hugging Face do, so q.k grows by its square):
// - linear: divisor_i = factor;
// - Llama 3.1's rope_freqs.weight: divisor_i = freq_factors[i];
// - YaRN (Peng et al. 2023, as llama.cpp implements it): each frequency is blended between
//   the interpolated one (divided by factor) and the original, by a ramp over the pair index
//   i that is 1 (original) for dimensions rotating more than beta_fast times over the
//   original context and 0 (interpolated) for those rotating fewer than beta_slow times:
//     mix_i = ext_factor * (1 - clamp((i - low) / max(0.001, high - low), 0, 1))
//     divisor_i = 1 / ((1 - mix_i) / factor + mix_i)
//   with low = max(0, floor(d(beta_fast))), high = min(n_rot - 1, ceil(d(beta_slow))),
//   d(b) = n_rot * ln(original_context / (2 pi b)) / (2 ln theta); and, when ext_factor is
//   not 0, magnitude = attn_factor * (1 + 0.1 ln(factor)).
// Frequency factors combine with either scaling as a product of divisors, as in llama.cpp.
struct RopeFrequencies {
  std::vector<float> divisors;  // one per rotated pair; empty when every divisor is 1
  float magnitude = 1.0f;
};

// `freq_factors` is empty or holds one positive factor per pair (n_rot / 2), already checked.
RopeFrequencies rope_frequencies(const ModelHParams &h, std::span<const float> freq_factors);

}  // namespace kdsl::models
