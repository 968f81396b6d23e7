// thread_pool.h - the CPU backend's worker threads: parallel_for over a launch grid
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kdsl::runtime {

// A fixed set of workers plus the calling thread. parallel_for splits [0, n) into chunks
// handed out from an atomic counter (about four per thread, so a slow thread does not hold
// up the rest), and returns when every chunk has run.
//
// Small launches never touch the workers: n <= min_chunk, a pool of size 1, or a call made from
// inside a body run `body(0, n)` inline on the caller with no locking or atomics, because a
// launch of a few blocks must cost far less than waking a thread.
//
// Between launches workers spin for a while (0.2 ms, thread_pool.cpp says why) before sleeping, so back-to-back
// launches (a model's layers) find them awake.
//
// Not reentrant: a parallel_for called from inside a body (on any pool thread or on the caller)
// runs inline. Calls from different outside threads are serialised.
// The CPUs this process may run on: its affinity mask, lowered to a cgroup's CPU quota where
// one is set (a container limited to 2 CPUs on a 64-core host sees 64 in its mask).
int available_cpus();

// The most threads a pool takes: past the CPUs there is nothing to gain, and a count read from
// a typo must not exhaust the system's processes.
constexpr int kMaxPoolThreads = 1024;

class ThreadPool {
 public:
  // threads: total threads including the caller, 1..kMaxPoolThreads (else kdsl::Error); 0 means
  // available_cpus(). Where the system refuses a thread (a process or cgroup limit), the pool
  // runs with the threads it got and warns once, rather than failing.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  // Total threads, including the caller.
  int size() const { return int(workers_.size()) + 1; }

  // Calls body(begin, end) over disjoint ranges covering [0, n), each at least min_chunk long
  // except the last. The first exception a body throws is rethrown here once no chunk is
  // running any more; chunks not yet started when it was thrown are skipped.
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)> &body,
                    int64_t min_chunk = 1);

 private:
  struct Job;

  void worker_main();
  // False when the pool is shutting down.
  bool wait_for_launch(uint64_t &seen_generation);
  static void run_chunks(Job &job);

  std::vector<std::thread> workers_;

  // The job being run, or null. Workers announce themselves in active_ before reading it and
  // the caller clears it before waiting for active_ to drain, so once the caller sees
  // active_ == 0 no worker can still touch the job (which lives on the caller's stack).
  std::atomic<Job *> current_{nullptr};
  std::atomic<int> active_{0};

  // Wake-up: a launch bumps generation_; sleepers wait on wake_ under wake_mutex_.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};

  std::mutex launch_mutex_;  // one launch at a time from outside threads
};

}  // namespace kdsl::runtime
