// draft_length.cpp - the draft length that maximizes expected tokens per millisecond, from measured costs
#include "models/spec/draft_length.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>
#include <cmath>

namespace kdsl::models {
namespace {
constexpr double kDecay = 0.95;      // per ask, for the rates
constexpr double kCostWeight = 0.3;  // a new timing's weight in a running mean
constexpr double kRowPrior = 0.10;   // an extra row's cost as a fraction of a one-row pass, until that row count is timed
constexpr double kDraftPrior = 0.5;  // an extra drafted token's cost as a fraction of a timed length's mean per token
// The most of the generation's time that asks made while speculation is off may take. A draft
// model that is asked after n plain steps first catches up on those n tokens, so a probe costs
// in proportion to the wait before it: waiting longer does not make probing cheaper, only this does.
constexpr double kProbeBudget = 0.02;
}  // namespace

bool DraftLength::CostByLength::any() const { return std::find(timed.begin(), timed.end(), true) != timed.end(); }

void DraftLength::CostByLength::add(int k, double sample) {
  if (!(sample >= 0) || k < 0 || k >= int(ms.size())) return;
  double &mean = ms[size_t(k)];
  mean = timed[size_t(k)] ? (1 - kCostWeight) * mean + kCostWeight * sample : sample;
  timed[size_t(k)] = true;
}

DraftLength::DraftLength(const SpecOptions &options)
    : options_(options), check_(std::max(0, options.draft_max)), draft_(std::max(0, options.draft_max)), empty_(0) {
  if (options.draft_max < 1 || options.draft_max > 1023)
    throw Error(fmt::format("--draft-max {}: expected 1 to 1023 drafted tokens per check", options.draft_max));
  if (options.draft_min < 0 || options.draft_min > options.draft_max)
    throw Error(fmt::format("--draft-min {}: expected 0 to --draft-max ({})", options.draft_min, options.draft_max));
}

double DraftLength::acceptance_rate() const { return successes_ / (successes_ + failures_); }

double DraftLength::empty_rate() const { return empties_ / (empties_ + proposals_); }

// A timed row count's running mean. An untimed one is guessed from the timed count nearest
// below it, at kRowPrior per extra row: a guess cheaper than most kernels manage, so every
// length that could pay is tried once and then judged on its own time. (The cost is not a
// line in k: the few-rows kernels work in blocks of a power of two rows, and a block of 2 can
// cost nearly as much as two passes while one of 8 costs far less than eight.)
double DraftLength::check_ms(int k) const {
  const std::vector<bool> &timed = check_.timed;
  if (timed[size_t(k)]) return check_.ms[size_t(k)];
  for (int j = k - 1; j >= 0; --j)
    if (timed[size_t(j)]) return check_.ms[size_t(j)] * (1 + kRowPrior * k) / (1 + kRowPrior * j);
  for (int j = k + 1; j < int(timed.size()); ++j)
    if (timed[size_t(j)]) return check_.ms[size_t(j)] * (1 + kRowPrior * k) / (1 + kRowPrior * j);
  return 1.0 + kRowPrior * k;  // nothing timed yet: relative units
}

// A timed length's running mean. An untimed one is guessed from the nearest timed length j:
// from below, j's cost plus kDraftPrior of j's mean per token for each extra token; from above,
// j's cost scaled by k / j. Both guesses lie under the cost of a drafter with a fixed part (a
// draft model's catch-up) and a part per token, so the length gets tried.
double DraftLength::draft_ms(int k) const {
  const std::vector<bool> &timed = draft_.timed;
  if (timed[size_t(k)]) return draft_.ms[size_t(k)];
  for (int j = k - 1; j >= 1; --j)
    if (timed[size_t(j)]) return draft_.ms[size_t(j)] * (1 + kDraftPrior * (k - j) / j);
  for (int j = k + 1; j < int(timed.size()); ++j)
    if (timed[size_t(j)]) return draft_.ms[size_t(j)] * k / j;
  return 0.0;  // not timed yet: the checks' times decide
}

double DraftLength::speedup(int k) const { return speedup_at(k, acceptance_rate(), empty_rate()); }

double DraftLength::speedup_at(int k, double r, double empty) const {
  if (k <= 0) return 1.0;
  const double kept_tokens = r >= 1 ? k + 1 : (1 - std::pow(r, k + 1)) / (1 - r);
  const double base = check_ms(0);
  // Nothing timed yet: relative units, with nothing to set the drafter's time against.
  const bool timed = check_.any();
  const double drafting = timed ? draft_ms(k) : 0.0, asking_for_nothing = timed && empty_.any() ? empty_.ms[0] : 0.0;
  const double tokens = empty + (1 - empty) * kept_tokens;
  const double cost = empty * (base + asking_for_nothing) + (1 - empty) * (check_ms(k) + drafting);
  return tokens * base / cost;
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
  // Where even drafts that were always proposed and kept would not pay (a draft model as slow
  // as the target), the rates cannot change the answer: probe rarely.
  bool could_pay = false;
  for (int k = std::max(1, options_.draft_min); k <= options_.draft_max && !could_pay; ++k) could_pay = speedup_at(k, 1.0, 0.0) > 1.0;
  if (!could_pay) probe_every_ = kProbeEveryMax;
  if (++plain_run_ >= probe_every_ && probe_ms_ <= kProbeBudget * elapsed_ms_) {
    plain_run_ = 0, probing_ = true;
    return std::max(1, options_.draft_min);  // a probe: is the text drafting better now?
  }
  return 0;
}

void DraftLength::record(int asked, int drafted, int accepted, double check_ms, double draft_ms) {
  elapsed_ms_ += std::max(0.0, check_ms) + std::max(0.0, draft_ms);
  if (probing_ && asked > 0) probe_ms_ += std::max(0.0, draft_ms);
  if (asked > 0) {
    plain_run_ = 0;
    proposals_ *= kDecay, empties_ *= kDecay;
    if (drafted == 0) {
      empties_ += 1;
      empty_.add(0, draft_ms);
    } else {
      proposals_ += 1;
      // A draft cut short (a drafter below --draft-p-min) ends the check as a rejection does.
      successes_ = successes_ * kDecay + accepted;
      failures_ = failures_ * kDecay + (accepted < asked ? 1 : 0);
      draft_.add(asked, draft_ms);
    }
  }
  if (check_ms > 0) check_.add(drafted, check_ms);
}

}  // namespace kdsl::models
