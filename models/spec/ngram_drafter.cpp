// ngram_drafter.cpp - prompt lookup over the text so far, latest and longest match first
#include "models/spec/ngram_drafter.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>

namespace kdsl::models {

NgramDrafter::NgramDrafter(int ngram_min, int ngram_max, int branches) : ngram_min_(ngram_min), ngram_max_(ngram_max), branches_(branches) {
  if (ngram_min < 1 || ngram_max < ngram_min)
    throw Error(fmt::format("n-gram drafter: n-gram sizes {}..{}: expected 1 <= min <= max", ngram_min, ngram_max));
  if (branches < 1 || branches > 8) throw Error(fmt::format("n-gram drafter: {} branches: expected 1 to 8", branches));
}

void NgramDrafter::find_matches(std::span<const int> tokens, std::vector<int> &starts) const {
  starts.clear();
  const int len = int(tokens.size());
  for (int n = std::min(ngram_max_, len - 1); n >= ngram_min_; --n) {
    std::span<const int> suffix = tokens.subspan(size_t(len - n));
    // Latest occurrence first: the nearest context predicts best. Start i < len - n, so at
    // least one token follows the match.
    for (int i = len - n - 1; i >= 0; --i) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + i)) continue;
      // A continuation already found (a shorter n-gram matching where a longer one did) adds nothing.
      if (std::find(starts.begin(), starts.end(), i + n) != starts.end()) continue;
      starts.push_back(i + n);
      if (int(starts.size()) == branches_) return;
    }
    if (branches_ == 1 && !starts.empty()) return;
  }
}

void NgramDrafter::draft(std::span<const int> tokens, int max, Draft &out) {
  out.clear();
  const int len = int(tokens.size());
  find_matches(tokens, starts_);
  if (starts_.empty()) return;
  // Token j of the continuation at `start`: the text, then (past its end) the draft itself,
  // so a periodic text drafts full length.
  auto next = [&](int start, int j, const std::vector<int> &path) { return start + j < len ? tokens[size_t(start + j)] : path[size_t(start + j - len)]; };
  if (branches_ == 1) {
    for (int j = 0; j < max; ++j) out.tokens.push_back(next(starts_[0], j, out.tokens));
    return;
  }
  const int others = int(starts_.size()) - 1;
  const int first_len = others == 0 ? max : std::max((max + 1) / 2, max - others * std::max(1, max / 4));
  std::vector<int> path;  // the continuation's tokens so far, for next() past the text's end
  for (size_t b = 0; b < starts_.size() && int(out.tokens.size()) < max; ++b) {
    // New nodes this branch may add: it follows the tree for free where it agrees with it.
    int budget = b == 0 ? first_len : std::max(1, max / 4);
    path.clear();
    int parent = -1;
    for (int j = 0; j < max && budget > 0; ++j) {
      int t = next(starts_[b], j, path);
      path.push_back(t);
      int node = -1;
      for (int c = parent + 1; c < int(out.tokens.size()) && node < 0; ++c)
        if (out.parents[size_t(c)] == parent && out.tokens[size_t(c)] == t) node = c;
      if (node < 0) {
        if (int(out.tokens.size()) == max) break;
        out.tokens.push_back(t);
        out.parents.push_back(parent);
        node = int(out.tokens.size()) - 1;
        --budget;
      }
      parent = node;
    }
  }
  // One continuation, or all of them the same: a chain.
  if (std::all_of(out.parents.begin(), out.parents.end(), [i = -1](int p) mutable { return p == i++; })) out.parents.clear();
}

}  // namespace kdsl::models
