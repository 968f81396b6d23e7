// quantized_test_util.h - what the quantized kernel tests share: random blocks of any block format, the reference dequantizer, the product check
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/weight_type.h"
#include "models/gguf/dequantize.h"
#include <kdsl/formats/half.h>
#include "tests/kernels/library_test_util.h"

namespace kernels_test {

// The block formats the kernels run with protocol k (weight_types.def's kernels column), and
// of those the ones with `block_elements` values per block (0: any).
inline std::vector<kdsl::kernels::WeightType> kernel_formats(kdsl::formats::WeightKernels k, int block_elements = 0) {
  std::vector<kdsl::kernels::WeightType> out;
  for (const kdsl::formats::WeightTypeInfo &t : kdsl::formats::kWeightTypes)
    if (t.kernels == k && (block_elements == 0 || t.block_elements == block_elements)) out.push_back(t.type);
  return out;
}

// Byte offsets of a block's f16 factors (d, and m, dmin where the layout has them).
template <class Layout>
std::vector<size_t> half_factor_offsets() {
  std::vector<size_t> at;
  if constexpr (requires { Layout::d; }) at.push_back(offsetof(Layout, d));
  if constexpr (requires { Layout::m; }) at.push_back(offsetof(Layout, m));
  if constexpr (requires { Layout::dmin; }) at.push_back(offsetof(Layout, dmin));
  return at;
}

inline std::vector<size_t> half_factor_offsets(kdsl::kernels::WeightType t) {
  using namespace kdsl;
  using namespace kdsl::formats;
  switch (t) {
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) \
  case WeightType::Name:                                                        \
    if constexpr (std::is_class_v<Layout> && (elements) > 1) return half_factor_offsets<Layout>();  \
    break;
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE
  }
  FAIL("not a block-quantized weight type");
  return {};
}

// rows x cols values of block format t as random blocks: every quant and scale byte random (so
// every level, every signed Q6_K scale and every packed Q4_K scale and min), each block's f16
// factors (d, and Q4_K's dmin) finite: in [-0.1, 0.1] for the 32-element formats, [-0.01, 0.01]
// for the k-quants, whose sub-block scales multiply them again.
inline std::vector<uint8_t> random_quantized(std::mt19937 &rng, kdsl::kernels::WeightType t, int64_t rows, int64_t cols) {
  const auto &info = kdsl::kernels::weight_type_info(t);
  std::vector<uint8_t> bytes(size_t(kdsl::kernels::weight_bytes(t, rows * cols)));
  std::uniform_int_distribution<int> byte(0, 255);
  const bool k_quant = info.block_elements == kdsl::formats::kQK_K;
  std::uniform_real_distribution<float> factor(k_quant ? -0.01f : -0.1f, k_quant ? 0.01f : 0.1f);
  for (uint8_t &b : bytes) b = uint8_t(byte(rng));
  // E4M3's NaN codes (which no quantizer writes) would make whole products NaN, which no
  // tolerance compares; the NaN test (quantized_test.cpp) writes them on purpose.
  if (t == kdsl::kernels::WeightType::F8_E4M3)
    for (uint8_t &b : bytes)
      if ((b & 0x7f) == 0x7f) b = uint8_t(b - 1);
  const std::vector<size_t> factors = half_factor_offsets(t);
  for (size_t at = 0; at < bytes.size(); at += size_t(info.block_bytes)) {
    for (size_t offset : factors) {
      uint16_t h = kdsl::f32_to_f16_bits(factor(rng));
      std::memcpy(&bytes[at + offset], &h, 2);
    }
  }
  return bytes;
}

// The reference dequantizer's values, rows x cols.
inline std::vector<float> dequantized(kdsl::kernels::WeightType t, const std::vector<uint8_t> &bytes, int64_t rows, int64_t cols) {
  std::vector<float> out(size_t(rows * cols));
  kdsl::models::dequantize_row(t, bytes.data(), out.data(), rows * cols);
  return out;
}

// Library::matmul over random weights of format t against a float64 product of the reference
// dequantizer's values. The kernels decode each weight to exactly that f32 value (d * q, and
// the k-quants' d * scale * q - dmin * min, are exact in f32), so they differ from the
// reference only by f32 rounding in their sums: the f32 matmul test's bound.
inline void check_quantized_matmul(std::mt19937 &rng, kdsl::kernels::WeightType t, int rows, int N, int K, bool with_bias,
                                   kdsl::kernels::Library &lib = library()) {
  CAPTURE(std::string(kdsl::kernels::weight_type_info(t).name));
  CAPTURE(rows);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(with_bias);
  auto x = random_floats(rng, size_t(rows) * K);
  auto w = random_quantized(rng, t, N, K);
  auto wf = dequantized(t, w, N, K);
  auto bias = random_floats(rng, size_t(N));
  const float *b = with_bias ? bias.data() : nullptr;
  ReferenceProduct ref = reference_matmul(x, wf, b, rows, N, K);
  GuardedOutput out(ref.values.size(), -7.0f);
  lib.matmul(x.data(), w.data(), t, b, out.data(), rows, N, K);
  expect_close_scaled("quantized matmul", out.values(), ref.values, ref.scale, 1e-5);
  CHECK_MESSAGE(out.intact(), "quantized matmul wrote past its rows x N outputs");
}

// Library::embedding of a few ids (repeated, first and last included) from a random vocab x dim
// table of format t: every value equals the reference dequantizer's (the kernels run the same
// f32 operations in the same order), and nothing is written past the last row.
inline void check_quantized_embedding(std::mt19937 &rng, kdsl::kernels::WeightType t, int vocab, int dim) {
  CAPTURE(std::string(kdsl::kernels::weight_type_info(t).name));
  CAPTURE(dim);
  auto table = random_quantized(rng, t, vocab, dim);
  auto tf = dequantized(t, table, vocab, dim);
  std::vector<int32_t> ids = {7, 0, vocab - 1, 7, 23};
  GuardedOutput out(ids.size() * size_t(dim), -7.0f);
  library().embedding(ids.data(), table.data(), t, out.data(), int(ids.size()), dim);
  std::vector<float> got = out.values();
  size_t bad = 0;
  for (size_t r = 0; r < ids.size(); ++r)
    for (int c = 0; c < dim; ++c) bad += got[r * size_t(dim) + size_t(c)] != tf[size_t(ids[r]) * size_t(dim) + size_t(c)];
  CHECK(bad == 0);
  CHECK_MESSAGE(out.intact(), "embedding wrote past its last row");
}

}  // namespace kernels_test
