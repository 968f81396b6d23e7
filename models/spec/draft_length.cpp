// draft_length.cpp - the draft length that maximizes expected tokens per millisecond, from measured costs
#include "models/spec/draft_length.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>
#include <cmath>

namespace kdsl::models {
namespace {
constexpr double kDecay = 0.95;     // per step, for the acceptance counts
constexpr double kCostWeight = 0.3;  // a new timing's weight in a length's running mean
constexpr double kRowPrior = 0.10;  // an extra row's cost as a fraction of a one-row pass, until that length is timed
}  // namespace

DraftLength::DraftLength(const SpecOptions &options)
    : options_(options), check_ms_(size_t(std::max(0, options.draft_max)) + 1, 0.0), timed_(size_t(std::max(0, options.draft_max)) + 1, false) {
  if (options.draft_max < 1 || options.draft_max > 1023)
    throw Error(fmt::format("--draft-max {}: expected 1 to 1023 drafted tokens per check", options.draft_max));
  if (options.draft_min < 0 || options.draft_min > options.draft_max)
    throw Error(fmt::format("--draft-min {}: expected 0 to --draft-max ({})", options.draft_min, options.draft_max));
}

double DraftLength::acceptance_rate() const { return successes_ / (successes_ + failures_); }

// A timed length's running mean. An untimed one is guessed from the timed length nearest
// below it, at kRowPrior per extra row: a guess cheaper than most kernels manage, so every
// length that could pay is tried once and then judged on its own time. (The cost is not a
// line in k: the few-rows kernels work in blocks of a power of two rows, and a block of 2 can
// cost nearly as much as two passes while one of 8 costs far less than eight.)
double DraftLength::check_ms(int k) const {
  if (timed_[size_t(k)]) return check_ms_[size_t(k)];
  for (int j = k - 1; j >= 0; --j)
    if (timed_[size_t(j)]) return check_ms_[size_t(j)] * (1 + kRowPrior * k) / (1 + kRowPrior * j);
  for (int j = k + 1; j < int(timed_.size()); ++j)
    if (timed_[size_t(j)]) return check_ms_[size_t(j)] * (1 + kRowPrior * k) / (1 + kRowPrior * j);
  return 1.0 + kRowPrior * k;  // nothing timed yet: relative units
}

double DraftLength::speedup(int k) const { return speedup_at(k, acceptance_rate()); }

double DraftLength::speedup_at(int k, double r) const {
  if (k <= 0) return 1.0;
  double tokens = r >= 1 ? k + 1 : (1 - std::pow(r, k + 1)) / (1 - r);
  double base = check_ms(0);
  double draft = draft_samples_ ? draft_ms_per_token_ * k : 0.0;
  if (std::none_of(timed_.begin(), timed_.end(), [](bool t) { return t; })) draft = 0;  // relative units: nothing to set the draft's time against
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
  if (!(check_ms > 0) || drafted >= int(timed_.size())) return;
  double &mean = check_ms_[size_t(drafted)];
  mean = timed_[size_t(drafted)] ? (1 - kCostWeight) * mean + kCostWeight * check_ms : check_ms;
  timed_[size_t(drafted)] = true;
}

}  // namespace kdsl::models
