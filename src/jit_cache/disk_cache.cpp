// disk_cache.cpp - on-disk kernel cache: one file per kernel, atomic publish, checksums, and
// nothing trusted that another user could have written
#include "jit_cache/disk_cache.h"

#include "jit_cache/cache_folder.h"

#include "support/log.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

namespace kdsl::jit_cache {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'K', 'D', 'S', 'L', 'B', 'I', 'N', '\0'};
constexpr size_t kHeaderSize = sizeof(kMagic) + 4;
constexpr size_t kChecksumSize = 8;
// A temporary file this old whose writer is gone will never be renamed into place.
constexpr time_t kStaleTempSeconds = 60;

std::string errno_text(int err) { return std::system_category().message(err); }

void put_u32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char(uint8_t(v >> (8 * i))));
}
void put_u64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(char(uint8_t(v >> (8 * i))));
}
void put_section(std::string &out, std::string_view bytes) {
  put_u64(out, bytes.size());
  out.append(bytes);
}
uint64_t get_le(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// May throw nlohmann::json::type_error when a string in the metadata is not valid UTF-8.
std::string serialize(const CacheKey &key, const CacheEntry &entry) {
  std::string out;
  const std::string key_json = key.to_json().dump();
  const std::string metadata_json = entry.metadata.dump();
  out.reserve(kHeaderSize + 4 * 8 + key_json.size() + metadata_json.size() + entry.symbol.size() +
              entry.code.size() + kChecksumSize);
  out.append(kMagic, sizeof(kMagic));
  put_u32(out, kDiskFormatVersion);
  put_section(out, key_json);
  put_section(out, metadata_json);
  put_section(out, entry.symbol);
  put_section(out, {reinterpret_cast<const char *>(entry.code.data()), entry.code.size()});
  put_u64(out, XXH3_64bits(out.data(), out.size()));
  return out;
}

// Reads a length-prefixed section, checking every length against what is left before trusting
// it: a corrupt length must never move the cursor past the end.
class SectionReader {
 public:
  SectionReader(const uint8_t *data, size_t size, size_t pos) : data_(data), size_(size), pos_(pos) {}

  // Empty on success, else what was wrong.
  std::string section(const char *name, std::string_view &out) {
    if (size_ - pos_ < 8) return fmt::format("truncated inside the {} length", name);
    const uint64_t n = get_le(data_ + pos_, 8);
    pos_ += 8;
    if (n > size_ - pos_)
      return fmt::format("{} length {} runs past the end of the file ({} bytes left)", name, n,
                         size_ - pos_);
    out = {reinterpret_cast<const char *>(data_ + pos_), size_t(n)};
    pos_ += n;
    return {};
  }
  size_t pos() const { return pos_; }

 private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_;
};

// Checks the magic and the version of a file of `size` bytes whose first min(size, kHeaderSize)
// bytes are at `head`, so a file that is not an entry is refused before the rest is read.
// Empty when they are right, else what is wrong.
std::string check_header(const uint8_t *head, size_t size) {
  if (size == 0) return "empty file";
  if (size < sizeof(kMagic) || std::memcmp(head, kMagic, sizeof(kMagic)) != 0)
    return size < sizeof(kMagic) && std::memcmp(head, kMagic, size) == 0
               ? fmt::format("truncated to {} bytes, inside the magic", size)
               : "bad magic (not a kdsl cache entry)";
  if (size < kHeaderSize) return fmt::format("truncated to {} bytes, inside the header", size);
  const uint32_t version = uint32_t(get_le(head + sizeof(kMagic), 4));
  if (version != kDiskFormatVersion)
    return fmt::format("unknown format version {} (this kdsl reads {})", version, kDiskFormatVersion);
  return {};
}

// Checks `file` completely and fills `found` (the key it holds) and `out`. Returns empty on
// success, else what was wrong.
std::string parse_any(const std::vector<uint8_t> &file, CacheKey &found, CacheEntry &out) {
  const size_t size = file.size();
  if (std::string error = check_header(file.data(), size); !error.empty()) return error;

  SectionReader reader(file.data(), size, kHeaderSize);
  std::string_view key_json, metadata_json, symbol, code;
  for (auto [name, view] : {std::pair{"key", &key_json}, {"metadata", &metadata_json},
                            {"symbol", &symbol}, {"code", &code}})
    if (std::string error = reader.section(name, *view); !error.empty()) return error;
  const size_t body = reader.pos();
  if (size - body < kChecksumSize) return "truncated inside the checksum";
  if (size - body > kChecksumSize)
    return fmt::format("{} unexpected bytes after the checksum", size - body - kChecksumSize);
  const uint64_t stored = get_le(file.data() + body, 8);
  const uint64_t computed = XXH3_64bits(file.data(), body);
  if (stored != computed)
    return fmt::format("checksum mismatch (stored {:016x}, computed {:016x})", stored, computed);

  // The checksum passed, so the JSON was written by us; a parse failure here means a bug or a
  // different writer, and is still only a miss.
  auto key_value = nlohmann::json::parse(key_json, nullptr, /*allow_exceptions=*/false);
  if (key_value.is_discarded()) return "key JSON does not parse";
  try {
    found = CacheKey::from_json(key_value);
  } catch (const std::exception &e) {
    return e.what();
  }
  auto metadata = nlohmann::json::parse(metadata_json, nullptr, /*allow_exceptions=*/false);
  if (metadata.is_discarded()) return "metadata JSON does not parse";

  out.symbol.assign(symbol);
  out.code.assign(code.begin(), code.end());
  out.metadata = std::move(metadata);
  return {};
}

// parse_any, and the key must be `want`.
std::string parse(const std::vector<uint8_t> &file, const CacheKey &want, CacheEntry &out) {
  CacheKey found;
  if (std::string error = parse_any(file, found, out); !error.empty()) return error;
  if (found != want)
    return fmt::format("holds kernel '{}' with key digest {}, not the requested '{}' (digest {})",
                       found.kernel_name, found.digest(), want.kernel_name, want.digest());
  return {};
}

// A file descriptor, closed when this goes.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd &operator=(Fd &&other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

// True the first time this process asks about `what`: problems with a whole directory (refused,
// unwritable) are reported once, not once for every kernel, and each directory is swept once.
bool first_time(const std::string &what) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  std::lock_guard lock(mutex);
  return seen.insert(what).second;
}

// Empty when `st` is this user's and nobody else may write it; else why not, to follow "it".
std::string untrusted_because(const struct stat &st) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me) return fmt::format("is owned by uid {}, not by this user (uid {})", st.st_uid, me);
  if (st.st_mode & S_IWOTH) return fmt::format("is writable by others (mode {:04o})", st.st_mode & 07777);
  if (st.st_mode & S_IWGRP) return fmt::format("is writable by its group (mode {:04o})", st.st_mode & 07777);
  return {};
}

// A directory of the cache, opened and checked.
struct DirOpen {
  Fd fd;                // open when the directory is there and trusted
  int err = 0;          // else, when `refusal` is empty: why opening it failed (ENOENT: missing)
  std::string refusal;  // else why it is not trusted, to follow "it"
  std::string advice;   // and what to do about it
  mode_t mode = 0;
};

// Opens `name` (relative to the directory `at`) as a directory without following a symbolic
// link in its last component, and checks that this user owns it and nobody else may write it:
// whoever can write a directory of the cache can make this user run their code.
DirOpen open_trusted_dir(int at, const char *name) {
  DirOpen out;
  const int fd = ::openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    out.err = errno;
    struct stat st;
    if ((out.err == ELOOP || out.err == ENOTDIR) && ::fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode)) {
      out.refusal = "is a symbolic link, and kdsl follows none in its cache";
      out.advice = "set KDSL_CACHE_DIR to the directory itself";
    }
    return out;
  }
  Fd opened(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    out.err = errno;
    return out;
  }
  out.mode = st.st_mode;
  out.refusal = untrusted_because(st);
  if (out.refusal.empty()) out.fd = std::move(opened);
  else if (st.st_uid != ::geteuid()) out.advice = "set KDSL_CACHE_DIR to a directory of your own";
  else out.advice = "make it private with chmod 700, or set KDSL_CACHE_DIR to another directory";
  return out;
}

void report_refused(const fs::path &dir, const DirOpen &d) {
  if (first_time("refused " + dir.string()))
    log_warn("kernel cache: not using {}: it {}; kernels are compiled in memory only this run ({})", dir.string(),
             d.refusal, d.advice);
  else
    log_debug("kernel cache: not using {}: it {}", dir.string(), d.refusal);
}

// Creates `dir` and whichever of its parents are missing, each 0700; directories that exist
// are left as they are. Empty on success, else the message.
std::string make_private_dirs(const fs::path &dir) {
  fs::path partial;
  for (const fs::path &part : dir) {
    partial /= part;
    if (part.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return fmt::format("cannot create directory {}: {}", partial.string(), errno_text(errno));
  }
  return {};
}

// The names in the directory `dir_fd` that `keep` accepts.
template <class Keep>
std::vector<std::string> list_dir(int dir_fd, Keep keep) {
  std::vector<std::string> out;
  const int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return out;
  DIR *d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return out;
  }
  while (const dirent *e = ::readdir(d))
    if (keep(std::string_view(e->d_name))) out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
// Non-empty and every character passes.
bool all_of(std::string_view s, bool (*is)(char)) { return !s.empty() && std::all_of(s.begin(), s.end(), is); }

// Where one key's entry lives.
struct Place {
  std::string digest, shard, name;  // shard: the directory under the root; name: the file in it
  fs::path shard_path, path;
};

Place place_of(const fs::path &root, const CacheKey &key) {
  Place p;
  p.digest = key.digest();
  p.shard = p.digest.substr(0, 2);
  p.name = p.digest + ".kdslbin";
  p.shard_path = root / p.shard;
  p.path = p.shard_path / p.name;
  return p;
}

// Unique among processes (pid) and threads (random suffix), hidden (leading dot), and in the
// entry's own directory so the final rename never crosses filesystems.
std::string temp_name(const std::string &digest) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static std::atomic<uint64_t> counter{0};
  return fmt::format(".{}.{}.{:016x}{:x}.tmp", digest, ::getpid(), rng(), counter.fetch_add(1));
}

// The writer's pid from a temporary file's name (temp_name's pattern), or -1 for other names.
pid_t temp_file_pid(std::string_view name) {
  if (name.size() < 6 || name.front() != '.' || !name.ends_with(".tmp")) return -1;
  name = name.substr(1, name.size() - 5);  // <digest>.<pid>.<random>
  const size_t a = name.find('.');
  const size_t b = a == std::string_view::npos ? a : name.find('.', a + 1);
  if (b == std::string_view::npos || name.find('.', b + 1) != std::string_view::npos) return -1;
  const std::string_view pid = name.substr(a + 1, b - a - 1);
  if (!all_of(name.substr(0, a), is_hex) || !all_of(name.substr(b + 1), is_hex) || !all_of(pid, is_digit) ||
      pid.size() > 9)
    return -1;
  const pid_t value = pid_t(std::atol(std::string(pid).c_str()));
  return value > 0 ? value : -1;
}

// Whether the process that made a temporary file is gone. This process's own pid means an
// earlier process that had it (containers reuse small pids): a process sweeps a directory
// before its first store there, and its own temporary files are younger than a minute.
bool writer_gone(pid_t pid) {
  if (pid == ::getpid()) return true;
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

// Removes the temporary files of writers killed between creating and renaming them: this
// user's, older than a minute, from a process that is gone. Never another live process's.
void sweep_stale_temps(const fs::path &root, int root_fd) {
  const time_t now = ::time(nullptr);
  int removed = 0;
  const auto shards = list_dir(root_fd, [](std::string_view n) { return n.size() == 2 && all_of(n, is_hex); });
  for (const std::string &shard : shards) {
    DirOpen sub = open_trusted_dir(root_fd, shard.c_str());
    if (!sub.fd) continue;
    for (const std::string &name : list_dir(sub.fd.get(), [](std::string_view n) { return temp_file_pid(n) > 0; })) {
      struct stat st;
      if (::fstatat(sub.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || now - st.st_mtime < kStaleTempSeconds) continue;
      if (!writer_gone(temp_file_pid(name))) continue;
      if (::unlinkat(sub.fd.get(), name.c_str(), 0) == 0) ++removed;
    }
  }
  if (removed > 0) log_debug("kernel cache: removed {} stale temporary files under {}", removed, root.string());
}

void sweep_once(const fs::path &root, int root_fd) {
  if (first_time("sweep " + root.string())) sweep_stale_temps(root, root_fd);
}

// Removes the temporary file on every path out of store() except a successful rename, so a
// failure (or an exception) never leaves one behind.
class TempFileGuard {
 public:
  TempFileGuard(int dir_fd, const std::string &name) : dir_fd_(dir_fd), name_(name) {}
  ~TempFileGuard() {
    if (!published_) ::unlinkat(dir_fd_, name_.c_str(), 0);
  }
  void published() { published_ = true; }
  TempFileGuard(const TempFileGuard &) = delete;
  TempFileGuard &operator=(const TempFileGuard &) = delete;

 private:
  int dir_fd_;
  const std::string &name_;
  bool published_ = false;
};

// Appends up to `count` bytes from `fd` to `out`; fewer when the file ends first (parse()
// then reports it as truncated). Empty on success, else the errno text.
std::string read_up_to(int fd, std::vector<uint8_t> &out, size_t count) {
  const size_t start = out.size();
  out.resize(start + count);
  size_t got = 0;
  while (got < count) {
    const ssize_t n = ::read(fd, out.data() + start + got, count - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_text(errno);
    if (n == 0) break;
    got += size_t(n);
  }
  out.resize(start + got);
  return {};
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    bytes.remove_prefix(size_t(n));
  }
  return true;
}

// Removes a bad entry, but only if the name still names the file we read (another process may
// have published a good entry under it since) and it is a regular file of this user's.
void remove_if_same(int dir_fd, const std::string &name, const fs::path &path, uint64_t device, uint64_t inode) {
  struct stat now;
  if (::fstatat(dir_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (uint64_t(now.st_dev) != device || uint64_t(now.st_ino) != inode || !S_ISREG(now.st_mode) ||
      now.st_uid != ::geteuid())
    return;
  if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT)
    log_warn("kernel cache: cannot remove bad entry {}: {}", path.string(), errno_text(errno));
}

std::optional<CacheEntry> load_or_throw(const fs::path &root, const CacheKey &key, EntryFile *file) {
  const Place at = place_of(root, key);
  DirOpen top = open_trusted_dir(AT_FDCWD, root.c_str());
  if (!top.fd) {
    if (!top.refusal.empty()) report_refused(root, top);
    else if (top.err != ENOENT && top.err != ENOTDIR && first_time("open " + root.string()))
      log_warn("kernel cache: cannot open {}: {}; compiling instead", root.string(), errno_text(top.err));
    log_debug("kernel cache: miss for '{}' ({})", key.kernel_name, at.path.string());
    return std::nullopt;
  }
  sweep_once(root, top.fd.get());
  DirOpen sub = open_trusted_dir(top.fd.get(), at.shard.c_str());
  if (!sub.fd) {
    if (!sub.refusal.empty()) report_refused(at.shard_path, sub);
    else if (sub.err != ENOENT && first_time("open " + at.shard_path.string()))
      log_warn("kernel cache: cannot open {}: {}; compiling instead", at.shard_path.string(), errno_text(sub.err));
    log_debug("kernel cache: miss for '{}' ({})", key.kernel_name, at.path.string());
    return std::nullopt;
  }
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  const int raw = ::openat(sub.fd.get(), at.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (raw < 0) {
    const int err = errno;
    if (err == ENOENT) log_debug("kernel cache: miss for '{}' ({})", key.kernel_name, at.path.string());
    else if (err == ELOOP)
      log_warn("kernel cache: not loading {}: it is a symbolic link, and kdsl follows none in its cache; compiling instead",
               at.path.string());
    else log_warn("kernel cache: cannot open {}: {}; compiling instead", at.path.string(), errno_text(err));
    return std::nullopt;
  }
  Fd fd(raw);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    log_warn("kernel cache: cannot stat {}: {}; compiling instead", at.path.string(), errno_text(errno));
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    log_warn("kernel cache: not loading {}: it is not a regular file; compiling instead", at.path.string());
    return std::nullopt;
  }
  if (st.st_uid != ::geteuid()) {  // not ours to remove either
    log_warn("kernel cache: not loading {}: it {}; compiling instead", at.path.string(), untrusted_because(st));
    return std::nullopt;
  }
  auto discard = [&](const std::string &error) -> std::optional<CacheEntry> {
    log_warn("kernel cache: discarding {}: {}; the kernel will be recompiled", at.path.string(), error);
    remove_if_same(sub.fd.get(), at.name, at.path, uint64_t(st.st_dev), uint64_t(st.st_ino));
    return std::nullopt;
  };
  if (std::string why = untrusted_because(st); !why.empty()) return discard("it " + why);
  const uint64_t size = uint64_t(st.st_size);
  if (size > kMaxEntryBytes)
    return discard(fmt::format("{} bytes, larger than any entry kdsl writes ({} bytes)", size, kMaxEntryBytes));

  // The header first: a file that is not an entry costs one small read, whatever its size.
  std::vector<uint8_t> bytes;
  const size_t head = size_t(std::min<uint64_t>(size, kHeaderSize));
  std::string error = read_up_to(fd.get(), bytes, head);
  if (error.empty() && bytes.size() == head) {
    if (std::string bad = check_header(bytes.data(), size_t(size)); !bad.empty()) return discard(bad);
    error = read_up_to(fd.get(), bytes, size_t(size) - head);
  }
  if (!error.empty()) {
    log_warn("kernel cache: cannot read {}: {}; compiling instead", at.path.string(), error);
    return std::nullopt;
  }
  CacheEntry entry;
  if (std::string bad = parse(bytes, key, entry); !bad.empty()) return discard(bad);
  if (file) *file = EntryFile{uint64_t(st.st_dev), uint64_t(st.st_ino)};
  // The access time says when an entry was last used, for kdsl-cache prune; set explicitly, since
  // relatime and noatime mounts do not keep it.
  const struct timespec last_use[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  ::futimens(fd.get(), last_use);
  log_debug("kernel cache: loaded '{}' from {} ({} code bytes)", key.kernel_name, at.path.string(), entry.code.size());
  return entry;
}

void store_or_throw(const fs::path &root, const CacheKey &key, const CacheEntry &entry) {
  std::string bytes;
  try {
    bytes = serialize(key, entry);
  } catch (const nlohmann::json::exception &e) {
    log_warn("kernel cache: not storing kernel '{}': its metadata cannot be written as JSON: {}",
             key.kernel_name, e.what());
    return;
  }
  if (bytes.size() > kMaxEntryBytes) {
    log_warn("kernel cache: not storing kernel '{}': its entry would be {} bytes, more than the cache loads ({})",
             key.kernel_name, bytes.size(), kMaxEntryBytes);
    return;
  }
  const Place at = place_of(root, key);
  // Said once per directory and process: an unwritable cache would otherwise say it for every
  // kernel of the run.
  auto fail = [&](const std::string &what) {
    if (first_time("write " + root.string()))
      log_warn("kernel cache: {}; kernels are not cached in {} this run (set KDSL_CACHE_DIR to a writable directory)",
               what, root.string());
    else
      log_debug("kernel cache: {}; kernel '{}' is not cached", what, key.kernel_name);
  };

  DirOpen top = open_trusted_dir(AT_FDCWD, root.c_str());
  if (!top.fd && top.refusal.empty() && (top.err == ENOENT || top.err == ENOTDIR)) {
    if (std::string error = make_private_dirs(root); !error.empty()) return fail(error);
    top = open_trusted_dir(AT_FDCWD, root.c_str());
  }
  if (!top.fd) {
    if (!top.refusal.empty()) return report_refused(root, top);
    return fail(fmt::format("cannot open directory {}: {}", root.string(), errno_text(top.err)));
  }
  sweep_once(root, top.fd.get());
  if (::mkdirat(top.fd.get(), at.shard.c_str(), 0700) != 0 && errno != EEXIST)
    return fail(fmt::format("cannot create directory {}: {}", at.shard_path.string(), errno_text(errno)));
  DirOpen sub = open_trusted_dir(top.fd.get(), at.shard.c_str());
  if (!sub.fd) {
    if (!sub.refusal.empty()) return report_refused(at.shard_path, sub);
    return fail(fmt::format("cannot open directory {}: {}", at.shard_path.string(), errno_text(sub.err)));
  }

  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 4 && fd < 0; ++attempt) {
    temp = temp_name(at.digest);
    fd = ::openat(sub.fd.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return fail(fmt::format("cannot create {}: {}", (at.shard_path / temp).string(), errno_text(errno)));
  // The final name is only ever touched by the rename, so it holds either the old entry or the
  // complete new one (a rename replaces a link or a FIFO there, never what a link points to).
  TempFileGuard guard(sub.fd.get(), temp);
  std::string failed;
  if (!write_all(fd, bytes)) failed = "write: " + errno_text(errno);
  else if (::fsync(fd) != 0) failed = "fsync: " + errno_text(errno);
  if (::close(fd) != 0 && failed.empty()) failed = "close: " + errno_text(errno);
  if (failed.empty() && ::renameat(sub.fd.get(), temp.c_str(), sub.fd.get(), at.name.c_str()) != 0)
    failed = "rename to " + at.path.string() + ": " + errno_text(errno);
  if (!failed.empty()) return fail(fmt::format("cannot write {}: {}", (at.shard_path / temp).string(), failed));
  guard.published();
  // Best effort: makes the rename itself durable. A failure only risks losing the entry on a
  // crash, which costs a recompile.
  ::fsync(sub.fd.get());
  log_debug("kernel cache: stored '{}' at {} ({} bytes)", key.kernel_name, at.path.string(), bytes.size());
}

// The cache when there is no home: <temp>/kdsl-cache-<uid>, made 0700 here when missing. Anyone
// may take that name first in a shared /tmp, so when it is not this user's alone, a private
// directory beside it: an earlier run's (this user's, mode 0700, found by its name), else a new
// one from mkdtemp. Chosen once per process and temporary directory.
fs::path private_temp_dir(const fs::path &base) {
  static std::mutex mutex;
  static std::map<std::string, fs::path> chosen;
  std::lock_guard lock(mutex);
  if (auto it = chosen.find(base.string()); it != chosen.end()) return it->second;

  const std::string name = fmt::format("kdsl-cache-{}", ::geteuid());
  const fs::path preferred = base / name;
  fs::path result = preferred;
  ::mkdir(preferred.c_str(), 0700);  // one already there is checked next
  const DirOpen d = open_trusted_dir(AT_FDCWD, preferred.c_str());
  if (!d.fd && !d.refusal.empty()) {
    fs::path fallback;
    const std::string prefix = name + "-";
    if (Fd base_fd(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); base_fd) {
      std::vector<std::string> earlier = list_dir(base_fd.get(), [&](std::string_view n) {
        return n.size() == prefix.size() + 6 && n.starts_with(prefix);
      });
      std::sort(earlier.begin(), earlier.end());
      for (const std::string &n : earlier) {
        const DirOpen e = open_trusted_dir(base_fd.get(), n.c_str());
        if (e.fd && (e.mode & 077) == 0) {
          fallback = base / n;
          break;
        }
      }
    }
    if (fallback.empty()) {
      std::string pattern = (base / (prefix + "XXXXXX")).string();
      if (::mkdtemp(pattern.data())) fallback = pattern;
    }
    // Without one, the refused name stays, and its first use says why the disk cache is off.
    if (!fallback.empty()) {
      result = fallback;
      log_warn("kernel cache: not using {}: it {}; using {} instead (set KDSL_CACHE_DIR to choose the cache directory)",
               preferred.string(), d.refusal, fallback.string());
    }
  }
  chosen.emplace(base.string(), result);
  return result;
}

}  // namespace

EntryReport inspect_entry(const fs::path &file) {
  EntryReport r;
  auto fail = [&](std::string problem) {
    r.problem = std::move(problem);
    return r;
  };
  const int raw = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (raw < 0) return fail(errno == ELOOP ? "a symbolic link" : errno_text(errno));
  Fd fd(raw);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return fail(errno_text(errno));
  r.bytes = uint64_t(st.st_size);
  r.last_used = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_atim.tv_sec));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if (std::string why = untrusted_because(st); !why.empty()) return fail("it " + why);
  if (r.bytes > kMaxEntryBytes) return fail(fmt::format("{} bytes, larger than any entry kdsl writes", r.bytes));
  std::vector<uint8_t> bytes;
  if (std::string error = read_up_to(fd.get(), bytes, size_t(r.bytes)); !error.empty()) return fail(error);
  CacheKey key;
  CacheEntry entry;
  if (std::string error = parse_any(bytes, key, entry); !error.empty()) return fail(error);
  if (file.filename() != key.digest() + ".kdslbin") return fail(fmt::format("its name is not its key's digest {}", key.digest()));
  r.key = std::move(key);
  r.metadata = std::move(entry.metadata);
  r.code_bytes = entry.code.size();
  return r;
}

DiskCache::DiskCache(fs::path dir) : dir_(std::move(dir)) {
  // "link/" would make the kernel follow a link in the last component despite O_NOFOLLOW.
  while (!dir_.has_filename() && dir_.has_relative_path()) dir_ = dir_.parent_path();
}

fs::path DiskCache::default_dir() {
  auto env = [](const char *name) -> std::string_view {
    const char *v = std::getenv(name);
    return v ? v : "";
  };
  if (auto v = env("KDSL_CACHE_DIR"); !v.empty()) return fs::path(v);
  if (auto v = env("XDG_CACHE_HOME"); !v.empty() && fs::path(v).is_absolute())
    return fs::path(v) / "kdsl";
  if (auto v = env("HOME"); !v.empty()) return fs::path(v) / ".cache" / "kdsl";
  // No home at all (a bare container): a private per-user directory under the temporary one.
  std::error_code ec;
  fs::path temp = fs::temp_directory_path(ec);  // fails when TMPDIR names no directory
  return private_temp_dir(ec ? fs::path("/tmp") : temp);
}

fs::path DiskCache::entry_path(const CacheKey &key) const { return place_of(dir_, key).path; }

std::optional<CacheEntry> DiskCache::load(const CacheKey &key, EntryFile *file) const {
  // Allocation failures and the like are still only a miss: the cache must never stop a launch.
  try {
    return load_or_throw(dir_, key, file);
  } catch (const std::exception &e) {
    log_warn("kernel cache: cannot load kernel '{}' from {}: {}; compiling instead", key.kernel_name, dir_.string(),
             e.what());
    return std::nullopt;
  }
}

void DiskCache::store(const CacheKey &key, const CacheEntry &entry) const {
  try {
    store_or_throw(dir_, key, entry);
    // KDSL_CACHE_MAX_SIZE: the folder is brought back under the cap after each store (a stat per
    // entry, no file read), least recently used first, never the entry just written.
    if (uint64_t limit = cache_size_limit()) {
      PruneResult r = prune_entries(list_entry_files(dir_), limit, entry_path(key));
      if (r.removed)
        log_info("kernel cache: {} entries removed to keep {} under KDSL_CACHE_MAX_SIZE ({} -> {})", r.removed, dir_.string(),
                 size_text(r.bytes_before), size_text(r.bytes_after));
    }
  } catch (const std::exception &e) {
    log_warn("kernel cache: cannot store kernel '{}' in {}: {}", key.kernel_name, dir_.string(), e.what());
  }
}

void DiskCache::discard(const CacheKey &key, const EntryFile &file, const std::string &reason) const {
  try {
    const Place at = place_of(dir_, key);
    log_warn("kernel cache: discarding {}: {}; the kernel will be recompiled", at.path.string(), reason);
    DirOpen top = open_trusted_dir(AT_FDCWD, dir_.c_str());
    if (!top.fd) return;
    DirOpen sub = open_trusted_dir(top.fd.get(), at.shard.c_str());
    if (!sub.fd) return;
    remove_if_same(sub.fd.get(), at.name, at.path, file.device, file.inode);
  } catch (const std::exception &e) {
    log_warn("kernel cache: cannot discard kernel '{}' from {}: {}", key.kernel_name, dir_.string(), e.what());
  }
}

}  // namespace kdsl::jit_cache
