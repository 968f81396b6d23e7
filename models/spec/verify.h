// verify.h - the rejection rule of speculative sampling: a drafted token checked against the target's distribution
#pragma once
#include <span>
#include <vector>

#include "models/sampler/sampler.h"

namespace kdsl::models {

struct DraftVerdict {
  bool accepted = false;
  int token = -1;  // the draft when accepted, else the token drawn in its place
};

// Speculative sampling (Leviathan et al. 2023; Chen et al. 2023). With p the distribution
// sampler.sample(target_logits) would draw from and q the one `draft` was drawn from (empty:
// a point mass on it), accepts the draft with probability min(1, p(draft) / q(draft)), else
// draws from max(0, p - q) normalized. Either way the token that comes out is distributed
// exactly as p, whatever q is: the draft only decides how often a pass of the target yields
// more than one token. A greedy sampler accepts the draft iff it is the argmax, and otherwise
// returns the argmax (no random numbers drawn). The returned token is recorded with
// sampler.accept (for the penalties of the next row). `scratch` holds p; it keeps its capacity.
DraftVerdict verify_draft(Sampler &sampler, std::span<const float> target_logits, int draft, std::span<const float> q, std::vector<float> &scratch);

}  // namespace kdsl::models
