// atomic_file.cpp - temporary file, checked writes, rename into place
#include "models/common/atomic_file.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kdsl::models {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) throw Error(fmt::format("{}: cannot create: {}", tmp_, std::strerror(errno)));
}

AtomicFile::~AtomicFile() {
  if (!file_) return;
  std::fclose(file_);
  std::remove(tmp_.c_str());
}

void AtomicFile::write(const void *data, size_t bytes) {
  // A failed write is remembered and reported by commit(): one check for a run of writes.
  if (bytes && !failed_) failed_ = std::fwrite(data, 1, bytes, file_) != bytes;
}

void AtomicFile::commit() {
  if (!file_) throw Error(fmt::format("{}: already written", path_));
  bool ok = !failed_;
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok) {
    std::remove(tmp_.c_str());
    throw Error(fmt::format("{}: write failed (disk full?)", path_));
  }
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::remove(tmp_.c_str());
    throw Error(fmt::format("{}: cannot rename {} into place: {}", path_, tmp_, ec.message()));
  }
}

}  // namespace kdsl::models
