// gguf_test.cpp - GGUF round trips: every metadata type, nested arrays, every tensor type, alignment, versions
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <malloc.h>
#include <kdsl/error.h>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "shared_models.h"

using namespace kdsl::models;

namespace {

std::vector<std::byte> pattern(size_t n, uint8_t seed) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = std::byte(uint8_t(i * 131 + seed));
  return b;
}

GgufWriter sample_writer(uint32_t version) {
  GgufWriter w(version);
  w.set("general.architecture", "llama");
  w.set("u8", uint8_t(200));
  w.set("i8", int8_t(-100));
  w.set("u16", uint16_t(60000));
  w.set("i16", int16_t(-30000));
  w.set("u32", uint32_t(4000000000u));
  w.set("i32", int32_t(-2000000000));
  w.set("f32", 1.5f);
  w.set("bool", true);
  w.set("string", "héllo");
  w.set("u64", uint64_t(1) << 60);
  w.set("i64", int64_t(-1) << 60);
  w.set("f64", 2.25);
  w.set("strings", GgufValue::array(std::vector<std::string>{"a", "", "ccc"}));
  w.set("floats", GgufValue::array(std::vector<float>{1.0f, -2.0f}));
  w.set("empty", GgufValue::array(std::vector<int32_t>{}));
  GgufArray nested{GgufValueType::Array, {GgufValue::array(std::vector<uint8_t>{1, 2}), GgufValue::array(std::vector<uint8_t>{3})}};
  w.set("nested", nested);
  return w;
}

}  // namespace

TEST_CASE("gguf: a written file reads back identically, v2 and v3, every tensor type") {
  for (uint32_t version : {2u, 3u}) {
    GgufWriter w = sample_writer(version);
    std::vector<std::tuple<std::string, std::vector<int64_t>, GgmlType>> specs = {
        {"f32", {3, 2}, GgmlType::F32},       {"f16", {5}, GgmlType::F16},          {"bf16", {2, 2, 2}, GgmlType::BF16},
        {"q8_0", {64, 3}, GgmlType::Q8_0},    {"q4_0", {32}, GgmlType::Q4_0},       {"q4_1", {32, 2}, GgmlType::Q4_1},
        {"q5_0", {96}, GgmlType::Q5_0},       {"q5_1", {32, 1, 2}, GgmlType::Q5_1}, {"q4_k", {256, 2}, GgmlType::Q4_K},
        {"q5_k", {512}, GgmlType::Q5_K},      {"q6_k", {256, 1, 1, 3}, GgmlType::Q6_K}};
    std::vector<std::vector<std::byte>> data;
    for (size_t i = 0; i < specs.size(); ++i) {
      auto &[name, shape, type] = specs[i];
      data.push_back(pattern(GgufWriter::tensor_bytes(type, shape), uint8_t(i)));
      w.add_tensor(name, shape, type, data.back());
    }
    std::string path = kdsl::test::scratch_path(fmt::format("roundtrip_v{}.gguf", version));
    w.write(path);
    GgufFile f(path);
    CHECK(f.version() == version);
    CHECK(f.alignment() == 32);
    GgufFile expected = GgufFile::from_bytes(w.to_bytes(), "memory");
    REQUIRE(f.metadata().size() == 17);
    CHECK(f.metadata() == expected.metadata());
    CHECK(f.get_string("string") == "héllo");
    CHECK(f.get_int("u32") == 4000000000);
    CHECK(f.get_int("i64") == -(int64_t(1) << 60));
    CHECK(f.get_float("f64") == 2.25);
    CHECK(f.get_bool("bool"));
    CHECK(std::get<int8_t>(f.get("i8").storage()) == -100);
    CHECK(f.get_string_array("strings") == std::vector<std::string>{"a", "", "ccc"});
    CHECK(f.get("nested").as_array().array(1)[0] == GgufValue(uint8_t(3)));
    REQUIRE(f.tensors().size() == specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      const GgufTensorInfo &t = f.tensor(std::get<0>(specs[i]));
      CHECK(t.shape == std::get<1>(specs[i]));
      CHECK(t.type == std::get<2>(specs[i]));
      CHECK(t.offset % 32 == 0);
      CHECK(t.bytes == data[i].size());
      CHECK(std::equal(data[i].begin(), data[i].end(), t.data));
    }
    CHECK(f.tensor("q6_k").shape_string() == "[256, 1, 1, 3]");
  }
}

TEST_CASE("gguf: general.alignment moves the data section and offsets") {
  GgufWriter w;
  w.set("general.alignment", uint32_t(256));
  auto a = pattern(12, 1), b = pattern(8, 2);
  w.add_tensor("a", {3}, GgmlType::F32, a);
  w.add_tensor("b", {4}, GgmlType::F16, b);
  GgufFile f = GgufFile::from_bytes(w.to_bytes(), "aligned");
  CHECK(f.alignment() == 256);
  CHECK(f.data_offset() % 256 == 0);
  CHECK(f.tensor("b").offset == 256);
  CHECK(std::equal(b.begin(), b.end(), f.tensor("b").data));
  CHECK_THROWS_WITH_AS(w.set("general.alignment", uint32_t(48)), doctest::Contains("power of two, found u32 48"),
                       kdsl::Error);
}

TEST_CASE("gguf: typed getters name the file, key and types") {
  GgufFile f = GgufFile::from_bytes(sample_writer(3).to_bytes(), "sample.gguf");
  CHECK_THROWS_WITH_AS(f.get_string("u32"), "sample.gguf: metadata 'u32': expected a string, found u32 4000000000",
                       kdsl::Error);
  CHECK_THROWS_WITH_AS(f.get_int("missing.key"), "sample.gguf: metadata 'missing.key' is missing", kdsl::Error);
  CHECK_THROWS_WITH_AS(f.get_string_array("floats"),
                       doctest::Contains("metadata 'floats': expected an array of string, found array f32[2] {1, -2}"),
                       kdsl::Error);
  CHECK_THROWS_WITH_AS(f.get_int("f32"), doctest::Contains("expected an integer, found f32 1.5"), kdsl::Error);
  CHECK_THROWS_WITH_AS(f.tensor("nope"), "sample.gguf: tensor 'nope' is missing", kdsl::Error);
  CHECK(f.find_int("nope") == std::nullopt);
  CHECK(f.find_float("u8") == 200.0);
}

TEST_CASE("gguf: the writer rejects tensors that do not fit their type") {
  GgufWriter w;
  auto data = pattern(10, 0);
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {3}, GgmlType::F32, data), "GGUF writer: tensor 't' (F32 [3]) needs 12 bytes, given 10",
                       kdsl::Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("q", {48}, GgmlType::Q8_0, data), doctest::Contains("multiple of Q8_0's block size 32"),
                       kdsl::Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("z", {0}, GgmlType::F32, data), doctest::Contains("zero, negative or overflowing"),
                       kdsl::Error);
}

TEST_CASE("gguf: arrays of numbers and strings are held compactly, about a byte per u8 element") {
  // 4 MiB of u8 used to become 4 Mi GgufValues of 40 bytes (160 MiB); now the parse holds
  // one copy of the elements. mallinfo2 counts the heap in use, the image copy included.
  const size_t n = size_t(4) << 20;
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = uint8_t(i * 7);
  GgufWriter w;
  w.set("big", GgufValue::array(bytes));
  std::vector<std::byte> image = w.to_bytes();
  size_t before = mallinfo2().uordblks + mallinfo2().hblkhd;
  GgufFile f = GgufFile::from_bytes(image, "big.gguf");
  size_t after = mallinfo2().uordblks + mallinfo2().hblkhd;
  CHECK(after - before < 3 * n);  // the image copy and the elements, nothing per element
  const GgufArray &a = f.get_array("big", GgufValueType::U8);
  REQUIRE(a.size() == n);
  CHECK(a.number<uint8_t>(12345) == uint8_t(12345 * 7));
  CHECK(a[n - 1] == GgufValue(uint8_t((n - 1) * 7)));
  CHECK(a.numbers<uint8_t>() == bytes);

  GgufFile s = GgufFile::from_bytes(sample_writer(3).to_bytes(), "sample.gguf");
  const GgufArray &strings = s.get_array("strings", GgufValueType::String);
  CHECK(strings.string(2) == "ccc");
  CHECK(strings.string(1).empty());
  CHECK(s.get_array("floats", GgufValueType::F32).numbers<float>() == std::vector<float>{1.0f, -2.0f});
  CHECK_THROWS_WITH_AS(GgufArray(GgufValueType::U8, {GgufValue(1.5f)}), "GGUF array of u8: cannot hold a f32", kdsl::Error);
}
