// half.h - exact scalar conversions between float and IEEE half (f16) or bfloat16, as ggml stores them
#pragma once
#include <bit>
#include <cstdint>

namespace kdsl::models {

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));  // inf, nan
  if (exponent == 0) {
    // zero or subnormal: mantissa * 2^-24, exact in float
    float v = float(mantissa) * 0x1.0p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// Round to nearest, ties to even; overflow becomes infinity, NaN stays NaN.
inline uint16_t f32_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t abs = x & 0x7FFFFFFF;
  if (abs > 0x7F800000) return sign | 0x7E00;  // NaN
  if (abs >= 0x477FF000) return sign | 0x7C00;  // rounds past 65504: infinity
  if (abs < 0x38800000) {
    // subnormal half: value / 2^-24 rounded to an integer, ties to even
    float scaled = std::bit_cast<float>(abs) * 0x1.0p24f;
    uint32_t q = uint32_t(scaled);
    float rest = scaled - float(q);
    if (rest > 0.5f || (rest == 0.5f && (q & 1))) ++q;
    return sign | uint16_t(q);
  }
  uint32_t mantissa = abs & 0x7FFFFF;
  uint32_t result = ((abs >> 23) - 112) << 10 | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (result & 1))) ++result;  // carries into the exponent correctly
  return sign | uint16_t(result);
}

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// Round to nearest, ties to even, as ggml does; NaN stays a quiet NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return uint16_t((x >> 16) | 0x40);
  return uint16_t((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

}  // namespace kdsl::models
