// sampler.cpp - the sampling pipeline over one logit vector, kept simple enough to verify by hand
#include "models/sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <kdsl/error.h>
#include <numeric>
#include <unordered_map>

namespace kdsl::models {

Sampler::Sampler(SamplerParams params) : params_(params), rng_(params.seed) {
  auto check = [](bool ok, const char *field, double value, const char *expected) {
    if (!ok) throw Error(fmt::format("sampler: {} must be {}, found {}", field, expected, value));
  };
  check(std::isfinite(params_.temperature), "temperature", params_.temperature, "finite");
  check(params_.top_p > 0 && params_.top_p <= 1, "top_p", params_.top_p, "in (0, 1]");
  check(params_.min_p >= 0 && params_.min_p <= 1, "min_p", params_.min_p, "in [0, 1]");
  check(params_.repetition_penalty > 0, "repetition_penalty", params_.repetition_penalty, "positive");
}

void Sampler::accept(int token) {
  history_.push_back(token);
  if (params_.penalty_last_n >= 0)
    while (history_.size() > size_t(params_.penalty_last_n)) history_.pop_front();
}

void Sampler::reset() {
  history_.clear();
  probs_.clear();
  rng_.reseed(params_.seed);
}

void Sampler::compute_probabilities(std::span<const float> logits_in, std::vector<float> &probs) const {
  const size_t n = logits_in.size();
  if (n == 0) throw Error("sampler: empty logits");
  std::vector<float> logits(logits_in.begin(), logits_in.end());

  // Penalties look at each distinct recent token once, with its count.
  std::unordered_map<int, int> counts;
  for (int t : history_)
    if (t >= 0 && size_t(t) < n) ++counts[t];
  for (auto [t, count] : counts) {
    float &l = logits[size_t(t)];
    if (params_.repetition_penalty != 1.0f) l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    l -= float(count) * params_.frequency_penalty + params_.presence_penalty;
  }

  probs.assign(n, 0.0f);
  if (params_.temperature <= 0) {
    probs[size_t(std::max_element(logits.begin(), logits.end()) - logits.begin())] = 1.0f;
    return;
  }

  // Softmax at temperature T, in double so long vocabularies keep their small tails.
  float max_logit = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = std::exp(double(logits[i] - max_logit) / params_.temperature);

  // Candidates sorted by probability (descending, lower id first on ties); only the top k
  // need ordering when top-k is on.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto by_prob = [&](int a, int b) { return p[size_t(a)] > p[size_t(b)] || (p[size_t(a)] == p[size_t(b)] && a < b); };
  size_t kept = n;
  if (params_.top_k > 0 && size_t(params_.top_k) < n) {
    kept = size_t(params_.top_k);
    std::partial_sort(order.begin(), order.begin() + long(kept), order.end(), by_prob);
  } else if (params_.top_p < 1 || params_.min_p > 0) {
    std::sort(order.begin(), order.end(), by_prob);
  }

  if (params_.top_p < 1) {
    double kept_total = 0;
    for (size_t i = 0; i < kept; ++i) kept_total += p[size_t(order[i])];
    double cumulative = 0;
    for (size_t i = 0; i < kept; ++i) {
      cumulative += p[size_t(order[i])];
      if (cumulative >= params_.top_p * kept_total) {
        kept = i + 1;
        break;
      }
    }
  }
  if (params_.min_p > 0) {
    double threshold = params_.min_p * p[size_t(order[0])];
    size_t i = 1;
    while (i < kept && p[size_t(order[i])] >= threshold) ++i;
    kept = i;
  }

  double kept_total = 0;
  for (size_t i = 0; i < kept; ++i) kept_total += p[size_t(order[i])];
  if (kept == n) {
    for (size_t i = 0; i < n; ++i) probs[i] = float(p[i] / kept_total);
  } else {
    for (size_t i = 0; i < kept; ++i) probs[size_t(order[i])] = float(p[size_t(order[i])] / kept_total);
  }
}

int Sampler::sample_from(std::span<const float> probs) {
  double total = 0;
  for (float q : probs) total += q;
  if (!(total > 0)) throw Error(fmt::format("sampler: the distribution sums to {}, expected a positive total", total));
  double u = rng_.uniform() * total, cumulative = 0;
  int last_positive = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0) continue;
    cumulative += probs[i];
    last_positive = int(i);
    if (u < cumulative) return int(i);
  }
  return last_positive;  // rounding left u just past the last step
}

int Sampler::sample(std::span<const float> logits) {
  compute_probabilities(logits, probs_);
  int token = params_.temperature <= 0
                  ? int(std::max_element(probs_.begin(), probs_.end()) - probs_.begin())
                  : sample_from(probs_);
  accept(token);
  return token;
}

}  // namespace kdsl::models
