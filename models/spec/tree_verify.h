// tree_verify.h - checking a token tree against the target's distributions: the longest branch the sampling rule keeps, and the token after it
#pragma once
#include <span>
#include <vector>

#include "models/sampler/sampler.h"

namespace kdsl::models {

struct TreeVerdict {
  std::vector<int> branch;  // the nodes kept: 0 (the root) then each kept child
  std::vector<int> tokens;  // what the check yields: the kept children's tokens, then the next token
};

// Walks a tree checked by Engine::forward_tree (node 0 the root, the token already in the
// text; parents[i] < i; `logits` one row of vocab per node) from the root. At each node the
// target's next token is drawn from that node's row among its children, tried in node order:
// greedy keeps the child that is the argmax; sampling keeps child c with probability
// p(c) / (the mass not yet rejected), else removes c from p and tries the next. A node whose
// children are all rejected ends the walk with a token drawn from what is left of p. With
// drafted tokens chosen outright (point masses, distinct among siblings) every token that
// comes out is distributed exactly as p (SpecInfer's multi-candidate rule, Miao et al. 2024):
// the tree only decides how many come out of one pass. Every yielded token is recorded with
// sampler.accept. `scratch` holds p; `verdict` keeps its capacity.
void verify_tree(Sampler &sampler, std::span<const float> logits, size_t vocab, std::span<const int> tokens, std::span<const int> parents,
                 std::vector<float> &scratch, TreeVerdict &verdict);

}  // namespace kdsl::models
