// half.h - host f16 and bf16 storage types with exact round-to-nearest-even conversions: the one copy, for the language, the kernels and the file readers
#pragma once
#include <bit>
#include <cstdint>

namespace kdsl {

constexpr uint16_t f32_to_f16_bits(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));  // inf, nan
  int e = int(exp) - 127 + 15;
  if (e >= 0x1f) return uint16_t(sign | 0x7c00u);  // overflow to inf
  if (e <= 0) {
    // Subnormal half (or zero): shift the full significand, rounding to nearest even.
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t half_mant = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mant & 1))) ++half_mant;
    return uint16_t(sign | half_mant);
  }
  uint32_t half = sign | (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (up to inf).
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;
  return uint16_t(half);
}

constexpr float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      bits = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

constexpr uint16_t f32_to_bf16_bits(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet nan
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return uint16_t((x + rounding) >> 16);
}

constexpr float bf16_bits_to_f32(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// Storage types: what a host array of f16 / bf16 holds. Arithmetic happens in float.
struct half {
  uint16_t bits = 0;
  constexpr half() = default;
  constexpr explicit half(float f) : bits(f32_to_f16_bits(f)) {}
  static constexpr half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
  constexpr operator float() const { return f16_bits_to_f32(bits); }
};

struct bfloat16 {
  uint16_t bits = 0;
  constexpr bfloat16() = default;
  constexpr explicit bfloat16(float f) : bits(f32_to_bf16_bits(f)) {}
  static constexpr bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  constexpr operator float() const { return bf16_bits_to_f32(bits); }
};

}  // namespace kdsl
