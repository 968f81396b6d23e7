// int_dot_emulated_test.cpp - the integer-dot decode kernels through the GPU lowering (SIMT emulator: dp4a on NVIDIA, v_dot4 on AMD) against the CPU backend
#include <doctest/doctest.h>

#include "kernels/int_dot_policy.h"
#include "kernels/matvec_int8.h"
#include "kernels/matvec_int8_sums.h"
#include "tests/codegen/emulator_compare.h"
#include "tests/kernels/quantized_test_util.h"
#include "tests/test_util.h"

namespace int_dot_emulated_test {
using namespace emulator_test;
using kdsl::kernels::WeightType;

std::vector<int8_t> random_activations(std::mt19937 &rng, size_t n) {
  std::vector<int8_t> q(n);
  std::uniform_int_distribution<int> d(-127, 127);
  for (int8_t &x : q) x = int8_t(d(rng));
  return q;
}

// One program grid over `rows` rows of x and N weight rows of K values, BN rows a program; the
// two runs' outputs within `tolerance` of each other, relative to the largest output
// (emulator_compare.h, Metric::Normwise). The integer sums are exact on both; the f32 sums
// of their scaled lanes are not, and the two backends add them in different orders (the host
// sums each row's 4 lanes as one vector reduce, a tree) and round the products d_x * d_w *
// sum differently (FMA contraction on the GPU). An output that cancels to near zero shows a
// few ulps of its terms far above its own size: 1.6e-4 and 2.2e-4 of the output for Q8_0 and
// Q4_K with KDSL_TEST_SEED=3429070139 and 645107439, elementwise, where a wrong block, scale or
// lane moves an output by a fraction of the largest one, far more than 1e-4 of it.
template <auto K>
void check_decode(std::mt19937 &rng, const char *name, WeightType t, int sum_group, int rows, int n, int k, int bn, int br, const Flavour &flavour,
                  double tolerance = 1e-4) {
  const std::string kernel_name = name;
  CAPTURE(kernel_name);
  CAPTURE(rows);
  CAPTURE(n);
  CAPTURE(k);
  const int blocks = k / kernels::weight_type_info(t).block_elements;
  const std::vector<int8_t> x = random_activations(rng, size_t(rows) * size_t(k));
  std::vector<Arg> args{array(x), array(random_f32(size_t(rows * blocks), rng, 0.001f, 0.02f))};
  // Each group of sum_group quants' sum, as quantize_activations_sums makes them: 16 for the
  // k-quants (Q8_K), 32 for Q4_0 (one a block, Q8_1); Q8_0's kernel takes them unread.
  std::vector<int32_t> group_sums(size_t(rows) * size_t(k / sum_group));
  for (size_t g = 0; g < group_sums.size(); ++g)
    for (size_t i = 0; i < size_t(sum_group); ++i) group_sums[g] += x[g * size_t(sum_group) + i];
  args.push_back(array(group_sums));
  args.push_back(array(kernels_test::random_quantized(rng, t, n, k)));
  args.push_back(array(std::vector<float>(size_t(n), 0.0f)));  // bias (unused)
  args.push_back(array(std::vector<float>(size_t(rows) * size_t(n), -7.0f)));
  args.push_back(value(int32_t(rows)));
  args.push_back(value(int32_t(n)));
  args.push_back(value(int32_t(k)));
  const tools::NamedKernel kernel = tools::named_kernel<K>(name, 4);
  CHECK(compare(kernel, grid(cdiv(n, bn), cdiv(rows, br)), args, flavour, Metric::Normwise) < tolerance);
}

}  // namespace int_dot_emulated_test

using namespace int_dot_emulated_test;

TEST_CASE("emulated: the Q8_0, Q4_0 and Q4_K integer-dot decode kernels (dot4 as dp4a and v_dot4) match the CPU backend, one and two rows, ragged N") {
  KDSL_TEST_RNG(rng);
  const Flavour flavour = each_emulated_target();
  using kernels::matvec_int8;
  using kernels::matvec_int8_sums;
  check_decode<matvec_int8<kernels::Q8_0IntDot, 1, 8, false>>(rng, "q8_0_decode", WeightType::Q8_0, 32, 1, 13, 64, 8, 1, flavour);
  check_decode<matvec_int8<kernels::Q4_0IntDot, 1, 8, false>>(rng, "q4_0_decode", WeightType::Q4_0, 32, 1, 16, 96, 8, 1, flavour);
  check_decode<matvec_int8<kernels::Q4_0IntDot, 2, 4, false>>(rng, "q4_0_rows", WeightType::Q4_0, 32, 3, 9, 64, 4, 2, flavour);
  // Q4_K's output is the scaled sums minus the minimums' offset, often terms far larger than
  // their difference (above).
  check_decode<matvec_int8_sums<kernels::Q4_KIntDot, 1, 4, false>>(rng, "q4_k_decode", WeightType::Q4_K, 16, 1, 6, 256, 4, 1, flavour, 1e-4);
}
