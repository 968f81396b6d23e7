// gguf_writer.cpp - serializes metadata, tensor infos and aligned tensor data in GGUF layout
#include "models/gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kdsl/error.h>

#include "models/common/atomic_file.h"

namespace kdsl::models {

GgufWriter::GgufWriter(uint32_t version) : version_(version) {
  if (version != 2 && version != 3) throw Error(fmt::format("GGUF writer: version must be 2 or 3, found {}", version));
}

void GgufWriter::set(const std::string &key, GgufValue value) {
  if (key == "general.alignment") {
    uint32_t a = value.type() == GgufValueType::U32 ? std::get<uint32_t>(value.storage()) : 0;
    if (a == 0 || (a & (a - 1)) != 0)
      throw Error(fmt::format("GGUF writer: general.alignment must be a u32 power of two, found {} {}",
                              value_type_name(value.type()), value.to_string()));
  }
  for (auto &[k, v] : metadata_)
    if (k == key) {
      v = std::move(value);
      return;
    }
  metadata_.emplace_back(key, std::move(value));
}

uint64_t GgufWriter::tensor_bytes(GgmlType type, const std::vector<int64_t> &shape) {
  const GgmlTypeTraits &traits = ggml_type_traits(type);
  if (shape.empty() || shape.size() > 4)
    throw Error(fmt::format("GGUF writer: a tensor has 1 to 4 dimensions, found {}", shape.size()));
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d <= 0 || elements > INT64_MAX / d)
      throw Error(fmt::format("GGUF writer: shape [{}] has a zero, negative or overflowing dimension", fmt::join(shape, ", ")));
    elements *= d;
  }
  if (shape[0] % traits.block_elements != 0)
    throw Error(fmt::format("GGUF writer: shape [{}]: the first dimension must be a multiple of {}'s block size {}",
                            fmt::join(shape, ", "), traits.ggml_name, traits.block_elements));
  return uint64_t(elements / traits.block_elements) * uint64_t(traits.block_bytes);
}

void GgufWriter::add_tensor(const std::string &name, std::vector<int64_t> shape, GgmlType type,
                            std::span<const std::byte> data) {
  uint64_t bytes = tensor_bytes(type, shape);
  if (data.size() != bytes)
    throw Error(fmt::format("GGUF writer: tensor '{}' ({} [{}]) needs {} bytes, given {}", name,
                            ggml_type_traits(type).ggml_name, fmt::join(shape, ", "), bytes, data.size()));
  tensors_.push_back({name, std::move(shape), type, bytes, {data.begin(), data.end()}, nullptr});
}

void GgufWriter::add_tensor(const std::string &name, std::vector<int64_t> shape, GgmlType type,
                            std::function<void(std::span<std::byte>)> fill) {
  uint64_t bytes = tensor_bytes(type, shape);
  tensors_.push_back({name, std::move(shape), type, bytes, {}, std::move(fill)});
}

uint64_t GgufWriter::alignment() const {
  for (const auto &[k, v] : metadata_)
    if (k == "general.alignment") return std::get<uint32_t>(v.storage());
  return 32;
}

namespace {

using Out = std::function<void(const void *, size_t)>;

template <class T>
void put(const Out &out, T v) {
  out(&v, sizeof v);
}

void put_string(const Out &out, const std::string &s) {
  put<uint64_t>(out, s.size());
  out(s.data(), s.size());
}

void put_value(const Out &out, const GgufValue &v) {
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(out, x);
        } else if constexpr (std::is_same_v<T, GgufArrayRef>) {
          const GgufArray &a = x.get();
          // GgufArray holds only elements of its type, so each is written as it is.
          put<uint32_t>(out, uint32_t(a.type()));
          put<uint64_t>(out, a.size());
          for (size_t i = 0; i < a.size(); ++i) put_value(out, a[i]);
        } else if constexpr (std::is_same_v<T, bool>) {
          put<uint8_t>(out, x ? 1 : 0);
        } else {
          put<T>(out, x);
        }
      },
      v.storage());
}

}  // namespace

void GgufWriter::emit(const Out &raw) const {
  uint64_t written = 0;
  Out out = [&](const void *p, size_t n) {
    raw(p, n);
    written += n;
  };
  const uint64_t align = alignment();
  auto pad = [&] {
    static const char zeros[64] = {};
    uint64_t n = (align - written % align) % align;
    while (n > 0) {
      uint64_t k = std::min<uint64_t>(n, sizeof zeros);
      out(zeros, k);
      n -= k;
    }
  };
  out("GGUF", 4);
  put<uint32_t>(out, version_);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, metadata_.size());
  for (const auto &[k, v] : metadata_) {
    put_string(out, k);
    put<uint32_t>(out, uint32_t(v.type()));
    put_value(out, v);
  }
  uint64_t offset = 0;
  for (const Tensor &t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, uint32_t(t.shape.size()));
    for (int64_t d : t.shape) put<uint64_t>(out, uint64_t(d));
    put<uint32_t>(out, uint32_t(t.type));
    put<uint64_t>(out, offset);
    offset += (t.bytes + align - 1) / align * align;
  }
  pad();
  std::vector<std::byte> buffer;
  for (const Tensor &t : tensors_) {
    if (t.fill) {
      buffer.assign(t.bytes, std::byte{0});
      t.fill(buffer);
      out(buffer.data(), buffer.size());
    } else {
      out(t.data.data(), t.data.size());
    }
    pad();
  }
}

std::vector<std::byte> GgufWriter::to_bytes() const {
  std::vector<std::byte> bytes;
  emit([&](const void *p, size_t n) {
    const auto *b = static_cast<const std::byte *>(p);
    bytes.insert(bytes.end(), b, b + n);
  });
  return bytes;
}

void GgufWriter::write(const std::string &path) const {
  AtomicFile out(path);
  emit([&](const void *p, size_t n) { out.write(p, n); });
  out.commit();
}

}  // namespace kdsl::models
