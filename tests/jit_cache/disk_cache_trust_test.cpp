// disk_cache_trust_test.cpp - the disk cache trusts nothing it did not write: FIFOs, huge files, other users' folders and entries, links, stale temporaries
#include "tests/jit_cache/disk_cache_test_util.h"

using namespace disk_cache_test;

TEST_CASE("jit_cache: an entry that is a FIFO is refused without blocking") {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const CacheKey key = key_named("fifo");
  const fs::path path = cache.entry_path(key);
  fs::create_directories(path.parent_path());
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  // In a child under an alarm: opening a FIFO for reading blocks until a writer comes.
  const ChildResult r = in_child(tmp.path() / "child.log", [&] { return cache.load(key).has_value() ? 1 : 0; }, 10);
  INFO("child log: ", r.log);
  CHECK(r.exited);  // not killed by the alarm
  CHECK(r.code == 0);
  if (warnings_on()) {
    CHECK(r.log.find(path.string()) != std::string::npos);
    CHECK(r.log.find("not a regular file") != std::string::npos);
  }
  // Storing the kernel replaces the FIFO with a real entry.
  cache.store(key, sample_entry());
  CHECK(fs::is_regular_file(fs::symlink_status(path)));
  CHECK(cache.load(key) == sample_entry());
}

TEST_CASE("jit_cache: a huge entry is refused from its header, without reading it") {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const CacheKey key = key_named("huge");
  const fs::path path = cache.entry_path(key);
  fs::create_directories(path.parent_path());

  // Sparse files: no disk space, but reading one fills memory with its zeros.
  auto make_sparse = [&](const std::vector<uint8_t> &head, uint64_t size) {
    write_file(path, head);
    fs::resize_file(path, size);
  };
  struct Case {
    const char *what;
    std::vector<uint8_t> head;
    uint64_t size;
    const char *reason;
  };
  const std::vector<uint8_t> header = {'K', 'D', 'S', 'L', 'B', 'I', 'N', '\0', 1, 0, 0, 0};
  const uint64_t max = kdsl::jit_cache::kMaxEntryBytes;
  const Case cases[] = {
      {"just under the limit, all zeros: bad magic", {}, max - (1 << 20), "bad magic"},
      {"a good header, then more than any entry kdsl writes", header, max + 1, "larger than any entry kdsl writes"},
      {"4 GiB, as in the report", header, uint64_t(4) << 30, "larger than any entry kdsl writes"},
  };
  for (const Case &c : cases) {
    CAPTURE(std::string(c.what));
    make_sparse(c.head, c.size);
    // In a child, so its peak memory is its own: 0 when refused within 16 MiB of growth.
    const ChildResult r = in_child(tmp.path() / "child.log", [&] {
      const bool measured = reset_peak_rss();
      const long before = peak_rss_kib();
      if (cache.load(key).has_value()) return 1;
      if (!measured || before < 0) return 3;
      return peak_rss_kib() - before < 16 * 1024 ? 0 : 2;
    });
    INFO("child log: ", r.log);
    CHECK(r.exited);
    if (r.code == 3) MESSAGE("peak memory cannot be reset here; only the refusal is checked");
    CHECK((r.code == 0 || r.code == 3));
    if (warnings_on()) CHECK(r.log.find(c.reason) != std::string::npos);
    CHECK_FALSE(fs::exists(path));  // a regular file of ours: removed
  }
}

TEST_CASE("jit_cache: a cache directory others can write, or a link, is refused once") {
  TempDir tmp;
  const CacheKey key = key_named("refused");
  const fs::path dir = tmp.path() / "cache";
  DiskCache(dir).store(key, sample_entry());  // a good entry, then the directory turns hostile
  REQUIRE(DiskCache(dir).load(key) == sample_entry());

  auto check_refused = [&](const fs::path &cache_dir, const std::string &reason) {
    DiskCache cache(cache_dir);
    StderrCapture capture;
    CHECK_FALSE(cache.load(key).has_value());
    CHECK_FALSE(cache.load(key).has_value());
    cache.store(key_named("other"), sample_entry());
    CHECK_FALSE(cache.load(key_named("other")).has_value());
    const std::string log = capture.text();
    INFO("log: ", log);
    if (warnings_on()) {
      CHECK(count_of(log, "[kdsl warn]") == 1);  // once per directory and process, not per kernel
      CHECK(log.find(cache_dir.string()) != std::string::npos);
      CHECK(log.find(reason) != std::string::npos);
      CHECK(log.find("compiled in memory") != std::string::npos);
    }
  };
  SUBCASE("writable by others") {
    fs::permissions(dir, fs::perms::all);  // 0777
    check_refused(dir, "writable by others");
    CHECK_FALSE(fs::exists(DiskCache(dir).entry_path(key_named("other"))));
  }
  SUBCASE("writable by its group") {
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_all);  // 0770
    check_refused(dir, "writable by its group");
  }
  SUBCASE("a symbolic link to a good directory") {
    const fs::path link = tmp.path() / "link";
    fs::create_directory_symlink(dir, link);
    check_refused(link, "symbolic link");
    CHECK_FALSE(DiskCache(link.string() + "/").load(key).has_value());  // a trailing slash would follow it
    CHECK_FALSE(DiskCache(link.string() + "//").load(key).has_value());
    CHECK(DiskCache(dir).load(key) == sample_entry());  // the directory itself is fine
  }
  SUBCASE("owned by another user") {
    if (!can_chown_to_other()) return;
    if (!give_to_other(dir)) return;
    check_refused(dir, fmt::format("owned by uid {}", kOtherUid));
  }
  SUBCASE("a shard directory others can write") {
    const fs::path shard = DiskCache(dir).entry_path(key).parent_path();
    fs::permissions(shard, fs::perms::all);
    DiskCache cache(dir);
    StderrCapture capture;
    CHECK_FALSE(cache.load(key).has_value());
    CHECK_FALSE(cache.load(key).has_value());
    const std::string log = capture.text();
    if (warnings_on()) {
      CHECK(count_of(log, "[kdsl warn]") == 1);
      CHECK(log.find(shard.string()) != std::string::npos);
    }
  }
}

TEST_CASE("jit_cache: entries that are links, another user's, or writable by others never load") {
  TempDir tmp;
  const CacheKey key = key_named("entry");
  DiskCache cache(tmp.path() / "cache");
  cache.store(key, sample_entry());
  const fs::path path = cache.entry_path(key);
  const std::vector<uint8_t> good = read_file(path);

  auto load_logged = [&](std::string &log) {
    StderrCapture capture;
    std::optional<CacheEntry> loaded = cache.load(key);
    log = capture.text();
    return loaded;
  };
  std::string log;
  SUBCASE("a symbolic link to a good entry") {
    const fs::path elsewhere = tmp.path() / "elsewhere.kdslbin";
    write_file(elsewhere, good);
    fs::remove(path);
    fs::create_symlink(elsewhere, path);
    CHECK_FALSE(load_logged(log).has_value());
    if (warnings_on()) CHECK(log.find("symbolic link") != std::string::npos);
    CHECK(read_file(elsewhere) == good);  // the target is never touched
    // A store replaces the link itself, not what it points to.
    cache.store(key, sample_entry(10));
    CHECK(fs::is_regular_file(fs::symlink_status(path)));
    CHECK(read_file(elsewhere) == good);
    CHECK(cache.load(key) == sample_entry(10));
  }
  SUBCASE("a shard directory that is a symbolic link") {
    const fs::path shard = path.parent_path();
    const fs::path real = tmp.path() / "real-shard";
    fs::rename(shard, real);
    fs::create_directory_symlink(real, shard);
    CHECK_FALSE(load_logged(log).has_value());
    if (warnings_on()) CHECK(log.find("symbolic link") != std::string::npos);
    CHECK(read_file(real / path.filename()) == good);
  }
  SUBCASE("writable by others: discarded") {
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_write);
    CHECK_FALSE(load_logged(log).has_value());
    if (warnings_on()) CHECK(log.find("writable by others") != std::string::npos);
    CHECK_FALSE(fs::exists(path));
  }
  SUBCASE("owned by another user: left alone") {
    if (!can_chown_to_other()) return;
    if (!give_to_other(path)) return;
    CHECK_FALSE(load_logged(log).has_value());
    if (warnings_on()) CHECK(log.find(fmt::format("owned by uid {}", kOtherUid)) != std::string::npos);
    CHECK(fs::exists(path));
  }
}

TEST_CASE("jit_cache: the cache creates its directories 0700 and its entries 0600") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "a" / "b";
  DiskCache cache(dir);
  const CacheKey key = key_named("modes");
  cache.store(key, sample_entry());
  const fs::path path = cache.entry_path(key);
  CHECK(mode_of(tmp.path() / "a") == "0700");
  CHECK(mode_of(dir) == "0700");
  CHECK(mode_of(path.parent_path()) == "0700");
  CHECK(mode_of(path) == "0600");
  CHECK(cache.load(key) == sample_entry());
}

TEST_CASE("jit_cache: without a home, the /tmp fallback is never another user's directory") {
  SavedEnv saved{"KDSL_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "TMPDIR"};
  ::unsetenv("KDSL_CACHE_DIR");
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("HOME");
  const std::string name = fmt::format("kdsl-cache-{}", ::geteuid());

  // The chosen directory: a private one of ours under `base`.
  auto check_private = [&](const fs::path &chosen, const fs::path &base) {
    CHECK(chosen.parent_path() == base);
    struct stat st;
    REQUIRE(::lstat(chosen.c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK(st.st_uid == ::geteuid());
    CHECK((st.st_mode & 077) == 0);
  };
  SUBCASE("nothing there yet: the usual name, created private") {
    TempDir tmp;
    ::setenv("TMPDIR", tmp.path().c_str(), 1);
    const fs::path chosen = DiskCache::default_dir();
    CHECK(chosen == tmp.path() / name);
    check_private(chosen, tmp.path());
  }
  SUBCASE("the usual name is writable by others: a fresh private directory, reused later") {
    TempDir tmp;
    ::setenv("TMPDIR", tmp.path().c_str(), 1);
    const fs::path planted = tmp.path() / name;
    fs::create_directory(planted);
    fs::permissions(planted, fs::perms::all);
    StderrCapture capture;
    const fs::path chosen = DiskCache::default_dir();
    const std::string log = capture.text();
    CHECK(chosen != planted);
    check_private(chosen, tmp.path());
    CHECK(DiskCache::default_dir() == chosen);
    if (warnings_on()) {
      CHECK(count_of(log, "[kdsl warn]") == 1);
      CHECK(log.find(planted.string()) != std::string::npos);
      CHECK(log.find(chosen.string()) != std::string::npos);
    }
  }
  SUBCASE("an earlier run's private directory is found again") {
    TempDir tmp;
    ::setenv("TMPDIR", tmp.path().c_str(), 1);
    const fs::path planted = tmp.path() / name;
    fs::create_directory_symlink(tmp.path(), planted);  // a link: refused
    const fs::path earlier = tmp.path() / (name + "-Ab3dEf");
    fs::create_directory(earlier);
    fs::permissions(earlier, fs::perms::owner_all);
    const fs::path decoy = tmp.path() / (name + "-000000");  // sorts first, but not private: skipped
    fs::create_directory(decoy);
    fs::permissions(decoy, fs::perms::all);
    StderrCapture capture;
    CHECK(DiskCache::default_dir() == earlier);
  }
  SUBCASE("the usual name belongs to another user") {
    if (!can_chown_to_other()) return;
    TempDir tmp;
    ::setenv("TMPDIR", tmp.path().c_str(), 1);
    const fs::path planted = tmp.path() / name;
    // The attacker's entry, with a valid checksum, for the kernel the victim is about to load.
    const CacheKey key = key_named("victim");
    DiskCache(planted).store(key, sample_entry());
    REQUIRE(fs::exists(DiskCache(planted).entry_path(key)));
    for (const fs::path &p : {planted, DiskCache(planted).entry_path(key).parent_path(), DiskCache(planted).entry_path(key)})
      if (!give_to_other(p)) return;
    StderrCapture capture;
    const fs::path chosen = DiskCache::default_dir();
    CHECK(chosen != planted);
    check_private(chosen, tmp.path());
    CHECK_FALSE(DiskCache(chosen).load(key).has_value());
  }
}

TEST_CASE("jit_cache: opening the cache sweeps temporary files of writers that died") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  const CacheKey key = key_named("sweep");
  const std::string digest = key.digest();
  const fs::path shard = dir / digest.substr(0, 2);
  fs::create_directories(shard);
  fs::permissions(dir, fs::perms::owner_all);
  fs::permissions(shard, fs::perms::owner_all);

  // A pid that is certainly gone: a child that has exited and been reaped.
  const pid_t dead = ::fork();
  REQUIRE(dead >= 0);
  if (dead == 0) ::_exit(0);
  REQUIRE(::waitpid(dead, nullptr, 0) == dead);
  REQUIRE(::kill(dead, 0) != 0);

  const auto old = fs::file_time_type::clock::now() - std::chrono::minutes(5);
  auto temp = [&](pid_t pid, bool is_old, const char *rand = "0123456789abcdef0") {
    const fs::path p = shard / fmt::format(".{}.{}.{}.tmp", digest, pid, rand);
    write_file(p, {1, 2, 3});
    if (is_old) fs::last_write_time(p, old);
    return p;
  };
  const fs::path stale = temp(dead, true);
  const fs::path fresh_dead = temp(dead, false, "1");          // its writer may still be renaming
  const fs::path old_live = temp(::getppid(), true, "2");      // a live process's, however old
  const fs::path other = shard / "notes.txt";                  // not a temporary file
  write_file(other, {4});
  fs::last_write_time(other, old);
  const fs::path other_shard = dir / "ff";
  fs::create_directory(other_shard);
  fs::permissions(other_shard, fs::perms::owner_all);
  const fs::path stale2 = other_shard / fmt::format(".ff{}.{}.abc.tmp", digest.substr(2), dead);
  write_file(stale2, {5});
  fs::last_write_time(stale2, old);

  DiskCache cache(dir);
  CHECK_FALSE(cache.load(key).has_value());  // opening it is enough
  CHECK_FALSE(fs::exists(stale));
  CHECK_FALSE(fs::exists(stale2));
  CHECK(fs::exists(fresh_dead));
  CHECK(fs::exists(old_live));
  CHECK(fs::exists(other));
  // And the cache still works around what is left.
  cache.store(key, sample_entry());
  CHECK(cache.load(key) == sample_entry());
}

TEST_CASE("jit_cache: an unwritable cache is reported once, not once per kernel") {
  TempDir tmp;
  write_file(tmp.path() / "not-a-dir", {1, 2, 3});
  DiskCache cache(tmp.path() / "not-a-dir" / "cache");
  StderrCapture capture;
  for (int i = 0; i < 20; ++i) {
    const CacheKey key = key_named("k" + std::to_string(i));
    CHECK_FALSE(cache.load(key).has_value());
    CHECK_NOTHROW(cache.store(key, sample_entry()));
  }
  const std::string log = capture.text();
  INFO("log: ", log);
  if (warnings_on()) {
    CHECK(count_of(log, "[kdsl warn]") == 1);
    CHECK(log.find("Not a directory") != std::string::npos);
  }
}
