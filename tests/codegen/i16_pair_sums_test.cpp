// i16_pair_sums_test.cpp - chained dot4s on AVX2: pair sums added in i16 where the bounds allow (one vpmaddwd for two), exact at the extremes either way
#include <doctest/doctest.h>
#include <kdsl/compile_for.h>
#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "tests/codegen/host_assembly.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace i16_pair_sums_test {
using namespace kdsl;
using kdsl_test::random_full_range;

// out[r, g] = dot4(w1 & MASK, x1) + dot4(w2 & MASK, x2) over rows of 32 bytes: Q4_K's two
// halves of a sub-block (MASK 15) chained through dot4's accumulator; MASK 127 makes pairs
// too large to share an i16.
template <int R, int MASK>
void chained_dot4(Ptr<const u8> w, Ptr<const i8> x, Ptr<i32> out) {
  auto at = reshape<R, 32>(arange<R * 32>());
  auto first = dot4(load(w + at) & MASK, load(x + at));
  auto both = dot4(load(w + (at + R * 32)) & MASK, load(x + (at + R * 32)), first);
  store(out + reshape<R, 8>(arange<R * 8>()), both);
}

// out[g] = the chain of N dot4s over 32-byte pieces of one row: Q4_K's sub-block, as its
// grouped decode makes it (8 pieces of 4 bytes for each of 8 rows, one vector a piece).
template <int N>
void chained_pieces(Ptr<const u8> w, Ptr<const i8> x, Ptr<i32> out) {
  auto at = reshape<1, 32>(arange<32>());
  auto sums = zeros<i32, 1, 8>();
  for (int i = 0; i < N; ++i) sums = dot4(load(w + (at + 32 * i)) & 15, load(x + (at + 32 * i)), sums);
  store(out + reshape<1, 8>(arange<8>()), sums);
}

// The most i16 pair sums alive at once, walking the IR in order: a vpmaddubsw makes one, an
// i16 add takes two and makes one.
int most_pair_sums_alive(const std::string &ll) {
  int alive = 0, most = 0;
  std::istringstream lines(ll);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("call <16 x i16> @llvm.x86.avx2.pmadd.ub.sw") != std::string::npos) most = std::max(most, ++alive);
    else if (line.find("= add <16 x i16>") != std::string::npos) --alive;
  }
  return most;
}

template <int MASK>
void check(std::mt19937 &rng) {
  constexpr int R = 4;
  INFO("mask ", MASK);
  auto w = random_full_range<u8>(rng, 2 * R * 32);
  auto x = random_full_range<i8>(rng, 2 * R * 32);
  for (size_t i = 0; i < 32; ++i) w[i] = w[R * 32 + i] = 255, x[i] = x[R * 32 + i] = int8_t(-128);  // row 0 at the extremes in both
  std::vector<int32_t> want(R * 8), got(R * 8, 0x5a5a5a5a);
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < 8; ++g) {
      int64_t s = 0;
      for (int half = 0; half < 2; ++half)
        for (int j = 4 * g; j < 4 * g + 4; ++j) {
          const size_t i = size_t(half * R * 32 + r * 32 + j);
          s += int64_t(w[i] & MASK) * int64_t(x[i]);
        }
      want[size_t(r * 8 + g)] = int32_t(s);
    }
  compile<chained_dot4<R, MASK>>(kdsl_test::cpu())(grid(1), w.data(), x.data(), got.data());
  CHECK(got == want);
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace i16_pair_sums_test

using namespace i16_pair_sums_test;

TEST_CASE("chained dot4 on AVX2: nibble pair sums share one vpmaddwd, wider ones do not, exact at the extremes") {
  KDSL_TEST_RNG(rng);
  check<15>(rng);
  check<127>(rng);
#if defined(__x86_64__)
  if (!codegen::host_target().has_feature("avx2")) return;
  codegen::Options options;
  options.int_dot = codegen::IntDotPath::Pmaddwd;
  const std::string nibbles = kdsl_test::host_assembly(kdsl_test::traced<chained_dot4<4, 15>>(), "i16_pairs_nibbles", options);
  const std::string wide = kdsl_test::host_assembly(kdsl_test::traced<chained_dot4<4, 127>>(), "i16_pairs_wide", options);
  // Nibbles against s8: pairs of at most 2 * 15 * 128, two of them fit i16: half the widenings.
  CHECK(count(nibbles, "vpmaddubsw") > 0);
  CHECK(count(nibbles, "vpmaddwd") * 2 == count(nibbles, "vpmaddubsw"));
  CHECK(count(nibbles, "vpaddw") > 0);
  // Below 128 against s8: a pair reaches 2 * 127 * 128, so each widens alone (on a host with
  // AVX512-VNNI, LLVM makes a widening and the add after it one vpdpwssd).
  CHECK(count(wide, "vpmaddwd") + count(wide, "vpdpwssd") == count(wide, "vpmaddubsw"));
#endif
}

TEST_CASE("chained dot4 on AVX2: each pair sum is added where it is made, one running i16 sum alive between them") {
#if defined(__x86_64__)
  if (!codegen::host_target().has_feature("avx2")) return;
  codegen::Options options;
  options.int_dot = codegen::IntDotPath::Pmaddwd;
  // Eight nibble pieces: all of them share one widening (8 * 2 * 15 * 128 < 32768). Added at
  // the chain's end, all eight pair sums were alive there: with Q4_K's 8 sub-blocks a step, more
  // vectors than AVX2 has registers.
  codegen::DumpOptions llvm_ir;
  llvm_ir.llvm = true;
  const std::string ll = kdsl_test::host_dump_text(kdsl_test::traced<chained_pieces<8>>(), "i16_pairs_chain", llvm_ir, ".opt.ll", options);
  REQUIRE(count(ll, "@llvm.x86.avx2.pmadd.ub.sw(") == 8 + 1);  // 8 calls and the declaration
  CHECK(count(ll, "@llvm.x86.avx2.pmadd.wd(") == 1 + 1);
  CHECK(most_pair_sums_alive(ll) == 2);
#endif
}
