// memory_cache_test.cpp - the in-process kernel table: lookups, first insert wins, threads
#include "jit_cache/memory_cache.h"

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using kdsl::jit_cache::MemoryCache;

TEST_CASE("jit_cache: MemoryCache finds what was inserted, and the first insert wins") {
  MemoryCache<std::string> cache;
  CHECK(cache.size() == 0);
  CHECK(cache.find("d1") == nullptr);
  auto first = std::make_shared<std::string>("first");
  CHECK(cache.insert("d1", first) == first);
  auto second = cache.insert("d1", std::make_shared<std::string>("second"));
  CHECK(second == first);
  CHECK(*cache.find("d1") == "first");
  CHECK(cache.insert("d2", std::make_shared<std::string>("other"))->compare("other") == 0);
  CHECK(cache.size() == 2);
}

TEST_CASE("jit_cache: MemoryCache racing inserts all agree on one value") {
  MemoryCache<int> cache;
  constexpr int kThreads = 8, kKeys = 200;
  std::vector<std::vector<std::shared_ptr<int>>> seen(kThreads);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int k = 0; k < kKeys; ++k) {
        const std::string digest = "digest" + std::to_string(k);
        auto found = cache.find(digest);
        seen[t].push_back(found ? found : cache.insert(digest, std::make_shared<int>(t)));
      }
    });
  }
  go.store(true);
  for (auto &t : threads) t.join();
  CHECK(cache.size() == kKeys);
  for (int k = 0; k < kKeys; ++k) {
    auto winner = cache.find("digest" + std::to_string(k));
    REQUIRE(winner != nullptr);
    for (int t = 0; t < kThreads; ++t) CHECK(seen[t][k] == winner);
  }
}
