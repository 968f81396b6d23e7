// thread_pool.cpp - chunked parallel_for with spin-then-sleep workers and an inline fast path
#include "runtime/thread_pool.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <fstream>
#include <system_error>

#include <kdsl/error.h>

#include "support/log.h"

namespace kdsl::runtime {
namespace {

// How long an idle thread spins before blocking. It must cover not only the gap between two
// launches but the wait for the slowest chunk of the current one (a worker done early idles
// until the caller finishes its last chunk): a worker that falls asleep there costs a futex
// wake-up (tens of microseconds on a VM) on the next launch, and a decode step makes a few
// hundred launches. 200 us against 10 us raised the 110M decode's share of the read stream
// (bench/RESULTS.md, the engine entries: "thread pool workers spin 0.2 ms"). An idle pool
// still sleeps 0.2 ms after its last launch.
constexpr auto kSpinTime = std::chrono::microseconds(200);

// Set on pool workers for their whole life, and on a caller while it runs chunks: a
// parallel_for seen with it set comes from inside a body and runs inline.
thread_local bool t_inside_body = false;

inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until `done()` or kSpinTime passes; true if done.
template <class F>
bool spin_until(F done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    // Reading the clock costs more than a pause; look at it now and then.
    if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) return false;
    cpu_pause();
  }
}

}  // namespace

struct ThreadPool::Job {
  const std::function<void(int64_t, int64_t)> *body;
  int64_t n;
  int64_t chunk;
  int64_t num_chunks;
  std::atomic<int64_t> next_chunk{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;  // the first exception thrown by a body
};

int available_cpus() {
  int cpus = int(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) cpus = std::max(1, CPU_COUNT(&mask));
  // cgroup v2: "max 100000" or "<quota> <period>" microseconds.
  std::ifstream cpu_max("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (cpu_max >> quota >> period && quota != "max" && period > 0) {
    char *end = nullptr;
    double q = std::strtod(quota.c_str(), &end);
    if (end != quota.c_str() && q > 0) cpus = std::clamp(int(std::ceil(q / period)), 1, cpus);
  }
  return cpus;
}

ThreadPool::ThreadPool(int threads) {
  if (threads < 0 || threads > kMaxPoolThreads)
    throw Error(fmt::format("CPU thread count {}: expected 1 to {} (or 0 for every available CPU)", threads, kMaxPoolThreads));
  if (threads == 0) threads = available_cpus();
  workers_.reserve(size_t(threads - 1));
  for (int i = 1; i < threads; ++i) {
    try {
      workers_.emplace_back([this] { worker_main(); });
    } catch (const std::system_error &e) {
      // A pid or memory limit: the threads already started are good workers; a pool that
      // threw here would destroy its condition variable under them.
      log_warn("the system refused CPU thread {} of {} ({}); running with {}", i + 1, threads, e.what(), i);
      break;
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(wake_mutex_);
    stopping_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto &t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)> &body,
                              int64_t min_chunk) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(min_chunk, 1);
  if (n <= min_chunk || workers_.empty() || t_inside_body) {
    body(0, n);
    return;
  }

  const int64_t target_chunks = 4 * int64_t(size());
  Job job;
  job.body = &body;
  job.n = n;
  job.chunk = std::max(min_chunk, (n + target_chunks - 1) / target_chunks);
  job.num_chunks = (n + job.chunk - 1) / job.chunk;

  std::lock_guard launch(launch_mutex_);
  // Publish the job, then wake. sleepers_ and generation_ are a Dekker pair with the check in
  // wait_for_launch (both seq_cst): either we see the sleeper and notify, or it sees the new
  // generation and does not sleep.
  current_.store(&job, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    // Taking the mutex orders us after a sleeper's predicate check, so the notify is not lost.
    { std::lock_guard lock(wake_mutex_); }
    wake_.notify_all();
  }

  t_inside_body = true;
  run_chunks(job);
  t_inside_body = false;

  // Every chunk is claimed. Withdraw the job, then wait for the workers that joined it; a worker
  // that announces itself after this store finds no job (seq_cst store/load pair with
  // worker_main), so active_ == 0 means nothing can touch `job` any more.
  current_.store(nullptr, std::memory_order_seq_cst);
  if (!spin_until([&] { return active_.load(std::memory_order_seq_cst) == 0; })) {
    for (int a; (a = active_.load(std::memory_order_seq_cst)) != 0;) active_.wait(a);
  }
  if (job.error) std::rethrow_exception(job.error);
}

void ThreadPool::run_chunks(Job &job) {
  for (;;) {
    const int64_t i = job.next_chunk.fetch_add(1, std::memory_order_relaxed);
    if (i >= job.num_chunks || job.failed.load(std::memory_order_relaxed)) return;
    const int64_t begin = i * job.chunk;
    const int64_t end = std::min(job.n, begin + job.chunk);
    try {
      (*job.body)(begin, end);
    } catch (...) {
      std::lock_guard lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
      job.failed.store(true, std::memory_order_relaxed);
      return;
    }
  }
}

void ThreadPool::worker_main() {
  t_inside_body = true;
  uint64_t seen = generation_.load(std::memory_order_acquire);
  while (wait_for_launch(seen)) {
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (Job *job = current_.load(std::memory_order_seq_cst)) run_chunks(*job);
    // The release half publishes this worker's writes (and any error) to the caller.
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) active_.notify_all();
  }
}

bool ThreadPool::wait_for_launch(uint64_t &seen) {
  auto launched = [&] { return generation_.load(std::memory_order_seq_cst) != seen; };
  if (!spin_until(launched)) {
    std::unique_lock lock(wake_mutex_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    wake_.wait(lock, [&] { return launched() || stopping_.load(); });
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  seen = generation_.load(std::memory_order_acquire);
  return !stopping_.load();
}

}  // namespace kdsl::runtime
