// kdsl_cache_test.cpp - kdsl-cache lists, verifies, prunes (least recently used first) and clears a kernel cache
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "jit_cache/cache_folder.h"
#include "jit_cache/disk_cache.h"
#include "tests/tools/tool_process.h"

using kdsl::jit_cache::CacheEntry;
using kdsl::jit_cache::CacheKey;
using kdsl::jit_cache::DiskCache;
using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;
namespace fs = std::filesystem;

namespace {

const std::string kCache = std::string(KDSL_TOOLS_DIR) + "/kdsl-cache";

CacheKey key_named(const std::string &name) {
  return CacheKey{name, kdsl::jit_cache::hash_text_hex(name), "16,16", "num_warps=4", "cpu", "znver4", "+avx2", "0.1.0", "19.1.7"};
}

CacheEntry entry_of(size_t code_bytes) {
  CacheEntry e;
  e.symbol = "kdsl_test";
  e.code.assign(code_bytes, 0x5a);
  e.metadata = {{"kernel", "test"}};
  return e;
}

// An empty cache folder of this test's own, private as the cache requires.
fs::path fresh_cache_dir(const std::string &name) {
  fs::path dir = kdsl::test::scratch_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all);
  return dir;
}

ToolRun cache_tool(const fs::path &dir, std::vector<std::string> args) {
  args.insert(args.end(), {"--cache-dir", dir.string()});
  return run_tool_process(kCache, args);
}

// Sets a file's access time (which the cache sets at each load) to `seconds` since the epoch.
void set_last_use(const fs::path &p, time_t seconds) {
  const struct timespec times[2] = {{seconds, 0}, {0, UTIME_OMIT}};
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("kdsl-cache: list, stats and verify report every entry and name the bad ones") {
  fs::path dir = fresh_cache_dir("kdsl_cache_tool");
  DiskCache cache(dir);
  for (const char *name : {"alpha", "beta", "gamma"}) cache.store(key_named(name), entry_of(4000));
  // A flipped byte: the checksum no longer matches.
  fs::path bad = cache.entry_path(key_named("beta"));
  {
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  ToolRun list = cache_tool(dir, {"list"});
  CAPTURE(list.err);
  REQUIRE(list.status == 0);
  CHECK(list.out.find("alpha") != std::string::npos);
  CHECK(list.out.find("gamma") != std::string::npos);
  CHECK(list.out.find("checksum mismatch") != std::string::npos);
  ToolRun stats = cache_tool(dir, {"stats"});
  CHECK(stats.out.find("3 entries") != std::string::npos);
  CHECK(stats.out.find("(1 bad)") != std::string::npos);

  ToolRun verify = cache_tool(dir, {"verify"});
  CHECK(verify.status == 1);
  CHECK(verify.out.find(bad.string() + ": checksum mismatch") != std::string::npos);
  CHECK(fs::exists(bad));
  ToolRun repair = cache_tool(dir, {"verify", "--remove"});
  CHECK(repair.status == 0);
  CHECK_FALSE(fs::exists(bad));
  CHECK(cache_tool(dir, {"verify"}).status == 0);
  CHECK(cache.load(key_named("alpha")).has_value());
}

TEST_CASE("kdsl-cache: prune removes the least recently used entries first; clear removes all") {
  fs::path dir = fresh_cache_dir("kdsl_cache_prune");
  DiskCache cache(dir);
  std::vector<std::string> names = {"old", "older", "recent"};
  for (const std::string &n : names) cache.store(key_named(n), entry_of(20000));
  set_last_use(cache.entry_path(key_named("older")), 1000000000);
  set_last_use(cache.entry_path(key_named("old")), 1100000000);
  set_last_use(cache.entry_path(key_named("recent")), 1200000000);
  REQUIRE(cache.load(key_named("old")).has_value());  // a load makes "old" the most recent
  ToolRun prune = cache_tool(dir, {"prune", "--max-size", "45K"});
  CAPTURE(prune.err);
  REQUIRE(prune.status == 0);
  CHECK(prune.out.find("removed 1 entries") != std::string::npos);
  CHECK_FALSE(fs::exists(cache.entry_path(key_named("older"))));
  CHECK(fs::exists(cache.entry_path(key_named("old"))));
  CHECK(fs::exists(cache.entry_path(key_named("recent"))));
  kdsl::test::expect_user_error(cache_tool(dir, {"prune", "--max-size", "lots"}), "kdsl-cache", "--max-size 'lots'");

  ToolRun clear = cache_tool(dir, {"clear"});
  CHECK(clear.status == 0);
  CHECK(clear.out.find("removed 2 of 2 entries") != std::string::npos);
  CHECK_FALSE(cache.load(key_named("recent")).has_value());
  kdsl::test::expect_user_error(cache_tool(dir / "missing", {"list"}), "kdsl-cache", "no kernel cache there");
}

TEST_CASE("kdsl-cache: KDSL_CACHE_MAX_SIZE keeps the folder under its cap as kernels are stored") {
  fs::path dir = fresh_cache_dir("kdsl_cache_capped");
  const std::vector<std::string> args = {"-m", kdsl::test::tiny_model_file(), "-p", "a", "-n", "2", "--temp", "0", "--threads", "1"};
  ToolRun run = run_tool_process(kdsl::test::kdsl_run_path, args, 120,
                                 {"KDSL_CACHE_DIR=" + dir.string(), "KDSL_CACHE_MAX_SIZE=60K", "KDSL_LOG=info"});
  CAPTURE(run.err);
  REQUIRE(run.status == 0);
  CHECK(run.err.find("under KDSL_CACHE_MAX_SIZE") != std::string::npos);
  uint64_t total = 0, largest = 0;
  for (const auto &f : kdsl::jit_cache::list_entry_files(dir)) total += f.bytes, largest = std::max<uint64_t>(largest, f.bytes);
  CHECK(total > 0);
  CHECK(total <= 60 * 1024 + largest);  // the entry just stored is kept even when it alone is over

  ToolRun bad = run_tool_process(kdsl::test::kdsl_run_path, args, 120, {"KDSL_CACHE_DIR=" + dir.string(), "KDSL_CACHE_MAX_SIZE=lots"});
  CAPTURE(bad.err);
  CHECK(bad.status == 0);
  CHECK(bad.err.find("KDSL_CACHE_MAX_SIZE 'lots': expected a size such as 500M or 2G; the cache is not capped") != std::string::npos);
}
