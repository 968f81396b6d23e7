// rope_embedding_test.cpp - Library::rope (both conventions) and Library::embedding against float64 references
#include "tests/kernels/library_test_util.h"

namespace {
using namespace kernels_test;

// Rotates one head of `head_dim` values at position pos, in float64.
void rope_ref(std::vector<double> &x, size_t at, int head_dim, int pos, double theta, bool neox, const float *divisors = nullptr,
              double magnitude = 1.0) {
  for (int i = 0; i < head_dim / 2; ++i) {
    double angle = pos * std::pow(theta, -2.0 * i / head_dim) / (divisors ? double(divisors[i]) : 1.0);
    size_t a = at + size_t(neox ? i : 2 * i), b = at + size_t(neox ? i + head_dim / 2 : 2 * i + 1);
    double xa = x[a], xb = x[b];
    x[a] = magnitude * (xa * std::cos(angle) - xb * std::sin(angle));
    x[b] = magnitude * (xa * std::sin(angle) + xb * std::cos(angle));
  }
}

TEST_CASE("kernels: rope, adjacent pairs and NeoX halves, at non-zero positions") {
  KDSL_TEST_RNG(rng);
  struct Case {
    int rows, n_heads, n_kv_heads, head_dim, pos0;
    float theta;
  };
  for (bool neox : {false, true}) {
    for (Case c : {Case{1, 4, 2, 64, 0, 10000.0f}, Case{3, 4, 2, 64, 17, 10000.0f}, Case{5, 6, 1, 20, 250, 1000000.0f},
                   Case{2, 2, 2, 128, 1000, 500000.0f}}) {
      CAPTURE(neox);
      CAPTURE(c.head_dim);
      CAPTURE(c.pos0);
      auto q = random_floats(rng, size_t(c.rows) * c.n_heads * c.head_dim);
      auto k = random_floats(rng, size_t(c.rows) * c.n_kv_heads * c.head_dim);
      std::vector<double> q_ref(q.begin(), q.end()), k_ref(k.begin(), k.end());
      for (int r = 0; r < c.rows; ++r) {
        for (int h = 0; h < c.n_heads; ++h) rope_ref(q_ref, (size_t(r) * c.n_heads + h) * c.head_dim, c.head_dim, c.pos0 + r, c.theta, neox);
        for (int h = 0; h < c.n_kv_heads; ++h)
          rope_ref(k_ref, (size_t(r) * c.n_kv_heads + h) * c.head_dim, c.head_dim, c.pos0 + r, c.theta, neox);
      }
      library().rope(q.data(), k.data(), c.rows, c.n_heads, c.n_kv_heads, c.head_dim, c.pos0, c.theta, neox);
      // The angle pos * freq is an f32 (as in llama.cpp), so its error grows with the position.
      double rtol = 2e-6 + 2e-7 * (c.pos0 + c.rows);
      expect_close_scaled("rope q", q, q_ref, 1.0, rtol);
      expect_close_scaled("rope k", k, k_ref, 1.0, rtol);
    }
  }
}

template <class T>
void check_embedding(std::mt19937 &rng, int vocab, int dim, int rows) {
  using S = typename T::storage;
  CAPTURE(std::string(T::text));
  CAPTURE(dim);
  auto values = random_floats(rng, size_t(vocab) * dim, -3, 3);
  std::vector<S> table(values.size());
  for (size_t i = 0; i < table.size(); ++i) table[i] = S(values[i]);
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
  for (auto &id : ids) id = pick(rng);
  ids[0] = vocab - 1;
  std::vector<double> ref(size_t(rows) * dim);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < dim; ++i) ref[size_t(r) * dim + i] = double(float(table[size_t(ids[size_t(r)]) * dim + i]));
  std::vector<float> out(ref.size());
  library().embedding(ids.data(), table.data(), T::dtype, out.data(), rows, dim);
  expect_close_scaled("embedding", out, ref, 1.0, 0);  // exact: widening loses nothing
}

TEST_CASE("kernels: embedding gathers rows of f32, f16 and bf16 tables as f32") {
  KDSL_TEST_RNG(rng);
  for (int dim : {64, 100, 1500}) {
    check_embedding<kdsl::f32>(rng, 50, dim, 5);
    check_embedding<kdsl::f16>(rng, 50, dim, 5);
    check_embedding<kdsl::bf16>(rng, 50, dim, 1);
  }
}

}  // namespace

namespace {

TEST_CASE("kernels: rope divides each frequency by its divisor (linear scaling, Llama 3.1 frequency factors)") {
  KDSL_TEST_RNG(rng);
  for (bool neox : {false, true}) {
    for (int head_dim : {64, 20}) {
      const int rows = 3, heads = 2, pos0 = 300;
      CAPTURE(neox);
      CAPTURE(head_dim);
      auto divisors = random_floats(rng, size_t(head_dim / 2), 1.0f, 8.0f);
      auto q = random_floats(rng, size_t(rows) * heads * head_dim), k = random_floats(rng, size_t(rows) * heads * head_dim);
      std::vector<double> q_ref(q.begin(), q.end()), k_ref(k.begin(), k.end()), q_plain(q.begin(), q.end());
      for (int r = 0; r < rows; ++r)
        for (int h = 0; h < heads; ++h) {
          size_t at = (size_t(r) * heads + h) * head_dim;
          rope_ref(q_ref, at, head_dim, pos0 + r, 10000.0, neox, divisors.data());
          rope_ref(k_ref, at, head_dim, pos0 + r, 10000.0, neox, divisors.data());
          rope_ref(q_plain, at, head_dim, pos0 + r, 10000.0, neox);
        }
      // Unscaled first, so the scaled call must replace the cached frequency table.
      auto q_first = q, k_first = k;
      library().rope(q_first.data(), k_first.data(), rows, heads, heads, head_dim, pos0, 10000.0f, neox);
      expect_close_scaled("rope q unscaled", q_first, q_plain, 1.0, 1e-4);
      library().rope(q.data(), k.data(), rows, heads, heads, head_dim, pos0, 10000.0f, neox, divisors.data());
      expect_close_scaled("rope q scaled", q, q_ref, 1.0, 1e-4);
      expect_close_scaled("rope k scaled", k, k_ref, 1.0, 1e-4);
    }
  }
}

TEST_CASE("kernels: rope_at rotates each token at its own position (token-tree nodes)") {
  KDSL_TEST_RNG(rng);
  for (bool neox : {false, true}) {
    const int rows = 7, heads = 2, kv_heads = 1, head_dim = 20;
    CAPTURE(neox);
    std::vector<int32_t> positions = {40, 41, 41, 42, 41, 43, 9};  // siblings share a position
    auto q = random_floats(rng, size_t(rows) * heads * head_dim), k = random_floats(rng, size_t(rows) * kv_heads * head_dim);
    std::vector<double> q_ref(q.begin(), q.end()), k_ref(k.begin(), k.end());
    for (int r = 0; r < rows; ++r) {
      for (int h = 0; h < heads; ++h) rope_ref(q_ref, (size_t(r) * heads + h) * head_dim, head_dim, positions[size_t(r)], 10000.0, neox);
      rope_ref(k_ref, size_t(r) * head_dim, head_dim, positions[size_t(r)], 10000.0, neox);
    }
    // The CPU's form (a program per token) and a GPU's (rope_heads_at: a program per head).
    kdsl::kernels::Library gpu_forms(kdsl_test::cpu());
    gpu_forms.set_gpu_forms(true);
    for (kdsl::kernels::Library *lib : {&library(), &gpu_forms}) {
      CAPTURE(lib == &gpu_forms);
      auto q_got = q, k_got = k;
      lib->rope_at(q_got.data(), k_got.data(), rows, heads, kv_heads, head_dim, positions.data(), 10000.0f, neox);
      expect_close_scaled("rope_at q", q_got, q_ref, 1.0, 1e-4);
      expect_close_scaled("rope_at k", k_got, k_ref, 1.0, 1e-4);
    }
  }
}

TEST_CASE("kernels: rope scales the rotated vectors by a magnitude (YaRN's attention scaling)") {
  KDSL_TEST_RNG(rng);
  for (bool neox : {false, true}) {
    const int rows = 2, heads = 3, kv_heads = 1, head_dim = 24, pos0 = 17;
    const float magnitude = 1.1386f;
    CAPTURE(neox);
    auto divisors = random_floats(rng, size_t(head_dim / 2), 1.0f, 4.0f);
    auto q = random_floats(rng, size_t(rows) * heads * head_dim), k = random_floats(rng, size_t(rows) * kv_heads * head_dim);
    std::vector<double> q_ref(q.begin(), q.end()), k_ref(k.begin(), k.end());
    for (int r = 0; r < rows; ++r) {
      for (int h = 0; h < heads; ++h)
        rope_ref(q_ref, (size_t(r) * heads + h) * head_dim, head_dim, pos0 + r, 10000.0, neox, divisors.data(), magnitude);
      for (int h = 0; h < kv_heads; ++h)
        rope_ref(k_ref, (size_t(r) * kv_heads + h) * head_dim, head_dim, pos0 + r, 10000.0, neox, divisors.data(), magnitude);
    }
    library().rope(q.data(), k.data(), rows, heads, kv_heads, head_dim, pos0, 10000.0f, neox, divisors.data(), magnitude);
    expect_close_scaled("rope q with magnitude", q, q_ref, 1.0, 1e-4);
    expect_close_scaled("rope k with magnitude", k, k_ref, 1.0, 1e-4);
  }
  std::vector<float> q(24), k(24);
  std::string text = kdsl_test::error_text([&] { library().rope(q.data(), k.data(), 1, 1, 1, 24, 0, 10000.0f, false, nullptr, 0.0f); });
  CHECK(kdsl_test::contains(text, "magnitude must be positive and finite"));
}

TEST_CASE("kernels: rope and embedding reject what they cannot do, saying what was wrong") {
  std::vector<float> q(64), k(64);
  std::string text = kdsl_test::error_text([&] { kernels_test::library().rope(q.data(), k.data(), 1, 1, 1, 15, 0, 10000.0f, false); });
  CHECK(kdsl_test::contains(text, "rope"));
  CHECK(kdsl_test::contains(text, "head_dim must be positive and even (got 15)"));
  text = kdsl_test::error_text([&] { kernels_test::library().rope(q.data(), k.data(), 1, 1, 1, 514, 0, 10000.0f, false); });
  CHECK(kdsl_test::contains(text, "head_dim / 2 257"));
  std::vector<int32_t> ids(1);
  std::vector<int8_t> table(64);
  text = kdsl_test::error_text([&] { kernels_test::library().embedding(ids.data(), table.data(), kdsl::DType::I8, q.data(), 1, 64); });
  CHECK(kdsl_test::contains(text, "embedding"));
  CHECK(kdsl_test::contains(text, "table type i8 is not supported"));
}

}  // namespace
