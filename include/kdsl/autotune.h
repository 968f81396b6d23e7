// autotune.h - choosing among a kernel's candidate configurations by timing them on the device, once per (kernel, key bucket, device)
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <kdsl/device.h>

namespace kdsl {

struct CacheStats;  // kdsl/kernel.h

// What is tuned: a kernel (or a library's dispatch point) with its candidate configurations,
// for one key, the shape arguments that change which configuration wins, bucketed
// (tune_bucket) so that nearby shapes share one measurement.
struct Tuning {
  std::string kernel;                   // "matmul.decode<f16>": one name per candidate set
  std::string key;                      // "N=2048,K=1024"
  std::vector<std::string> candidates;  // one label per configuration: "8x128"
  int default_index = 0;                // the hand-set configuration
};

// How a choice was made, for logs and tests.
enum class TuneSource {
  Default,     // KDSL_AUTOTUNE=0, or a device that is not timed
  Remembered,  // this process chose it before
  Recorded,    // read from the cache directory's record
  Timed,       // measured now (and recorded)
};

struct TuneResult {
  int choice = 0;
  TuneSource source = TuneSource::Default;
  std::vector<double> microseconds;  // Timed: each candidate's best time (as Tuning::candidates)
};

// Chooses a candidate for `tuning` on `device`:
// - KDSL_AUTOTUNE=0: the default, with nothing read or written;
// - else this process's earlier choice, else the record in the kernel cache directory
//   ($KDSL_CACHE_DIR..., <cache>/tuning/) when it was made for this kernel, key, device, kdsl
//   build and candidate list (a record that is damaged, another user's or stale is ignored with
//   one warning, and replaced);
// - else it times them: compile(i) for every candidate returns a job that compiles candidate i
//   without running it (the jobs run on up to available_cpus() threads, each compile with an
//   LLVM context of its own); then each candidate runs once to warm up, and in rounds that
//   interleave the candidates (so a burst of load on a shared machine hits them all alike) each
//   is run for at least a millisecond of launches followed by Device::synchronize(); a
//   candidate's time is its best round. The default wins unless another is faster by more than
//   the noise margin (3%). The winner is recorded, atomically, for later launches and processes.
// run(i) launches candidate i on arguments it may overwrite: its own output, or scratch copies
// (the Library's products are pure, so they rerun on their real arguments). After autotune
// returns, the caller launches the choice once more for the real result. Throws what compile
// or run throw; a record that cannot be written is a warning, not an error.
TuneResult autotune(const Device &device, const Tuning &tuning, const std::function<std::function<void()>(int)> &compile,
                    const std::function<void(int)> &run);

// The choice autotune would return without timing anything: the default when KDSL_AUTOTUNE=0,
// else this process's or the recorded winner; nullopt when it would time the candidates (a
// kernel plan then plans them all).
std::optional<int> autotune_choice(const Device &device, const Tuning &tuning);

// KDSL_AUTOTUNE, read at each call: "0" turns tuning off (every tuned kernel takes its default).
bool autotune_enabled();

// The key bucket of a size: the next power of two at or above n (n <= 1: 1).
int64_t tune_bucket(int64_t n);

// What autotune has done in this process.
struct TuneStats {
  int64_t timed = 0;       // candidate sets measured
  int64_t recorded = 0;    // choices read from a record on disk
  int64_t remembered = 0;  // choices this process had made before
  int64_t rejected = 0;    // records ignored (damaged, stale, another user's)
  int64_t defaults = 0;    // choices that fell to the default with tuning off
  // The timed sets' cost: their wall time (compiling the candidates, in parallel, then timing
  // them), and the compile time inside it as cache_stats().compile_ms counts it (summed over
  // the compiling threads, so it can exceed the wall time).
  double wall_ms = 0;
  double compile_ms = 0;
};
TuneStats tune_stats();

// Wall time spent on first-use work (compiling kernels, timing tuned points' candidates)
// between two snapshots: the compiles outside tuning, which run one at a time on the launching
// thread, plus the tuning sets' wall time. Summaries subtract it from a phase's time so that
// rates leave out a cold cache's work, which cache_stats().compile_ms alone cannot do once
// candidates compile in parallel.
double first_use_ms(const CacheStats &before_cache, const TuneStats &before_tune);

namespace detail {
// Forgets this process's choices (not the records), as a new process would start: for tests.
void forget_tuning_choices();
}  // namespace detail

}  // namespace kdsl
