// math_test.cpp - exp, exp2, log, log2, sqrt, rsqrt, sin, cos, tanh, sigmoid, erf within a few ulp of a double reference
#include <kdsl/kdsl.h>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace math_test {

constexpr int kBlock = 128;
constexpr int kFunctions = 11;

// Function k reads its inputs from in[k * n ...] and writes out[k * n ...].
template <class T>
void math(Ptr<T> in, Ptr<T> out, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  int k = 0;
  auto apply = [&](auto f) {
    auto x = load(in + k * n + offs, m, 1.0);
    store(out + k * n + offs, f(x), m);
    ++k;
  };
  apply([](auto x) { return exp(x); });
  apply([](auto x) { return exp2(x); });
  apply([](auto x) { return log(x); });
  apply([](auto x) { return log2(x); });
  apply([](auto x) { return sqrt(x); });
  apply([](auto x) { return rsqrt(x); });
  apply([](auto x) { return sin(x); });
  apply([](auto x) { return cos(x); });
  apply([](auto x) { return tanh(x); });
  apply([](auto x) { return sigmoid(x); });
  apply([](auto x) { return erf(x); });
}

struct Function {
  const char *name;
  double (*reference)(double);
  double lo, hi;  // the input domain (within f16's range for every result)
  double floor;   // results below this magnitude are checked to an absolute error of rtol * floor
  bool exact;     // correctly rounded (sqrt), else a few ulp
};

const Function functions[kFunctions] = {
    {"exp", [](double x) { return std::exp(x); }, -9, 10, 0, false},
    {"exp2", [](double x) { return std::exp2(x); }, -13, 15, 0, false},
    {"log", [](double x) { return std::log(x); }, 1e-3, 3e4, 1e-30, false},
    {"log2", [](double x) { return std::log2(x); }, 1e-3, 3e4, 1e-30, false},
    {"sqrt", [](double x) { return std::sqrt(x); }, 0, 3e4, 0, true},
    {"rsqrt", [](double x) { return 1 / std::sqrt(x); }, 1e-3, 3e4, 0, false},
    {"sin", [](double x) { return std::sin(x); }, -10, 10, 1, false},
    {"cos", [](double x) { return std::cos(x); }, -10, 10, 1, false},
    {"tanh", [](double x) { return std::tanh(x); }, -5, 5, 1e-6, false},
    {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -9, 9, 0, false},
    {"erf", [](double x) { return std::erf(x); }, -4.5, 4.5, 0, false},
};

template <class T>
void check_math(std::mt19937 &rng, int n) {
  using S = storage_t<T>;
  CAPTURE(n);
  std::vector<S> in(size_t(kFunctions * n)), out(in.size());
  for (int k = 0; k < kFunctions; ++k) {
    auto v = random_values<T>(rng, size_t(n), functions[k].lo, functions[k].hi);
    std::copy(v.begin(), v.end(), in.begin() + k * n);
  }
  // Exact points: exp(0) = 1, log(1) = 0, exp2 and log2 of powers of two, sqrt of squares.
  in[0] = to_storage<T>(0.0), in[size_t(n)] = to_storage<T>(-3.0), in[size_t(n) + 1] = to_storage<T>(7.0);
  in[size_t(2 * n)] = to_storage<T>(1.0), in[size_t(3 * n)] = to_storage<T>(256.0), in[size_t(4 * n)] = to_storage<T>(144.0);
  compile<math<T>>(cpu())(grid(cdiv(n, kBlock)), in.data(), out.data(), n);
  for (int k = 0; k < kFunctions; ++k) {
    const Function &f = functions[k];
    // f32: a few ulp of the exact value. f16 / bf16: the f32 result rounded once more, so
    // within one ulp of the type. sqrt is correctly rounded in every type.
    double rtol = f.exact ? 0 : std::is_same_v<T, f32> ? 4 * epsilon<T>() : epsilon<T>();
    double floor = std::max(f.floor, std::is_same_v<T, f16> ? 0x1p-14 : 0x1p-126);
    expect_close(
        {f.name, rtol, floor}, size_t(n), [&](size_t i) { return as_double(out[size_t(k * n) + i]); },
        [&](size_t i) {
          double exact = f.reference(as_double(in[size_t(k * n) + i]));
          return f.exact ? round_as<T>(exact) : exact;
        });
  }
}

// Where results leave the finite range: overflow to inf, underflow to 0, NaN in, NaN out.
void math_limits(Ptr<f32> in, Ptr<f32> out) {
  auto x = load(in + arange<8>());
  store(out + arange<8>(), exp(x));
  store(out + 8 + arange<8>(), exp2(x));
  store(out + 16 + arange<8>(), sigmoid(x));
}

}  // namespace math_test

TEST_CASE_TEMPLATE("codegen: math functions are within a few ulp of the exact value", T, f32, f16, bf16) {
  KDSL_TEST_RNG(rng);
  for (int n : {math_test::kBlock * 4, math_test::kBlock * 2 + 7}) math_test::check_math<T>(rng, n);
}

TEST_CASE("codegen: exp, exp2 and sigmoid at the edges of the f32 range") {
  float in[8] = {200.0f, -200.0f, INFINITY, -INFINITY, NAN, 88.5f, -87.0f, -100.0f};
  float out[24] = {};
  compile<math_test::math_limits>(cpu())(grid(1), in, out);
  CHECK(out[0] == INFINITY);
  CHECK(out[1] == 0.0f);
  CHECK(out[2] == INFINITY);
  CHECK(out[3] == 0.0f);
  CHECK(std::isnan(out[4]));
  CHECK(close_enough(out[5], std::exp(88.5), 4 * 0x1p-23, 0));
  CHECK(close_enough(out[6], std::exp(-87.0), 4 * 0x1p-23, 0));
  CHECK(std::fabs(out[7] - std::exp(-100.0)) <= 0x1p-149);  // subnormal: within one unit of the last bit left
  CHECK(out[8] == INFINITY);  // exp2(200)
  CHECK(out[9] == 0.0f);      // exp2(-200)
  CHECK(out[10] == INFINITY);
  CHECK(out[11] == 0.0f);
  CHECK(std::isnan(out[12]));
  CHECK(close_enough(out[13], std::exp2(88.5), 4 * 0x1p-23, 0));
  CHECK(out[14] == 0x1p-87f);
  CHECK(out[15] == 0x1p-100f);
  CHECK(out[16] == 1.0f);  // sigmoid(200)
  CHECK(out[17] == 0.0f);  // sigmoid(-200)
  CHECK(out[18] == 1.0f);
  CHECK(out[19] == 0.0f);
  CHECK(std::isnan(out[20]));
}
