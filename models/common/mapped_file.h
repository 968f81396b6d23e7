// mapped_file.h - a read-only memory-mapped file, and a bounds-checked little-endian reader over bytes
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace kdsl::models {

// How model files are brought into memory, for the whole process: mapped (the default: pages
// load on first touch and are shared with the page cache), or read whole into private memory
// (kdsl-run --no-mmap: no page faults on the file later, and a file changed on disk after loading
// cannot affect the run).
enum class FileLoading { Map, Read };
void set_file_loading(FileLoading how);

// The whole file mapped read-only; tensors point straight into it, so it must outlive them.
class MappedFile {
 public:
  explicit MappedFile(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;

  const std::string &path() const { return path_; }
  const std::byte *data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  std::string path_;
  const std::byte *data_ = nullptr;
  size_t size_ = 0;
};

// Reads little-endian values from a byte range; running past the end throws kdsl::Error
// naming the file and the field being read, so a truncated file never reads out of bounds.
class ByteReader {
 public:
  ByteReader(std::span<const std::byte> bytes, std::string file) : bytes_(bytes), file_(std::move(file)) {}

  template <class T>
  T read(std::string_view field) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), field);
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  // `n` raw bytes, as a view into the underlying range.
  std::string_view read_bytes(uint64_t n, std::string_view field);
  void skip(uint64_t n, std::string_view field);
  void need(uint64_t n, std::string_view field) const;

  size_t pos() const { return pos_; }
  void seek(size_t pos) { pos_ = pos; }
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t size() const { return bytes_.size(); }
  const std::string &file() const { return file_; }

 private:
  std::span<const std::byte> bytes_;
  std::string file_;
  size_t pos_ = 0;
};

}  // namespace kdsl::models
