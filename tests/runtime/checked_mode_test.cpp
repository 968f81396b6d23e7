// checked_mode_test.cpp - checked mode: out-of-bounds loads and stores fail the launch with one message; correct kernels pass
#include <kdsl/kdsl.h>

#include <fmt/format.h>

#include <cstdlib>
#include <random>

#include "examples/layer_norm.h"
#include "examples/matmul.h"
#include "tests/stream_capture.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace checked_test {

constexpr int kBlock = 64;

// out = x + y with no mask: the last program runs past n when n is not a multiple of kBlock.
void add_unmasked(Ptr<const f32> x, Ptr<const f32> y, Ptr<f32> out) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  store(out + offs, load(x + offs) + load(y + offs));
}

// out = x + y over n elements, masked: correct at every n.
void add_masked(Ptr<const f32> x, Ptr<const f32> y, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto mask = offs < n;
  store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
}

// out[i] = x[i + 1] - x[i], masked by the output's length only: the read of x[i + 1] runs one past x.
void forward_difference(Ptr<const f32> x, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto mask = offs < n;
  store(out + offs, load(x + offs + 1, mask) - load(x + offs, mask), mask);
}

// Writes i into out[16 i .. 16 i + 15] for i < steps, through a pointer block the loop carries.
void fill_steps(Ptr<f32> out, Scalar<i32> steps) {
  for_range(0, steps, 1, out + arange<16>(), [&](auto i, auto p) {
    store(p, cast<f32>(i));
    return p + 16;
  });
}

// out[r] = sum of row r of a [M, K] (K <= kBlock), with the sizes declared.
void row_sums(Ptr<const f32> a, Ptr<f32> out, Scalar<i32> M, Scalar<i32> K) {
  expect_extent(a, M * K);
  expect_extent(out, M);
  auto c = arange<kBlock>();
  auto r = program_id(0);
  store(out + r, sum(load(a + r * K + c, c < K)));
}

// expect_extent of a size the launch cannot know: refused when traced.
void extent_of_program(Ptr<f32> out) {
  expect_extent(out, program_id(0) + 1);
  store(out + program_id(0), 1.0f);
}

// Softmax of one row of B elements: x and e are kept as stack arrays of B floats each.
template <int B>
void whole_softmax(Ptr<const f32> x, Ptr<f32> out) {
  auto c = arange<B>();
  auto v = load(x + c);
  auto e = exp(v - max(v));
  store(out + c, e / sum(e));
}

// out = x + 1 over one block of 2^20 elements, the most a block holds (fused: no stack array).
void add_one_largest(Ptr<const f32> x, Ptr<f32> out) {
  auto c = arange<int(kMaxBlockElements)>();
  store(out + c, load(x + c) + 1);
}

// Stores each argument: out[0] = first, out[i] = rest[i - 1].
template <class... S>
void store_all(Scalar<i32> first, Ptr<i32> out, S... rest) {
  store(out, first);
  int i = 1;
  (store(out + i++, rest), ...);
}
template <std::size_t>
using AnyScalar = Scalar<i32>;
template <std::size_t... I>
constexpr auto store_all_of(std::index_sequence<I...>) {
  return &store_all<AnyScalar<I>...>;
}
constexpr auto store_33 = store_all_of(std::make_index_sequence<31>{});
constexpr auto store_70 = store_all_of(std::make_index_sequence<68>{});

std::vector<float> random_values(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float &x : v) x = u(rng);
  return v;
}

}  // namespace checked_test

using namespace checked_test;

TEST_CASE("checked mode: an unmasked ragged tail fails with one message naming kernel, argument, element and program") {
  auto k = compile<add_unmasked>(cpu(), {.checked = true});
  Buffer<float> x(1000), y(1000), out(1000);
  std::string error = error_text([&] { k(grid(cdiv(1000, kBlock)), x, y, out); });
  INFO(error);
  // x and y are both read past their end; which load is traced first is the C++ compiler's choice.
  CHECK((contains(error, "kernel 'checked_test::add_unmasked': load from argument 0 (Ptr<const f32>) at element 1000 of program (15, 0, 0)") ||
         contains(error, "kernel 'checked_test::add_unmasked': load from argument 1 (Ptr<const f32>) at element 1000 of program (15, 0, 0)")));
  CHECK(contains(error, "): the buffer holds 1000 elements"));
  CHECK(error.find("kernel '") == error.rfind("kernel '"));  // one message

  // A raw pointer given its size is checked as a Buffer is, and nothing is written past it.
  std::vector<float> big(1024, 7.0f);
  std::vector<float> small(1000, 1.0f);
  error = error_text([&] { k(grid(16), sized(small.data(), small.size()), sized(small.data(), small.size()), sized(big.data(), 1000)); });
  CHECK(contains(error, "at element 1000 of program (15, 0, 0)"));
  for (size_t i = 1000; i < big.size(); ++i) REQUIRE(big[i] == 7.0f);
  for (size_t i = 0; i < 1000; ++i) REQUIRE(big[i] == 2.0f);
}

TEST_CASE("checked mode: a buffer shorter than the grid writes fails naming the store and the extent") {
  auto k = compile<add_masked>(cpu(), {.checked = true});
  Buffer<float> x(1000), y(1000), out(900);
  std::string error = error_text([&] { k(grid(cdiv(1000, kBlock)), x, y, out, 1000); });
  INFO(error);
  CHECK(contains(error, "kernel 'checked_test::add_masked': store to argument 2 (Ptr<f32>) at element 900 of program (14, 0, 0): "
                        "the buffer holds 900 elements"));
}

TEST_CASE("checked mode: a read one past a sized pointer is caught; masked-off lanes are not checked") {
  auto k = compile<forward_difference>(cpu(), {.checked = true});
  std::mt19937 rng(fresh_seed());
  for (int n : {1, 63, 64, 200}) {
    INFO("n = ", n);
    std::vector<float> x = random_values(size_t(n), rng);
    std::vector<float> out(static_cast<size_t>(n));
    std::string error = error_text([&] { k(grid(cdiv(n, kBlock)), std::span<const float>(x), sized(out.data(), out.size()), n); });
    CHECK(contains(error, fmt::format("load from argument 0 (Ptr<const f32>) at element {} of program ({}, 0, 0): the buffer holds {} elements", n,
                                   (n - 1) / kBlock, n)));
    // One fewer output: every read is inside x, and the lanes past n - 1 are masked off.
    if (n > 1) {
      CHECK_NOTHROW(k(grid(cdiv(n - 1, kBlock)), std::span<const float>(x), sized(out.data(), out.size()), n - 1));
      for (int i = 0; i + 1 < n; ++i) REQUIRE(out[size_t(i)] == x[size_t(i) + 1] - x[size_t(i)]);
    }
  }
}

TEST_CASE("checked mode: a store through a loop-carried pointer is traced back to its argument") {
  auto k = compile<fill_steps>(cpu(), {.checked = true});
  Buffer<float> out(16 * 5 - 5);
  std::string error = error_text([&] { k(grid(1), out, 5); });
  INFO(error);
  CHECK(contains(error, "store to argument 0 (Ptr<f32>) at element 75 of program (0, 0, 0): the buffer holds 75 elements"));
  Buffer<float> enough(16 * 5);
  k(grid(1), enough, 5);
  for (size_t i = 0; i < enough.size(); ++i) REQUIRE(enough[i] == float(i / 16));
}

TEST_CASE("checked mode: correct masked kernels give the unchecked results at aligned and ragged sizes") {
  auto checked = compile<add_masked>(cpu(), {.checked = true});
  auto unchecked = compile<add_masked>(cpu());
  std::mt19937 rng(fresh_seed());
  for (int n : {1, 63, 64, 65, 1000, 4096}) {
    INFO("n = ", n);
    std::vector<float> x = random_values(size_t(n), rng), y = random_values(size_t(n), rng);
    const size_t count = static_cast<size_t>(n);
    Buffer<float> bx(count), by(count), out(count);
    bx.copy_from_host(x), by.copy_from_host(y);
    checked(grid(cdiv(n, kBlock)), bx, by, out, n);
    for (int i = 0; i < n; ++i) REQUIRE(out[size_t(i)] == x[size_t(i)] + y[size_t(i)]);
    std::vector<float> raw(count);
    unchecked(grid(cdiv(n, kBlock)), x.data(), y.data(), raw.data(), n);
    CHECK(raw == out.to_vector());
  }
}

TEST_CASE("checked mode: its own specialization, also through KDSL_CHECK=1; raw pointers without a size are said to be unchecked") {
  // The unchecked kernel is compiled first: were checked code not keyed apart, the checked
  // launch below would find it and report nothing.
  Buffer<float> x(100), y(100), out(100);
  compile<add_unmasked>(cpu())(grid(1), x, y, out);
  ::setenv("KDSL_CHECK", "1", 1);
  auto from_env = compile<add_unmasked>(cpu());
  ::unsetenv("KDSL_CHECK");
  CHECK(contains(error_text([&] { from_env(grid(2), x, y, out); }), "at element 100 of program (1, 0, 0)"));

  auto k = compile<add_masked>(cpu(), {.checked = true});
  std::vector<float> raw(100);
  StderrCapture capture;
  k(grid(2), x, y, raw.data(), 100);
  k(grid(2), x, y, raw.data(), 100);
  std::string log = capture.text();
  INFO(log);
  CHECK(contains(log, "argument 2 (Ptr<f32>) is a raw pointer without a size, so checked mode does not check its accesses"));
  CHECK(log.find("raw pointer") == log.rfind("raw pointer"));  // once
}

TEST_CASE("launch checks: null pointers, empty grids and const data for a writable parameter are refused in every mode") {
  for (bool checked : {false, true}) {
    auto k = compile<add_masked>(cpu(), {.checked = checked});
    std::vector<float> v(64);
    std::string error = error_text([&] { k(grid(1), v.data(), static_cast<const float *>(nullptr), v.data(), 64); });
    CHECK(contains(error, "kernel 'checked_test::add_masked': argument 1 (Ptr<const f32>) is a null pointer"));
    error = error_text([&] { k(grid(0), v.data(), v.data(), v.data(), 64); });
    CHECK(contains(error, "kernel 'checked_test::add_masked': grid (0, 1, 1) has no programs"));
    error = error_text([&] { k(grid(4, 0, 2), v.data(), v.data(), v.data(), 64); });
    CHECK(contains(error, "grid (4, 0, 2) has no programs"));
    const float *read_only = v.data();
    error = error_text([&] { k.launch(grid(1), {make_arg(read_only), make_arg(read_only), make_arg(read_only), make_arg(64)}); });
    CHECK(contains(error, "argument 2 (Ptr<f32>) is given a pointer to const data, but the kernel may write through it: declare the parameter "
                          "Ptr<const f32> if the kernel only reads it"));
  }
}

TEST_CASE("launch checks: expect_extent compares the declared size with the Buffer's or sized pointer's extent") {
  auto k = compile<row_sums>(cpu());
  Buffer<float> a(3 * 40), out(3);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7);
  k(grid(3), a, out, 3, 40);
  for (size_t r = 0; r < 3; ++r) {
    float ref = 0;
    for (size_t c = 0; c < 40; ++c) ref += float((r * 40 + c) % 7);
    CHECK(out[r] == ref);
  }
  std::string error = error_text([&] { k(grid(3), a, out, 3, 41); });
  CHECK(contains(error, "kernel 'checked_test::row_sums': argument 0 (Ptr<const f32>) holds 120 elements, but the kernel expects at least 123 "
                        "(expect_extent: argument 2 * argument 3 = 123)"));
  error = error_text([&] { k(grid(4), a, sized(out.data(), 3), 4, 30); });
  CHECK(contains(error, "argument 1 (Ptr<f32>) holds 3 elements, but the kernel expects at least 4"));
  // A raw pointer carries no extent: nothing to compare.
  CHECK_NOTHROW(k(grid(3), a.data(), out.data(), 3, 40));

  auto bad = compile<extent_of_program>(cpu());
  error = error_text([&] { bad(grid(1), out); });
  CHECK(contains(error, "kernel 'checked_test::extent_of_program': expect_extent(x, n): n must be computed from Scalar integer arguments"));
  CHECK(contains(error, "program_id"));
}

TEST_CASE("launch: kernels of 33 and 70 parameters get every argument, whatever the argument classes") {
  auto run = [](auto kernel, int params) {
    // first = 5 and ones at 32 and 64 (where a 2-bit-per-argument key wrapped onto argument
    // 0), multiples of 16 and others elsewhere.
    for (int round = 0; round < 2; ++round) {
      INFO(params, " parameters, round ", round);
      std::vector<int32_t> out(size_t(params - 1), -1), expect;
      std::vector<ArgValue> args = {make_arg(5), make_arg(out.data())};
      expect.push_back(5);
      for (int i = 2; i < params; ++i) {
        int32_t v = i % 32 == 0 ? (round == 0 ? 1 : 7) : i % 3 == 0 ? 16 * i : i % 3 == 1 ? 1 : 1000 + i;
        args.push_back(make_arg(v));
        expect.push_back(v);
      }
      kernel.launch(grid(1), args);
      CHECK(out == expect);
    }
  };
  run(compile<store_33>(cpu()), 33);
  run(compile<store_70>(cpu()), 70);
}

TEST_CASE("launch: a block of 2^20 elements runs; blocks needing more stack than a thread has are refused when compiled") {
  const size_t n = size_t(kMaxBlockElements);
  std::vector<float> x(n), out(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(i % 1000) / 1000;
  compile<add_one_largest>(cpu())(grid(1), x.data(), out.data());
  std::vector<float> ref(n);
  for (size_t i = 0; i < n; ++i) ref[i] = x[i] + 1;
  CHECK(out == ref);

  // 2^19: two arrays of 2 MiB fit; 2^20: two of 4 MiB do not.
  std::vector<float> half_out(n / 2);
  compile<whole_softmax<(1 << 19)>>(cpu())(grid(1), x.data(), half_out.data());
  double total = 0;
  for (float v : half_out) total += v;
  CHECK(total == doctest::Approx(1.0).epsilon(1e-3));
  std::string error = error_text([&] { compile<whole_softmax<(1 << 20)>>(cpu())(grid(1), x.data(), out.data()); });
  CHECK(contains(error, "kernel 'checked_test::whole_softmax<1048576>': its blocks need 8.0 MiB of stack on the host, more than the 6 MiB"));
}

TEST_CASE("checked mode: the examples' masked 2-D kernels (layer norm, matmul with for_range and dot) pass at ragged sizes") {
  std::mt19937 rng(fresh_seed());
  for (auto [rows, cols] : {std::pair{1, 1}, std::pair{3, 100}, std::pair{5, 128}}) {
    INFO(rows, " x ", cols);
    const size_t count = size_t(rows) * size_t(cols);
    std::vector<float> x = random_values(count, rng), w = random_values(size_t(cols), rng), b = random_values(size_t(cols), rng);
    std::vector<float> plain(count), checked(count);
    compile<examples::layer_norm<128>>(cpu())(grid(rows), x.data(), w.data(), b.data(), plain.data(), cols, 1e-5f);
    compile<examples::layer_norm<128>>(cpu(), {.checked = true})(grid(rows), std::span<const float>(x), std::span<const float>(w),
                                                                  std::span<const float>(b), std::span<float>(checked), cols, 1e-5f);
    // The checked loops are not vectorized, so the row sums add in another order: equal to rounding.
    for (size_t i = 0; i < count; ++i) REQUIRE(checked[i] == doctest::Approx(plain[i]).epsilon(1e-5));
  }
  for (auto [M, N, K] : {std::array{1, 1, 1}, std::array{17, 33, 40}, std::array{32, 32, 64}}) {
    INFO(M, " x ", N, " x ", K);
    std::vector<half> a(size_t(M) * size_t(K)), bt(size_t(K) * size_t(N));
    for (half &v : a) v = half(random_values(1, rng)[0]);
    for (half &v : bt) v = half(random_values(1, rng)[0]);
    std::vector<float> plain(size_t(M) * size_t(N)), checked(plain.size());
    Grid g = grid(cdiv(M, 16), cdiv(N, 16));
    compile<examples::matmul<16, 16, 16>>(cpu())(g, a.data(), bt.data(), plain.data(), M, N, K);
    compile<examples::matmul<16, 16, 16>>(cpu(), {.checked = true})(g, std::span<const half>(a), std::span<const half>(bt), std::span<float>(checked), M, N, K);
    CHECK(plain == checked);
    // One row of B short: the last k row's loads run past it.
    std::string error = error_text([&] {
      compile<examples::matmul<16, 16, 16>>(cpu(), {.checked = true})(g, std::span<const half>(a), sized(bt.data(), bt.size() - size_t(N)),
                                                                      std::span<float>(checked), M, N, K);
    });
    CHECK(contains(error, fmt::format("load from argument 1 (Ptr<const f16>) at element {}", size_t(K - 1) * size_t(N))));
    CHECK(contains(error, fmt::format("the buffer holds {} elements", size_t(K - 1) * size_t(N))));
  }
}
