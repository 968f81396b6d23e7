// dynamic_scalar_test.cpp - Dynamic<T> kernel parameters: one compiled kernel for every value, correct at the values Scalar<T> specializes
#include <kdsl/kdsl.h>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace dynamic_scalar_test {

constexpr int kBlock = 64;

// out[i] = x[i] * pos + i for i < n, written at out + pos * 0 (pos only scales): pos is used in
// arithmetic, comparisons and a run-time loop bound, where a specialized 1 would fold away.
template <class Pos>
void scale_by_position(Ptr<f32> x, Ptr<f32> out, Pos pos, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto steps = for_range(0, pos, 1, zeros<i32, kBlock>(), [&](auto, auto acc) { return acc + 1; });  // == pos
  auto v = load(x + offs, m, 0) * cast<f32>(pos) + cast<f32>(offs);
  store(out + offs, where(steps == pos, v, -1.0f), m && (offs < pos * 1000));
}

int64_t lookups(const CacheStats &s) { return s.compiled + s.memory_hits + s.disk_hits; }

template <class Pos>
int64_t run_positions(std::mt19937 &rng) {
  auto kernel = compile<scale_by_position<Pos>>(cpu());
  const int n = 3 * kBlock + 5;
  auto x = random_values<f32>(rng, size_t(n), -1, 1);
  int64_t before = lookups(cache_stats());
  for (int pos : {1, 16, 7, 32, 1, 0}) {
    CAPTURE(pos);
    std::vector<float> out(size_t(n), -5.0f), ref(size_t(n), -5.0f);
    kernel(grid(cdiv(n, kBlock)), x.data(), out.data(), pos, n);
    for (int i = 0; i < n && i < pos * 1000; ++i) ref[size_t(i)] = x[size_t(i)] * float(pos) + float(i);
    expect_equal("scale_by_position", out, ref);
  }
  return lookups(cache_stats()) - before;
}

}  // namespace dynamic_scalar_test

TEST_CASE("frontend: a Dynamic<i32> parameter is one compiled kernel for every value; Scalar<i32> specializes 1 and multiples of 16") {
  KDSL_TEST_RNG(rng);
  // Values 1, 16, 7, 32, 1, 0: Scalar<i32> classes them 1, 16, other, 16, 1, 16 (three kernels).
  CHECK(dynamic_scalar_test::run_positions<Scalar<i32>>(rng) == 3);
  CHECK(dynamic_scalar_test::run_positions<Dynamic<i32>>(rng) == 1);
}

TEST_CASE("frontend: Dynamic<T> is a Scalar<T> in the signature: its argument checks and type name") {
  auto kernel = compile<dynamic_scalar_test::scale_by_position<Dynamic<i32>>>(cpu());
  float x[1] = {}, out[1] = {};
  std::string error = error_text([&] { kernel(grid(1), x, out, 2.5f, 1); });
  CHECK(contains(error, "scale_by_position"));
  CHECK(contains(error, "argument 2"));
  CHECK(contains(error, "expects an integer (i32)"));
  CHECK(detail::kernel_params<decltype(&dynamic_scalar_test::scale_by_position<Dynamic<i32>>)>::types()[2].no_specialize);
  CHECK(!detail::kernel_params<decltype(&dynamic_scalar_test::scale_by_position<Scalar<i32>>)>::types()[2].no_specialize);
}
