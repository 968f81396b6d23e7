// mapped_file.cpp - read-only mmap of model files and the bounds-checked reader over them
#include "models/common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fmt/format.h>
#include <kdsl/error.h>

namespace kdsl::models {
namespace {

std::atomic<FileLoading> g_file_loading{FileLoading::Map};

// The file's bytes in anonymous memory, read-only once filled, so that the destructor's munmap
// serves both ways of loading.
const std::byte *read_whole_file(int fd, size_t size, const std::string &path) {
  void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw Error(fmt::format("{}: cannot allocate {} bytes to read it into: {}", path, size, std::strerror(errno)));
  auto *bytes = static_cast<char *>(p);
  for (size_t done = 0; done < size;) {
    ssize_t n = ::pread(fd, bytes + done, size - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      ::munmap(p, size);
      throw Error(fmt::format("{}: reading byte {} of {} failed: {}", path, done, size, err ? std::strerror(err) : "the file became shorter"));
    }
    done += size_t(n);
  }
  ::mprotect(p, size, PROT_READ);
  return static_cast<const std::byte *>(p);
}

}  // namespace

void set_file_loading(FileLoading how) { g_file_loading.store(how); }

MappedFile::MappedFile(const std::string &path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(fmt::format("{}: not a regular file", path));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0 && g_file_loading.load() == FileLoading::Read) {
    try {
      data_ = read_whole_file(fd, size_, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
  } else if (size_ > 0) {
    void *p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error(fmt::format("{}: cannot map {} bytes: {}", path, size_, std::strerror(err)));
    }
    data_ = static_cast<const std::byte *>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte *>(data_), size_);
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<std::byte *>(data_), size_);
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void ByteReader::need(uint64_t n, std::string_view field) const {
  if (n > bytes_.size() - pos_)
    throw Error(fmt::format("{}: truncated while reading {} at offset {}: needs {} bytes, {} left",
                            file_, field, pos_, n, bytes_.size() - pos_));
}

std::string_view ByteReader::read_bytes(uint64_t n, std::string_view field) {
  need(n, field);
  std::string_view s(reinterpret_cast<const char *>(bytes_.data()) + pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return s;
}

void ByteReader::skip(uint64_t n, std::string_view field) {
  need(n, field);
  pos_ += static_cast<size_t>(n);
}

}  // namespace kdsl::models
