// fp8_test.cpp - FP8 E4M3: the conversions against a brute-force nearest-code search, the F8_E4M3 block quantizer's round trip
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <kdsl/formats/fp8.h>
#include <vector>

#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_writer.h"
#include "models/gguf/quantize.h"
#include "models/sampler/rng.h"

using namespace kdsl::models;

namespace {

// E4M3's value from its definition (sign, exponent bias 7, 3 mantissa bits, exponent 0
// subnormal, S.1111.111 NaN), by pow rather than by bits.
double e4m3_by_definition(int code) {
  const int sign = code >> 7, exponent = (code >> 3) & 15, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return std::nan("");
  double magnitude = exponent == 0 ? mantissa / 8.0 * std::pow(2.0, -6) : (1 + mantissa / 8.0) * std::pow(2.0, exponent - 7);
  return sign ? -magnitude : magnitude;
}

// The finite code nearest to v, ties to the code with an even mantissa (its last bit 0), found
// by trying every code. Past 448 the nearest finite code is 448 itself: saturation.
uint8_t nearest_code(float v) {
  int best = -1;
  double best_distance = 0;
  for (int code = 0; code < 256; ++code) {
    double value = e4m3_by_definition(code);
    if (std::isnan(value) || (std::signbit(value) != std::signbit(v) && value != 0)) continue;
    if (value == 0 && (code >> 7) != int(std::signbit(v))) continue;  // zero keeps v's sign
    double distance = std::fabs(value - double(v));
    if (best < 0 || distance < best_distance || (distance == best_distance && (code & 1) == 0)) best = code, best_distance = distance;
  }
  return uint8_t(best);
}

}  // namespace

TEST_CASE("fp8: every E4M3 code decodes to its definition's value") {
  for (int code = 0; code < 256; ++code) {
    CAPTURE(code);
    double want = e4m3_by_definition(code);
    float got = kdsl::e4m3_bits_to_f32(uint8_t(code));
    if (std::isnan(want)) CHECK(std::isnan(got));
    else CHECK(double(got) == want);
  }
  CHECK(kdsl::e4m3_bits_to_f32(0x7e) == kdsl::kE4M3Max);
  CHECK(kdsl::e4m3_bits_to_f32(0x01) == std::ldexp(1.0f, -9));
}

TEST_CASE("fp8: f32 -> E4M3 rounds to the nearest code (ties to even), saturates at 448, keeps NaN and the sign of zero") {
  // Every code's value, the midpoints between neighbours (the ties) and a hair either side.
  std::vector<float> probes;
  for (int code = 0; code < 0x7e; ++code) {  // 0x7e is 448; 0x7f the NaN
    float v = kdsl::e4m3_bits_to_f32(uint8_t(code)), next = kdsl::e4m3_bits_to_f32(uint8_t(code + 1));
    float mid = (v + next) / 2;  // exact: neighbours differ by a power of two times 1/8
    for (float p : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) probes.push_back(p), probes.push_back(-p);
  }
  for (float p : {448.0f, 463.9f, 464.0f, 480.0f, 1e6f, 3e38f, INFINITY, 1e-30f, 1e-3f, std::ldexp(1.0f, -10), std::ldexp(3.0f, -11)})
    probes.push_back(p), probes.push_back(-p);
  Rng rng(11);
  for (int i = 0; i < 20000; ++i) probes.push_back(float((rng.uniform() * 2 - 1) * std::pow(2.0, rng.uniform() * 22 - 12)));
  int mismatches = 0;
  for (float p : probes) {
    uint8_t got = kdsl::f32_to_e4m3_bits(p), want = nearest_code(p);
    if (got != want && ++mismatches <= 5) FAIL_CHECK("E4M3 of " << p << ": got code " << int(got) << ", nearest is " << int(want));
  }
  CHECK(mismatches == 0);
  CHECK(kdsl::f32_to_e4m3_bits(-0.0f) == 0x80);
  CHECK((kdsl::f32_to_e4m3_bits(NAN) & 0x7f) == 0x7f);
  CHECK(kdsl::f32_to_e4m3_bits(-INFINITY) == 0xfe);
}

// Each value comes back within half a step of E4M3 at its scaled magnitude: 2^-4 of the value
// in the normal range, 2^-10 of the block's scale d in the subnormal one. The block's largest
// magnitude lands within one step of 448 (d is rounded to f16).
TEST_CASE("fp8: F8_E4M3 blocks round-trip within half an E4M3 step, the largest magnitude near 448") {
  Rng rng(5);
  const int n = 32 * 64;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    double spread = std::pow(2.0, rng.uniform() * 16 - 8);  // values spanning the subnormals too
    x[size_t(i)] = float((rng.uniform() * 2 - 1) * spread * (i / 32 % 7 + 1));
  }
  std::fill(x.begin() + 64, x.begin() + 96, 0.0f);  // a zero block
  std::vector<std::byte> q(GgufWriter::tensor_bytes(GgmlType::F8_E4M3, {n}));
  quantize_row(GgmlType::F8_E4M3, x.data(), q.data(), n);
  dequantize_row(GgmlType::F8_E4M3, q.data(), y.data(), n);
  for (int b = 0; b < n / 32; ++b) {
    kdsl::formats::BlockF8_E4M3 block;
    std::memcpy(&block, q.data() + b * sizeof block, sizeof block);
    const float d = kdsl::f16_bits_to_f32(block.d);
    float amax = 0;
    int top = 0;
    for (int i = 0; i < 32; ++i) {
      const float xi = x[size_t(32 * b + i)], yi = y[size_t(32 * b + i)];
      CAPTURE(b);
      CAPTURE(i);
      CHECK(std::fabs(double(xi) - yi) <= std::max(std::fabs(double(xi)) / 16, double(d) / 1024) * 1.0001);
      if (std::fabs(xi) > amax) amax = std::fabs(xi), top = i;
    }
    if (amax == 0) {
      for (int i = 0; i < 32; ++i) CHECK(y[size_t(32 * b + i)] == 0.0f);
      continue;
    }
    CHECK(kdsl::e4m3_bits_to_f32(block.qs[top] & 0x7f) >= 416.0f);  // 448's lower neighbour
  }
}
