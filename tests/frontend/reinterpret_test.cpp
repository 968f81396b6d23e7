// reinterpret_test.cpp - reinterpret<U>(ptr): the same byte address, later offsets in U elements; loads and stores through it, scalar and block pointers
#include <cstring>

#include <kdsl/kdsl.h>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace reinterpret_test {

constexpr int kBlock = 32;
constexpr int kRecord = 34;  // an f16 scale, then 32 int8 (ggml's Q8_0 block)

// out[r] = scale[r] * sum of the record's int8s; the scale read three ways that must agree.
void records(Ptr<u8> bytes, Ptr<f32> out, Scalar<i32> n) {
  auto r = program_id(0) * kBlock + arange<kBlock>();
  auto m = r < n;
  auto scale = cast<f32>(load(reinterpret<f16>(bytes) + r * (kRecord / 2), m, 0));  // half index 17 r
  auto scale_at = cast<f32>(load(reinterpret<f16>(bytes + r * kRecord), m, 0));      // block of byte pointers
  auto base = reinterpret<i8>(bytes + r * kRecord + 2);                                 // [kBlock] pointers to the int8s
  auto q = load(expand_dims<1>(base) + expand_dims<0>(arange<32>()), expand_dims<1>(m), 0);  // [kBlock, 32]
  auto total = sum<1>(cast<f32>(q));
  store(out + r, where(scale == scale_at, scale * total, NAN), m);
}

// Stores through a reinterpreted pointer: f32 bits written as u32, f16 values into a byte buffer.
void stores(Ptr<f32> x, Ptr<u32> bits, Ptr<u8> halves, Scalar<i32> n) {
  auto i = program_id(0) * kBlock + arange<kBlock>();
  auto m = i < n;
  auto v = load(x + i, m, 0);
  store(reinterpret<f32>(bits) + i, v, m);
  store(reinterpret<f16>(halves) + i, cast<f16>(v), m);
}

}  // namespace reinterpret_test

TEST_CASE("frontend: reinterpret<f16> and <i8> of byte pointers read records at their byte offsets") {
  KDSL_TEST_RNG(rng);
  for (int n : {reinterpret_test::kBlock * 3, reinterpret_test::kBlock * 2 + 9}) {
    CAPTURE(n);
    std::vector<uint8_t> bytes(size_t(n) * reinterpret_test::kRecord);
    std::vector<double> ref(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      uint16_t scale = f32_to_f16_bits(std::uniform_real_distribution<float>(-2, 2)(rng));
      std::memcpy(&bytes[size_t(r) * reinterpret_test::kRecord], &scale, 2);
      double total = 0;
      for (int j = 0; j < 32; ++j) {
        int8_t q = int8_t(rng());
        std::memcpy(&bytes[size_t(r) * reinterpret_test::kRecord + 2 + size_t(j)], &q, 1);
        total += q;
      }
      ref[size_t(r)] = double(f16_bits_to_f32(scale)) * total;
    }
    std::vector<float> out(static_cast<size_t>(n));
    compile<reinterpret_test::records>(cpu())(grid(cdiv(n, reinterpret_test::kBlock)), bytes.data(), out.data(), n);
    expect_close({"records", 1e-6, 1}, size_t(n), [&](size_t i) { return double(out[i]); }, [&](size_t i) { return ref[i]; });
  }
}

TEST_CASE("frontend: stores through reinterpret<U> write U's bytes at the same address") {
  KDSL_TEST_RNG(rng);
  const int n = reinterpret_test::kBlock * 2 + 3;
  auto x = random_values<f32>(rng, size_t(n), -100, 100);
  std::vector<uint32_t> bits(size_t(n) + 1, 0xdeadbeef);
  std::vector<uint8_t> halves(size_t(2 * n) + 2, 0x5a);
  compile<reinterpret_test::stores>(cpu())(grid(cdiv(n, reinterpret_test::kBlock)), x.data(), bits.data(), halves.data(), n);
  size_t bad = 0;
  for (int i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, &halves[size_t(2 * i)], 2);
    if (bits[size_t(i)] != std::bit_cast<uint32_t>(x[size_t(i)]) || h != f32_to_f16_bits(x[size_t(i)])) ++bad;
  }
  CHECK(bad == 0);
  CHECK(bits[size_t(n)] == 0xdeadbeef);  // nothing past the end
  CHECK(halves[size_t(2 * n)] == 0x5a);
}
