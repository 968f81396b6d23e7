// thread_pool_test.cpp - parallel_for: exact coverage, the inline path, exceptions, rapid launches
#include "runtime/thread_pool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using kdsl::runtime::ThreadPool;

TEST_CASE("runtime: ThreadPool size counts the caller") {
  CHECK(ThreadPool(1).size() == 1);
  CHECK(ThreadPool(3).size() == 3);
  CHECK(ThreadPool(0).size() == kdsl::runtime::available_cpus());
}

TEST_CASE("runtime: parallel_for covers every index exactly once") {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 5, 7, 16, 31, 100, 1000, 4097, 100000}) {
      for (int64_t min_chunk : {1, 3, 64, 5000}) {
        CAPTURE(threads);
        CAPTURE(n);
        CAPTURE(min_chunk);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int64_t> calls{0}, short_chunks{0};
        std::atomic<bool> bad_range{false};
        pool.parallel_for(
            n,
            [&](int64_t begin, int64_t end) {
              if (begin < 0 || end > n || begin >= end) bad_range = true;
              if (end - begin < min_chunk && end != n) ++short_chunks;
              for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
              ++calls;
            },
            min_chunk);
        CHECK_FALSE(bad_range.load());
        CHECK(short_chunks.load() == 0);  // only the last chunk may be shorter than min_chunk
        int64_t wrong = 0;
        for (auto &h : hits) wrong += h.load() != 1;
        CHECK(wrong == 0);
        if (n == 0) CHECK(calls.load() == 0);
        // About four chunks per thread: never more chunks than that, and no tiny chunks.
        if (n > 0) CHECK(calls.load() <= std::max<int64_t>(1, 4 * threads));
      }
    }
  }
}

TEST_CASE("runtime: work is actually spread over the pool") {
  ThreadPool pool(4);
  std::mutex mutex;
  std::set<std::thread::id> ids;
  // Chunks that take a while, so every worker has time to wake up and take some.
  for (int attempt = 0; attempt < 20 && ids.size() < 2; ++attempt) {
    pool.parallel_for(64, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard lock(mutex);
      ids.insert(std::this_thread::get_id());
    });
  }
  CHECK(ids.size() >= 2);
}

TEST_CASE("runtime: small launches run inline on the caller in one call") {
  ThreadPool pool(4);
  const auto caller = std::this_thread::get_id();
  int calls = 0;  // deliberately not atomic: the inline path runs on this thread only
  auto body = [&](int64_t begin, int64_t end) {
    CHECK(std::this_thread::get_id() == caller);
    CHECK(begin == 0);
    CHECK(end == 10);
    ++calls;
  };
  pool.parallel_for(10, body, 10);    // n <= min_chunk
  pool.parallel_for(10, body, 1000);  // n <= min_chunk
  ThreadPool single(1);
  single.parallel_for(10, body);  // nobody else to hand work to
  CHECK(calls == 3);
}

TEST_CASE("runtime: a nested parallel_for runs inline instead of deadlocking") {
  ThreadPool pool(4);
  std::atomic<int64_t> inner_items{0};
  std::atomic<int> inner_on_other_thread{0};
  pool.parallel_for(16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto outer = std::this_thread::get_id();
      pool.parallel_for(100, [&](int64_t b, int64_t e) {
        if (std::this_thread::get_id() != outer) ++inner_on_other_thread;
        inner_items += e - b;
      });
    }
  });
  CHECK(inner_items.load() == 16 * 100);
  CHECK(inner_on_other_thread.load() == 0);
}

TEST_CASE("runtime: an exception in a body reaches the caller after the launch ends") {
  ThreadPool pool(4);
  for (int64_t throw_at : {0, 17, 999}) {
    CAPTURE(throw_at);
    std::atomic<int> running{0};
    auto body = [&](int64_t begin, int64_t end) {
      ++running;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      --running;
      if (begin <= throw_at && throw_at < end) throw std::runtime_error("boom at " + std::to_string(throw_at));
    };
    const std::string expected = "boom at " + std::to_string(throw_at);
    CHECK_THROWS_WITH_AS(pool.parallel_for(1000, body), expected.c_str(), std::runtime_error);
    // Nothing may still be running once the exception is rethrown.
    CHECK(running.load() == 0);
  }
  // Every chunk throwing: one exception comes out, the pool is still usable.
  CHECK_THROWS_AS(pool.parallel_for(100, [](int64_t, int64_t) { throw std::logic_error("all"); }),
                  std::logic_error);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, [&](int64_t b, int64_t e) { sum += e - b; });
  CHECK(sum.load() == 100);
  // The inline path lets exceptions through untouched.
  CHECK_THROWS_AS(pool.parallel_for(1, [](int64_t, int64_t) { throw std::out_of_range("x"); }),
                  std::out_of_range);
}

TEST_CASE("runtime: many back-to-back launches") {
  ThreadPool pool(4);
  std::vector<int64_t> data(256, 0);
  for (int launch = 0; launch < 20000; ++launch) {
    const int64_t n = 1 + launch % 256;
    // Plain (non-atomic) writes to distinct elements: the pool must publish them to the caller.
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) data[size_t(i)] += 1;
    });
  }
  int64_t total = 0;
  for (int64_t v : data) total += v;
  int64_t expected = 0;
  for (int launch = 0; launch < 20000; ++launch) expected += 1 + launch % 256;
  CHECK(total == expected);
  for (size_t i = 1; i < data.size(); ++i) CHECK(data[i] <= data[i - 1]);
}

TEST_CASE("runtime: launches from several outside threads are serialised safely") {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      for (int i = 0; i < 300; ++i) pool.parallel_for(50, [&](int64_t b, int64_t e) { total += e - b; });
    });
  for (auto &c : callers) c.join();
  CHECK(total.load() == 3 * 300 * 50);
}

TEST_CASE("runtime: pools start and stop cleanly, busy or idle") {
  for (int i = 0; i < 50; ++i) {
    ThreadPool pool(4);
    if (i % 2) pool.parallel_for(100, [](int64_t, int64_t) {});
    if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));  // let workers sleep
  }
}
