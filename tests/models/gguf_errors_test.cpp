// gguf_errors_test.cpp - every malformed-GGUF error, and a randomized-mutation fuzz of the reader
#include <doctest/doctest.h>

#include <cstring>
#include <kdsl/error.h>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/sampler/rng.h"

using namespace kdsl::models;
using Bytes = std::vector<std::byte>;

namespace {

// One u32 key "k" = 7 and one F32 tensor "t" of shape [4]. Layout: magic 0, version 4,
// tensor_count 8, kv_count 16, key length 24, "k" 32, value type 33, value 37, tensor name
// length 41, "t" 49, n_dims 50, ne0 54, type 62, offset 66; data at 96, 16 bytes padded to 32.
Bytes minimal() {
  GgufWriter w;
  w.set("k", uint32_t(7));
  float v[4] = {1, 2, 3, 4};
  w.add_tensor("t", {4}, GgmlType::F32, std::as_bytes(std::span(v)));
  return w.to_bytes();
}

template <class T>
Bytes patch(Bytes b, size_t offset, T value) {
  std::memcpy(b.data() + offset, &value, sizeof value);
  return b;
}

std::string error_of(const Bytes &b) {
  try {
    GgufFile::from_bytes(b, "bad.gguf");
  } catch (const kdsl::Error &e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("gguf errors: the minimal file is what the offsets above assume") {
  Bytes b = minimal();
  REQUIRE(b.size() == 128);
  GgufFile f = GgufFile::from_bytes(b, "ok.gguf");
  CHECK(f.get_int("k") == 7);
  CHECK(f.data_offset() == 96);
  CHECK(f.tensor("t").bytes == 16);
}

TEST_CASE("gguf errors: header") {
  Bytes b = minimal();
  CHECK(error_of(patch(b, 0, uint32_t(0x58554747))) == "bad.gguf: magic: expected \"GGUF\", found \"GGUX\": not a GGUF file");
  CHECK(error_of(Bytes(b.begin(), b.begin() + 2)).find("truncated while reading magic") != std::string::npos);
  CHECK(error_of(patch(b, 4, uint32_t(1))).find("GGUF version 1 is not supported") != std::string::npos);
  CHECK(error_of(patch(b, 4, uint32_t(7))) == "bad.gguf: version: expected 2 or 3, found 7");
  CHECK(error_of(patch(b, 4, uint32_t(0x03000000))).find("big-endian GGUF") != std::string::npos);
  CHECK(error_of(patch(b, 8, uint64_t(1) << 60))
            .find("tensor_count: count 1152921504606846976 is impossible") != std::string::npos);
  CHECK(error_of(Bytes(b.begin(), b.begin() + 39)) ==
        "bad.gguf: tensor_count: count 1 is impossible: 1 items of at least 24 bytes cannot fit in the 23 bytes left at offset 16");
  CHECK(error_of(patch(b, 16, uint64_t(1000))).find("metadata_kv_count: count 1000 is impossible") != std::string::npos);
}

TEST_CASE("gguf errors: metadata") {
  Bytes b = minimal();
  CHECK(error_of(patch(b, 24, uint64_t(1) << 40))
            .find("metadata key 0: string length 1099511627776 runs past the end of the file") != std::string::npos);
  CHECK(error_of(patch(b, 33, uint32_t(99))) == "bad.gguf: metadata 'k' type: unknown metadata value type 99 (expected 0..12)");
  Bytes no_tensors = patch(b, 8, uint64_t(0));
  CHECK(error_of(Bytes(no_tensors.begin(), no_tensors.begin() + 39)) ==
        "bad.gguf: truncated while reading metadata 'k' at offset 37: needs 4 bytes, 2 left");
  Bytes boolean = patch(patch(b, 33, uint32_t(GgufValueType::Bool)), 37, uint8_t(2));
  CHECK(error_of(boolean).find("metadata 'k': bool must be 0 or 1, found 2") != std::string::npos);

  GgufWriter dup;
  dup.set("a", uint8_t(1));
  dup.set("b", uint8_t(2));
  Bytes d = dup.to_bytes();
  d[24 + 8 + 1 + 4 + 1 + 8] = std::byte('a');  // rename the second key to "a"
  CHECK(error_of(d) == "bad.gguf: metadata key 1: duplicate key 'a'");

  GgufValue deep = uint8_t(0);
  for (int i = 0; i < 10; ++i) deep = GgufArray{deep.type(), {deep}};
  GgufWriter nest;
  nest.set("deep", deep);
  CHECK(error_of(nest.to_bytes()).find("metadata 'deep': arrays nested deeper than 8 levels") != std::string::npos);

  GgufWriter big_array;
  big_array.set("arr", GgufValue::array(std::vector<uint32_t>{1, 2, 3}));
  Bytes a = patch(big_array.to_bytes(), 24 + 8 + 3 + 4 + 4, uint64_t(1) << 62);
  CHECK(error_of(a).find("metadata 'arr' element count: count 4611686018427387904 is impossible") != std::string::npos);

  GgufWriter al;
  al.set("general.alignment", uint32_t(32));
  Bytes c = patch(al.to_bytes(), 24 + 8 + 17 + 4, uint32_t(24));
  CHECK(error_of(c) == "bad.gguf: metadata 'general.alignment': expected a power of two, found 24");
  Bytes e = patch(al.to_bytes(), 24 + 8 + 17, uint32_t(GgufValueType::I32));
  CHECK(error_of(e) == "bad.gguf: metadata 'general.alignment': expected a u32, found i32 32");
}

TEST_CASE("gguf errors: tensor infos and data") {
  Bytes b = minimal();
  CHECK(error_of(patch(b, 50, uint32_t(5))) == "bad.gguf: tensor 't' n_dims: expected 1..4, found 5");
  CHECK(error_of(patch(b, 54, ~uint64_t(0))).find("dimension 0 is 18446744073709551615, which is zero or overflows") !=
        std::string::npos);
  CHECK(error_of(patch(b, 54, uint64_t(0))).find("dimension 0 is 0") != std::string::npos);
  CHECK(error_of(patch(b, 62, uint32_t(99))).find("tensor 't' type: unknown type id 99 is not supported") !=
        std::string::npos);
  CHECK(error_of(patch(b, 62, uint32_t(10))).find("tensor 't' type: Q2_K is not supported") != std::string::npos);
  CHECK(error_of(patch(b, 62, uint32_t(8))).find("shape [4]: the first dimension must be a multiple of Q8_0's block size 32") !=
        std::string::npos);
  CHECK(error_of(patch(b, 66, uint64_t(4))) == "bad.gguf: tensor 't' offset 4 is not a multiple of the alignment 32");
  CHECK(error_of(patch(b, 66, uint64_t(64))).find("data at offset 64 + 16 bytes runs past the end of the 32-byte data section") !=
        std::string::npos);
  CHECK(error_of(Bytes(b.begin(), b.begin() + 111)).find("runs past the end of the 15-byte data section (truncated file?)") !=
        std::string::npos);
  CHECK(error_of(Bytes(b.begin(), b.begin() + 80)).find("data section: starts at offset 96 but the file has 80 bytes") !=
        std::string::npos);

  GgufWriter two;
  float v[8] = {};
  two.add_tensor("m", {4, 2}, GgmlType::F32, std::as_bytes(std::span(v)));
  two.add_tensor("n", {4, 2}, GgmlType::F32, std::as_bytes(std::span(v)));
  Bytes t = two.to_bytes();
  // tensor 0 infos start at 24: name length, "m", n_dims, ne0 (at 37), ne1 (at 45)
  CHECK(error_of(patch(patch(t, 37, uint64_t(1) << 40), 45, uint64_t(1) << 40))
            .find("tensor 'm' shape: dimension 1 is 1099511627776, which is zero or overflows the element count") !=
        std::string::npos);
  t[24 + 8 + 1 + 4 + 16 + 4 + 8 + 8] = std::byte('m');  // rename "n" to "m"
  CHECK(error_of(t) == "bad.gguf: tensor 'm': duplicate tensor name");
}

TEST_CASE("gguf errors: randomized mutations never crash or read out of bounds") {
  GgufWriter w;
  w.set("general.architecture", "llama");
  w.set("general.alignment", uint32_t(64));
  w.set("tokens", GgufValue::array(std::vector<std::string>{"<s>", "a", "bc"}));
  w.set("scores", GgufValue::array(std::vector<float>{0.0f, -1.0f, -2.0f}));
  w.set("nested", GgufArray{GgufValueType::Array, {GgufValue::array(std::vector<int16_t>{1, 2})}});
  w.set("flag", false);
  std::vector<std::byte> q(34 * 2, std::byte{1}), f(4 * 6, std::byte{2});
  w.add_tensor("q", {64}, GgmlType::Q8_0, q);
  w.add_tensor("f", {3, 2}, GgmlType::F32, f);
  const Bytes original = w.to_bytes();
  REQUIRE_NOTHROW(GgufFile::from_bytes(original, "seed"));

  Rng rng(2024);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    Bytes b = original;
    switch (rng.next() % 4) {
      case 0:  // flip a few random bytes
        for (int k = 0, n = 1 + int(rng.next() % 4); k < n; ++k) b[rng.next() % b.size()] = std::byte(rng.next());
        break;
      case 1:  // truncate anywhere
        b.resize(rng.next() % b.size());
        break;
      case 2: {  // plant a large or small 64-bit count anywhere in the header
        size_t at = rng.next() % 200;
        uint64_t v = rng.next() % 2 ? rng.next() : rng.next() % 300;
        std::memcpy(b.data() + at, &v, 8);
        break;
      }
      default:  // insert or delete a byte in the header, shifting everything after it
        if (rng.next() % 2) b.insert(b.begin() + long(rng.next() % 200), std::byte(rng.next()));
        else b.erase(b.begin() + long(rng.next() % 200));
        break;
    }
    try {
      GgufFile g = GgufFile::from_bytes(b, "mutant");
      ++parsed;
      for (const GgufTensorInfo &t : g.tensors()) REQUIRE(g.data_offset() + t.offset + t.bytes <= b.size());
    } catch (const kdsl::Error &) {
      ++rejected;
    }
  }
  MESSAGE(parsed << " mutants parsed, " << rejected << " rejected");
  CHECK(parsed > 0);
  CHECK(rejected > 0);
}

TEST_CASE("gguf errors: keys, tensor names and string values from the file are escaped in messages") {
  GgufWriter key;
  key.set("\x1b[2J", uint8_t(1));
  key.set("bbbb", uint8_t(2));
  Bytes k = key.to_bytes();
  std::memcpy(k.data() + 24 + 8 + 4 + 4 + 1 + 8, "\x1b[2J", 4);  // rename the second key to the first
  CHECK(error_of(k).find("metadata key 1: duplicate key '\\x1b[2J'") != std::string::npos);

  GgufWriter t;
  float v[4] = {1, 2, 3, 4};
  t.add_tensor("\x1b]0;pwned\x07", {4}, GgmlType::F32, std::as_bytes(std::span(v)));
  Bytes b = patch(t.to_bytes(), 24 + 8 + 10, uint32_t(5));  // n_dims after the 10-byte name
  CHECK(error_of(b) == "bad.gguf: tensor '\\x1b]0;pwned\\x07' n_dims: expected 1..4, found 5");

  GgufWriter s;
  s.set("k", "\x1b[2J");
  GgufFile f = GgufFile::from_bytes(s.to_bytes(), "s.gguf");
  CHECK_THROWS_WITH_AS(f.get_int("k"), "s.gguf: metadata 'k': expected an integer, found string \"\\x1b[2J\"", kdsl::Error);
}
