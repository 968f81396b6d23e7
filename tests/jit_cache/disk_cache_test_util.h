// disk_cache_test_util.h - what the disk-cache suites share: temporary cache folders, hand-made entry files, forked children
#pragma once
#include "jit_cache/disk_cache.h"

#include "support/log.h"
#include "tests/stream_capture.h"

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

namespace disk_cache_test {

namespace fs = std::filesystem;
using kdsl::jit_cache::CacheEntry;
using kdsl::jit_cache::CacheKey;
using kdsl::jit_cache::DiskCache;

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

using kdsl_test::StderrCapture;

inline bool warnings_on() { return kdsl::log_level() >= kdsl::LogLevel::Warn; }

inline CacheKey key_named(const std::string &name) {
  return CacheKey{name, kdsl::jit_cache::hash_text_hex("ir of " + name), "x:div16", "num_warps=4",
                  "cpu", "znver4", "+avx2,+fma", "0.1.0", "19.1.7"};
}

inline CacheEntry sample_entry(size_t code_size = 300) {
  CacheEntry e;
  e.symbol = "kdsl_matmul_128";
  for (size_t i = 0; i < code_size; ++i) e.code.push_back(uint8_t(i * 7 + 3));
  e.metadata = {{"shared_bytes", 49152}, {"num_warps", 4}, {"args", {"a", "b", "c"}}};
  return e;
}

inline std::vector<uint8_t> read_file(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const fs::path &p, const std::vector<uint8_t> &bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

// Every regular file under `dir`, for checking that no temporary files are left.
inline std::vector<fs::path> files_under(const fs::path &dir) {
  std::vector<fs::path> out;
  for (const auto &e : fs::recursive_directory_iterator(dir))
    if (!e.is_directory()) out.push_back(e.path());
  return out;
}

inline void put_u64(std::vector<uint8_t> &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
inline uint64_t get_u64(const std::vector<uint8_t> &b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(b[at + i]) << (8 * i);
  return v;
}

// Writes an entry file by hand, following the format in disk_cache.h, so tests can make files
// that pass the checksum but are wrong in other ways.
inline std::vector<uint8_t> build_file(const std::string &key_json, const std::string &metadata_json,
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
inline Layout layout_of(const std::vector<uint8_t> &f) {
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
inline void check_rejected(const DiskCache &cache, const CacheKey &key, const std::vector<uint8_t> &bytes,
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
inline ChildResult in_child(const fs::path &log_path, F body, unsigned seconds = 20) {
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

inline size_t count_of(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Peak resident memory of this process in KiB (VmHWM), or -1.
inline long peak_rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

// Resets the peak to the current resident size (Linux 4.0+); false where that is not possible.
inline bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

inline std::string mode_of(const fs::path &p) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return "missing";
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", unsigned(st.st_mode & 07777));
  return text;
}

// Another user's uid for the ownership tests, which need root to chown (tests run as root in
// CI); elsewhere, or where that uid cannot be used (a user namespace), they skip.
inline constexpr uid_t kOtherUid = 12345;
inline bool can_chown_to_other() { return ::geteuid() == 0; }
inline bool give_to_other(const fs::path &p) {
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


}  // namespace disk_cache_test
