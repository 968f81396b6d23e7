// autotune.cpp - kdsl::autotune: the choice remembered, read from its record, or timed (parallel compiles, interleaved best-of rounds) and recorded
#include <kdsl/autotune.h>
#include <kdsl/kernel.h>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <kdsl_version.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "jit_cache/disk_cache.h"
#include "jit_cache/tuning_record.h"
#include "runtime/thread_pool.h"
#include "support/log.h"

namespace kdsl {
namespace {

using Clock = std::chrono::steady_clock;

// Another candidate must beat the default by more than this to replace it: on a shared machine
// two equal configurations differ by a few percent from run to run, and a hand-set default
// that was measured before should not lose to noise.
constexpr double kNoiseMargin = 0.03;
// Each timed sample launches a candidate back to back for at least this long, so a short
// kernel's time is not the clock's and the launch path's jitter.
constexpr double kSampleMicroseconds = 1000;
constexpr int kMaxLaunchesPerSample = 1000;
// Rounds over the candidates: more for quick kernels, fewer where one round already takes long.
constexpr int kMinRounds = 3, kMaxRounds = 7;
constexpr double kRoundsBudgetMicroseconds = 100000;

struct Counters {
  std::atomic<int64_t> timed{0}, recorded{0}, remembered{0}, rejected{0}, defaults{0};
  std::mutex cost_mutex;
  double wall_ms = 0, compile_ms = 0;  // the timed sets' cost (TuneStats says what each is)
};
Counters &counters() {
  static Counters c;
  return c;
}

struct Choices {
  std::mutex mutex;
  std::unordered_map<std::string, int> by_key;
};
Choices &choices() {
  static Choices c;
  return c;
}

std::string memory_key(const Tuning &t, const std::string &device) {
  std::string k = t.kernel;
  for (const std::string *part : {&t.key, &device}) k += '\0', k += *part;
  for (const std::string &c : t.candidates) k += '\1', k += c;
  return k;
}

void check(const Tuning &t) {
  if (t.candidates.empty()) throw Error(fmt::format("kdsl::autotune '{}': no candidate configurations", t.kernel));
  if (t.default_index < 0 || size_t(t.default_index) >= t.candidates.size())
    throw Error(fmt::format("kdsl::autotune '{}': default index {} is not one of its {} candidates", t.kernel, t.default_index, t.candidates.size()));
}

std::optional<int> remembered(const std::string &key) {
  std::lock_guard lock(choices().mutex);
  auto it = choices().by_key.find(key);
  if (it == choices().by_key.end()) return std::nullopt;
  return it->second;
}

void remember(const std::string &key, int choice) {
  std::lock_guard lock(choices().mutex);
  choices().by_key[key] = choice;
}

// The winner's index from a record that was made for exactly this tuning, else nullopt (a bad
// record is said once, here, and will be replaced once the candidates are timed). A stale one,
// which every upgrade of kdsl leaves behind, is said at KDSL_LOG=info only: at the default
// level a line per record would land in the middle of kdsl-run's generated text.
std::optional<int> recorded(const Tuning &t, const std::string &device) {
  std::filesystem::path path = jit_cache::tuning_record_path(jit_cache::DiskCache::default_dir(), t.kernel, t.key, device);
  jit_cache::TuningRecordMismatch mismatch;
  std::optional<jit_cache::TuningRecord> r = jit_cache::read_tuning_record(path, mismatch.problem);
  if (r) mismatch = jit_cache::tuning_record_mismatch(*r, t.kernel, t.key, device, t.candidates, KDSL_VERSION_STRING);
  if (!mismatch.problem.empty()) {
    counters().rejected.fetch_add(1);
    constexpr auto kSaid = "autotune: ignoring the tuning record {} for {} [{}]: {}; timing its candidates again";
    if (mismatch.stale) log_info(kSaid, path.string(), t.kernel, t.key, mismatch.problem);
    else log_warn(kSaid, path.string(), t.kernel, t.key, mismatch.problem);
    return std::nullopt;
  }
  if (!r) return std::nullopt;
  return int(std::find(t.candidates.begin(), t.candidates.end(), r->winner) - t.candidates.begin());
}

// Runs the compile jobs on up to available_cpus() threads; the first failure is rethrown.
void compile_all(const Tuning &t, const std::function<std::function<void()>(int)> &compile) {
  std::vector<std::function<void()>> jobs;
  for (int i = 0; i < int(t.candidates.size()); ++i) jobs.push_back(compile(i));
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      try {
        if (jobs[i]) jobs[i]();
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  int threads = std::min<int>(runtime::available_cpus(), int(jobs.size()));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread &th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
}

double elapsed_us(Clock::time_point start) { return std::chrono::duration<double, std::micro>(Clock::now() - start).count(); }

// Each candidate's best time per launch, in microseconds.
std::vector<double> time_all(const Device &device, const Tuning &t, const std::function<void(int)> &run) {
  const int n = int(t.candidates.size());
  std::vector<int> launches(size_t(n), 1);
  std::vector<double> best(size_t(n), 0);
  double slowest_round = 0;
  for (int i = 0; i < n; ++i) {  // warm-up: first touches of code and data
    auto start = Clock::now();
    run(i);
    device.synchronize();
    double us = std::max(elapsed_us(start), 0.01);
    best[size_t(i)] = us;
    launches[size_t(i)] = std::clamp(int(std::ceil(kSampleMicroseconds / us)), 1, kMaxLaunchesPerSample);
    slowest_round += us * launches[size_t(i)];
  }
  const int rounds = std::clamp(int(kRoundsBudgetMicroseconds / std::max(slowest_round, 1.0)), kMinRounds, kMaxRounds);
  for (int r = 0; r < rounds; ++r)
    for (int i = 0; i < n; ++i) {
      auto start = Clock::now();
      for (int l = 0; l < launches[size_t(i)]; ++l) run(i);
      device.synchronize();
      best[size_t(i)] = std::min(best[size_t(i)], elapsed_us(start) / launches[size_t(i)]);
    }
  return best;
}

int pick(const Tuning &t, const std::vector<double> &us) {
  int fastest = int(std::min_element(us.begin(), us.end()) - us.begin());
  return us[size_t(fastest)] * (1 + kNoiseMargin) < us[size_t(t.default_index)] ? fastest : t.default_index;
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm utc = {};
  gmtime_r(&now, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", utc);
}

}  // namespace

bool autotune_enabled() {
  const char *v = std::getenv("KDSL_AUTOTUNE");
  return !(v && std::string_view(v) == "0");
}

int64_t tune_bucket(int64_t n) {
  int64_t b = 1;
  while (b < n) b <<= 1;
  return b;
}

std::optional<int> autotune_choice(const Device &device, const Tuning &t) {
  check(t);
  if (!autotune_enabled()) return t.default_index;
  const std::string name = device.name();
  const std::string key = memory_key(t, name);
  if (auto c = remembered(key)) return c;
  if (auto c = recorded(t, name)) {
    counters().recorded.fetch_add(1);
    remember(key, *c);
    return c;
  }
  return std::nullopt;
}

TuneResult autotune(const Device &device, const Tuning &t, const std::function<std::function<void()>(int)> &compile,
                    const std::function<void(int)> &run) {
  check(t);
  if (!autotune_enabled()) {
    counters().defaults.fetch_add(1);
    return {t.default_index, TuneSource::Default, {}};
  }
  const std::string name = device.name();
  const std::string key = memory_key(t, name);
  if (auto c = remembered(key)) {
    counters().remembered.fetch_add(1);
    return {*c, TuneSource::Remembered, {}};
  }
  if (auto c = recorded(t, name)) {
    counters().recorded.fetch_add(1);
    remember(key, *c);
    log_info("autotune: {} [{}] on {}: {} (recorded)", t.kernel, t.key, name, t.candidates[size_t(*c)]);
    return {*c, TuneSource::Recorded, {}};
  }

  auto start = Clock::now();
  const double compiled_before = cache_stats().compile_ms;
  compile_all(t, compile);
  double compile_ms = elapsed_us(start) / 1000;
  const double compiled_in_tuning = cache_stats().compile_ms - compiled_before;
  std::vector<double> us = time_all(device, t, run);
  const int choice = pick(t, us);
  counters().timed.fetch_add(1);
  {
    std::lock_guard lock(counters().cost_mutex);
    counters().wall_ms += elapsed_us(start) / 1000;
    counters().compile_ms += compiled_in_tuning;
  }
  remember(key, choice);
  jit_cache::TuningRecord record{t.kernel, t.key, name, KDSL_VERSION_STRING, t.candidates, t.candidates[size_t(choice)], us, utc_now()};
  std::filesystem::path dir = jit_cache::DiskCache::default_dir();
  if (!jit_cache::write_tuning_record(dir, record))
    log_warn("autotune: could not write the tuning record for {} [{}] under {}; later processes will time it again", t.kernel, t.key,
             jit_cache::tuning_folder(dir).string());
  log_info("autotune: {} [{}] on {}: {} {:.1f} us, default {} {:.1f} us ({} candidates compiled in {:.0f} ms, timed in {:.0f} ms)", t.kernel,
           t.key, name, t.candidates[size_t(choice)], us[size_t(choice)], t.candidates[size_t(t.default_index)], us[size_t(t.default_index)],
           t.candidates.size(), compile_ms, elapsed_us(start) / 1000 - compile_ms);
  return {choice, TuneSource::Timed, us};
}

TuneStats tune_stats() {
  Counters &c = counters();
  std::lock_guard lock(c.cost_mutex);
  return {c.timed.load(), c.recorded.load(), c.remembered.load(), c.rejected.load(), c.defaults.load(), c.wall_ms, c.compile_ms};
}

double first_use_ms(const CacheStats &before_cache, const TuneStats &before_tune) {
  const TuneStats tune = tune_stats();
  const double compiles_outside_tuning = (cache_stats().compile_ms - before_cache.compile_ms) - (tune.compile_ms - before_tune.compile_ms);
  return std::max(compiles_outside_tuning, 0.0) + (tune.wall_ms - before_tune.wall_ms);
}

namespace detail {
void forget_tuning_choices() {
  std::lock_guard lock(choices().mutex);
  choices().by_key.clear();
}
}  // namespace detail

}  // namespace kdsl
