// int_dot_tile_test.cpp - the host's byte dot as register tiles (vpmaddubsw summed in i16, vpdpbusd) against an exact reference, every path, ragged sizes
#include <doctest/doctest.h>
#include <kdsl/compile_for.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/host/int_dot_tile.h"
#include "tests/codegen/host_assembly.h"
#include "tests/codegen/int_dot_paths.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace int_dot_tile_test {
using namespace kdsl;
using kdsl_test::random_full_range;
using kdsl_test::storage_t;

// How a kernel narrows an operand before the dot, as the quantized kernels do, so that the
// lowering proves its bounds (ir::ValueRanges): 0 as loaded, 1 a nibble (x & 15), 2 six bits
// (x & 63), 3 below 128 (x & 127), 4 kept from -128 (i8 only).
enum Narrow { kFull, kNibble, kSixBits, kBelow128, kAbove128 };

template <int NARROW, int R, int C, class X>
auto narrowed(const X &x) {
  if constexpr (NARROW == kNibble) return x & 15;
  else if constexpr (NARROW == kSixBits) return x & 63;
  else if constexpr (NARROW == kBelow128) return x & 127;
  else if constexpr (NARROW == kAbove128) return maximum(x, full<i8, R, C>(-127));
  else return x;
}

int narrowed_value(int v, int narrow) {
  switch (narrow) {
    case kNibble: return v & 15;
    case kSixBits: return v & 63;
    case kBelow128: return v & 127;
    case kAbove128: return std::max(v, -127);
    default: return v;
  }
}

// out[M, N] = acc + dot(a, b): a [M, K]; b [K, N], or the transpose of a [N, K] tile (a
// weight tile's rows, as the prefill kernels give it) where TRANS_B; acc zeros or loaded.
template <class E, int M, int N, int K, int NA, int NB, bool TRANS_B, bool ZERO_ACC>
void byte_dot(Ptr<const E> a, Ptr<const E> b, Ptr<const i32> acc, Ptr<i32> out) {
  auto ta = narrowed<NA, M, K>(load(a + expand_dims<1>(arange<M>()) * K + expand_dims<0>(arange<K>())));
  auto tb = [&] {
    if constexpr (TRANS_B) return trans(narrowed<NB, N, K>(load(b + expand_dims<1>(arange<N>()) * K + expand_dims<0>(arange<K>()))));
    else return narrowed<NB, K, N>(load(b + expand_dims<1>(arange<K>()) * N + expand_dims<0>(arange<N>())));
  }();
  auto c_index = expand_dims<1>(arange<M>()) * N + expand_dims<0>(arange<N>());
  auto c = [&] {
    if constexpr (ZERO_ACC) return zeros<i32, M, N>();
    else return load(acc + c_index);
  }();
  store(out + c_index, dot(ta, tb, c));
}

using kdsl_test::host_has;


template <class E, int M, int N, int K, int NA, int NB, bool TRANS_B, bool ZERO_ACC>
void check(std::mt19937 &rng) {
  INFO("[", M, ", ", K, "] x [", K, ", ", N, "] ", detail::element_traits<E>::name, ", narrowed ", NA, " x ", NB, TRANS_B ? ", b transposed" : "",
       ZERO_ACC ? ", zero acc" : "");
  auto a = random_full_range<E>(rng, size_t(M) * K);
  auto b = random_full_range<E>(rng, size_t(K) * N);
  auto acc = random_full_range<i32>(rng, size_t(M) * N);
  // The extremes, so that any saturation or i16 overflow shows: the first row of a and the
  // first column of b at the largest magnitude each narrowing leaves (i8 -1 is a nibble's 15),
  // and the first element of every other row of a.
  auto extreme = [](int narrow) { return storage_t<E>(std::is_same_v<E, u8> ? 255 : narrow == kFull || narrow == kAbove128 ? -128 : -1); };
  for (int m = 0; m < M; ++m) a[size_t(m) * K] = extreme(NA);
  for (int k = 0; k < K; ++k) a[size_t(k)] = extreme(NA);
  for (int k = 0; k < K; ++k) b[TRANS_B ? size_t(k) : size_t(k) * N] = extreme(NB);
  std::vector<int32_t> want(static_cast<size_t>(M * N));
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int64_t s = ZERO_ACC ? 0 : acc[size_t(m) * N + size_t(n)];
      for (int k = 0; k < K; ++k) {
        const int bv = int(b[TRANS_B ? size_t(n) * K + size_t(k) : size_t(k) * N + size_t(n)]);
        s += int64_t(narrowed_value(int(a[size_t(m) * K + size_t(k)]), NA)) * narrowed_value(bv, NB);
      }
      want[size_t(m) * N + size_t(n)] = int32_t(uint32_t(uint64_t(s)));
    }
  constexpr auto kernel = byte_dot<E, M, N, K, NA, NB, TRANS_B, ZERO_ACC>;
  std::vector<int32_t> out(want.size(), 0x5a5a5a5a);
  compile<kernel>(kdsl_test::cpu())(grid(1), a.data(), b.data(), acc.data(), out.data());
  kdsl_test::check_same_elements(out, want, N, "auto (launch)");
  ir::Function fn = kdsl_test::traced<kernel>();
  kdsl_test::check_every_int_dot_path(fn, "int_dot_tile_test", {kdsl_test::arg_of(a.data()), kdsl_test::arg_of(b.data()), kdsl_test::arg_of(acc.data())}, want,
                                      int32_t(0x5a5a5a5a), N);
}

}  // namespace int_dot_tile_test

using namespace int_dot_tile_test;

TEST_CASE("byte dot as register tiles: nibbles and six bits against i8, transposed weight tiles, ragged sizes, against an exact reference") {
  KDSL_TEST_RNG(rng);
  // The prefill kernels' shape: x's quants by a weight tile's nibbles, 8 quads a group.
  check<i8, 128, 32, 32, kFull, kNibble, true, true>(rng);
  check<i8, 128, 32, 32, kFull, kNibble, true, false>(rng);
  // Ragged rows, columns (a last vector of 8 narrower) and k (a last quad of 1 byte, groups and a rest).
  check<i8, 13, 40, 37, kFull, kNibble, true, false>(rng);
  check<i8, 7, 33, 256, kFull, kNibble, true, true>(rng);
  check<i8, 9, 17, 70, kFull, kSixBits, true, false>(rng);
  check<i8, 1, 17, 16, kFull, kNibble, true, true>(rng);  // one row (decode)
}

TEST_CASE("byte dot as register tiles: the u8 side in a, b not transposed, groups of one quad, u8 blocks, and operands no fast path takes") {
  KDSL_TEST_RNG(rng);
  check<i8, 7, 33, 64, kNibble, kFull, false, false>(rng);     // a is the u8 operand
  check<i8, 5, 8, 20, kFull, kBelow128, false, true>(rng);     // pairs up to 2 * 127 * 128: one quad a group
  check<u8, 6, 24, 48, kBelow128, kNibble, true, false>(rng);  // u8 x u8, both below 128
  check<i8, 6, 16, 32, kFull, kAbove128, true, false>(rng);    // s8 x s8: without VNNI |a| by b signed as a; with VNNI B flipped and corrected
  check<i8, 7, 33, 64, kFull, kFull, true, true>(rng);         // s8 x s8 at -128 both sides, ragged N, B transposed (Q8_0's tiles)
  check<i8, 5, 9, 70, kFull, kFull, false, false>(rng);        // and K not whole quads, B packed element by element
  check<u8, 4, 16, 32, kFull, kFull, false, false>(rng);       // u8 x u8 over 127
}

TEST_CASE("byte dot as register tiles: s8 x s8 with one side within +-127 (Q8_0's and IQ4_NL's tiles), its sign moved onto the other's magnitude") {
  KDSL_TEST_RNG(rng);
  // a within +-127 (x's quants, as the tiles clamp them): |b| by a signed as b, b at -128.
  check<i8, 128, 32, 32, kAbove128, kFull, true, true>(rng);
  check<i8, 13, 40, 37, kAbove128, kFull, true, false>(rng);  // ragged rows, columns, k
  check<i8, 1, 17, 16, kAbove128, kFull, true, true>(rng);    // one row
  check<i8, 5, 9, 70, kAbove128, kFull, false, false>(rng);   // b packed element by element
  // b within +-127 (IQ4_NL's levels): |a| by b signed as a, a at -128.
  check<i8, 9, 24, 64, kFull, kAbove128, true, true>(rng);
}

TEST_CASE("byte dot as register tiles: the plan's groups and tile, and one vpmaddubsw a quad in the AVX2 code") {
#if defined(__x86_64__)
  if (!host_has("avx2")) return;
  const codegen::ByteKind s8 = codegen::ByteKind::of_type(true), nibble{true, 0, 15}, six_bits{true, 0, 63}, below_128{false, 0, 127};
  auto plan = codegen::plan_int_dot_tile(128, 32, 32, s8, nibble, codegen::IntDotPath::Pmaddwd);
  REQUIRE(plan);
  CHECK(plan->kind == codegen::IntDotTilePlan::Kind::Maddubs);
  CHECK(plan->b_is_u8);
  CHECK(plan->group_quads == 8);  // 8 * 2 * 15 * 128 = 30720 fits i16; 9 would not
  const int registers = host_has("avx512f") ? 32 : 16;  // the plan's budget: the host's vector registers, one kept for vpmaddubsw's result
  CHECK(plan->tile.rows * plan->tile.vectors + plan->tile.vectors + 1 <= registers - 1);
  CHECK(plan->tile.rows * plan->tile.vectors >= 8);
  CHECK(codegen::plan_int_dot_tile(128, 32, 32, s8, six_bits, codegen::IntDotPath::Pmaddwd)->group_quads == 2);
  CHECK(codegen::plan_int_dot_tile(128, 32, 32, below_128, s8, codegen::IntDotPath::Pmaddwd)->b_is_u8 == false);
  CHECK_FALSE(codegen::plan_int_dot_tile(128, 32, 32, s8, s8, codegen::IntDotPath::Pmaddwd));  // both reach -128
  // s8 x s8 with one side within +-127: vpsignb and vpmaddubsw, widened every quad (no group).
  const codegen::ByteKind within_127{true, -127, 127};
  for (bool a_within : {true, false}) {
    auto signed_plan = codegen::plan_int_dot_tile(128, 32, 32, a_within ? within_127 : s8, a_within ? s8 : within_127, codegen::IntDotPath::Pmaddwd);
    REQUIRE(signed_plan);
    CHECK(signed_plan->kind == codegen::IntDotTilePlan::Kind::SignedMaddubs);
    CHECK(signed_plan->magnitude_of_b == a_within);  // the magnitude of the side that may be -128
    // Accumulators, B (with its magnitude where that is taken), A's broadcast (with its
    // magnitude otherwise), and the signed operand and the pair sums before they are used.
    const int b_registers = signed_plan->tile.vectors * (a_within ? 2 : 1), a_registers = a_within ? 1 : 2;
    CHECK(signed_plan->tile.rows * signed_plan->tile.vectors + b_registers + a_registers + 2 <= registers);
    CHECK(signed_plan->tile.rows * signed_plan->tile.vectors >= 8);
  }
  // With VNNI, s8 x s8 (Q8_0's tiles) goes in with B's bytes flipped to u8 and a correction.
  // (Asking for VNNI on a CPU without it is refused: an AVX2-only host skips this part.)
  if (kdsl_test::host_has_vnni()) {
    auto flipped = codegen::plan_int_dot_tile(128, 32, 32, s8, s8, codegen::IntDotPath::Vnni);
    REQUIRE(flipped);
    CHECK(flipped->flip_b);
    CHECK(flipped->b_is_u8);
    CHECK_FALSE(codegen::plan_int_dot_tile(128, 32, 32, s8, nibble, codegen::IntDotPath::Vnni)->flip_b);
  }
  CHECK_FALSE(codegen::plan_int_dot_tile(128, 32, 32, s8, nibble, codegen::IntDotPath::Portable));

  codegen::Options options;
  options.int_dot = codegen::IntDotPath::Pmaddwd;
  const std::string text = kdsl_test::host_assembly(kdsl_test::traced<byte_dot<i8, 128, 32, 32, kFull, kNibble, true, true>>(), "int_dot_tile_asm", options);
  // The innermost loops (a label to the jump back to it) that multiply: vpmaddubsw added in i16,
  // widened once a register after each group of 8 quads. A loop within a group widens nothing
  // and adds every product into its carried sums; one that holds whole groups (the tile's
  // strip, its quads unrolled) starts each group's sum from its first product and widens it
  // once after the eighth.
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  int loops = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty() || lines[i][0] != '.' || lines[i].back() != ':') continue;
    const std::string label = lines[i].substr(0, lines[i].size() - 1);
    size_t back = i + 1;
    while (back < lines.size() && !(lines[back].find("\tj") == 0 && lines[back].ends_with("\t" + label))) ++back;
    if (back == lines.size()) continue;
    int maddubs = 0, adds = 0, widens = 0, inner_labels = 0;
    for (size_t j = i; j < back; ++j) {
      inner_labels += j > i && lines[j].starts_with(".LBB");
      maddubs += lines[j].find("vpmaddubsw") != std::string::npos;
      adds += lines[j].find("vpaddw") != std::string::npos;
      widens += lines[j].find("vpmaddwd") != std::string::npos;
    }
    if (maddubs == 0 || inner_labels) continue;  // innermost loops only
    ++loops;
    INFO("loop ", label, ": ", maddubs, " vpmaddubsw, ", adds, " vpaddw, ", widens, " vpmaddwd");
    if (widens == 0) {
      CHECK(adds == maddubs);
    } else {
      CHECK(maddubs == 8 * widens);
      CHECK(adds + widens == maddubs);
    }
  }
  CHECK(loops >= 1);
#endif
}
