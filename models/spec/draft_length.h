// draft_length.h - how many tokens to draft next: the running acceptance rate against the measured cost of a check
#pragma once
#include <vector>

namespace kdsl::models {

struct SpecOptions {
  int draft_max = 7;  // at most this many drafted tokens per check (a check runs draft_max + 1 rows)
  int draft_min = 0;  // a draft shorter than this is not checked: a plain decode step runs instead
  bool adaptive = true;  // choose the length per step (below); false: always draft_max
};

// Chooses each check's draft length k in [draft_min, draft_max], or 0 for a plain step, to
// maximize tokens per millisecond. With a per-token acceptance rate a, a check of k drafts
// yields 1 + a + ... + a^k tokens on average (a draft is kept only after every earlier one);
// it costs the target's pass over k + 1 rows plus k drafted tokens. Both costs are measured as
// the generation runs (a running mean of the pass's time for each length, lengths not yet
// timed guessed optimistically so that each gets tried; the draft's time per token a running
// mean), and so is a (successes and failures of the drafts, decayed so that it follows the text). Where no length beats a plain step,
// speculation is off, and a check after kProbeEvery plain steps keeps the rate current (after
// twice as many each time a probe leaves it off, up to kProbeEveryMax; at once where even
// drafts that were always kept would not pay).
class DraftLength {
 public:
  explicit DraftLength(const SpecOptions &options);

  // The draft length for the next step; 0: a plain decode step.
  int next();
  // One step done: `drafted` tokens proposed (0: a plain step), `accepted` of them kept, the
  // target's pass taking check_ms and the drafter draft_ms (negative: not timed, as when the
  // step compiled a kernel).
  void record(int drafted, int accepted, double check_ms, double draft_ms);

  double acceptance_rate() const;
  // Expected tokens per millisecond with k drafts, over a plain step's (1 at k = 0).
  double speedup(int k) const;

  static constexpr int kProbeEvery = 16, kProbeEveryMax = 256;

 private:
  double check_ms(int k) const;
  double speedup_at(int k, double acceptance) const;

  SpecOptions options_;
  double successes_ = 1, failures_ = 1;  // the prior: a rate of 1/2 worth two drafts
  std::vector<double> check_ms_;  // [k]: running mean of a pass's time with k drafts
  std::vector<bool> timed_;
  double draft_ms_per_token_ = 0;
  int draft_samples_ = 0;
  int plain_run_ = 0;  // plain steps since the last check
  int probe_every_ = kProbeEvery;
  bool probing_ = false;  // the last step was a probe
};

}  // namespace kdsl::models
