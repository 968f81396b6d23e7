// vector_math_test.cpp - the host's polynomial exp, exp2, log, log2, tanh, erf, sigmoid: ulp error over sweeps of the f32 range, edges, and no libm calls
#include <unistd.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "codegen/codegen.h"
#include "tests/traced.h"

#include "tests/codegen/host_assembly.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace vector_math_test {

constexpr int kBlock = 256;
constexpr int kFunctions = 7;

// out[k n + i] = function k of x[i].
void apply_all(Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto v = load(x + offs, m, 0);
  store(out + offs, exp(v), m);
  store(out + n + offs, exp2(v), m);
  store(out + 2 * n + offs, log(v), m);
  store(out + 3 * n + offs, log2(v), m);
  store(out + 4 * n + offs, tanh(v), m);
  store(out + 5 * n + offs, erf(v), m);
  store(out + 6 * n + offs, sigmoid(v), m);
}

struct Function {
  const char *name;
  double (*reference)(double);
  double max_ulp;       // over the whole sweep, against the double result rounded to f32's grid
  double max_absolute;  // and at most this far in absolute terms (0: no such bound)
};

const Function functions[kFunctions] = {
    {"exp", [](double x) { return std::exp(x); }, 2, 0},
    {"exp2", [](double x) { return std::exp2(x); }, 2, 0},
    {"log", [](double x) { return std::log(x); }, 2, 0},
    {"log2", [](double x) { return std::log2(x); }, 2, 0},
    {"tanh", [](double x) { return std::tanh(x); }, 3, 1e-6},
    {"erf", [](double x) { return std::erf(x); }, 3, 1e-6},
    {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, 3, 0},
};

// One unit in the last place of an f32 near `v` (subnormal spacing below the normal range).
double ulp(double v) {
  v = std::fabs(v);
  if (v < 0x1p-126) return 0x1p-149;
  int e;
  std::frexp(v, &e);
  return std::ldexp(1.0, e - 24);
}

// Every binade of the f32 range (subnormals included), both signs, a few mantissas each; dense
// grids where the functions bend (|x| < 10) and near the overflow and underflow bounds; the
// edges.
std::vector<float> sweep(std::mt19937 &rng) {
  std::vector<float> v;
  std::uniform_int_distribution<uint32_t> mantissa(0, (1u << 23) - 1);
  for (uint32_t e = 0; e < 255; ++e)
    for (int k = 0; k < 24; ++k)
      for (uint32_t sign : {0u, 1u}) v.push_back(std::bit_cast<float>((sign << 31) | (e << 23) | (k == 0 ? 0 : mantissa(rng))));
  for (int i = -200000; i <= 200000; ++i) v.push_back(float(i) * 5e-5f);  // [-10, 10]
  for (float x = -104.0f; x < 90.0f; x += 0.013f) v.push_back(x);
  for (float x = -151.0f; x < 129.0f; x += 0.011f) v.push_back(x);
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, 0.625f, -0.625f, 3.92f, 4.0f, 9.1f, 88.72f, 88.73f, -87.33f, -103.97f, -104.0f, 127.99f, 128.0f,
                  -149.0f, -150.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f, 0x1.fffffep127f, INFINITY, -INFINITY, NAN, 0.70710677f, 1.4142135f})
    v.push_back(x);
  return v;
}

}  // namespace vector_math_test

using namespace vector_math_test;

TEST_CASE("codegen: the host's polynomial exp, exp2, log, log2, tanh, erf and sigmoid stay within their ulp bounds over the f32 range") {
  KDSL_TEST_RNG(rng);
  std::vector<float> x = sweep(rng);
  const int n = int(x.size());
  std::vector<float> out(size_t(kFunctions) * size_t(n));
  compile<apply_all>(cpu())(grid(cdiv(n, kBlock)), x.data(), out.data(), n);
  for (int k = 0; k < kFunctions; ++k) {
    const Function &f = functions[k];
    double worst_ulp = 0, worst_abs = 0;
    float worst_at = 0;
    int wrong_special = 0;
    std::ostringstream first;
    for (int i = 0; i < n; ++i) {
      double ref = f.reference(double(x[size_t(i)]));
      float got = out[size_t(k) * size_t(n) + size_t(i)];
      // Outside f32's range the result must be the overflowed or underflowed f32.
      float rounded = float(ref);
      if (std::isnan(ref) || std::isinf(rounded) || std::isnan(got) || std::isinf(got)) {
        bool same = std::isnan(ref) ? std::isnan(got) : got == rounded;
        if (!same && wrong_special++ < 4) first << "\n  " << f.name << "(" << x[size_t(i)] << ") = " << got << ", expected " << rounded;
        continue;
      }
      double err = std::fabs(double(got) - ref);
      double in_ulp = err / ulp(ref);
      if (in_ulp > worst_ulp) worst_ulp = in_ulp, worst_at = x[size_t(i)];
      worst_abs = std::max(worst_abs, err);
    }
    INFO(std::string(f.name), ": worst ", worst_ulp, " ulp at x = ", worst_at, ", worst absolute error ", worst_abs, first.str());
    CHECK(wrong_special == 0);
    CHECK(worst_ulp <= f.max_ulp);
    if (f.max_absolute > 0) CHECK(worst_abs <= f.max_absolute);
  }
}

TEST_CASE("codegen: polynomial edges: log of zeros, negatives, subnormals and infinity; tanh and erf saturate and keep -0") {
  float in[16] = {0.0f, -0.0f, -1.0f, INFINITY, 0x1p-149f, 0x1p-140f, 1024.0f, 0x1p-130f, -0.0f, 1e-30f, 50.0f, -50.0f, NAN, -INFINITY, 5.0f, -5.0f};
  std::vector<float> out(size_t(kFunctions) * 16);
  compile<apply_all>(cpu())(grid(1), in, out.data(), 16);
  auto at = [&](int k, int i) { return out[size_t(k * 16 + i)]; };
  CHECK(at(2, 0) == -INFINITY);
  CHECK(at(2, 1) == -INFINITY);
  CHECK(std::isnan(at(2, 2)));
  CHECK(at(2, 3) == INFINITY);
  CHECK(close_enough(at(2, 4), std::log(0x1p-149), 2 * 0x1p-23, 0));
  CHECK(at(3, 4) == -149.0f);  // log2 of powers of two is exact, subnormal or not
  CHECK(at(3, 5) == -140.0f);
  CHECK(at(3, 6) == 10.0f);
  CHECK(at(3, 7) == -130.0f);
  CHECK(std::signbit(at(4, 8)));  // tanh(-0) = -0
  CHECK(std::signbit(at(5, 8)));  // erf(-0) = -0
  CHECK(at(4, 9) == 1e-30f);
  CHECK(close_enough(at(5, 9), std::erf(1e-30), 2 * 0x1p-23, 0));
  CHECK(at(4, 10) == 1.0f);
  CHECK(at(4, 11) == -1.0f);
  CHECK(at(5, 10) == 1.0f);
  CHECK(at(5, 11) == -1.0f);
  for (int k = 0; k < kFunctions; ++k) CHECK(std::isnan(at(k, 12)));
  CHECK(at(4, 13) == -1.0f);
  CHECK(at(5, 13) == -1.0f);
  CHECK(at(5, 14) == 1.0f);
  CHECK(at(5, 15) == -1.0f);
}

TEST_CASE("codegen: the host's exp, log, tanh and erf call no libm function and run on packed vector instructions") {
  std::string s = host_assembly(kdsl_test::traced<apply_all>(), "vector_math_probe");
  INFO(s.substr(0, 3000));
  for (const char *libm : {"expf", "exp2f", "logf", "log2f", "tanhf", "erff"}) {
    CAPTURE(libm);
    CHECK(!contains(s, libm));  // named only by a call (direct, through the PLT or the GOT)
  }
  const std::string features = "," + codegen::host_target().features + ",";
  // Packed FMA where the CPU has it (the polynomials are fma chains), packed multiplies otherwise.
  CHECK((contains(s, "ps\t%ymm") || contains(s, "ps\t%zmm") || contains(s, "ps\t%xmm") || features.find(",+avx,") == std::string::npos));
  if (features.find(",+fma,") != std::string::npos) CHECK(contains(s, "vfmadd"));
}
