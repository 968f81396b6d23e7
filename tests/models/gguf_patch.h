// gguf_patch.h - rewriting one tensor's type id in a written GGUF file, for tests of types kdsl refuses
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace kdsl::test {

// Sets the type id in tensor `name`'s info record (name, n_dims, dims, type) in place; the
// data stays as it was, so only a reader that refuses the type before its bytes is tested.
inline void set_tensor_type_id(const std::string &path, const std::string &name, uint32_t type) {
  std::vector<char> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string key(8, '\0');
  uint64_t length = name.size();
  std::memcpy(key.data(), &length, 8);
  key += name;
  auto at = std::search(bytes.begin(), bytes.end(), key.begin(), key.end());
  REQUIRE_MESSAGE(at != bytes.end(), "tensor " << name << " not found in " << path);
  size_t pos = size_t(at - bytes.begin()) + key.size();
  uint32_t dims;
  std::memcpy(&dims, &bytes[pos], 4);
  pos += 4 + 8 * size_t(dims);
  std::memcpy(&bytes[pos], &type, 4);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace kdsl::test
