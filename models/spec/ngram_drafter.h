// ngram_drafter.h - prompt lookup: drafts what followed the latest earlier occurrence of the text's last n tokens
#pragma once
#include "models/spec/drafter.h"

namespace kdsl::models {

// Drafting without a second model (prompt lookup decoding, llama.cpp's --spec-ngram family):
// the last n tokens (n from ngram_max down to ngram_min, longest first) are looked up in the
// text before them, latest occurrence first, and what followed there is the draft. Text that
// repeats (code, lists, a quoted prompt) drafts well; other text drafts little or nothing,
// which costs nothing. A continuation that runs into the end of the text goes on with its own
// drafted tokens, so a periodic text drafts full length.
//
// With branches > 1 the draft is a token tree: the continuations of up to `branches` matches
// that go different ways (the latest, longest match first, then earlier ones), merged where
// they agree. The first takes at least half of the `max` tokens; each other at most a
// quarter, as far as what is left allows. Where the text repeats with variations (a list,
// code with similar lines) one pass then checks several guesses at the point they part.
class NgramDrafter : public Drafter {
 public:
  explicit NgramDrafter(int ngram_min = 1, int ngram_max = 4, int branches = 1);
  void draft(std::span<const int> tokens, int max, Draft &out) override;
  std::string name() const override { return branches_ > 1 ? "n-gram tree" : "n-gram"; }

 private:
  // Where the continuation of each match starts, best first, up to branches_ of them.
  void find_matches(std::span<const int> tokens, std::vector<int> &starts) const;
  int ngram_min_, ngram_max_, branches_;
  std::vector<int> starts_;  // scratch, kept for its capacity
};

}  // namespace kdsl::models
