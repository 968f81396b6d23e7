// narrow_inputs_test.cpp - a GPU's product inputs in the weights' f16 / bf16: the producers (rmsnorm, add_rmsnorm, swiglu) and the products that read them, on the CPU and emulated
#include <doctest/doctest.h>

#include "kernels/matmul_narrow.h"
#include "kernels/matvec_rows.h"
#include "kernels/matvec_wide.h"
#include "kernels/rmsnorm.h"
#include "kernels/swiglu.h"
#include "tests/codegen/emulator_compare.h"
#include "tests/kernels/library_test_util.h"

namespace narrow_inputs_test {
using namespace kdsl;
using namespace kernels_test;
using emulator_test::Arg;
using emulator_test::Flavour;
using kernels::Library;
using kernels::WeightType;

template <class T>
std::vector<typename T::storage> round_to(const std::vector<float> &f) {
  std::vector<typename T::storage> out(f.size());
  for (size_t i = 0; i < f.size(); ++i) out[i] = typename T::storage(f[i]);
  return out;
}
template <class S>
std::vector<float> widened(const std::vector<S> &v) {
  return std::vector<float>(v.begin(), v.end());
}
// Bit-for-bit equality of two 16-bit arrays (a rounding of the same f32 values).
template <class S>
bool same_bits(const std::vector<S> &a, const std::vector<S> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(S)) == 0;
}

// A producer's 16-bit rows are its f32 rows rounded once: the same f32 arithmetic, then the
// rounding to nearest even, so on one backend they agree to the bit.
template <class T>
void check_producers(std::mt19937 &rng, int rows, int dim, int64_t n) {
  CAPTURE(std::string(T::text));
  CAPTURE(dim);
  Library &lib = library();
  auto x = random_floats(rng, size_t(rows) * dim, -4, 4), w = random_floats(rng, size_t(dim)), residual = random_floats(rng, size_t(rows) * dim);
  std::vector<float> y32(x.size());
  std::vector<typename T::storage> y16(x.size());
  lib.rmsnorm(x.data(), w.data(), y32.data(), rows, dim, 1e-5f);
  lib.rmsnorm(x.data(), w.data(), y16.data(), T::dtype, rows, dim, 1e-5f);
  CHECK(same_bits(y16, round_to<T>(y32)));

  std::vector<float> x32 = x, x16 = x;
  lib.add_rmsnorm(x32.data(), residual.data(), w.data(), y32.data(), rows, dim, 1e-5f);
  lib.add_rmsnorm(x16.data(), residual.data(), w.data(), y16.data(), T::dtype, rows, dim, 1e-5f);
  CHECK(x16 == x32);  // the residual stream stays f32
  CHECK(same_bits(y16, round_to<T>(y32)));

  auto gate = random_floats(rng, size_t(n), -6, 6), up = random_floats(rng, size_t(n), -2, 2);
  std::vector<float> h32(static_cast<size_t>(n));
  std::vector<typename T::storage> h16(size_t(n) + 8, typename T::storage(-7.0f));  // 8 past n stay untouched
  lib.swiglu(gate.data(), up.data(), h32.data(), n);
  lib.swiglu(gate.data(), up.data(), h16.data(), T::dtype, n);
  CHECK(same_bits(std::vector<typename T::storage>(h16.begin(), h16.begin() + n), round_to<T>(h32)));
  for (size_t i = size_t(n); i < h16.size(); ++i) CHECK(float(h16[i]) == -7.0f);
}

// The producers' GPU lowering against the CPU backend. Two roundings of the emulator's own f32
// results may fall on either side of a 16-bit midpoint: one unit of bf16's last place is 2^-8.
template <class T>
void check_producers_emulated(std::mt19937 &rng, const Flavour &flavour) {
  CAPTURE(std::string(T::text));
  const int rows = 3, dim = 300;
  const double bound = 2.0 / (1 << (std::is_same_v<T, bf16> ? 8 : 11));
  auto x = random_floats(rng, size_t(rows) * dim, -4, 4), w = random_floats(rng, size_t(dim)), residual = random_floats(rng, size_t(rows) * dim);
  auto out = emulator_test::array(std::vector<typename T::storage>(x.size()));
  CHECK(emulator_test::compare(tools::named_kernel<kernels::rmsnorm<512, true, T>>("add_rmsnorm_narrow", 4), grid(rows),
                               {emulator_test::array(x), emulator_test::array(residual), emulator_test::array(w), out, emulator_test::value(int32_t(dim)),
                                emulator_test::value(1e-5f)},
                               flavour) <= bound);
  const int n = 2500;
  auto gate = random_floats(rng, size_t(n), -6, 6), up = random_floats(rng, size_t(n), -2, 2);
  CHECK(emulator_test::compare(tools::named_kernel<kernels::swiglu<1024, T>>("swiglu_narrow", 4), grid(cdiv(n, 1024)),
                               {emulator_test::array(gate), emulator_test::array(up), emulator_test::array(std::vector<typename T::storage>(size_t(n))),
                                emulator_test::value(int32_t(n))},
                               flavour) <= bound);
}

// Library::matmul with x in T over T weights, through a GPU's dispatch on the CPU: decode
// (matvec_wide), a few rows (matvec_rows) and prefill (matmul_narrow). Each gives the float64
// product of the rounded x; prefill, which rounds an f32 x to T itself, gives what it gives
// from f32 rows to the bit.
template <class T>
void check_library_product(std::mt19937 &rng, int rows, int N, int K, bool with_bias) {
  CAPTURE(std::string(T::text));
  CAPTURE(rows);
  CAPTURE(N);
  CAPTURE(K);
  Library lib(kdsl_test::cpu());
  lib.set_gpu_forms(true);
  const WeightType wtype = *kernels::weight_type_of(T::dtype);
  REQUIRE(lib.product_input_type(wtype) == T::dtype);
  auto x = round_to<T>(random_floats(rng, size_t(rows) * K));
  auto w = round_to<T>(random_floats(rng, size_t(N) * K));
  auto bias = random_floats(rng, size_t(N));
  const float *b = with_bias ? bias.data() : nullptr;
  ReferenceProduct ref = reference_matmul(widened(x), widened(w), b, rows, N, K);
  GuardedOutput out(size_t(rows) * N, -7.0f);
  lib.matmul(x.data(), T::dtype, w.data(), wtype, b, out.data(), rows, N, K);
  expect_close_scaled("matmul of 16-bit x", out.values(), ref.values, ref.scale, 1e-5);
  CHECK_MESSAGE(out.intact(), "the product wrote past its rows x N outputs");
  if (rows > 16) {
    GuardedOutput from_f32(size_t(rows) * N, -7.0f);
    lib.matmul(widened(x).data(), w.data(), wtype, b, from_f32.data(), rows, N, K);
    CHECK(out.values() == from_f32.values());
  }
}

// The products' GPU lowering over 16-bit x against the CPU backend; prefill's tile also on the
// tensor cores (mma.sync, and Hopper's wgmma on sm_90a, 3 stages: the x tiles copied ahead).
template <class T>
void check_products_emulated(std::mt19937 &rng, const Flavour &flavour) {
  CAPTURE(std::string(T::text));
  auto arrays = [&](int rows, int N, int K) {
    return std::vector<Arg>{emulator_test::array(round_to<T>(random_floats(rng, size_t(rows) * K))),
                            emulator_test::array(round_to<T>(random_floats(rng, size_t(N) * K))), emulator_test::array(random_floats(rng, size_t(N))),
                            emulator_test::array(std::vector<float>(size_t(rows) * N, -7.0f))};
  };
  // Sums in another order there: compared against the largest output (emulator_compare.h).
  const auto normwise = emulator_test::Metric::Normwise;
  {
    const int N = 13, K = 1000;
    auto args = arrays(1, N, K);
    args.push_back(emulator_test::value(int32_t(N))), args.push_back(emulator_test::value(int32_t(K)));
    CHECK(emulator_test::compare(tools::named_kernel<kernels::matvec_wide<T, 4, 512, true, T>>("matvec_wide_narrow", 4), grid(cdiv(N, 4)), args, flavour,
                                 normwise) <= 1e-5);
  }
  {
    const int rows = 5, N = 19, K = 300;
    auto args = arrays(rows, N, K);
    for (int v : {rows, N, K}) args.push_back(emulator_test::value(int32_t(v)));
    CHECK(emulator_test::compare(tools::named_kernel<kernels::matvec_rows<T, 8, 8, 128, false, 128, T>>("matvec_rows_narrow", 4), grid(cdiv(N, 8)), args,
                                 flavour, normwise) <= 1e-5);
  }
  const int M = 100, N = 200, K = 192;
  auto args = arrays(M, N, K);
  for (int v : {M, N, K}) args.push_back(emulator_test::value(int32_t(v)));
  auto named = tools::named_kernel<kernels::matmul_narrow<T, 64, 128, 64, true, T>>("matmul_narrow_narrow_x", 4);
  const Grid g = grid(cdiv(M, 64), cdiv(N, 128));
  if (flavour.arch != "sm_80") return;  // the FMA path's operand copies outgrow gfx942's 64 KiB of LDS at this tile
  CHECK(emulator_test::compare(named, g, args, flavour, normwise) <= 1e-5);
  CHECK(emulator_test::compare(named, g, args, {"sm_80", true, 3}, normwise) <= 1e-5);
  CHECK(emulator_test::compare(named, g, args, {"sm_90a", true, 3}, normwise) <= 1e-5);
}

}  // namespace narrow_inputs_test

using namespace narrow_inputs_test;

TEST_CASE("kernels: rmsnorm, add_rmsnorm and swiglu write f16 / bf16 rows that are their f32 rows rounded, ragged sizes, on the CPU and emulated") {
  KDSL_TEST_RNG(rng);
  check_producers<bf16>(rng, 3, 300, 2500);
  check_producers<f16>(rng, 2, 64, 1024);
  const Flavour flavour = emulator_test::each_emulated_target();
  check_producers_emulated<bf16>(rng, flavour);
  check_producers_emulated<f16>(rng, flavour);
}

TEST_CASE("kernels: a GPU's products over x already in the weights' f16 / bf16 (decode, a few rows, prefill) against float64, ragged sizes, on the CPU and emulated") {
  KDSL_TEST_RNG(rng);
  for (int rows : {1, 5, 16, 17, 100}) check_library_product<bf16>(rng, rows, 37, 200, rows % 2 == 1);
  check_library_product<f16>(rng, 64, 128, 128, false);
  check_library_product<f16>(rng, 3, 8, 64, true);
  const Flavour flavour = emulator_test::each_emulated_target();
  check_products_emulated<bf16>(rng, flavour);
  check_products_emulated<f16>(rng, flavour);
}

TEST_CASE("kernels: product_input_type is the weights' f16 / bf16 on a GPU's dispatch alone, and a product refuses x of any other type by name") {
  Library lib(kdsl_test::cpu());
  CHECK(lib.product_input_type(WeightType::BF16) == DType::F32);  // the CPU's products read f32 rows
  std::vector<uint16_t> x(4 * 64, 0x3f80), w(8 * 64, 0x3f80);     // 16-bit ones
  std::vector<float> out(4 * 8);
  auto product = [&](DType xtype, WeightType wtype) { lib.matmul(x.data(), xtype, w.data(), wtype, nullptr, out.data(), 4, 8, 64); };
  std::string text = kdsl_test::error_text([&] { product(DType::BF16, WeightType::BF16); });
  CHECK(kdsl_test::contains(text, "matmul"));
  CHECK(kdsl_test::contains(text, "x of bf16"));
  CHECK(kdsl_test::contains(text, "bf16 weights on the CPU"));
  lib.set_gpu_forms(true);
  CHECK(lib.product_input_type(WeightType::BF16) == DType::BF16);
  CHECK(lib.product_input_type(WeightType::F16) == DType::F16);
  CHECK(lib.product_input_type(WeightType::F32) == DType::F32);
  CHECK(lib.product_input_type(WeightType::Q8_0) == DType::F32);
  text = kdsl_test::error_text([&] { product(DType::F16, WeightType::BF16); });
  CHECK(kdsl_test::contains(text, "x of f16"));
  CHECK(kdsl_test::contains(text, "(got bf16 weights)"));
  product(DType::BF16, WeightType::BF16);
  for (float v : out) CHECK(v == 64.0f);
  text = kdsl_test::error_text([&] { lib.rmsnorm(out.data(), out.data(), out.data(), DType::I32, 1, 8, 1e-5f); });
  CHECK(kdsl_test::contains(text, "rmsnorm"));
  CHECK(kdsl_test::contains(text, "y type i32 is not supported (f32, f16 or bf16)"));
  // 16-bit rows written over their f32 inputs: refused, naming both (f32 in place stays allowed).
  std::vector<float> rows(4 * 64, 1.0f), norm(64, 1.0f);
  text = kdsl_test::error_text([&] { lib.rmsnorm(rows.data(), norm.data(), rows.data() + 64, DType::BF16, 4, 64, 1e-5f); });
  CHECK(kdsl_test::contains(text, "y of bf16 overlaps x"));
  text = kdsl_test::error_text([&] { lib.swiglu(rows.data(), rows.data() + 128, rows.data() + 40, DType::F16, 64); });
  CHECK(kdsl_test::contains(text, "out of f16 overlaps gate"));
  text = kdsl_test::error_text([&] { lib.add_rmsnorm(rows.data(), rows.data() + 128, norm.data(), rows.data() + 160, DType::BF16, 1, 64, 1e-5f); });
  CHECK(kdsl_test::contains(text, "y of bf16 overlaps residual"));
  lib.rmsnorm(rows.data(), norm.data(), rows.data(), 4, 64, 1e-5f);
  lib.swiglu(rows.data(), rows.data() + 128, rows.data(), DType::F32, 64);
}
