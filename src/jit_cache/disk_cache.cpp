// disk_cache.cpp - on-disk kernel cache: one file per kernel, atomic publish, checksums
#include "jit_cache/disk_cache.h"

#include "support/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <system_error>

namespace kdsl::jit_cache {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'K', 'D', 'S', 'L', 'B', 'I', 'N', '\0'};
constexpr size_t kHeaderSize = sizeof(kMagic) + 4;
constexpr size_t kChecksumSize = 8;

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

// Checks `file` completely and fills `out`. Returns empty on success, else what was wrong.
std::string parse(const std::vector<uint8_t> &file, const CacheKey &want, CacheEntry &out) {
  const size_t size = file.size();
  if (size == 0) return "empty file";
  if (size < sizeof(kMagic) || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0)
    return size < sizeof(kMagic) && std::memcmp(file.data(), kMagic, size) == 0
               ? fmt::format("truncated to {} bytes, inside the magic", size)
               : "bad magic (not a kdsl cache entry)";
  if (size < kHeaderSize) return fmt::format("truncated to {} bytes, inside the header", size);
  const uint32_t version = uint32_t(get_le(file.data() + sizeof(kMagic), 4));
  if (version != kDiskFormatVersion)
    return fmt::format("unknown format version {} (this kdsl reads {})", version, kDiskFormatVersion);

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
  CacheKey found;
  try {
    found = CacheKey::from_json(key_value);
  } catch (const std::exception &e) {
    return e.what();
  }
  if (found != want)
    return fmt::format("holds kernel '{}' with key digest {}, not the requested '{}' (digest {})",
                       found.kernel_name, found.digest(), want.kernel_name, want.digest());
  auto metadata = nlohmann::json::parse(metadata_json, nullptr, /*allow_exceptions=*/false);
  if (metadata.is_discarded()) return "metadata JSON does not parse";

  out.symbol.assign(symbol);
  out.code.assign(code.begin(), code.end());
  out.metadata = std::move(metadata);
  return {};
}

// Removes the temporary file on every path out of store() except a successful rename, so a
// failure (or an exception) never leaves one behind.
class TempFileGuard {
 public:
  explicit TempFileGuard(const fs::path &path) : path_(path) {}
  ~TempFileGuard() {
    if (!published_) ::unlink(path_.c_str());
  }
  void published() { published_ = true; }
  TempFileGuard(const TempFileGuard &) = delete;
  TempFileGuard &operator=(const TempFileGuard &) = delete;

 private:
  const fs::path &path_;
  bool published_ = false;
};

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser &) = delete;
  FdCloser &operator=(const FdCloser &) = delete;

 private:
  int fd_;
};

// Empty on success, else the errno text.
std::string read_all(int fd, std::vector<uint8_t> &out, size_t expected) {
  out.resize(expected);
  size_t got = 0;
  while (got < expected) {
    ssize_t n = ::read(fd, out.data() + got, expected - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_text(errno);
    if (n == 0) break;  // shorter than fstat said; parse() reports it as truncated
    got += size_t(n);
  }
  out.resize(got);
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

// Removes a bad entry, but only if the name still points at the file we read: another process
// may have published a good entry under it since, and removing that would cost a recompile.
void remove_bad_entry(const fs::path &path, const struct stat &read_stat) {
  struct stat now;
  if (::stat(path.c_str(), &now) != 0) return;
  if (now.st_dev != read_stat.st_dev || now.st_ino != read_stat.st_ino) return;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    log_warn("kernel cache: cannot remove bad entry {}: {}", path.string(), errno_text(errno));
}

// Unique among processes (pid) and threads (random suffix), hidden (leading dot), and in the
// entry's own directory so the final rename never crosses filesystems.
std::string temp_name(const std::string &digest) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static std::atomic<uint64_t> counter{0};
  return fmt::format(".{}.{}.{:016x}{:x}.tmp", digest, ::getpid(), rng(), counter.fetch_add(1));
}

// Best effort: makes the rename itself durable. A failure only risks losing the entry on a
// crash, which costs a recompile.
void sync_directory(const fs::path &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::optional<CacheEntry> load_or_throw(const fs::path &path, const CacheKey &key) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      log_debug("kernel cache: miss for '{}' ({})", key.kernel_name, path.string());
    } else {
      log_warn("kernel cache: cannot open {}: {}; compiling instead", path.string(), errno_text(err));
    }
    return std::nullopt;
  }
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    log_warn("kernel cache: cannot stat {}: {}; compiling instead", path.string(), errno_text(errno));
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    log_warn("kernel cache: {} is not a regular file; compiling instead", path.string());
    return std::nullopt;
  }
  std::vector<uint8_t> bytes;
  if (std::string error = read_all(fd, bytes, size_t(st.st_size)); !error.empty()) {
    log_warn("kernel cache: cannot read {}: {}; compiling instead", path.string(), error);
    return std::nullopt;
  }
  CacheEntry entry;
  if (std::string error = parse(bytes, key, entry); !error.empty()) {
    log_warn("kernel cache: discarding {}: {}; the kernel will be recompiled", path.string(), error);
    remove_bad_entry(path, st);
    return std::nullopt;
  }
  log_debug("kernel cache: loaded '{}' from {} ({} code bytes)", key.kernel_name, path.string(),
            entry.code.size());
  return entry;
}

void store_or_throw(const fs::path &path, const CacheKey &key, const CacheEntry &entry) {
  std::string bytes;
  try {
    bytes = serialize(key, entry);
  } catch (const nlohmann::json::exception &e) {
    log_warn("kernel cache: not storing kernel '{}': its metadata cannot be written as JSON: {}",
             key.kernel_name, e.what());
    return;
  }
  const fs::path dir = path.parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    log_warn("kernel cache: cannot create directory {}: {}; kernel '{}' is not cached (set "
             "KDSL_CACHE_DIR to a writable directory)",
             dir.string(), ec.message(), key.kernel_name);
    return;
  }

  fs::path temp;
  int fd = -1;
  for (int attempt = 0; attempt < 4 && fd < 0; ++attempt) {
    temp = dir / temp_name(key.digest());
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    log_warn("kernel cache: cannot create {}: {}; kernel '{}' is not cached (set KDSL_CACHE_DIR "
             "to a writable directory)",
             temp.string(), errno_text(errno), key.kernel_name);
    return;
  }
  // The final name is only ever touched by the rename, so it holds either the old entry or the
  // complete new one.
  TempFileGuard guard(temp);
  std::string failed;
  if (!write_all(fd, bytes)) failed = "write: " + errno_text(errno);
  else if (::fsync(fd) != 0) failed = "fsync: " + errno_text(errno);
  if (::close(fd) != 0 && failed.empty()) failed = "close: " + errno_text(errno);
  if (failed.empty()) {
    fs::rename(temp, path, ec);
    if (ec) failed = "rename to " + path.string() + ": " + ec.message();
  }
  if (!failed.empty()) {
    log_warn("kernel cache: cannot write {}: {}; kernel '{}' is not cached", temp.string(), failed,
             key.kernel_name);
    return;
  }
  guard.published();
  sync_directory(dir);
  log_debug("kernel cache: stored '{}' at {} ({} bytes)", key.kernel_name, path.string(), bytes.size());
}

}  // namespace

DiskCache::DiskCache(fs::path dir) : dir_(std::move(dir)) {}

fs::path DiskCache::default_dir() {
  auto env = [](const char *name) -> std::string_view {
    const char *v = std::getenv(name);
    return v ? v : "";
  };
  if (auto v = env("KDSL_CACHE_DIR"); !v.empty()) return fs::path(v);
  if (auto v = env("XDG_CACHE_HOME"); !v.empty() && fs::path(v).is_absolute())
    return fs::path(v) / "kdsl";
  if (auto v = env("HOME"); !v.empty()) return fs::path(v) / ".cache" / "kdsl";
  // No home at all (a bare container): a per-user directory that at least exists everywhere.
  return fs::temp_directory_path() / fmt::format("kdsl-cache-{}", ::getuid());
}

fs::path DiskCache::entry_path(const CacheKey &key) const {
  const std::string digest = key.digest();
  return dir_ / digest.substr(0, 2) / (digest + ".kdslbin");
}

std::optional<CacheEntry> DiskCache::load(const CacheKey &key) const {
  // Allocation failures and the like are still only a miss: the cache must never stop a launch.
  fs::path path;
  try {
    path = entry_path(key);
    return load_or_throw(path, key);
  } catch (const std::exception &e) {
    log_warn("kernel cache: cannot load {}: {}; compiling instead", path.string(), e.what());
    return std::nullopt;
  }
}

void DiskCache::store(const CacheKey &key, const CacheEntry &entry) const {
  fs::path path;
  try {
    path = entry_path(key);
    store_or_throw(path, key, entry);
  } catch (const std::exception &e) {
    log_warn("kernel cache: cannot store {}: {}; kernel '{}' is not cached", path.string(), e.what(),
             key.kernel_name);
  }
}

}  // namespace kdsl::jit_cache
