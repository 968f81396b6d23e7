// scaled_dot_test.cpp - acc + dot(a, b) * column scale on bytes made one scaled_dot on the host, against an exact reference on every integer-dot path
#include <doctest/doctest.h>
#include <kdsl/compile_for.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/host/scaled_dot.h"
#include "tests/codegen/int_dot_paths.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace scaled_dot_test {
using namespace kdsl;
using kdsl_test::random_full_range;

// out = acc + dot(a0, trans(b0)) * s0 + dot(a1, trans(b1)) * s1, as a k-quant's sub-blocks
// are summed (kernels/kquant_int_dot.h): x's quants by a transposed tile of six-bit weight
// quants, each scaled by a row of per-column scales. The scales are i8 (proved to fit i16:
// the i16 pair sums widen by them) or i32 (any value: widened by ones, then multiplied).
template <class S, int M, int N, int K, bool ADD_ACC>
void scaled_byte_dots(Ptr<const i8> a, Ptr<const i8> b, Ptr<const S> s, Ptr<const i32> acc, Ptr<i32> out) {
  auto rows = expand_dims<1>(arange<M>()), cols = expand_dims<0>(arange<N>());
  auto a_at = rows * K + expand_dims<0>(arange<K>());
  auto b_at = expand_dims<1>(arange<N>()) * K + expand_dims<0>(arange<K>());
  auto sums = [&](int part) {
    auto q = trans(load(b + (b_at + part * N * K)) & 63);  // [K, N], 0..63
    return dot(load(a + (a_at + part * M * K)), q) * cast<i32>(load(s + (cols + part * N)));
  };
  auto c_at = rows * N + cols;
  auto c = sums(0) + sums(1);
  if constexpr (ADD_ACC) c = load(acc + c_at) + c;
  store(out + c_at, c);
}


template <class S, int M, int N, int K, bool ADD_ACC>
void check(std::mt19937 &rng) {
  INFO("[", M, ", ", K, "] x [", K, ", ", N, "], scales ", detail::element_traits<S>::name, ADD_ACC ? ", added to acc" : "");
  auto a = random_full_range<i8>(rng, size_t(2 * M * K));
  auto b = random_full_range<i8>(rng, size_t(2 * N * K));
  auto s = random_full_range<S>(rng, size_t(2 * N));
  auto acc = random_full_range<i32>(rng, size_t(M * N));
  for (int k = 0; k < K; ++k) a[size_t(k)] = -128, b[size_t(k)] = 63;  // the extremes: row 0 by column 0
  s[0] = std::numeric_limits<kdsl_test::storage_t<S>>::min();
  std::vector<int32_t> want(size_t(M * N));
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      uint32_t c = ADD_ACC ? uint32_t(acc[size_t(m * N + n)]) : 0;
      for (int part = 0; part < 2; ++part) {
        int64_t dot = 0;
        for (int k = 0; k < K; ++k) dot += int64_t(a[size_t(part * M * K + m * K + k)]) * (b[size_t(part * N * K + n * K + k)] & 63);
        c += uint32_t(dot) * uint32_t(int32_t(s[size_t(part * N + n)]));  // i32 arithmetic wraps
      }
      want[size_t(m * N + n)] = int32_t(c);
    }
  constexpr auto kernel = scaled_byte_dots<S, M, N, K, ADD_ACC>;
  std::vector<int32_t> out(want.size(), 0x5a5a5a5a);
  compile<kernel>(kdsl_test::cpu())(grid(1), a.data(), b.data(), s.data(), acc.data(), out.data());
  kdsl_test::check_same_elements(out, want, N, "auto (launch)");
  ir::Function fn = kdsl_test::traced<kernel>();
  kdsl_test::check_every_int_dot_path(fn, "scaled_dot_test", {kdsl_test::arg_of(a.data()), kdsl_test::arg_of(b.data()), kdsl_test::arg_of(s.data()), kdsl_test::arg_of(acc.data())},
                                      want, int32_t(0x5a5a5a5a), N);
}

// How many ops of each kind the function has, nested regions included.
std::map<OpKind, int> op_counts(const ir::Function &fn) {
  std::map<OpKind, int> n;
  ir::walk(fn.body, [&](const ir::Op &op) { ++n[op.kind]; });
  return n;
}

// A product whose dot is also stored: fusing would compute the dot twice, so it stays.
void dot_used_twice(Ptr<const i8> a, Ptr<const i8> b, Ptr<const i8> s, Ptr<i32> out) {
  auto at = expand_dims<1>(arange<16>()) * 16 + expand_dims<0>(arange<16>());
  auto d = dot(load(a + at), trans(load(b + at) & 63));
  store(out + at, d * cast<i32>(load(s + expand_dims<0>(arange<16>()))));
  store(out + (at + 256), d);
}

// The same shape in f32: not a byte dot, so not a scaled_dot.
void float_dot(Ptr<const f32> a, Ptr<const f32> b, Ptr<const f32> s, Ptr<f32> out) {
  auto at = expand_dims<1>(arange<16>()) * 16 + expand_dims<0>(arange<16>());
  store(out + at, dot(load(a + at), trans(load(b + at))) * load(s + expand_dims<0>(arange<16>())));
}

}  // namespace scaled_dot_test

using namespace scaled_dot_test;

TEST_CASE("scaled_dot: the host fuses acc + dot(a, b) * column scale on bytes, the first product alone too, and nothing else") {
  ir::Function fn = kdsl_test::traced<scaled_byte_dots<i8, 16, 16, 16, true>>();
  codegen::fuse_scaled_dots(fn);
  std::map<OpKind, int> n = op_counts(fn);
  CHECK(n[OpKind::ScaledDot] == 2);
  CHECK(n[OpKind::Dot] == 0);  // and so no product of one: the index arithmetic's are all that is left

  ir::Function twice = kdsl_test::traced<dot_used_twice>();
  codegen::fuse_scaled_dots(twice);
  CHECK(op_counts(twice)[OpKind::ScaledDot] == 0);
  CHECK(op_counts(twice)[OpKind::Dot] == 1);

  ir::Function floats = kdsl_test::traced<float_dot>();
  codegen::fuse_scaled_dots(floats);
  CHECK(op_counts(floats)[OpKind::ScaledDot] == 0);
}

TEST_CASE("scaled_dot: byte dots scaled by column equal an exact reference on every integer-dot path (i16 and i32 scales, ragged sizes, wrapping)") {
  KDSL_TEST_RNG(rng);
  check<i8, 128, 32, 16, true>(rng);   // a Q6_K sub-block's shape: two groups of two quads
  check<i8, 13, 40, 32, false>(rng);   // ragged rows, five vectors of columns
  check<i8, 7, 17, 20, true>(rng);     // a last vector of one column, a rest of one quad
  check<i32, 9, 24, 16, true>(rng);    // any i32 scale: widened by ones, then multiplied, wrapping
  check<i32, 5, 11, 32, false>(rng);
}
