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
  // 1: a chain of the draft's likeliest tokens. N > 1: a token tree (EAGLE-2's idea, with the
  // draft's runners-up as leaves): at each position of that chain the draft's next N - 1
  // likeliest tokens are candidates too, and of all candidates the `max` most probable paths
  // are drafted (the draft's probability of the path from the text to the node, at
  // temperature 1 after the penalties). A runner-up that the target prefers is then kept with
  // the token after it, where a chain gets only the target's correction. The chain goes on
  // past a position only while its token has at least p_min; the runners-up of the position
  // where it stops are still drafted. Drafted outright (point masses), so exact at any temperature.
  int branches = 1;
};

// Drafts with its own Engine (and KV cache) on the target's device. It keeps the tokens its
// cache holds by position; each call runs only where the text departs from them (the first
// rejected draft, or the target's own token after a full acceptance), so the two caches stay
// in step without being told what was accepted. It drafts with the target's sampler settings,
// penalties included (over the text it is given): greedily at a greedy target, else sampling
// from its own distributions, which it hands over for the rejection rule. With branches > 1
// it drafts a tree instead (ModelDrafterOptions::branches).
class ModelDrafter : public Drafter {
 public:
  // Throws kdsl::Error when the vocabularies differ in size.
  ModelDrafter(const ModelWeights &draft_model, int target_vocab, const Device &device, const EngineOptions &engine_options,
               const SamplerParams &target_sampling, ModelDrafterOptions options = {});
  void begin(std::span<const int> prompt) override;
  void draft(std::span<const int> tokens, int max, Draft &out) override;
  std::string name() const override { return options_.branches > 1 ? "draft model tree" : "draft model"; }
  Engine &engine() { return engine_; }

 private:
  Engine engine_;
  Sampler sampler_;
  // Runs the text's new tokens and returns the draft's logits after the last; empty where the
  // text does not fit the draft's context.
  std::span<const float> catch_up(std::span<const int> tokens);
  // Records the text's last tokens for the penalties, as the target's sampler will see them.
  void replay_history(Sampler &sampler, std::span<const int> tokens) const;
  void draft_chain(std::span<const float> logits, int max, Draft &out);
  void draft_tree(std::span<const float> logits, int max, Draft &out);

  ModelDrafterOptions options_;
  Sampler ranker_;  // the tree's ranking: the target's penalties, temperature 1, no filters
  std::vector<int> cached_;  // the tokens in the draft's KV cache, by position
  std::vector<float> probs_;
  struct Candidate {
    double path_probability;
    int token, parent;  // parent: the index of the drafted node it follows, -1 for the text
    bool extends;       // the chain's own token, which the chain goes on from
    bool operator<(const Candidate &o) const { return path_probability < o.path_probability; }
  };
  std::vector<Candidate> candidates_;  // the tree's candidates not yet drafted, as a heap
  std::vector<int> top_;               // one position's likeliest tokens
};

}  // namespace kdsl::models
