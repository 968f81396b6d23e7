// rope_scaling_test.cpp - the per-frequency divisors and magnitude of linear and YaRN RoPE scaling
#include <doctest/doctest.h>

#include <cmath>

#include "models/arch/rope_scaling.h"

using namespace kdsl::models;

namespace {

ModelHParams yarn_hparams(float factor) {
  ModelHParams h;
  h.head_dim = h.n_rot = 128;
  h.rope_freq_base = 500000.0f;
  h.rope_scaling = RopeScaling::Yarn;
  h.rope_scaling_factor = factor;
  h.rope_original_context = 8192;
  return h;
}

}  // namespace

TEST_CASE("rope scaling: none and linear") {
  ModelHParams h = yarn_hparams(1);
  h.rope_scaling = RopeScaling::None;
  RopeFrequencies none = rope_frequencies(h, {});
  CHECK(none.divisors.empty());
  CHECK(none.magnitude == 1.0f);
  h.rope_scaling = RopeScaling::Linear, h.rope_scaling_factor = 4;
  RopeFrequencies linear = rope_frequencies(h, {});
  REQUIRE(linear.divisors.size() == 64);
  for (float d : linear.divisors) CHECK(d == 4.0f);
  CHECK(linear.magnitude == 1.0f);
  std::vector<float> factors(64, 1.0f);
  factors[3] = 8.0f;
  CHECK(rope_frequencies(h, factors).divisors[3] == 32.0f);  // a product, as in llama.cpp
}

TEST_CASE("rope scaling: YaRN keeps fast dimensions, interpolates slow ones, ramps between") {
  // Llama-3-like: theta 5e5, 128 dims, original context 8192. The pair rotating 32 times over
  // 8192 positions is d(32) = 128 ln(8192 / (64 pi)) / (2 ln 5e5) = 18.08, the one rotating
  // once d(1) = 34.98: pairs up to floor 18 keep their frequency, pairs from ceil 35 are
  // divided by the factor, and the divisor rises monotonically between.
  RopeFrequencies f = rope_frequencies(yarn_hparams(8), {});
  REQUIRE(f.divisors.size() == 64);
  for (int i = 0; i <= 18; ++i) CHECK(f.divisors[size_t(i)] == 1.0f);
  for (int i = 35; i < 64; ++i) CHECK(f.divisors[size_t(i)] == doctest::Approx(8.0).epsilon(1e-6));
  for (int i = 19; i <= 34; ++i) {
    CAPTURE(i);
    CHECK(f.divisors[size_t(i)] > f.divisors[size_t(i - 1)]);
    double mix = 1 - (i - 18.0) / (35.0 - 18.0);
    CHECK(f.divisors[size_t(i)] == doctest::Approx(1 / ((1 - mix) / 8 + mix)).epsilon(1e-6));
  }
  CHECK(f.magnitude == doctest::Approx(1 + 0.1 * std::log(8.0)));

  ModelHParams h = yarn_hparams(8);
  h.yarn_ext_factor = 0;  // no extrapolation: plain interpolation, no magnitude
  RopeFrequencies interpolated = rope_frequencies(h, {});
  for (float d : interpolated.divisors) CHECK(d == doctest::Approx(8.0).epsilon(1e-6));
  CHECK(interpolated.magnitude == 1.0f);
  h = yarn_hparams(8);
  h.yarn_attn_factor = 0.5f;
  CHECK(rope_frequencies(h, {}).magnitude == doctest::Approx(0.5 * (1 + 0.1 * std::log(8.0))));
  RopeFrequencies unscaled = rope_frequencies(yarn_hparams(1), {});
  CHECK(unscaled.divisors.empty());
  CHECK(unscaled.magnitude == 1.0f);
}
