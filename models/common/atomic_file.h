// atomic_file.h - an output file written under a temporary name and renamed into place, so no reader ever sees it half-written
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>

namespace kdsl::models {

// Writes go to `path.tmp`; commit() closes it and renames it over `path`. An AtomicFile
// destroyed without commit() (an exception, a failed write) removes the temporary file and
// leaves `path` as it was. Errors throw kdsl::Error naming the file.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  void write(const void *data, size_t bytes);
  void commit();
  const std::string &path() const { return path_; }

 private:
  std::string path_, tmp_;
  std::FILE *file_ = nullptr;
  bool failed_ = false;
};

}  // namespace kdsl::models
