// byte_lookup_test.cpp - a gather of bytes from a row of at most 16 by proved indices as vpshufb on the host, against a scalar reference on every path
#include <doctest/doctest.h>
#include <kdsl/compile_for.h>

#include <random>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "tests/codegen/host_assembly.h"
#include "tests/codegen/int_dot_paths.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace byte_lookup_test {
using namespace kdsl;
using kdsl_test::random_full_range;

// How the indices are made: a nibble (proved 0..15), a nibble capped at T - 1 (proved inside a
// shorter table), or the bytes as loaded (unproved: an index past the table reads 0).
enum IndexKind { kNibble, kCapped, kUnproved };

// out[r, c] = table[r][index[r, c]] along the last axis: the table a row of T bytes per row
// of the output, loaded (PER_ROW) or one row of constants broadcast (IQ4_NL's grid, as
// kernels/matvec_int8.h makes it).
template <int R, int W, int T, int KIND, bool PER_ROW>
void lookup(Ptr<const i8> table, Ptr<const u8> index, Ptr<i8> out) {
  auto rows = expand_dims<1>(arange<R>());
  auto q = load(index + (rows * W + expand_dims<0>(arange<W>())));
  auto i = [&] {
    if constexpr (KIND == kNibble) return q & 15;
    else if constexpr (KIND == kCapped) return minimum(q & 15, full<u8, R, W>(T - 1));
    else return q;
  }();
  auto t = [&] {
    if constexpr (PER_ROW) return load(table + (rows * T + expand_dims<0>(arange<T>())));
    else return broadcast_to<R, T>(cast<i8>(expand_dims<0>(arange<T>()) * 7 - 50));
  }();
  store(out + (rows * W + expand_dims<0>(arange<W>())), gather(t, i, 1));
}


template <int R, int W, int T, int KIND, bool PER_ROW>
void check(std::mt19937 &rng) {
  INFO(R, " rows of ", W, " from a table of ", T, KIND == kNibble ? ", nibbles" : KIND == kCapped ? ", capped nibbles" : ", unproved bytes",
       PER_ROW ? ", a table per row" : ", one constant table");
  auto table = random_full_range<i8>(rng, size_t(R * T));
  auto index = random_full_range<u8>(rng, size_t(R * W));
  std::vector<int8_t> want(size_t(R * W));
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < W; ++c) {
      int i = index[size_t(r * W + c)];
      if (KIND == kNibble) i &= 15;
      if (KIND == kCapped) i = std::min(i & 15, T - 1);
      if (i >= T) continue;  // past the table: 0 (want's initial value); the table is not read there
      want[size_t(r * W + c)] = int8_t(PER_ROW ? int(table[size_t(r * T + i)]) : int8_t(uint8_t(i * 7 - 50)));
    }
  constexpr auto kernel = lookup<R, W, T, KIND, PER_ROW>;
  std::vector<int8_t> out(want.size(), 99);
  compile<kernel>(kdsl_test::cpu())(grid(1), table.data(), index.data(), out.data());
  kdsl_test::check_same_elements(out, want, W, "auto (launch)");
  ir::Function fn = kdsl_test::traced<kernel>();
  kdsl_test::check_every_int_dot_path(fn, "byte_lookup_test", {kdsl_test::arg_of(table.data()), kdsl_test::arg_of(index.data())}, want, int8_t(99), W);
}

}  // namespace byte_lookup_test

using namespace byte_lookup_test;

TEST_CASE("byte lookup: a gather of bytes from a row of at most 16 equals a scalar reference (per-row and constant tables, shorter tables, unproved indices)") {
  KDSL_TEST_RNG(rng);
  check<5, 16, 16, kNibble, true>(rng);
  check<3, 48, 16, kNibble, false>(rng);  // three lookups a row
  check<7, 32, 9, kCapped, true>(rng);    // a table of 9, indices proved below 9
  check<4, 16, 16, kUnproved, true>(rng);  // element by element: past the table reads 0
  check<2, 12, 16, kNibble, true>(rng);    // rows not a multiple of 16: element by element
}

TEST_CASE("byte lookup: proved nibbles into a table of 16 take vpshufb on the host, unproved bytes do not") {
#if defined(__x86_64__)
  if (!kdsl_test::host_has("avx2")) return;
  codegen::Options options;
  options.int_dot = codegen::IntDotPath::Pmaddwd;
  CHECK(kdsl_test::host_assembly(kdsl_test::traced<lookup<5, 16, 16, kNibble, true>>(), "byte_lookup_nibbles", options).find("pshufb") != std::string::npos);
  CHECK(kdsl_test::host_assembly(kdsl_test::traced<lookup<5, 16, 16, kUnproved, true>>(), "byte_lookup_unproved", options).find("pshufb") == std::string::npos);
#endif
}
