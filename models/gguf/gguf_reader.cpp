// gguf_reader.cpp - parses GGUF headers defensively: every count, length, type and offset is checked
#include <cctype>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kdsl/error.h>

#include <unordered_set>

#include "models/common/mapped_file.h"
#include "models/common/printable.h"
#include "models/gguf/gguf_file.h"

namespace kdsl::models {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read little-endian
constexpr int kMaxDims = 4;              // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;        // nested arrays deeper than this are rejected, not recursed

// The fewest bytes a value of type `t` can occupy, to bound counts by the bytes left.
uint64_t min_value_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: case GgufValueType::String: return 8;
    case GgufValueType::Array: return 12;
  }
  return 1;
}

class Parser {
 public:
  explicit Parser(ByteReader &r) : r_(r) {}

  // A count read from `field` that must fit in the bytes left, each item taking at least `min_bytes`.
  uint64_t count(std::string_view field, uint64_t min_bytes) {
    uint64_t n = r_.read<uint64_t>(field);
    if (n > r_.remaining() / min_bytes)
      throw Error(fmt::format("{}: {}: count {} is impossible: {} items of at least {} bytes cannot fit in the "
                              "{} bytes left at offset {}",
                              r_.file(), field, n, n, min_bytes, r_.remaining(), r_.pos()));
    return n;
  }

  // A string as a view into the file's bytes.
  std::string_view string_view(std::string_view field) {
    uint64_t n = r_.read<uint64_t>(field);
    if (n > r_.remaining())
      throw Error(fmt::format("{}: {}: string length {} runs past the end of the file ({} bytes left at offset {})",
                              r_.file(), field, n, r_.remaining(), r_.pos()));
    return r_.read_bytes(n, field);
  }
  std::string string(std::string_view field) { return std::string(string_view(field)); }

  GgufValueType value_type(std::string_view field) {
    uint32_t t = r_.read<uint32_t>(field);
    if (!is_known_value_type(t))
      throw Error(fmt::format("{}: {}: unknown metadata value type {} (expected 0..12)", r_.file(), field, t));
    return GgufValueType(t);
  }

  GgufValue value(GgufValueType t, const std::string &field, int depth) {
    switch (t) {
      case GgufValueType::U8: return r_.read<uint8_t>(field);
      case GgufValueType::I8: return r_.read<int8_t>(field);
      case GgufValueType::U16: return r_.read<uint16_t>(field);
      case GgufValueType::I16: return r_.read<int16_t>(field);
      case GgufValueType::U32: return r_.read<uint32_t>(field);
      case GgufValueType::I32: return r_.read<int32_t>(field);
      case GgufValueType::F32: return r_.read<float>(field);
      case GgufValueType::U64: return r_.read<uint64_t>(field);
      case GgufValueType::I64: return r_.read<int64_t>(field);
      case GgufValueType::F64: return r_.read<double>(field);
      case GgufValueType::Bool: {
        uint8_t b = r_.read<uint8_t>(field);
        if (b > 1) throw Error(fmt::format("{}: {}: bool must be 0 or 1, found {}", r_.file(), field, b));
        return b == 1;
      }
      case GgufValueType::String: return string(field);
      case GgufValueType::Array: {
        if (depth >= kMaxArrayDepth)
          throw Error(fmt::format("{}: {}: arrays nested deeper than {} levels", r_.file(), field, kMaxArrayDepth));
        GgufArray a(value_type(field + " element type"));
        uint64_t n = count(field + " element count", min_value_bytes(a.type()));
        if (a.type() == GgufValueType::String) {
          for (uint64_t i = 0; i < n; ++i) a.append_string(string_view(field));
        } else if (a.type() == GgufValueType::Array) {
          for (uint64_t i = 0; i < n; ++i) a.push_back(value(a.type(), field, depth + 1));
        } else {
          // Numbers in one copy: `count` has checked that n elements fit in the bytes left.
          std::string_view raw = r_.read_bytes(n * min_value_bytes(a.type()), field);
          if (a.type() == GgufValueType::Bool)
            for (size_t i = 0; i < raw.size(); ++i)
              if (uint8_t(raw[i]) > 1)
                throw Error(fmt::format("{}: {}: element {}: bool must be 0 or 1, found {}", r_.file(), field, i,
                                        uint8_t(raw[i])));
          a.append_bytes(raw, size_t(n));
        }
        return a;
      }
    }
    throw Error(fmt::format("{}: {}: unknown metadata value type {}", r_.file(), field, uint32_t(t)));
  }

 private:
  ByteReader &r_;
};

}  // namespace

GgufFile::GgufFile(const std::string &path) : file_(std::make_shared<MappedFile>(path)), name_(path) {
  bytes_ = file_->bytes();
  parse();
}

GgufFile GgufFile::from_bytes(std::span<const std::byte> bytes, std::string name) {
  GgufFile f;
  f.owned_ = std::make_shared<std::vector<std::byte>>(bytes.begin(), bytes.end());
  f.bytes_ = *f.owned_;
  f.name_ = std::move(name);
  f.parse();
  return f;
}

void GgufFile::parse() {
  ByteReader r(bytes_, name_);
  Parser p(r);
  uint32_t magic = r.read<uint32_t>("magic");
  if (magic != kMagic) {
    std::string found;
    for (int i = 0; i < 4; ++i) {
      char c = char((magic >> (8 * i)) & 0xFF);
      found += std::isprint(uint8_t(c)) ? std::string(1, c) : fmt::format("\\x{:02x}", uint8_t(c));
    }
    throw Error(fmt::format("{}: magic: expected \"GGUF\", found \"{}\": not a GGUF file", name_, found));
  }
  version_ = r.read<uint32_t>("version");
  if (version_ == 1)
    throw Error(fmt::format("{}: version: GGUF version 1 is not supported (expected 2 or 3); re-convert the model", name_));
  if (version_ == 0x02000000 || version_ == 0x03000000)
    throw Error(fmt::format("{}: version: found {:#x}, a big-endian GGUF; only little-endian files are supported",
                            name_, version_));
  if (version_ != 2 && version_ != 3)
    throw Error(fmt::format("{}: version: expected 2 or 3, found {}", name_, version_));

  uint64_t tensor_count = p.count("tensor_count", 24);  // name length, dims, type, offset
  uint64_t kv_count = p.count("metadata_kv_count", 13);  // key length, type, one byte

  std::unordered_set<std::string_view> keys;  // views into the file's bytes, which outlive the parse
  metadata_.reserve(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string_view key = p.string_view(fmt::format("metadata key {}", i));
    if (!keys.insert(key).second)
      throw Error(fmt::format("{}: metadata key {}: duplicate key '{}'", name_, i, printable(key)));
    std::string field = fmt::format("metadata '{}'", printable(key));
    GgufValueType t = p.value_type(field + " type");
    GgufValue v = p.value(t, field, 0);
    metadata_.emplace_back(std::string(key), std::move(v));
  }

  if (const GgufValue *a = find("general.alignment")) {
    if (a->type() != GgufValueType::U32)
      throw Error(fmt::format("{}: metadata 'general.alignment': expected a u32, found {} {}", name_,
                              value_type_name(a->type()), a->to_string()));
    uint32_t align = std::get<uint32_t>(a->storage());
    if (align == 0 || (align & (align - 1)) != 0)
      throw Error(fmt::format("{}: metadata 'general.alignment': expected a power of two, found {}", name_, align));
    alignment_ = align;
  }

  tensors_.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    t.name = p.string(fmt::format("tensor {} name", i));
    std::string field = fmt::format("tensor '{}'", printable(t.name));
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) throw Error(fmt::format("{}: {}: duplicate tensor name", name_, field));
    uint32_t dims = r.read<uint32_t>(field + " n_dims");
    if (dims == 0 || dims > kMaxDims)
      throw Error(fmt::format("{}: {} n_dims: expected 1..{}, found {}", name_, field, kMaxDims, dims));
    int64_t elements = 1;
    for (uint32_t d = 0; d < dims; ++d) {
      uint64_t ne = r.read<uint64_t>(field + " shape");
      if (ne == 0 || ne > uint64_t(INT64_MAX) || uint64_t(elements) > uint64_t(INT64_MAX) / ne)
        throw Error(fmt::format("{}: {} shape: dimension {} is {}, which is zero or overflows the element count",
                                name_, field, d, ne));
      elements *= int64_t(ne);
      t.shape.push_back(int64_t(ne));
    }
    uint32_t type = r.read<uint32_t>(field + " type");
    auto traits = ggml_type_traits(type);
    if (!traits || !traits->readable)
      throw Error(fmt::format("{}: {} type: {} is not supported (supported: {})", name_, field,
                              traits ? std::string(traits->ggml_name) : fmt::format("unknown type id {}", type),
                              formats::weight_type_names([](const formats::WeightTypeInfo &t) { return t.readable; }, true)));
    t.type = GgmlType(type);
    if (t.shape[0] % traits->block_elements != 0)
      throw Error(fmt::format("{}: {} shape {}: the first dimension must be a multiple of {}'s block size {}", name_,
                              field, t.shape_string(), traits->ggml_name, traits->block_elements));
    // elements < 2^63 and block_bytes <= 292, so this cannot overflow 64 bits unsigned
    t.bytes = uint64_t(elements / traits->block_elements) * uint64_t(traits->block_bytes);
    t.offset = r.read<uint64_t>(field + " offset");
    if (t.offset % alignment_ != 0)
      throw Error(fmt::format("{}: {} offset {} is not a multiple of the alignment {}", name_, field, t.offset,
                              alignment_));
    tensors_.push_back(std::move(t));
  }

  data_offset_ = (uint64_t(r.pos()) + alignment_ - 1) / alignment_ * alignment_;
  uint64_t data_bytes = data_offset_ <= bytes_.size() ? bytes_.size() - data_offset_ : 0;
  if (!tensors_.empty() && data_offset_ > bytes_.size())
    throw Error(fmt::format("{}: data section: starts at offset {} but the file has {} bytes (truncated)", name_,
                            data_offset_, bytes_.size()));
  for (GgufTensorInfo &t : tensors_) {
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset)
      throw Error(fmt::format("{}: tensor '{}' ({} {}): data at offset {} + {} bytes runs past the end of the "
                              "{}-byte data section (truncated file?)",
                              name_, printable(t.name), ggml_type_name(uint32_t(t.type)), t.shape_string(), t.offset, t.bytes,
                              data_bytes));
    t.data = bytes_.data() + data_offset_ + t.offset;
  }
}

}  // namespace kdsl::models
