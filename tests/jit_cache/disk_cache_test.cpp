// disk_cache_test.cpp - the on-disk kernel cache: round trips, corrupt files, races, locations
#include "tests/jit_cache/disk_cache_test_util.h"

using namespace disk_cache_test;

TEST_CASE("jit_cache: a stored entry loads back identical") {
  TempDir tmp;
  DiskCache cache(tmp.path());
  CHECK(cache.dir() == tmp.path());
  const CacheKey key = key_named("matmul");
  CHECK_FALSE(cache.load(key).has_value());  // a miss, quietly

  const CacheEntry entry = sample_entry();
  cache.store(key, entry);
  const fs::path path = cache.entry_path(key);
  CHECK(path.parent_path().parent_path() == tmp.path());
  CHECK(path.filename() == key.digest() + ".kdslbin");
  CHECK(fs::exists(path));
  std::optional<CacheEntry> loaded = cache.load(key);
  REQUIRE(loaded.has_value());
  CHECK(*loaded == entry);
  CHECK(files_under(tmp.path()) == std::vector<fs::path>{path});

  // Another instance over the same directory (another process, in effect) sees it too.
  CHECK(DiskCache(tmp.path()).load(key) == entry);
  // A different key is a different file.
  CHECK_FALSE(cache.load(key_named("softmax")).has_value());
}

TEST_CASE("jit_cache: empty, large and overwritten entries round-trip") {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const CacheKey key = key_named("k");

  CacheEntry empty;
  cache.store(key, empty);
  CHECK(cache.load(key) == empty);

  const CacheEntry big = sample_entry(3 << 20);
  cache.store(key, big);
  CHECK(cache.load(key) == big);

  const CacheEntry small = sample_entry(5);
  cache.store(key, small);
  CHECK(cache.load(key) == small);
  CHECK(files_under(tmp.path()).size() == 1);
}

TEST_CASE("jit_cache: any flipped byte is detected, reported and removed") {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const CacheKey key = key_named("flip");
  cache.store(key, sample_entry(64));
  const std::vector<uint8_t> good = read_file(cache.entry_path(key));
  const Layout l = layout_of(good);
  REQUIRE(l.checksum + 8 == l.size);

  auto flipped = [&](size_t at) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x5a;
    return bad;
  };
  SUBCASE("one byte in each region, with the reason") {
    check_rejected(cache, key, flipped(0), "bad magic");
    check_rejected(cache, key, flipped(8), "unknown format version");
    check_rejected(cache, key, flipped(l.key + 8 + 3), "checksum mismatch");       // key JSON
    check_rejected(cache, key, flipped(l.key + 7), "runs past the end");           // key length
    check_rejected(cache, key, flipped(l.metadata + 8 + 1), "checksum mismatch");  // metadata
    check_rejected(cache, key, flipped(l.symbol + 8), "checksum mismatch");        // symbol
    check_rejected(cache, key, flipped(l.code + 8 + 10), "checksum mismatch");     // code
    check_rejected(cache, key, flipped(l.checksum + 2), "checksum mismatch");      // checksum
  }
  SUBCASE("every byte of the file") {
    for (size_t at = 0; at < good.size(); ++at) {
      CAPTURE(at);
      check_rejected(cache, key, flipped(at), "discarding");
    }
  }
  // After all that, the cache still works.
  cache.store(key, sample_entry(64));
  CHECK(cache.load(key) == sample_entry(64));
}

TEST_CASE("jit_cache: truncated and over-long files are detected and removed") {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const CacheKey key = key_named("truncate");
  cache.store(key, sample_entry(40));
  const std::vector<uint8_t> good = read_file(cache.entry_path(key));
  const Layout l = layout_of(good);

  auto prefix = [&](size_t n) { return std::vector<uint8_t>(good.begin(), good.begin() + long(n)); };
  check_rejected(cache, key, prefix(0), "empty file");
  check_rejected(cache, key, prefix(5), "inside the magic");
  check_rejected(cache, key, prefix(10), "inside the header");
  check_rejected(cache, key, prefix(l.key + 4), "inside the key length");
  check_rejected(cache, key, prefix(l.key + 20), "key length");
  check_rejected(cache, key, prefix(l.code + 8 + 3), "code length");
  check_rejected(cache, key, prefix(l.checksum + 4), "inside the checksum");
  for (size_t n = 0; n < good.size(); ++n) {
    CAPTURE(n);
    check_rejected(cache, key, prefix(n), "discarding");
  }
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  check_rejected(cache, key, longer, "1 unexpected bytes after the checksum");
}

TEST_CASE("jit_cache: garbage and hostile files never load and never crash") {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const CacheKey key = key_named("garbage");
  std::mt19937 rng(1234);
  for (size_t size : {1, 7, 12, 13, 100, 4096, 100000}) {
    CAPTURE(size);
    std::vector<uint8_t> bytes(size);
    for (auto &b : bytes) b = uint8_t(rng());
    check_rejected(cache, key, bytes, "bad magic");
  }

  // Right header, lengths that point far past the end (including ones that wrap a size_t).
  const std::string json = key.to_json().dump();
  const std::vector<uint8_t> base = build_file(json, "{}", "s", "code");
  const uint64_t one_past_end = base.size() - 20 + 1;
  for (uint64_t length : {uint64_t(1) << 40, ~uint64_t(0), ~uint64_t(0) - 11, one_past_end}) {
    CAPTURE(length);
    std::vector<uint8_t> bytes = base;
    for (int i = 0; i < 8; ++i) bytes[12 + i] = uint8_t(length >> (8 * i));
    check_rejected(cache, key, bytes, "key length");
  }

  // Files that pass the checksum but are still wrong.
  check_rejected(cache, key, build_file(json, "{}", "s", "c", 2), "unknown format version 2");
  check_rejected(cache, key, build_file("{not json", "{}", "s", "c"), "key JSON does not parse");
  check_rejected(cache, key, build_file("{\"kernel_name\":\"garbage\"}", "{}", "s", "c"),
                 "field 'ir_hash' is missing");
  check_rejected(cache, key, build_file(json, "[1,", "s", "c"), "metadata JSON does not parse");

  // And the hand-built format really is the format: a correct one loads.
  const fs::path path = cache.entry_path(key);
  write_file(path, build_file(json, "{\"a\":1}", "sym", "xyz"));
  std::optional<CacheEntry> loaded = cache.load(key);
  REQUIRE(loaded.has_value());
  CHECK(loaded->symbol == "sym");
  CHECK(loaded->code == std::vector<uint8_t>{'x', 'y', 'z'});
  CHECK(loaded->metadata == nlohmann::json{{"a", 1}});
}

TEST_CASE("jit_cache: an entry holding a different key is not loaded") {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const CacheKey stored = key_named("add");
  CacheKey other = stored;
  other.arch = "sapphirerapids";  // e.g. a digest collision: same file name, different key
  cache.store(stored, sample_entry());
  fs::create_directories(cache.entry_path(other).parent_path());
  fs::copy_file(cache.entry_path(stored), cache.entry_path(other));

  StderrCapture capture;
  CHECK_FALSE(cache.load(other).has_value());
  const std::string log = capture.text();
  if (warnings_on()) CHECK(log.find("not the requested 'add'") != std::string::npos);
  CHECK_FALSE(fs::exists(cache.entry_path(other)));
  CHECK(cache.load(stored) == sample_entry());
}

TEST_CASE("jit_cache: an unwritable cache directory warns and does not throw") {
  TempDir tmp;
  const CacheKey key = key_named("k");
  SUBCASE("the cache path runs through a regular file") {
    write_file(tmp.path() / "not-a-dir", {1, 2, 3});
    DiskCache cache(tmp.path() / "not-a-dir" / "cache");
    StderrCapture capture;
    CHECK_NOTHROW(cache.store(key, sample_entry()));
    CHECK_FALSE(cache.load(key).has_value());
    const std::string log = capture.text();
    if (warnings_on()) {
      CHECK(log.find("cannot create directory") != std::string::npos);
      CHECK(log.find((tmp.path() / "not-a-dir").string()) != std::string::npos);
      CHECK(log.find("Not a directory") != std::string::npos);
    }
  }
  SUBCASE("a read-only directory") {
    if (::geteuid() == 0) return;  // root writes anyway
    const fs::path dir = tmp.path() / "ro";
    DiskCache cache(dir);
    fs::create_directories(cache.entry_path(key).parent_path());
    fs::permissions(cache.entry_path(key).parent_path(), fs::perms::owner_read | fs::perms::owner_exec);
    StderrCapture capture;
    CHECK_NOTHROW(cache.store(key, sample_entry()));
    const std::string log = capture.text();
    if (warnings_on()) CHECK(log.find("Permission denied") != std::string::npos);
    fs::permissions(cache.entry_path(key).parent_path(), fs::perms::owner_all);
    CHECK(files_under(dir).empty());
  }
}

TEST_CASE("jit_cache: metadata that cannot be serialized is skipped with a warning") {
  TempDir tmp;
  DiskCache cache(tmp.path());
  CacheEntry entry = sample_entry();
  entry.metadata["name"] = std::string("\xff\xfe not utf-8");
  StderrCapture capture;
  CHECK_NOTHROW(cache.store(key_named("k"), entry));
  if (warnings_on()) CHECK(capture.text().find("cannot be written as JSON") != std::string::npos);
  CHECK(files_under(tmp.path()).empty());
}

TEST_CASE("jit_cache: processes storing and loading one key at once never see a torn entry") {
  TempDir tmp;
  const CacheKey key = key_named("shared");
  constexpr int kWriters = 2, kReaders = 2, kStores = 150, kLoads = 1500;

  // Each store is internally consistent (metadata says who wrote it and how long the code is),
  // so a reader can tell a complete entry from a mix of two.
  auto entry_for = [](int writer, int iteration) {
    CacheEntry e;
    const size_t size = 1000 + size_t(iteration * 997 + writer * 4111) % 60000;
    e.symbol = "kernel_w" + std::to_string(writer);
    e.code.assign(size, uint8_t(writer * 31 + iteration));
    e.metadata = {{"writer", writer}, {"iteration", iteration}, {"size", size}};
    return e;
  };
  auto valid = [&](const CacheEntry &e) {
    if (!e.metadata.is_object() || !e.metadata.contains("writer")) return false;
    const int w = e.metadata["writer"], i = e.metadata["iteration"];
    return e == entry_for(w, i);
  };

  std::vector<pid_t> children;
  std::vector<fs::path> logs;
  for (int c = 0; c < kWriters + kReaders; ++c) {
    logs.push_back(tmp.path() / ("child" + std::to_string(c) + ".log"));
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: no doctest here; report through the exit status and the stderr log.
      const int log_fd = ::open(logs.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(log_fd, 2);
      DiskCache cache(tmp.path() / "cache");
      int bad = 0;
      if (c < kWriters) {
        for (int i = 0; i < kStores; ++i) cache.store(key, entry_for(c, i));
      } else {
        // Keep loading until some loads have hit, so the readers do test complete entries.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        int hits = 0;
        for (int i = 0; (i < kLoads || hits < 20) && std::chrono::steady_clock::now() < deadline; ++i) {
          std::optional<CacheEntry> e = cache.load(key);
          if (e) ++hits;
          if (e && !valid(*e)) ++bad;
        }
        if (hits == 0) ::_exit(2);
      }
      ::_exit(bad == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  // No load saw a bad file (it would have been reported and hidden as a miss) and no store failed.
  for (const fs::path &log : logs) {
    CAPTURE(log);
    std::ifstream in(log);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CHECK(text.find("[kdsl warn]") == std::string::npos);
  }
  DiskCache cache(tmp.path() / "cache");
  std::optional<CacheEntry> last = cache.load(key);
  REQUIRE(last.has_value());
  CHECK(valid(*last));
  CHECK(files_under(tmp.path() / "cache") == std::vector<fs::path>{cache.entry_path(key)});
}

TEST_CASE("jit_cache: default_dir honours KDSL_CACHE_DIR, then XDG_CACHE_HOME, then HOME") {
  SavedEnv saved{"KDSL_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "TMPDIR"};
  TempDir tmp;  // the fallback below makes its directory there, not in the real /tmp
  ::setenv("TMPDIR", tmp.path().c_str(), 1);

  ::setenv("KDSL_CACHE_DIR", "/srv/kdsl-cache", 1);
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  ::setenv("HOME", "/home/u", 1);
  CHECK(DiskCache::default_dir() == fs::path("/srv/kdsl-cache"));
  ::unsetenv("KDSL_CACHE_DIR");
  CHECK(DiskCache::default_dir() == fs::path("/xdg/kdsl"));
  ::setenv("KDSL_CACHE_DIR", "", 1);  // empty counts as unset
  CHECK(DiskCache::default_dir() == fs::path("/xdg/kdsl"));
  ::setenv("XDG_CACHE_HOME", "relative/dir", 1);  // the XDG spec says to ignore these
  CHECK(DiskCache::default_dir() == fs::path("/home/u/.cache/kdsl"));
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(DiskCache::default_dir() == fs::path("/home/u/.cache/kdsl"));
  ::unsetenv("HOME");
  CHECK(DiskCache::default_dir() == tmp.path() / fmt::format("kdsl-cache-{}", ::geteuid()));
}

// --- hostile caches (issue 17) ---------------------------------------------------------
