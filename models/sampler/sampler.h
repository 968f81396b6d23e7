// sampler.h - next-token sampling: penalties, temperature, top-k, top-p, min-p, seeded draws
#pragma once
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "models/sampler/rng.h"

namespace kdsl::models {

struct SamplerParams {
  float temperature = 1.0f;  // <= 0 is greedy
  int top_k = 0;             // keep the k most likely; <= 0 keeps all
  float top_p = 1.0f;        // keep the smallest set whose probability reaches p; >= 1 keeps all
  float min_p = 0.0f;        // drop tokens below min_p times the most likely one's probability
  float repetition_penalty = 1.0f;  // CTRL-style: divides positive logits of recent tokens, multiplies negative ones
  float frequency_penalty = 0.0f;   // subtracted once per occurrence in the window
  float presence_penalty = 0.0f;    // subtracted once if the token occurs in the window
  int penalty_last_n = 64;          // the window of recent tokens the penalties see; < 0 is all
  uint64_t seed = 0;
};

// Turns logits into a distribution and draws from it. The steps run in this order:
// penalties, temperature (softmax of logits / T), top-k, top-p, min-p, renormalization.
// Greedy (temperature <= 0) puts probability 1 on the highest penalized logit, lowest id
// on ties. The distribution of the last draw stays available for speculative decoding.
class Sampler {
 public:
  explicit Sampler(SamplerParams params);

  // Computes the distribution, draws a token from it and records the token for the penalties.
  int sample(std::span<const float> logits);

  // The distribution sample() would draw from, over the whole vocabulary (zeros where filtered).
  void compute_probabilities(std::span<const float> logits, std::vector<float> &probs) const;

  // Draws an index from an arbitrary distribution (which need not sum to exactly 1).
  int sample_from(std::span<const float> probs);

  // Records a token chosen elsewhere (a prompt token, an accepted draft) for the penalties.
  void accept(int token);
  // Forgets the history and restarts the generator from the seed.
  void reset();
  // Forgets the history alone (a draft model's sampler, given the whole text each step).
  void clear_history() { history_.clear(); }

  // The distribution the last sample() drew from.
  std::span<const float> probabilities() const { return probs_; }
  const SamplerParams &params() const { return params_; }
  Rng &rng() { return rng_; }

 private:
  SamplerParams params_;
  Rng rng_;
  std::deque<int> history_;
  std::vector<float> probs_;
};

}  // namespace kdsl::models
