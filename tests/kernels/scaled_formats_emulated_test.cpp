// scaled_formats_emulated_test.cpp - the decode product over Q8_0, Q4_0, IQ4_NL and F8_E4M3 blocks through the GPU lowering (SIMT emulator, NVIDIA and AMD) against the CPU backend
#include <doctest/doctest.h>

#include "kernels/matvec_quantized.h"
#include "tests/codegen/emulator_compare.h"
#include "tests/kernels/quantized_test_util.h"
#include "tests/test_util.h"

namespace scaled_formats_emulated_test {
using namespace emulator_test;
using kdsl::kernels::WeightType;

// matvec_quantized over N rows of K values (ragged N: the last program's rows are clamped and
// masked), with `nan_at` (a byte offset into the weights, or -1) set to E4M3's NaN code.
template <class F>
void check_decode(std::mt19937 &rng, const char *name, WeightType t, int n, int k, int nan_at, const Flavour &flavour) {
  CAPTURE(name);
  CAPTURE(n);
  CAPTURE(k);
  constexpr int kRows = 8;
  std::vector<uint8_t> w = kernels_test::random_quantized(rng, t, n, k);
  if (nan_at >= 0) w[size_t(nan_at)] = 0x7f;
  std::vector<Arg> args{array(random_f32(size_t(k), rng, -1, 1)), array(w), array(std::vector<float>(size_t(n), 0.0f)),
                        array(std::vector<float>(size_t(n), -7.0f)), value(int32_t(n)), value(int32_t(k))};
  const tools::NamedKernel kernel = tools::named_kernel<kernels::matvec_quantized<F, kRows, false>>(name, 4);
  // f32 sums whose lanes are added in another order there: an output that cancels to near zero
  // differs in its last bits against compare's 1e-3 floor (seed 1885778910: 1.6e-4); a
  // misplaced or misdecoded element is off by O(1).
  CHECK(compare(kernel, grid(cdiv(n, kRows)), args, flavour) <= 1e-3);
}

}  // namespace scaled_formats_emulated_test

using namespace scaled_formats_emulated_test;

TEST_CASE("emulated: the decode product over Q8_0, Q4_0, IQ4_NL and F8_E4M3 blocks matches the CPU backend, ragged N, F8's NaN code") {
  KDSL_TEST_RNG(rng);
  const Flavour flavour = each_emulated_target();
  check_decode<kernels::Q8_0Format>(rng, "q8_0_decode", WeightType::Q8_0, 13, 96, -1, flavour);
  check_decode<kernels::Q4_0Format>(rng, "q4_0_decode", WeightType::Q4_0, 16, 64, -1, flavour);
  check_decode<kernels::IQ4_NLFormat>(rng, "iq4_nl_decode", WeightType::IQ4_NL, 13, 96, -1, flavour);
  check_decode<kernels::F8_E4M3Format>(rng, "f8_e4m3_decode", WeightType::F8_E4M3, 13, 96, -1, flavour);
  check_decode<kernels::F8_E4M3Format>(rng, "f8_e4m3_nan", WeightType::F8_E4M3, 9, 64, 3 * 68 + 2 + 5, flavour);  // row 3's 6th value
}
