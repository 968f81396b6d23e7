// ngram_drafter.cpp - prompt lookup over the text so far, latest and longest match first
#include "models/spec/ngram_drafter.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>

namespace kdsl::models {

NgramDrafter::NgramDrafter(int ngram_min, int ngram_max) : ngram_min_(ngram_min), ngram_max_(ngram_max) {
  if (ngram_min < 1 || ngram_max < ngram_min)
    throw Error(fmt::format("n-gram drafter: n-gram sizes {}..{}: expected 1 <= min <= max", ngram_min, ngram_max));
}

void NgramDrafter::draft(std::span<const int> tokens, int max, Draft &out) {
  out.clear();
  const int len = int(tokens.size());
  for (int n = std::min(ngram_max_, len - 1); n >= ngram_min_; --n) {
    std::span<const int> suffix = tokens.subspan(size_t(len - n));
    // Latest occurrence first: the nearest context predicts best. Start i < len - n, so at
    // least one token follows the match.
    for (int i = len - n - 1; i >= 0; --i) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + i)) continue;
      // Position x of the continuation reads the text, then the draft itself (x - len < j).
      for (int j = 0, x = i + n; j < max; ++j, ++x) out.tokens.push_back(x < len ? tokens[size_t(x)] : out.tokens[size_t(x - len)]);
      return;
    }
  }
}

}  // namespace kdsl::models
