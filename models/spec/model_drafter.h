// model_drafter.h - a smaller model with the target's vocabulary drafts, one decode step per drafted token
#pragma once
#include <vector>

#include "models/engine/engine.h"
#include "models/sampler/sampler.h"
#include "models/spec/drafter.h"

namespace kdsl::models {

struct ModelDrafterOptions {
  // Drafting stops at a token the draft model gives less than this probability (softmax of
  // its logits at temperature 1: how sure it is, whatever the target samples at); llama.cpp's
  // --draft-p-min. 0 drafts the full length always.
  float p_min = 0.0f;
};

// Drafts with its own Engine (and KV cache) on the target's device. It keeps the tokens its
// cache holds by position; each call runs only where the text departs from them (the first
// rejected draft, or the target's own token after a full acceptance), so the two caches stay
// in step without being told what was accepted. It drafts with the target's sampler settings,
// penalties included (over the text it is given): greedily at a greedy target, else sampling
// from its own distributions, which it hands over for the rejection rule.
class ModelDrafter : public Drafter {
 public:
  // Throws kdsl::Error when the vocabularies differ in size.
  ModelDrafter(const ModelWeights &draft_model, int target_vocab, const Device &device, const EngineOptions &engine_options,
               const SamplerParams &target_sampling, ModelDrafterOptions options = {});
  void begin(std::span<const int> prompt) override;
  void draft(std::span<const int> tokens, int max, Draft &out) override;
  std::string name() const override { return "draft model"; }
  Engine &engine() { return engine_; }

 private:
  Engine engine_;
  Sampler sampler_;
  ModelDrafterOptions options_;
  std::vector<int> cached_;  // the tokens in the draft's KV cache, by position
  std::vector<float> probs_;
};

}  // namespace kdsl::models
