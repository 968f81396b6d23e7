// gguf_file.h - a parsed GGUF v2/v3 file: metadata, tensor infos and tensor data pointers into an mmap
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/gguf/gguf_types.h"
#include "models/gguf/gguf_value.h"

namespace kdsl::models {

class MappedFile;

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous dimension
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t bytes = 0;
  const std::byte *data = nullptr;

  int64_t elements() const;
  std::string shape_string() const;  // "[4096, 32000]"
};

class GgufFile {
 public:
  // Maps and parses `path`. Every malformed field throws kdsl::Error naming the file, the
  // field and the values found; nothing is read outside the file.
  explicit GgufFile(const std::string &path);
  // Parses a copy of an in-memory image; `name` stands in for the path in messages.
  static GgufFile from_bytes(std::span<const std::byte> bytes, std::string name);

  const std::string &path() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // where the data section starts in the file

  // Key-value pairs in file order.
  const std::vector<std::pair<std::string, GgufValue>> &metadata() const { return metadata_; }
  const GgufValue *find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: a missing key or a value of the wrong type throws kdsl::Error naming the
  // file, the key, the expected and the found type. The find_ forms return nullopt when absent.
  const GgufValue &get(std::string_view key) const;
  std::string get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;  // any numeric type
  bool get_bool(std::string_view key) const;
  std::optional<std::string> find_string(std::string_view key) const;
  std::optional<int64_t> find_int(std::string_view key) const;
  std::optional<double> find_float(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  // An array whose elements all have type `element`.
  const GgufArray &get_array(std::string_view key, GgufValueType element) const;
  std::vector<std::string> get_string_array(std::string_view key) const;

  const std::vector<GgufTensorInfo> &tensors() const { return tensors_; }
  const GgufTensorInfo *find_tensor(std::string_view name) const;
  const GgufTensorInfo &tensor(std::string_view name) const;  // throws naming the file and tensor

 private:
  GgufFile() = default;
  void parse();

  std::shared_ptr<const MappedFile> file_;
  std::shared_ptr<const std::vector<std::byte>> owned_;
  std::span<const std::byte> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;  // name -> position in tensors_
};

}  // namespace kdsl::models
