// model_drafter.cpp - draft-model speculation: keep the draft's cache in step, then decode a chain or grow a tree of up to max tokens
#include "models/spec/model_drafter.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>
#include <cmath>

namespace kdsl::models {
namespace {

SamplerParams own_stream(SamplerParams p) {
  p.seed ^= 0x5bd1e9955bd1e995ull;  // its own random numbers: the target's draws stay the target's
  return p;
}

// The draft's own belief, after the penalties the target's sampler applies: what a tree ranks by.
SamplerParams ranking(SamplerParams p) {
  p.temperature = 1.0f, p.top_k = 0, p.top_p = 1.0f, p.min_p = 0.0f;
  return p;
}

EngineOptions checked_options(const ModelWeights &draft, int target_vocab, EngineOptions o) {
  if (int64_t(draft.hparams.n_vocab) != target_vocab)
    throw Error(fmt::format("the draft model's vocabulary has {} tokens but the target's has {}: a draft model must share the target's tokenizer",
                            draft.hparams.n_vocab, target_vocab));
  o.max_logit_rows = 1;
  return o;
}

constexpr double kRankDecay = 0.97;  // per position seen: about the last 30 count

ModelDrafterOptions checked(ModelDrafterOptions o) {
  if (o.branches < 1 || o.branches > 64)
    throw Error(fmt::format("--draft-branches {}: expected 1 (a chain) to 64 candidates per position", o.branches));
  return o;
}

// The draft model's own confidence in its most likely token: its softmax at temperature 1.
float top_probability(std::span<const float> logits) {
  float top = *std::max_element(logits.begin(), logits.end());
  double total = 0;
  for (float l : logits) total += std::exp(double(l - top));
  return float(1.0 / total);
}

// The n likeliest tokens of p, likeliest first, the lower id first among equals.
void likeliest(std::span<const float> p, int n, std::vector<int> &top) {
  top.clear();
  for (int t = 0; t < int(p.size()); ++t) {
    if (int(top.size()) == n && !(p[size_t(t)] > p[size_t(top.back())])) continue;
    if (int(top.size()) == n) top.pop_back();
    auto at = std::find_if(top.begin(), top.end(), [&](int u) { return p[size_t(t)] > p[size_t(u)]; });
    top.insert(at, t);
  }
}

}  // namespace

ModelDrafter::ModelDrafter(const ModelWeights &draft_model, int target_vocab, const Device &device, const EngineOptions &engine_options,
                           const SamplerParams &target_sampling, ModelDrafterOptions options)
    : engine_(draft_model, device, checked_options(draft_model, target_vocab, engine_options)),
      sampler_(own_stream(target_sampling)),
      options_(checked(options)),
      ranker_(ranking(target_sampling)) {
  cached_.reserve(size_t(engine_.context()));
  // The prior, worth about two positions: the first choice right half the time, each next
  // choice half as often as the one before.
  for (int r = 0; r < options_.branches; ++r) rank_counts_.push_back(std::ldexp(1.0, -r));
  rank_counts_.push_back(0.5);
}

void ModelDrafter::rates_into(std::vector<double> &rates) const {
  double total = 0;
  for (double c : rank_counts_) total += c;
  rates.clear();
  for (double c : rank_counts_) rates.push_back(c / total);
}

std::vector<double> ModelDrafter::rank_rates() const {
  std::vector<double> rates;
  rates_into(rates);
  return rates;
}

void ModelDrafter::learn_ranks(std::span<const int> tokens) {
  const size_t branches = size_t(options_.branches);
  const size_t positions = ranked_.size() / branches;
  for (size_t d = 0; d < positions && ranked_from_ + d < tokens.size(); ++d) {
    const int token = tokens[ranked_from_ + d];
    const auto row = ranked_.begin() + long(d * branches);
    const size_t rank = size_t(std::find(row, row + long(branches), token) - row);
    for (double &c : rank_counts_) c *= kRankDecay;
    rank_counts_[rank] += 1;
    if (d >= chain_.size() || token != chain_[d]) break;  // the text left the chain: later ranks are of other positions
  }
}

void ModelDrafter::begin(std::span<const int> prompt) {
  ranked_.clear(), chain_.clear();  // a new text: the last tree's positions are not in it
  if (prompt.empty() || int(prompt.size()) > engine_.context()) return;
  // What the cache already holds of it (the same prompt again) is not run twice.
  size_t same = std::mismatch(cached_.begin(), cached_.end(), prompt.begin(), prompt.end()).first - cached_.begin();
  if (same < prompt.size()) engine_.forward(prompt.subspan(same), int(same));
  cached_.resize(same);
  cached_.insert(cached_.end(), prompt.begin() + long(same), prompt.end());
}

std::span<const float> ModelDrafter::catch_up(std::span<const int> tokens) {
  if (tokens.empty() || int(tokens.size()) > engine_.context()) return {};
  // Where the text departs from the cache; the last token is run again in any case, for its logits.
  size_t same = std::mismatch(cached_.begin(), cached_.end(), tokens.begin(), tokens.end()).first - cached_.begin();
  same = std::min(same, tokens.size() - 1);
  cached_.resize(same);
  std::span<const float> logits = engine_.forward(tokens.subspan(same), int(same));
  cached_.insert(cached_.end(), tokens.begin() + long(same), tokens.end());
  return logits;
}

void ModelDrafter::replay_history(Sampler &sampler, std::span<const int> tokens) const {
  sampler.clear_history();
  const int window = sampler.params().penalty_last_n;
  for (size_t i = window < 0 ? 0 : tokens.size() - std::min(tokens.size(), size_t(window)); i < tokens.size(); ++i) sampler.accept(tokens[i]);
}

void ModelDrafter::draft(std::span<const int> tokens, int max, Draft &out) {
  out.clear();
  std::span<const float> logits = catch_up(tokens);
  if (logits.empty()) return;
  // The penalties see the text's recent tokens and the drafts, as the target's sampler will.
  if (options_.branches > 1) {
    if (ranked_from_ > 0 && ranked_from_ <= tokens.size()) learn_ranks(tokens);
    ranked_.clear(), chain_.clear();
    ranked_from_ = tokens.size();
    replay_history(ranker_, tokens);
    draft_tree(logits, max, out);
  } else {
    replay_history(sampler_, tokens);
    draft_chain(logits, max, out);
  }
}

void ModelDrafter::draft_chain(std::span<const float> logits, int max, Draft &out) {
  const bool greedy = sampler_.params().temperature <= 0;
  const size_t vocab = size_t(engine_.vocab());
  for (int j = 0; j < max; ++j) {
    if (options_.p_min > 0 && top_probability(logits) < options_.p_min) break;
    sampler_.compute_probabilities(logits, probs_);
    int token;
    if (greedy) {
      token = int(std::max_element(probs_.begin(), probs_.end()) - probs_.begin());  // the point mass
    } else {
      token = sampler_.sample_from(probs_);
      out.q.insert(out.q.end(), probs_.begin(), probs_.begin() + long(vocab));
    }
    sampler_.accept(token);
    out.tokens.push_back(token);
    // The last draft needs no logits; nor can the cache go past the context.
    if (j + 1 == max || int(cached_.size()) >= engine_.context()) break;
    int one[1] = {token};
    logits = engine_.forward(one, int(cached_.size()));
    cached_.push_back(token);
  }
}

// Best-first growth: every candidate's chance is at most its parent's, so taking the likeliest
// candidate each time drafts the `max` likeliest paths among them (the most tokens kept on
// average, the ranks' chances taken as independent), and the chain's next position is run
// (one decode step of the draft) only once its token is taken.
void ModelDrafter::draft_tree(std::span<const float> logits, int max, Draft &out) {
  candidates_.clear();
  rates_into(rates_);  // into kept capacity: no allocation a step
  double chain_chance = 1.0;  // of the path to the chain's last drafted token
  int chain_end = -1;         // that token's node; -1: the text
  auto offer = [&](std::span<const float> position_logits) {
    ranker_.compute_probabilities(position_logits, probs_);
    likeliest(probs_, options_.branches, top_);
    for (int r = 0; r < options_.branches; ++r) ranked_.push_back(r < int(top_.size()) && probs_[size_t(top_[size_t(r)])] > 0 ? top_[size_t(r)] : -1);
    const bool goes_on = !(options_.p_min > 0) || probs_[size_t(top_[0])] >= options_.p_min;
    for (size_t r = 0; r < top_.size(); ++r) {
      if (!(probs_[size_t(top_[r])] > 0)) break;
      candidates_.push_back({chain_chance * rates_[r], top_[r], chain_end, r == 0 && goes_on});
      std::push_heap(candidates_.begin(), candidates_.end());
    }
  };
  offer(logits);
  while (int(out.tokens.size()) < max && !candidates_.empty()) {
    std::pop_heap(candidates_.begin(), candidates_.end());
    const Candidate c = candidates_.back();
    candidates_.pop_back();
    out.tokens.push_back(c.token);
    out.parents.push_back(c.parent);
    // A leaf needs no logits; nor can the cache go past the context.
    if (!c.extends || int(out.tokens.size()) == max || int(cached_.size()) >= engine_.context()) continue;
    int one[1] = {c.token};
    std::span<const float> next = engine_.forward(one, int(cached_.size()));
    cached_.push_back(c.token);
    ranker_.accept(c.token);
    chain_.push_back(c.token);
    chain_chance = c.chance, chain_end = int(out.tokens.size()) - 1;
    offer(next);
  }
  // Where no runner-up made the cut the tree is one chain: checked as one, it takes the
  // target's plainer rows pass.
  bool chain = true;
  for (size_t j = 0; j < out.parents.size() && chain; ++j) chain = out.parents[j] == int(j) - 1;
  if (chain) out.parents.clear();
}

}  // namespace kdsl::models
