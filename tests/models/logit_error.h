// logit_error.h - how far an engine's logits are from reference ones: the largest difference over the largest reference logit
#pragma once
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace kdsl::test {

// max |got - want| / max |want|: one number per step that a logit cancelling to near zero
// cannot inflate.
inline double relative_error(std::span<const float> got, const std::vector<double> &want) {
  double scale = 0, worst = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
  return worst / scale;
}

}  // namespace kdsl::test
