// draft_length.cpp - the draft length that maximizes expected tokens per millisecond, from measured costs
#include "models/spec/draft_length.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>
#include <cmath>

namespace kdsl::models {
namespace {
constexpr double kDecay = 0.95;       // per step, for the acceptance counts and the cost fit
constexpr double kRowPrior = 0.10;    // an extra row's cost as a fraction of a one-row pass, before it is measured
constexpr double kPriorWeight = 0.5;  // how many observations the prior slope is worth
}  // namespace

DraftLength::DraftLength(const SpecOptions &options) : options_(options) {
  if (options.draft_max < 1 || options.draft_max > 1023)
    throw Error(fmt::format("--draft-max {}: expected 1 to 1023 drafted tokens per check", options.draft_max));
  if (options.draft_min < 0 || options.draft_min > options.draft_max)
    throw Error(fmt::format("--draft-min {}: expected 0 to --draft-max ({})", options.draft_min, options.draft_max));
}

double DraftLength::acceptance_rate() const { return successes_ / (successes_ + failures_); }

// The fitted line at k, with the prior slope kRowPrior * a pulling it while few lengths are seen.
double DraftLength::check_ms(int k) const {
  if (sw_ <= 0) return 1.0 + kRowPrior * k;  // nothing measured yet: relative units
  double mx = sx_ / sw_, my = sy_ / sw_;
  double var = sxx_ / sw_ - mx * mx, cov = sxy_ / sw_ - mx * my;
  // Ridge toward the prior slope: b = (cov w + prior b0 w0) / (var w + w0), with b0 relative to the intercept.
  double a0 = my / (1 + kRowPrior * mx);  // the intercept were the prior slope exact
  double b = (cov * sw_ + kPriorWeight * kRowPrior * a0) / (var * sw_ + kPriorWeight);
  b = std::max(0.0, b);
  double a = std::max(1e-6, my - b * mx);
  return a + b * k;
}

double DraftLength::speedup(int k) const { return speedup_at(k, acceptance_rate()); }

double DraftLength::speedup_at(int k, double r) const {
  if (k <= 0) return 1.0;
  double tokens = r >= 1 ? k + 1 : (1 - std::pow(r, k + 1)) / (1 - r);
  double base = check_ms(0);
  double draft = draft_samples_ ? draft_ms_per_token_ * k : 0.0;
  if (sw_ <= 0) draft = 0;  // relative units: no measured time to set the draft's against
  return tokens * base / (check_ms(k) + draft);
}

int DraftLength::next() {
  if (!options_.adaptive) return options_.draft_max;
  int best = 0;
  double best_speedup = 1.0;
  for (int k = std::max(1, options_.draft_min); k <= options_.draft_max; ++k)
    if (double s = speedup(k); s > best_speedup) best = k, best_speedup = s;
  if (best > 0) {
    probe_every_ = kProbeEvery, probing_ = false;
    return best;
  }
  // A probe that left speculation off doubles the wait for the next: a draft model that has
  // to catch up on the text since its last draft makes each probe cost several plain steps.
  if (probing_) probe_every_ = std::min(kProbeEveryMax, 2 * probe_every_), probing_ = false;
  // Where even drafts that were always kept would not pay (a draft model as slow as the
  // target), the acceptance rate cannot change the answer: probe rarely.
  bool could_pay = false;
  for (int k = std::max(1, options_.draft_min); k <= options_.draft_max && !could_pay; ++k) could_pay = speedup_at(k, 1.0) > 1.0;
  if (!could_pay) probe_every_ = kProbeEveryMax;
  if (++plain_run_ >= probe_every_) {
    plain_run_ = 0, probing_ = true;
    return std::max(1, options_.draft_min);  // a probe: is the text drafting better now?
  }
  return 0;
}

void DraftLength::record(int drafted, int accepted, double check_ms, double draft_ms) {
  if (drafted > 0) {
    plain_run_ = 0;
    successes_ = successes_ * kDecay + accepted;
    failures_ = failures_ * kDecay + (accepted < drafted ? 1 : 0);
    if (draft_ms >= 0) {
      double per_token = draft_ms / drafted;
      draft_ms_per_token_ = draft_samples_ ? 0.8 * draft_ms_per_token_ + 0.2 * per_token : per_token;
      ++draft_samples_;
    }
  }
  if (!(check_ms > 0)) return;
  sw_ = sw_ * kDecay + 1, sx_ = sx_ * kDecay + drafted, sy_ = sy_ * kDecay + check_ms;
  sxx_ = sxx_ * kDecay + double(drafted) * drafted, sxy_ = sxy_ * kDecay + drafted * check_ms;
}

}  // namespace kdsl::models
