// model_drafter.cpp - draft-model speculation: keep the draft's cache in step, then decode up to max tokens
#include "models/spec/model_drafter.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>
#include <cmath>

namespace kdsl::models {
namespace {

SamplerParams own_stream(SamplerParams p) {
  p.seed ^= 0x5bd1e9955bd1e995ull;  // its own random numbers: the target's draws stay the target's
  return p;
}

EngineOptions checked_options(const ModelWeights &draft, int target_vocab, EngineOptions o) {
  if (int64_t(draft.hparams.n_vocab) != target_vocab)
    throw Error(fmt::format("the draft model's vocabulary has {} tokens but the target's has {}: a draft model must share the target's tokenizer",
                            draft.hparams.n_vocab, target_vocab));
  o.max_logit_rows = 1;
  return o;
}

// The draft model's own confidence in its most likely token: its softmax at temperature 1.
float top_probability(std::span<const float> logits) {
  float top = *std::max_element(logits.begin(), logits.end());
  double total = 0;
  for (float l : logits) total += std::exp(double(l - top));
  return float(1.0 / total);
}

}  // namespace

ModelDrafter::ModelDrafter(const ModelWeights &draft_model, int target_vocab, const Device &device, const EngineOptions &engine_options,
                           const SamplerParams &target_sampling, ModelDrafterOptions options)
    : engine_(draft_model, device, checked_options(draft_model, target_vocab, engine_options)),
      sampler_(own_stream(target_sampling)),
      options_(options) {
  cached_.reserve(size_t(engine_.context()));
}

void ModelDrafter::begin(std::span<const int> prompt) {
  if (prompt.empty() || int(prompt.size()) > engine_.context()) return;
  // What the cache already holds of it (the same prompt again) is not run twice.
  size_t same = std::mismatch(cached_.begin(), cached_.end(), prompt.begin(), prompt.end()).first - cached_.begin();
  if (same < prompt.size()) engine_.forward(prompt.subspan(same), int(same));
  cached_.resize(same);
  cached_.insert(cached_.end(), prompt.begin() + long(same), prompt.end());
}

void ModelDrafter::draft(std::span<const int> tokens, int max, Draft &out) {
  out.clear();
  if (tokens.empty() || int(tokens.size()) > engine_.context()) return;
  // Where the text departs from the cache; the last token is run again in any case, for its logits.
  size_t same = std::mismatch(cached_.begin(), cached_.end(), tokens.begin(), tokens.end()).first - cached_.begin();
  same = std::min(same, tokens.size() - 1);
  cached_.resize(same);
  std::span<const float> logits = engine_.forward(tokens.subspan(same), int(same));
  cached_.insert(cached_.end(), tokens.begin() + long(same), tokens.end());
  // The penalties see the text's recent tokens and the drafts, as the target's sampler will.
  sampler_.clear_history();
  const int window = sampler_.params().penalty_last_n;
  for (size_t i = window < 0 ? 0 : tokens.size() - std::min(tokens.size(), size_t(window)); i < tokens.size(); ++i) sampler_.accept(tokens[i]);
  const bool greedy = sampler_.params().temperature <= 0;
  const size_t vocab = size_t(engine_.vocab());
  for (int j = 0; j < max; ++j) {
    if (options_.p_min > 0 && top_probability(logits) < options_.p_min) break;
    sampler_.compute_probabilities(logits, probs_);
    int token;
    if (greedy) {
      token = int(std::max_element(probs_.begin(), probs_.end()) - probs_.begin());  // the point mass
    } else {
      token = sampler_.sample_from(probs_);
      out.q.insert(out.q.end(), probs_.begin(), probs_.begin() + long(vocab));
    }
    sampler_.accept(token);
    out.tokens.push_back(token);
    // The last draft needs no logits; nor can the cache go past the context.
    if (j + 1 == max || int(cached_.size()) >= engine_.context()) break;
    int one[1] = {token};
    logits = engine_.forward(one, int(cached_.size()));
    cached_.push_back(token);
  }
}

}  // namespace kdsl::models
