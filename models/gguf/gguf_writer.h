// gguf_writer.h - builds GGUF v3 (or v2) files from any metadata and tensors, for tests and tools
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "models/gguf/gguf_types.h"
#include "models/gguf/gguf_value.h"

namespace kdsl::models {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3);

  // Sets a key (replacing an earlier value); keys are written in the order first set.
  // `general.alignment` (a u32 power of two) sets the data alignment, 32 by default.
  void set(const std::string &key, GgufValue value);

  // A tensor whose bytes are given now (copied).
  void add_tensor(const std::string &name, std::vector<int64_t> shape, GgmlType type, std::span<const std::byte> data);
  // A tensor whose bytes are produced at write time, one tensor in memory at a time, so tools
  // can write models larger than they want to hold. `fill` receives exactly the tensor's size.
  void add_tensor(const std::string &name, std::vector<int64_t> shape, GgmlType type,
                  std::function<void(std::span<std::byte>)> fill);

  // Writes the file (to a temporary name, renamed into place); throws kdsl::Error on I/O failure.
  void write(const std::string &path) const;
  std::vector<std::byte> to_bytes() const;

  // Bytes a tensor of this type and shape occupies; throws when the shape does not fit the type's blocks.
  static uint64_t tensor_bytes(GgmlType type, const std::vector<int64_t> &shape);

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    GgmlType type;
    uint64_t bytes;
    std::vector<std::byte> data;
    std::function<void(std::span<std::byte>)> fill;
  };
  void emit(const std::function<void(const void *, size_t)> &out) const;
  uint64_t alignment() const;

  uint32_t version_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace kdsl::models
