// verify.cpp - accept with min(1, p/q), else resample from the normalized residual max(0, p - q)
#include "models/spec/verify.h"

#include <algorithm>

namespace kdsl::models {

DraftVerdict verify_draft(Sampler &sampler, std::span<const float> target_logits, int draft, std::span<const float> q, std::vector<float> &p) {
  sampler.compute_probabilities(target_logits, p);
  DraftVerdict v;
  if (sampler.params().temperature <= 0) {
    // p is a point mass on the argmax, as sample() takes it (lowest id on ties).
    v.token = int(std::max_element(p.begin(), p.end()) - p.begin());
    v.accepted = v.token == draft;
  } else {
    const double qd = q.empty() ? 1.0 : double(q[size_t(draft)]);
    // u < p/q, written without the division; p >= q always accepts (u < 1).
    if (sampler.rng().uniform() * qd < double(p[size_t(draft)])) {
      v.accepted = true, v.token = draft;
    } else {
      // The residual in place of p. A rejection means p(draft) < q(draft), so some token has
      // p > q and the residual has mass; rounding alone could leave it empty, and then p itself
      // (what the residual approximates when p and q all but agree) is drawn from.
      std::vector<float> &r = p;
      double mass = 0;
      if (q.empty()) {
        r[size_t(draft)] = 0;
        for (float x : r) mass += x;
      } else {
        for (size_t i = 0; i < r.size(); ++i) mass += r[i] = std::max(0.0f, r[i] - q[i]);
      }
      if (!(mass > 0)) sampler.compute_probabilities(target_logits, p);
      v.token = sampler.sample_from(r);
    }
  }
  sampler.accept(v.token);
  return v;
}

}  // namespace kdsl::models
