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
class NgramDrafter : public Drafter {
 public:
  explicit NgramDrafter(int ngram_min = 1, int ngram_max = 4);
  void draft(std::span<const int> tokens, int max, Draft &out) override;
  std::string name() const override { return "n-gram"; }

 private:
  int ngram_min_, ngram_max_;
};

}  // namespace kdsl::models
