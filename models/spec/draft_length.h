// draft_length.h - how many tokens to draft next: the running acceptance rate against the measured cost of a check
#pragma once
#include <cstddef>
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
// it costs the target's pass over k + 1 rows plus what asking for k drafts cost. A drafter may
// propose nothing (n-gram lookup without a match; a draft model below --draft-p-min): that
// step is a plain pass plus the asking, so the rate of empty drafts and their cost count too.
//
// Everything is measured as the generation runs: a running mean of the pass's time for each
// row count and of the drafting's time for each asked length (lengths not yet timed guessed
// optimistically so that each gets tried: the cost of drafting is not a line through zero,
// a draft model first catches up on the tokens the last check kept), and the rates (decayed
// so that they follow the text). Where no length beats a plain step, speculation is off, and
// a check after kProbeEvery plain steps keeps the rates current (after twice as many each time
// a probe leaves it off, up to kProbeEveryMax; at once where even drafts that were always
// proposed and kept would not pay), as long as the probes' drafting has taken at most a small
// share of the time so far.
class DraftLength {
 public:
  explicit DraftLength(const SpecOptions &options);

  // The draft length to ask for next; 0: a plain decode step.
  int next();
  // One step done: `asked` tokens asked of the drafter (0: a plain step), `drafted` proposed,
  // `accepted` of them kept, the target's pass taking check_ms and the drafter draft_ms
  // (negative: not timed, as when the step compiled a kernel).
  void record(int asked, int drafted, int accepted, double check_ms, double draft_ms);

  double acceptance_rate() const;
  // The share of asks that proposed nothing.
  double empty_rate() const;
  // Expected tokens per millisecond when asking for k drafts, over a plain step's (1 at k = 0).
  double speedup(int k) const;

  static constexpr int kProbeEvery = 16, kProbeEveryMax = 256;

 private:
  // A running mean per length, with the optimistic guess for a length not yet timed.
  struct CostByLength {
    std::vector<double> ms;
    std::vector<bool> timed;
    explicit CostByLength(int max_length) : ms(std::size_t(max_length) + 1, 0.0), timed(std::size_t(max_length) + 1, false) {}
    bool any() const;
    void add(int k, double sample);
  };
  double check_ms(int k) const;
  double draft_ms(int k) const;
  double speedup_at(int k, double acceptance, double empty) const;

  SpecOptions options_;
  double successes_ = 1, failures_ = 1;  // the prior: a rate of 1/2 worth two drafts
  double proposals_ = 1, empties_ = 0;   // asks that proposed something, and that did not
  CostByLength check_;  // [rows - 1]: the target's pass
  CostByLength draft_;  // [asked]: the drafter, for asks that proposed something
  CostByLength empty_;  // [0]: an ask that proposed nothing
  int plain_run_ = 0;  // plain steps since the last check
  int probe_every_ = kProbeEvery;
  bool probing_ = false;  // the last step was a probe
  double elapsed_ms_ = 0;  // every step's check and drafting
  double probe_ms_ = 0;    // the drafting of probes: at most kProbeBudget of elapsed_ms_
};

}  // namespace kdsl::models
