// drafter.h - what a speculative-decoding drafter proposes, and the one interface every drafter implements
#pragma once
#include <span>
#include <string>
#include <vector>

namespace kdsl::models {

// Tokens proposed to follow the text so far, for the target model to check in one pass.
struct Draft {
  std::vector<int> tokens;
  // Empty: each token was chosen outright (its q is a point mass), as n-gram lookup and greedy
  // drafting choose. Otherwise tokens.size() rows of vocab floats, row j the distribution
  // tokens[j] was drawn from: the rejection rule needs it to keep the output exact.
  std::vector<float> q;
  // Empty: a chain, tokens[j] follows tokens[j - 1]. Otherwise a token tree (several
  // continuations checked in one pass): tokens[j] follows tokens[parents[j]], or the text so
  // far where parents[j] is -1; parents[j] < j. A tree's tokens are chosen outright (q empty),
  // and no two children of one parent are the same token.
  std::vector<int> parents;

  std::span<const float> q_row(size_t j, size_t vocab) const {
    return q.empty() ? std::span<const float>() : std::span<const float>(q).subspan(j * vocab, vocab);
  }
  bool is_tree() const { return !parents.empty(); }
  void clear() { tokens.clear(), q.clear(), parents.clear(); }
};

// A source of drafts: n-gram lookup in the text so far, or a smaller model with the target's
// vocabulary. Drafters keep no record of what was accepted: each call sees the whole text,
// and a drafter with a KV cache of its own finds where that text departs from what it ran.
class Drafter {
 public:
  virtual ~Drafter() = default;
  // The prompt, before generation: a drafter with a model of its own runs it here, timed with
  // the target's prefill, rather than in its first draft.
  virtual void begin(std::span<const int> prompt) { (void)prompt; }
  // Drafts at most `max` (>= 1) tokens to follow `tokens` (the prompt and every token
  // generated so far) into `out`, cleared first; proposing none is allowed.
  virtual void draft(std::span<const int> tokens, int max, Draft &out) = 0;
  // For the summary: "n-gram", "draft model".
  virtual std::string name() const = 0;
};

}  // namespace kdsl::models
