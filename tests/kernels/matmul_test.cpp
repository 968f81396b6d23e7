// matmul_test.cpp - Library::matmul (decode matrix-vector and prefill tiles) over f32, f16 and bf16 weights
#include "tests/kernels/library_test_util.h"

namespace {
using namespace kernels_test;
using kdsl::DType;

template <class T>
void check_matmul(std::mt19937 &rng, int rows, int N, int K, bool with_bias) {
  using S = typename T::storage;
  CAPTURE(std::string(T::text));
  CAPTURE(rows);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(with_bias);
  auto x = random_floats(rng, size_t(rows) * K);
  auto wf = random_floats(rng, size_t(N) * K);
  std::vector<S> w(wf.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = S(wf[i]);       // f16 / bf16 round here;
    wf[i] = float(w[i]);  // the reference reads the rounded values back
  }
  auto bias = random_floats(rng, size_t(N));
  const float *b = with_bias ? bias.data() : nullptr;
  ReferenceProduct ref = reference_matmul(x, wf, b, rows, N, K);
  GuardedOutput out(ref.values.size(), -7.0f);
  library().matmul(x.data(), w.data(), T::dtype, b, out.data(), rows, N, K);
  expect_close_scaled("matmul", out.values(), ref.values, ref.scale, 1e-5);
  CHECK_MESSAGE(out.intact(), "matmul wrote past its rows x N outputs");
}

TEST_CASE("kernels: matmul, one row (decode), aligned and ragged, f32 / f16 / bf16 weights") {
  KDSL_TEST_RNG(rng);
  for (auto [N, K] : {std::pair{64, 512}, std::pair{37, 300}, std::pair{130, 17}}) {
    check_matmul<kdsl::f32>(rng, 1, N, K, false);
    check_matmul<kdsl::f16>(rng, 1, N, K, false);
    check_matmul<kdsl::bf16>(rng, 1, N, K, false);
  }
  check_matmul<kdsl::f32>(rng, 1, 37, 300, true);
  check_matmul<kdsl::bf16>(rng, 1, 64, 512, true);
}

TEST_CASE("kernels: matmul, a few rows (2..32: register-blocked on the CPU, streamed once on a GPU) and batched rows (prefill tiles), f32 / f16 / bf16 weights") {
  KDSL_TEST_RNG(rng);
  check_matmul<kdsl::f32>(rng, 2, 37, 300, false);
  check_matmul<kdsl::bf16>(rng, 8, 64, 96, true);
  for (int rows : {5, 70}) {
    check_matmul<kdsl::f32>(rng, rows, 64, 96, false);
    check_matmul<kdsl::f16>(rng, rows, 37, 300, false);
    check_matmul<kdsl::bf16>(rng, rows, 37, 300, false);
  }
  check_matmul<kdsl::f32>(rng, 33, 37, 300, true);
  check_matmul<kdsl::f16>(rng, 16, 64, 96, true);
  check_matmul<kdsl::f32>(rng, 9, 37, 300, true);
  check_matmul<kdsl::f16>(rng, 11, 37, 300, true);
  check_matmul<kdsl::f32>(rng, 12, 64, 96, false);
  check_matmul<kdsl::bf16>(rng, 13, 64, 96, false);
  check_matmul<kdsl::f16>(rng, 17, 37, 300, false);
  check_matmul<kdsl::f16>(rng, 31, 37, 7, true);  // K below one 8-column step: only the masked one
  check_matmul<kdsl::f32>(rng, 32, 3, 300, false);  // N below a program's weight rows
}

TEST_CASE("kernels: matmul rejects an unsupported weight type, naming it") {
  std::vector<float> x(16), out(16);
  std::vector<int8_t> w(256);
  std::string text = kdsl_test::error_text([&] { library().matmul(x.data(), w.data(), DType::I8, nullptr, out.data(), 1, 16, 16); });
  CHECK(kdsl_test::contains(text, "matmul"));
  CHECK(kdsl_test::contains(text, "i8"));
}

}  // namespace
