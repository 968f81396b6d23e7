// flash_attention_test.cpp - examples::flash_attention (and its tensor-descriptor form) on the CPU against a float64 attention, f16 and bf16, causal and not, at aligned and ragged lengths
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "examples/flash_attention.h"
#include "tests/test_util.h"

using namespace kdsl;

namespace {

// The largest |out - reference| over every head, row and column, the reference computed in
// double from the same rounded inputs.
template <class Tag, int BM, int BN, int D, bool CAUSAL, bool DESCRIPTOR = false>
double worst_error(int heads, int seq, std::mt19937 &rng) {
  using T = typename Tag::storage;
  const size_t n = size_t(heads) * seq * D;
  std::normal_distribution<float> dist(0, 1);
  std::vector<T> q(n), k(n), v(n), out(n);
  for (auto *x : {&q, &k, &v})
    for (T &e : *x) e = T(dist(rng));
  Device dev = Device::cpu();
  Buffer<T> dq(dev, q), dk(dev, k), dv(dev, v), dout(dev, n);
  const float scale = 1.0f / std::sqrt(float(D));
  if constexpr (DESCRIPTOR)
    compile<examples::flash_attention_descriptor<Tag, BM, BN, D, CAUSAL>>(dev)(grid(cdiv(seq, BM), heads), dq, dk, dv, dout, seq, heads * seq, scale);
  else
    compile<examples::flash_attention<Tag, BM, BN, D, CAUSAL>>(dev)(grid(cdiv(seq, BM), heads), dq, dk, dv, dout, seq, scale);
  dout.copy_to_host(out);
  double worst = 0;
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < seq; ++i) {
      const size_t base = size_t(h) * seq * D;
      const int last = CAUSAL ? i : seq - 1;
      std::vector<double> w(size_t(last) + 1);
      double m = -INFINITY, total = 0;
      for (int j = 0; j <= last; ++j) {
        double s = 0;
        for (int e = 0; e < D; ++e) s += double(float(q[base + size_t(i) * D + e])) * double(float(k[base + size_t(j) * D + e]));
        w[size_t(j)] = s * scale;
        m = std::max(m, w[size_t(j)]);
      }
      for (double &x : w) total += (x = std::exp(x - m));
      for (int e = 0; e < D; ++e) {
        double ref = 0;
        for (int j = 0; j <= last; ++j) ref += w[size_t(j)] / total * double(float(v[base + size_t(j) * D + e]));
        worst = std::max(worst, std::fabs(double(float(out[base + size_t(i) * D + e])) - ref));
      }
    }
  return worst;
}

}  // namespace

// Outputs are weighted means of values of about 1 in magnitude; the kernel rounds P to the
// input type before the second product and the output at the end, so the bound is a few of
// the type's rounding steps at 1 (f16 2^-11, bf16 2^-8). A wrong mask or rescale is off by
// about 0.1 or more.
TEST_CASE("examples: flash attention on the CPU matches a float64 attention (f16, bf16; causal and not; aligned and ragged lengths)") {
  std::mt19937 rng(21);
  for (int seq : {64, 75, 130}) {
    CAPTURE(seq);
    CHECK(worst_error<f16, 32, 16, 64, false>(2, seq, rng) < 4e-3);
    CHECK(worst_error<f16, 32, 16, 64, true>(3, seq, rng) < 4e-3);
    CHECK(worst_error<bf16, 64, 32, 32, true>(2, seq, rng) < 3e-2);
  }
}

// K and V through descriptors over every head's rows: a step past seq reads the next head's
// keys, which the length mask must drop (a ragged length checks it).
TEST_CASE("examples: flash attention through tensor descriptors on the CPU matches a float64 attention") {
  KDSL_TEST_RNG(rng);
  for (int seq : {64, 75, 130}) {
    CAPTURE(seq);
    CHECK(worst_error<f16, 32, 16, 64, false, true>(3, seq, rng) < 4e-3);
    CHECK(worst_error<bf16, 64, 32, 32, true, true>(2, seq, rng) < 3e-2);
  }
}
