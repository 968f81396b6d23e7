// cache_folder_test.cpp - pruning the cache folder: bad entries first, then least recently used, never the one kept
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <kdsl/error.h>

#include "jit_cache/cache_folder.h"

using namespace kdsl::jit_cache;
namespace fs = std::filesystem;

TEST_CASE("jit_cache: prune_entries removes bad, then least recently used entries, and never the one kept") {
  fs::path dir = fs::temp_directory_path() / ("kdsl_cache_folder_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "ab");
  auto entry = [&](const std::string &name, int age_seconds, bool bad) {
    fs::path p = dir / "ab" / (name + ".kdslbin");
    std::ofstream(p) << std::string(1000, 'x');
    return EntryFileInfo{p, 1000, std::chrono::system_clock::now() - std::chrono::seconds(age_seconds), bad};
  };
  std::vector<EntryFileInfo> entries = {entry("newest", 1, false), entry("oldest", 300, false), entry("middle", 200, false),
                                        entry("broken", 2, true)};
  CHECK(list_entry_files(dir).size() == 4);

  PruneResult r = prune_entries(entries, 2000, entries[1].path);  // keep the oldest, as if just written
  CHECK(r.removed == 2);
  CHECK(r.bytes_before == 4000);
  CHECK(r.bytes_after == 2000);
  CHECK_FALSE(fs::exists(entries[3].path));  // the bad one went first
  CHECK(fs::exists(entries[1].path));        // kept
  CHECK_FALSE(fs::exists(entries[2].path));  // then the least recently used of the rest
  CHECK(fs::exists(entries[0].path));
  fs::remove_all(dir);
}

TEST_CASE("jit_cache: parse_size reads 500M, 2G, 2GB, 64KiB and bytes, and names what it could not read") {
  CHECK(parse_size("1000", "x") == 1000);
  CHECK(parse_size("64K", "x") == 64 * 1024);
  CHECK(parse_size("64KiB", "x") == 64 * 1024);
  CHECK(parse_size("500M", "x") == 500ull << 20);
  CHECK(parse_size("2G", "x") == 2ull << 30);
  CHECK(parse_size("2gb", "x") == 2ull << 30);
  CHECK(parse_size("1.5G", "x") == (3ull << 30) / 2);
  for (const char *bad : {"", "lots", "-1G", "2X", "G"}) {
    INFO(bad);
    CHECK_THROWS_WITH_AS(parse_size(bad, "--max-size"), doctest::Contains("--max-size '"), kdsl::Error);
  }
}
