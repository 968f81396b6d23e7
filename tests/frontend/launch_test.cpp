// launch_test.cpp - grids of 1-3 axes, specialization per argument class, scalar argument types, run-time argument errors
#include <kdsl/kdsl.h>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace launch_test {

constexpr int kBlock = 64;

// Each program writes its coordinates and the grid's extents at its linear index.
void coordinates(Ptr<i32> out) {
  auto linear = (program_id(2) * num_programs(1) + program_id(1)) * num_programs(0) + program_id(0);
  auto at = out + linear * 6;
  store(at, program_id(0)), store(at + 1, program_id(1)), store(at + 2, program_id(2));
  store(at + 3, num_programs(0)), store(at + 4, num_programs(1)), store(at + 5, num_programs(2));
}

// out = alpha * x + y over n elements.
void axpy(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<f32> alpha, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  store(out + offs, alpha * load(x + offs, m) + load(y + offs, m), m);
}

// Every scalar type passes through unchanged (f16 rounded from the host's number).
void scalars(Ptr<i64> a, Ptr<u32> b, Ptr<f16> c, Ptr<i8> d, Ptr<boolean> e, Ptr<bf16> f, Scalar<i64> va, Scalar<u32> vb, Scalar<f16> vc,
             Scalar<i8> vd, Scalar<boolean> ve, Scalar<bf16> vf) {
  store(a, va), store(b, vb), store(c, vc), store(d, vd), store(e, ve), store(f, vf);
}

}  // namespace launch_test

TEST_CASE("frontend: program_id and num_programs on 1-, 2- and 3-D grids") {
  auto kernel = compile<launch_test::coordinates>(cpu());
  for (Grid g : {grid(5), grid(3, 4), grid(2, 3, 4), grid(1, 1, 7)}) {
    INFO("grid(", g.x, ", ", g.y, ", ", g.z, ")");
    const size_t programs = size_t(g.x * g.y * g.z);
    std::vector<int32_t> out(programs * 6 + 6, -1), ref(out.size(), -1);
    for (int z = 0; z < g.z; ++z)
      for (int y = 0; y < g.y; ++y)
        for (int x = 0; x < g.x; ++x) {
          size_t at = size_t(((z * g.y + y) * g.x + x) * 6);
          const int32_t values[6] = {x, y, z, int32_t(g.x), int32_t(g.y), int32_t(g.z)};
          std::copy(values, values + 6, ref.begin() + ptrdiff_t(at));
        }
    kernel(g, out.data());
    expect_equal("coordinates", out, ref);
  }
  std::vector<int32_t> untouched(6, -1);
  std::string error = error_text([&] { kernel(grid(0, 3), untouched.data()); });  // no programs at all: refused, not skipped
  CHECK(contains(error, "grid (0, 3, 1) has no programs"));
  CHECK(untouched == std::vector<int32_t>(6, -1));
  error = error_text([&] { kernel(grid(-1), untouched.data()); });
  CHECK(contains(error, "coordinates"));
  CHECK(contains(error, "grid (-1, 1, 1) has an extent outside [0, 2^31)"));
}

TEST_CASE("frontend: each argument class gets its own specialization, and each is correct") {
  KDSL_TEST_RNG(rng);
  auto kernel = compile<launch_test::axpy>(cpu());
  const int capacity = 16 * 20 + 1;
  auto x = random_values<f32>(rng, capacity, -1, 1);
  auto y = random_values<f32>(rng, capacity, -1, 1);
  struct Case {
    int n;
    int x_shift, out_shift;  // elements added to the base pointers (1: not 16-byte aligned)
  };
  // n equal to 1, divisible by 16, neither; pointers aligned and misaligned.
  const Case cases[] = {{1, 0, 0}, {16 * 20, 0, 0}, {77, 0, 0}, {77, 1, 0}, {77, 1, 1}, {1, 1, 1}, {16 * 20, 0, 1}};
  for (int round = 0; round < 2; ++round) {
    for (const Case &c : cases) {
      INFO("round ", round, ", n = ", c.n, ", x + ", c.x_shift, ", out + ", c.out_shift);
      std::vector<float> out(capacity + 1, -5.0f);
      CacheStats before = cache_stats();
      kernel(grid(cdiv(c.n, launch_test::kBlock)), x.data() + c.x_shift, y.data(), out.data() + c.out_shift, 0.5f, c.n);
      CacheStats after = cache_stats();
      // A new class is traced once and then found compiled (here, or on disk, or freshly);
      // a class seen before on this kernel object is launched straight away.
      int64_t lookups = (after.compiled + after.memory_hits + after.disk_hits) - (before.compiled + before.memory_hits + before.disk_hits);
      CHECK(lookups == (round == 0 ? 1 : 0));
      CHECK(after.launches == before.launches + 1);
      std::vector<float> ref(out.size(), -5.0f);
      for (int i = 0; i < c.n; ++i) ref[size_t(i + c.out_shift)] = 0.5f * x[size_t(i + c.x_shift)] + y[size_t(i)];
      expect_equal("axpy", out, ref);
    }
  }
  // A second kernel object of the same kernel finds the compiled code in memory.
  CacheStats before = cache_stats();
  std::vector<float> out(capacity, 0.0f);
  compile<launch_test::axpy>(cpu())(grid(2), x.data(), y.data(), out.data(), 0.5f, 77);
  CHECK(cache_stats().memory_hits == before.memory_hits + 1);
  CHECK(cache_stats().compiled == before.compiled);
}

TEST_CASE("frontend: scalar arguments of every type") {
  int64_t a = 0;
  uint32_t b = 0;
  half c;
  int8_t d = 0;
  bool e = false;
  bfloat16 f;
  compile<launch_test::scalars>(cpu())(grid(1), &a, &b, &c, &d, &e, &f, int64_t(1) << 40, uint32_t(4000000000u), 1.0009765625, -100, true, 3.0f);
  CHECK(a == int64_t(1) << 40);
  CHECK(b == 4000000000u);
  CHECK(c.bits == half(1.0009765625f).bits);
  CHECK(d == -100);
  CHECK(e);
  CHECK(float(f) == 3.0f);
}

TEST_CASE("frontend: run-time argument errors name the kernel, the argument, what was expected and what was found") {
  auto kernel = compile<launch_test::axpy>(cpu());
  const std::string name = "'" + decltype(kernel)::name() + "'";
  CHECK(contains(name, "axpy"));
  std::vector<float> x(64), y(64), out(64);
  std::vector<int32_t> ints(64);

  std::vector<ArgValue> too_few = {make_arg(x.data()), make_arg(y.data()), make_arg(out.data()), make_arg(0.5f)};
  std::string error = error_text([&] { kernel.launch(grid(1), too_few); });
  CHECK(contains(error, "kernel " + name + " takes 5 arguments, 4 were given"));
  too_few.push_back(make_arg(64));
  too_few.push_back(make_arg(1));
  error = error_text([&] { kernel.launch(grid(1), too_few); });
  CHECK(contains(error, "kernel " + name + " takes 5 arguments, 6 were given"));

  error = error_text([&] { kernel(grid(1), ints.data(), y.data(), out.data(), 0.5f, 64); });
  CHECK(contains(error, name));
  CHECK(contains(error, "argument 0 (Ptr<f32>) expects a pointer to f32, got a pointer to i32"));

  error = error_text([&] { kernel(grid(1), x.data(), y.data(), out.data(), 0.5f, int64_t(1) << 40); });
  CHECK(contains(error, name));
  CHECK(contains(error, "argument 4 (Scalar<i32>) expects an integer in the range of i32, got the integer 1099511627776"));

  error = error_text([&] { kernel(grid(1), x.data(), y.data(), out.data(), 0.5f, 2.5); });
  CHECK(contains(error, name));
  CHECK(contains(error, "argument 4 (Scalar<i32>) expects an integer (i32), got the floating-point value 2.5"));

  error = error_text([&] { kernel(grid(1), x.data(), 3, out.data(), 0.5f, 64); });
  CHECK(contains(error, "argument 1 (Ptr<f32>) expects a pointer to f32, got the integer 3"));

  error = error_text([&] { kernel(grid(1), x.data(), y.data(), out.data(), y.data(), 64); });
  CHECK(contains(error, "argument 3 (Scalar<f32>) expects a number, got a pointer to f32"));

  // Unsigned and narrow scalars are range-checked too; an untyped pointer fits any Ptr<T>.
  auto scalars = compile<launch_test::scalars>(cpu());
  int64_t a;
  uint32_t b;
  half c;
  int8_t d;
  bool e;
  bfloat16 f;
  error = error_text([&] { scalars(grid(1), &a, &b, &c, &d, &e, &f, 1, -1, 1.0, 1, true, 1.0); });
  CHECK(contains(error, "argument 7 (Scalar<u32>) expects an integer in the range of u32, got the integer -1"));
  error = error_text([&] { scalars(grid(1), &a, &b, &c, &d, &e, &f, 1, 1, 1.0, 200, true, 1.0); });
  CHECK(contains(error, "argument 9 (Scalar<i8>) expects an integer in the range of i8, got the integer 200"));
  error = error_text([&] { scalars(grid(1), &a, &b, &c, &d, &e, &f, 1, 1, 1.0, 1, 2, 1.0); });
  CHECK(contains(error, "argument 10 (Scalar<i1>) expects an integer in the range of i1, got the integer 2"));
  CHECK(error_text([&] { kernel(grid(1), static_cast<void *>(x.data()), y.data(), out.data(), 0.5f, 64); }).empty());
}
