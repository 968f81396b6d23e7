// fp8.h - exact conversions between f32 and FP8 E4M3 (OCP's "E4M3FN": no infinities, 0x7F/0xFF are NaN, largest finite 448), for the file readers, quantizers and tests
#pragma once
#include <bit>
#include <cstdint>

namespace kdsl {

// E4M3: sign, 4 exponent bits (bias 7), 3 mantissa bits. Exponent 0 is subnormal (m * 2^-9);
// exponent 15 is finite except for mantissa 7, the NaN. So the finite values are 0, +-2^-9 ..
// +-448, and rounding past 448 saturates: the format has no infinity to round to.
inline constexpr float kE4M3Max = 448.0f;

constexpr float e4m3_bits_to_f32(uint8_t b) {
  const uint32_t sign = uint32_t(b & 0x80) << 24, exponent = (b >> 3) & 15, mantissa = b & 7;
  if (exponent == 15 && mantissa == 7) return std::bit_cast<float>(sign | 0x7fc00000u);
  if (exponent == 0) {  // m * 2^-9, exact in f32
    float v = float(mantissa) * (1.0f / 512.0f);
    return sign ? -v : v;
  }
  // Rebias 7 -> 127 and widen the mantissa: exact.
  return std::bit_cast<float>(sign | (exponent + 120) << 23 | mantissa << 20);
}

// Round to nearest, ties to even; magnitudes past the largest finite value saturate to +-448
// (as NVIDIA's cvt.satfinite and PyTorch's float8_e4m3fn conversion do); NaN stays NaN.
constexpr uint8_t f32_to_e4m3_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint8_t sign = uint8_t((x >> 24) & 0x80);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7f;       // NaN
  if (magnitude >= 0x43e00000u) return sign | 0x7e;      // >= 448 (and infinity): saturate
  if (magnitude < 0x3c800000u) {                          // below 2^-6, the smallest normal: steps of 2^-9
    // Scaling by 2^9 is exact; adding 2^23 leaves the value rounded to an integer (ties to even)
    // in the low mantissa bits. 8 (= 2^-6) comes out as 0x08, the smallest normal: right too.
    float scaled = std::bit_cast<float>(magnitude) * 512.0f + 8388608.0f;
    return sign | uint8_t(std::bit_cast<uint32_t>(scaled) - 0x4b000000u);
  }
  // Keep 3 of the 23 mantissa bits, rounding the 20 dropped ones to nearest even; a carry out of
  // the mantissa moves the exponent up, as it should. Then rebias 127 -> 7.
  uint32_t rounded = (magnitude + 0x7ffffu + ((magnitude >> 20) & 1)) >> 20;
  return sign | uint8_t(rounded - (120u << 3));
}

// Storage type: what a host array of f8e4m3 holds. Arithmetic happens in float.
struct float8_e4m3 {
  uint8_t bits = 0;
  constexpr float8_e4m3() = default;
  constexpr explicit float8_e4m3(float f) : bits(f32_to_e4m3_bits(f)) {}
  static constexpr float8_e4m3 from_bits(uint8_t b) {
    float8_e4m3 v;
    v.bits = b;
    return v;
  }
  constexpr operator float() const { return e4m3_bits_to_f32(bits); }
};

}  // namespace kdsl
