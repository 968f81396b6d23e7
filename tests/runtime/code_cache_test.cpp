// code_cache_test.cpp - the one memory -> disk -> compile chain: each step in order, a disk entry that does not load recompiled under retry
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>

#include <kdsl/error.h>

#include "runtime/code_cache.h"
#include "tests/scratch_cache.h"

using namespace kdsl;

namespace code_cache_test {

// "Code" is the entry's bytes as text; loading fails for text the test marks unloadable.
struct Text {
  std::string text;
};

jit_cache::CacheKey key_of(const std::string &name) {
  jit_cache::CacheKey key;
  key.kernel_name = name;
  key.ir_hash = jit_cache::hash_text_hex(name);
  key.specialization = "_";
  key.options = "test";
  key.backend = "test";
  key.arch = "test";
  key.kdsl_version = "test";
  key.llvm_version = "test";
  return key;
}

struct Chain {
  int loads = 0, compiles = 0, retries = 0;
  std::string compiled_text = "code v1";
  detail::CodeSource<Text> source() {
    detail::CodeSource<Text> s;
    s.what = "code_cache_test";
    s.load = [this](const jit_cache::CacheEntry &entry) {
      ++loads;
      std::string text(entry.code.begin(), entry.code.end());
      if (text == "unloadable") throw Error("this code does not load");
      return std::make_shared<Text>(Text{text});
    };
    s.compile = [this](bool retry) {
      ++compiles;
      retries += retry;
      detail::FreshCode fresh;
      fresh.entry.symbol = "sym";
      fresh.entry.code.assign(compiled_text.begin(), compiled_text.end());
      fresh.entry.metadata = {{"kernel", "code_cache_test"}};
      return fresh;
    };
    return s;
  }
};

}  // namespace code_cache_test

using namespace code_cache_test;

TEST_CASE("runtime: find_or_compile compiles once, then finds the code in memory, then on disk in a fresh table") {
  test::ScratchCache cache("code_cache_chain");
  jit_cache::CacheKey key = key_of("chain");
  auto now = std::chrono::steady_clock::now();
  Chain chain;
  jit_cache::MemoryCache<Text> memory;
  auto first = detail::find_or_compile(memory, key, key.digest(), chain.source(), now);
  CHECK(first->text == "code v1");
  CHECK(chain.compiles == 1);
  CHECK(chain.loads == 1);
  CHECK(cache.entries() == 1);

  auto again = detail::find_or_compile(memory, key, key.digest(), chain.source(), now);
  CHECK(again == first);  // the same loaded code, from memory
  CHECK(chain.compiles == 1);
  CHECK(chain.loads == 1);

  // Another scope (another GPU context) misses in memory and loads the disk entry.
  auto other = detail::find_or_compile(memory, key, key.digest() + "@other", chain.source(), now);
  CHECK(other != first);
  CHECK(other->text == "code v1");
  CHECK(chain.compiles == 1);
  CHECK(chain.loads == 2);

  // use_disk = false (KDSL_DUMP): compiled afresh although the disk holds it.
  jit_cache::MemoryCache<Text> fresh_table;
  detail::CodeSource<Text> dumping = chain.source();
  dumping.use_disk = false;
  chain.compiled_text = "code v2";
  CHECK(detail::find_or_compile(fresh_table, key, key.digest(), dumping, now)->text == "code v2");
  CHECK(chain.compiles == 2);
  CHECK(chain.retries == 0);
}

TEST_CASE("runtime: find_or_compile discards a disk entry whose code does not load and compiles again, told it is a retry") {
  test::ScratchCache cache("code_cache_retry");
  jit_cache::CacheKey key = key_of("retry");
  auto now = std::chrono::steady_clock::now();
  Chain writer;
  writer.compiled_text = "unloadable";
  jit_cache::DiskCache(jit_cache::DiskCache::default_dir()).store(key, [&] {
    jit_cache::CacheEntry e;
    e.symbol = "sym";
    e.code.assign(writer.compiled_text.begin(), writer.compiled_text.end());
    e.metadata = {{"kernel", "code_cache_test"}};
    return e;
  }());
  REQUIRE(cache.entries() == 1);

  Chain chain;
  jit_cache::MemoryCache<Text> memory;
  auto code = detail::find_or_compile(memory, key, key.digest(), chain.source(), now);
  CHECK(code->text == "code v1");
  CHECK(chain.compiles == 1);
  CHECK(chain.retries == 1);
  CHECK(chain.loads == 2);  // the unloadable entry, then the fresh code
  // The fresh entry replaced the bad one: a new table loads it from disk.
  jit_cache::MemoryCache<Text> fresh_table;
  CHECK(detail::find_or_compile(fresh_table, key, key.digest(), chain.source(), now)->text == "code v1");
  CHECK(chain.compiles == 1);
}
