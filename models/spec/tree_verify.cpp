// tree_verify.cpp - the multi-candidate rejection walk down a checked token tree
#include "models/spec/tree_verify.h"

#include <algorithm>

namespace kdsl::models {

void verify_tree(Sampler &sampler, std::span<const float> logits, size_t vocab, std::span<const int> tokens, std::span<const int> parents,
                 std::vector<float> &p, TreeVerdict &v) {
  v.branch.assign(1, 0);
  v.tokens.clear();
  const bool greedy = sampler.params().temperature <= 0;
  int node = 0;
  for (;;) {
    std::span<const float> row = logits.subspan(size_t(node) * vocab, vocab);
    sampler.compute_probabilities(row, p);
    int kept = -1;
    double mass = 1;
    const int argmax = greedy ? int(std::max_element(p.begin(), p.end()) - p.begin()) : -1;
    for (int c = node + 1; c < int(tokens.size()) && kept < 0; ++c) {
      if (parents[size_t(c)] != node) continue;
      const int t = tokens[size_t(c)];
      if (greedy) {
        if (t == argmax) kept = c;
        continue;
      }
      // u < p(t) / mass, without the division; a rejected child leaves the draw.
      if (sampler.rng().uniform() * mass < double(p[size_t(t)])) {
        kept = c;
      } else {
        mass -= p[size_t(t)];
        p[size_t(t)] = 0;
      }
    }
    if (kept < 0) {
      // No child kept: the next token comes from what is left of p (greedy: its argmax). If
      // rounding emptied it (every token with mass was a rejected child), p itself is used.
      int token = argmax;
      if (!greedy) {
        if (!(mass > 1e-12)) sampler.compute_probabilities(row, p);
        token = sampler.sample_from(p);
      }
      sampler.accept(token);
      v.tokens.push_back(token);
      return;
    }
    sampler.accept(tokens[size_t(kept)]);
    v.tokens.push_back(tokens[size_t(kept)]);
    v.branch.push_back(kept);
    node = kept;
  }
}

}  // namespace kdsl::models
