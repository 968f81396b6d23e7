// kquant_scale_orders_test.cpp - Q4_K's and Q5_K's grouped decode and few-row kernels in both orders of their sub-block scales (f32 a sub-block, or i32 codes and d once) against a float64 reference, on every host
#include <doctest/doctest.h>

#include <kdsl/formats/row_groups.h>

#include "kernels/int_dot_policy.h"
#include "kernels/matvec_int8_sums.h"
#include "tests/codegen/emulator_compare.h"
#include "tests/kernels/quantized_test_util.h"
#include "tests/test_util.h"

namespace kquant_scale_orders_test {
using namespace emulator_test;
using kdsl::kernels::WeightType;

// The Library takes one order per host (the i32 codes without VNNI: int_dot_policy.h), so its
// own tests see only that one; here both run on the CPU backend whatever the host has.
// `rows` rows of quantized x (int8, a scale per 256 values, the sums of each 16) by N weight
// rows grouped by R (16, or 8 as a CPU without AVX-512 groups them), against sum over blocks of d_x * sum(x_q * w) in float64 from the
// reference dequantizer's weights. Both orders' integer sums are exact; they differ from the
// reference by f32 rounding: within 1e-5 of the largest output (a wrong scale code, minimum,
// fifth bit or row moves an output by a fraction of the largest one).
template <auto Kernel, int R>
void check_against_reference(std::mt19937 &rng, const char *name, WeightType t, int rows, int br, int N, int K) {
  CAPTURE(std::string(name));
  CAPTURE(R);
  CAPTURE(rows);
  CAPTURE(N);
  CAPTURE(K);
  const int blocks = K / 256;
  const std::vector<uint8_t> w = kernels_test::random_quantized(rng, t, N, K);
  std::vector<uint8_t> grouped(w.size());
  if (t == WeightType::Q4_K) kdsl::formats::group_rows<kdsl::formats::BlockQ4_K>(w.data(), grouped.data(), N, blocks, R);
  else kdsl::formats::group_rows<kdsl::formats::BlockQ5_K>(w.data(), grouped.data(), N, blocks, R);
  const std::vector<float> dequant = kernels_test::dequantized(t, w, N, K);

  std::vector<int8_t> xq(size_t(rows) * size_t(K));
  std::uniform_int_distribution<int> quant(-127, 127);
  for (int8_t &q : xq) q = int8_t(quant(rng));
  const std::vector<float> xd = random_f32(size_t(rows * blocks), rng, 0.001f, 0.02f);
  std::vector<int32_t> xs(size_t(rows) * size_t(K / 16));
  for (size_t g = 0; g < xs.size(); ++g)
    for (size_t i = 0; i < 16; ++i) xs[g] += xq[g * 16 + i];

  std::vector<double> want(size_t(rows) * size_t(N));
  double largest = 0;
  for (int r = 0; r < rows; ++r)
    for (int n = 0; n < N; ++n) {
      double y = 0;
      for (int b = 0; b < blocks; ++b) {
        double block = 0;
        for (int i = 0; i < 256; ++i) block += double(xq[size_t(r) * K + b * 256 + i]) * double(dequant[size_t(n) * K + b * 256 + i]);
        y += double(xd[size_t(r) * blocks + b]) * block;
      }
      want[size_t(r) * N + n] = y;
      largest = std::max(largest, std::fabs(y));
    }

  std::vector<Arg> args{array(xq), array(xd), array(xs), array(grouped), array(std::vector<float>(size_t(N), 0.0f)),
                        array(std::vector<float>(size_t(rows) * size_t(N), -7.0f)), value(int32_t(rows)), value(int32_t(N)), value(int32_t(K))};
  add_guard(args);
  std::vector<ArgValue> values;
  for (Arg &a : args) values.push_back(a.bytes.empty() ? a.scalar : make_arg(static_cast<void *>(a.bytes.data())));
  const tools::NamedKernel kernel = tools::named_kernel<Kernel>(name, 4);
  auto cpu = detail::make_kernel(Device::cpu(1), kernel.signature, {kernel.num_warps, 2});
  detail::launch(*cpu, grid(N / R, cdiv(rows, br)), values.data(), values.size());
  REQUIRE(remove_guard(args, name));

  size_t differ = 0;
  for (size_t i = 0; i < want.size(); ++i) differ += std::fabs(element(args[5], i) - want[i]) > 1e-5 * largest;
  CHECK(differ == 0);
}

}  // namespace kquant_scale_orders_test

using namespace kquant_scale_orders_test;

TEST_CASE("kernels: Q4_K and Q5_K grouped decode and few-row kernels, sub-blocks scaled in f32 and by i32 codes, equal a float64 reference") {
  KDSL_TEST_RNG(rng);
  using kdsl::kernels::matvec_grouped_sums;
  namespace k = kdsl::kernels;
  auto both_groupings = [&]<int R>() {
    for (int K : {256, 768}) {
      check_against_reference<matvec_grouped_sums<k::Q4_KIntDot, 1, R, false>, R>(rng, "q4_k_f32_scales", WeightType::Q4_K, 1, 1, 48, K);
      check_against_reference<matvec_grouped_sums<k::Q4_KIntDotI32Scales, 1, R, false>, R>(rng, "q4_k_i32_scales", WeightType::Q4_K, 1, 1, 48, K);
      check_against_reference<matvec_grouped_sums<k::Q5_KIntDot, 1, R, false>, R>(rng, "q5_k_f32_scales", WeightType::Q5_K, 1, 1, 32, K);
      check_against_reference<matvec_grouped_sums<k::Q5_KIntDotI32Scales, 1, R, false>, R>(rng, "q5_k_i32_scales", WeightType::Q5_K, 1, 1, 32, K);
      // Few rows: 4 a program, the last program's rows past `rows` clamped and not stored.
      check_against_reference<matvec_grouped_sums<k::Q4_KIntDotI32Scales, 4, R, false>, R>(rng, "q4_k_i32_scales_rows", WeightType::Q4_K, 7, 4, 32, K);
      check_against_reference<matvec_grouped_sums<k::Q5_KIntDotI32Scales, 4, R, false>, R>(rng, "q5_k_i32_scales_rows", WeightType::Q5_K, 3, 4, 48, K);
    }
  };
  both_groupings.template operator()<16>();
  both_groupings.template operator()<8>();
}
