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
  // 1: a chain of the draft's likeliest tokens. N > 1: a token tree, its likeliest chain with
  // the next N - 1 likeliest tokens at each of its positions as leaves: of all these
  // candidates, the `max` whose paths are likeliest to be kept are drafted. A path's chance is
  // the product, over its tokens, of how often the target has chosen the draft's token of
  // that rank (ModelDrafter::rank_rates, measured as generation goes), as Sequoia builds trees
  // from positional acceptance rates. (The draft's own probabilities, EAGLE-2's measure, need
  // a draft trained to be calibrated: a q8_0 copy of a random model, whose top token has a
  // small probability, is nearly always right, and trees ranked by them came out wide and
  // shallow: bench/RESULTS.md, 2026-12-05, "Draft-model token trees".) Where the draft's
  // second choice is often right, a check keeps it and the target's token after it, where a
  // chain gets only the target's correction. The chain goes on past a position only while its
  // token has at least p_min; the runners-up of the position where it stops are still
  // drafted. Drafted outright (point masses), so exact at any temperature.
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
  // With branches > 1: for r < branches, the share of the chain's positions where the target's
  // token was the draft's r-th likeliest; [branches]: none of them. Decayed, so they follow the
  // text; a prior before the first check. Positions past the first that left the chain are
  // not seen.
  std::vector<double> rank_rates() const;

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
  // What the text after the last tree says of the ranks the target chose along its chain.
  void learn_ranks(std::span<const int> tokens);
  void rates_into(std::vector<double> &rates) const;

  ModelDrafterOptions options_;
  Sampler ranker_;  // the tree's ranking: the target's penalties, temperature 1, no filters
  std::vector<int> cached_;  // the tokens in the draft's KV cache, by position
  std::vector<float> probs_;
  struct Candidate {
    double chance;      // that its path is kept: the product of its ranks' rates
    int token, parent;  // parent: the index of the drafted node it follows, -1 for the text
    bool extends;       // the chain's own token, which the chain goes on from
    bool operator<(const Candidate &o) const { return chance < o.chance; }
  };
  std::vector<Candidate> candidates_;  // the tree's candidates not yet drafted, as a heap
  std::vector<int> top_;               // one position's likeliest tokens
  // The last tree's chain: the text's length before it, each position's likeliest tokens
  // (branches a position, -1 past the vocabulary's nonzero ones) and the chain's own tokens.
  size_t ranked_from_ = 0;
  std::vector<int> ranked_, chain_;
  std::vector<double> rank_counts_;  // [branches + 1], decayed
  std::vector<double> rates_;        // rank_rates, for the tree being drafted
};

}  // namespace kdsl::models
