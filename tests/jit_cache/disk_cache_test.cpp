// disk_cache_test.cpp - the on-disk kernel cache: round trips, corrupt files, races, locations
#include "jit_cache/disk_cache.h"

#include "support/log.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using kdsl::jit_cache::CacheEntry;
using kdsl::jit_cache::CacheKey;
using kdsl::jit_cache::DiskCache;

namespace {

// A fresh directory per test, removed (with everything in it) at the end. While it lives the
// umask is 022, so that what the tests write by hand is trusted (not group-writable) whatever
// the umask of whoever runs them.
class TempDir {
 public:
  TempDir() : saved_umask_(::umask(022)) {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("kdsl-disk-cache-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path_);
    // Private whatever the umask: the cache refuses a directory others may write.
    fs::permissions(path_, fs::perms::owner_all);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
    ::umask(saved_umask_);
  }
  const fs::path &path() const { return path_; }

 private:
  mode_t saved_umask_;
  fs::path path_;
};

// Collects what kdsl logs to stderr while alive.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = ::dup(2);
    ::dup2(::fileno(file_), 2);
  }
  ~StderrCapture() {
    restore();
    std::fclose(file_);
  }
  std::string text() {
    restore();
    std::string out;
    std::rewind(file_);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), file_)) > 0;) out.append(buf, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE *file_;
  int saved_;
};

bool warnings_on() { return kdsl::log_level() >= kdsl::LogLevel::Warn; }

CacheKey key_named(const std::string &name) {
  return CacheKey{name, kdsl::jit_cache::hash_text_hex("ir of " + name), "x:div16", "num_warps=4",
                  "cpu", "znver4", "+avx2,+fma", "0.1.0", "19.1.7"};
}

CacheEntry sample_entry(size_t code_size = 300) {
  CacheEntry e;
  e.symbol = "kdsl_matmul_128";
  for (size_t i = 0; i < code_size; ++i) e.code.push_back(uint8_t(i * 7 + 3));
  e.metadata = {{"shared_bytes", 49152}, {"num_warps", 4}, {"args", {"a", "b", "c"}}};
  return e;
}

std::vector<uint8_t> read_file(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path &p, const std::vector<uint8_t> &bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

// Every regular file under `dir`, for checking that no temporary files are left.
std::vector<fs::path> files_under(const fs::path &dir) {
  std::vector<fs::path> out;
  for (const auto &e : fs::recursive_directory_iterator(dir))
    if (!e.is_directory()) out.push_back(e.path());
  return out;
}

void put_u64(std::vector<uint8_t> &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
uint64_t get_u64(const std::vector<uint8_t> &b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(b[at + i]) << (8 * i);
  return v;
}

// Writes an entry file by hand, following the format in disk_cache.h, so tests can make files
// that pass the checksum but are wrong in other ways.
std::vector<uint8_t> build_file(const std::string &key_json, const std::string &metadata_json,
                                const std::string &symbol, const std::string &code,
                                uint32_t version = kdsl::jit_cache::kDiskFormatVersion) {
  std::vector<uint8_t> out = {'K', 'D', 'S', 'L', 'B', 'I', 'N', '\0'};
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(version >> (8 * i)));
  for (const std::string *s : {&key_json, &metadata_json, &symbol, &code}) {
    put_u64(out, s->size());
    out.insert(out.end(), s->begin(), s->end());
  }
  put_u64(out, XXH3_64bits(out.data(), out.size()));
  return out;
}

// Where each region of a stored file starts: header, then the four length-prefixed sections.
struct Layout {
  size_t key, metadata, symbol, code, checksum, size;
};
Layout layout_of(const std::vector<uint8_t> &f) {
  Layout l;
  l.key = 12;
  l.metadata = l.key + 8 + get_u64(f, l.key);
  l.symbol = l.metadata + 8 + get_u64(f, l.metadata);
  l.code = l.symbol + 8 + get_u64(f, l.symbol);
  l.checksum = l.code + 8 + get_u64(f, l.code);
  l.size = f.size();
  return l;
}

// Writes `bytes` as the entry for `key`, loads it, and checks that the load failed, the file
// is gone, and the warning names the file and contains `reason`.
void check_rejected(const DiskCache &cache, const CacheKey &key, const std::vector<uint8_t> &bytes,
                    const std::string &reason) {
  const fs::path path = cache.entry_path(key);
  fs::create_directories(path.parent_path());
  write_file(path, bytes);
  StderrCapture capture;
  const std::optional<CacheEntry> loaded = cache.load(key);
  const std::string log = capture.text();
  CHECK_FALSE(loaded.has_value());
  CHECK_FALSE(fs::exists(path));
  if (warnings_on()) {
    CHECK(log.find(path.string()) != std::string::npos);
    CHECK(log.find(reason) != std::string::npos);
  }
}

// What a forked child did: its exit code (or the signal that ended it) and what it logged.
struct ChildResult {
  bool exited = false;  // false: ended by a signal (SIGALRM: it hung)
  int code = -1;        // the exit code, or minus the signal
  std::string log;
};

// Runs `body` in a forked child under an alarm, so a load that blocks (a FIFO opened for
// reading waits for a writer) fails the test instead of hanging the suite. The child's stderr
// goes to `log_path`; its exit code is what `body` returns.
template <class F>
ChildResult in_child(const fs::path &log_path, F body, unsigned seconds = 20) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) ::dup2(fd, 2);
    ::alarm(seconds);
    int code = 99;
    try {
      code = body();
    } catch (...) {
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ChildResult r;
  r.exited = WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -WTERMSIG(status);
  std::ifstream in(log_path);
  r.log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return r;
}

size_t count_of(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Peak resident memory of this process in KiB (VmHWM), or -1.
long peak_rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

// Resets the peak to the current resident size (Linux 4.0+); false where that is not possible.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

std::string mode_of(const fs::path &p) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return "missing";
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", unsigned(st.st_mode & 07777));
  return text;
}

// Another user's uid for the ownership tests, which need root to chown (tests run as root in
// CI); elsewhere, or where that uid cannot be used (a user namespace), they skip.
constexpr uid_t kOtherUid = 12345;
bool can_chown_to_other() { return ::geteuid() == 0; }
bool give_to_other(const fs::path &p) {
  if (::lchown(p.c_str(), kOtherUid, kOtherUid) == 0) return true;
  MESSAGE("cannot chown ", p.string(), " to uid ", kOtherUid, " here; skipped");
  return false;
}

// Restores the cache-location variables whatever happens (ctest sets KDSL_CACHE_DIR).
struct SavedEnv {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  explicit SavedEnv(std::initializer_list<const char *> names) {
    for (const char *n : names) {
      const char *v = std::getenv(n);
      saved.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  ~SavedEnv() {
    for (const auto &[n, v] : saved) v ? ::setenv(n.c_str(), v->c_str(), 1) : ::unsetenv(n.c_str());
  }
};

}  // namespace

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
