// dot4_test.cpp - dot4 (sums of 4 byte products into i32) on every host path against a scalar reference, i8 and u8 over their full range
#include <doctest/doctest.h>
#include <kdsl/compile_for.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "codegen/amdgpu/rocm_tools.h"
#include "codegen/codegen.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/codegen/host_assembly.h"
#include "tests/codegen/int_dot_paths.h"
#include "tests/support/simt_emulator.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace dot4_test {
using namespace kdsl;
using kdsl_test::random_full_range;
using kdsl_test::storage_t;

// out[r, g] = acc[r, g] + dot4(a[r, :], b[r, :] or b[0, :]) for rows < rows and the first n
// bytes of each row (the rest read as 0); rows of L bytes, of L / 4 sums.
template <class EA, class EB, int R, int L, bool SHARED_B>
void dot4_rows(Ptr<const EA> a, Ptr<const EB> b, Ptr<const i32> acc, Ptr<i32> out, Scalar<i32> rows, Scalar<i32> n) {
  auto r = expand_dims<1>(arange<R>());
  auto j = expand_dims<0>(arange<L>());
  auto g = expand_dims<0>(arange<L / 4>());
  auto ta = load(a + r * L + j, r < rows && j < n, 0);
  auto sums_ok = r < rows && g * 4 < n;
  auto tc = load(acc + r * (L / 4) + g, sums_ok, 0);
  if constexpr (SHARED_B) store(out + r * (L / 4) + g, dot4(ta, load(b + j, j < n, 0), tc), sums_ok);  // b [1, L] broadcast over rows
  else store(out + r * (L / 4) + g, dot4(ta, load(b + r * L + j, r < rows && j < n, 0), tc), sums_ok);
}

// A rank-3 use as the decode kernels make it: [2, 3, 32] weights by one shared row of 32.
template <class EA, class EB>
void dot4_rank3(Ptr<const EA> a, Ptr<const EB> b, Ptr<i32> out) {
  auto i = reshape<2, 3, 32>(arange<192>());
  auto s = dot4(load(a + i), load(b + reshape<1, 1, 32>(arange<32>())));
  store(out + reshape<2, 3, 8>(arange<48>()), s);
}

// The decode kernels' cross product: weight rows a [1, BN, L] against rows of x b [BR, 1, L],
// from acc [BR, BN, L / 4]: out[r, n, g] = acc[r, n, g] + dot4(a[n, :], b[r, :]) over group g.
// Rows of 16 or 32 bytes go side by side into wider vectors on the host (emit_packed_dot4).
template <class EA, class EB, int BR, int BN, int L>
void dot4_cross(Ptr<const EA> a, Ptr<const EB> b, Ptr<const i32> acc, Ptr<i32> out) {
  auto wa = load(a + reshape<1, BN, L>(arange<BN * L>()));
  auto xb = load(b + reshape<BR, 1, L>(arange<BR * L>()));
  auto sums = reshape<BR, BN, L / 4>(arange<BR * BN * (L / 4)>());
  store(out + sums, dot4(wa, xb, load(acc + sums)));
}

// dot4 of an operand narrowed in the kernel, as the quantized formats make theirs (NARROW: 0
// a low nibble, 1 a high one, 2 Q6_K's six bits, 3 the largest mask that keeps a byte below
// 128, 4 an i8 kept from -128 as Q8_0's activations are) against b's full range, two rows of
// 32 bytes. The host lowering proves such an operand's bounds (ir::ValueRanges) and may then
// multiply with the saturating vpmaddubsw (int_dot.h says when).
template <class EA, class EB, int NARROW>
void dot4_narrowed(Ptr<const EA> a, Ptr<const EB> b, Ptr<i32> out) {
  auto i = reshape<2, 32>(arange<64>());
  auto x = load(a + i);
  auto narrowed = [&] {
    if constexpr (NARROW == 0) return x & 15;
    else if constexpr (NARROW == 1) return x >> 4;
    else if constexpr (NARROW == 2) return (x & 15) | (((x >> 6) & 3) << 4);
    else if constexpr (NARROW == 3) return x & 127;
    else return maximum(x, full<i8, 2, 32>(-127));
  }();
  store(out + reshape<2, 8>(arange<16>()), dot4(narrowed, load(b + i)));
}

template <class EA>
int narrowed_reference(storage_t<EA> x, int narrow) {
  const int v = int(x);  // sign-extended for i8: shifts are arithmetic there, as in the kernel
  switch (narrow) {
    case 0: return v & 15;
    case 1: return v >> 4;
    case 2: return (v & 15) | (((v >> 6) & 3) << 4);
    case 3: return v & 127;
    default: return std::max(v, -127);
  }
}

using kdsl_test::host_has;
using kdsl_test::int_dot_path_name;
using kdsl_test::run_with_int_dot_path;
using kdsl_test::runnable_int_dot_paths;

int symbol_counter = 0;

// Runs fn's GPU lowering for `arch` (the NVPTX hooks' dp4a or the AMDGPU hooks' v_dot4) on
// the SIMT emulator, one program of 4 warps.
void run_emulated(const ir::Function &fn, const char *arch, std::vector<uint64_t> args) {
  simt::EmulatedKernel k = simt::compile_for_emulation(fn, fmt::format("dot4_emulated_{}", symbol_counter++), {arch, 4});
  const int32_t grid[3] = {1, 1, 1};
  simt::emulate_launch(k, grid, args.data());
}

// The GPU targets whose dot4 the emulator runs: NVIDIA's dp4a, gfx9's v_dot4 (mixed signs
// through the signed one) and gfx11's v_dot4_i32_iu8 are each their own code.
const char *const kGpuArchs[] = {"sm_80", "gfx942"};

// gpu_arch: run on the emulator for that GPU target; null: the CPU device and every forced host path.
template <class EA, class EB, int R, int L, bool SHARED_B>
void check_rows(std::mt19937 &rng, int rows, int n, const char *gpu_arch = nullptr) {
  INFO(R, "x", L, " blocks of ", detail::element_traits<EA>::name, " x ", detail::element_traits<EB>::name, SHARED_B ? " (b shared)" : "",
       ", rows ", rows, ", n ", n, gpu_arch ? ", on " : "", gpu_arch ? gpu_arch : "");
  auto a = random_full_range<EA>(rng, size_t(R) * L);
  auto b = random_full_range<EB>(rng, size_t(SHARED_B ? 1 : R) * L);
  auto acc = random_full_range<i32>(rng, size_t(R) * (L / 4));
  // Extremes at the start of every row: -128 * -128 and 255 * 255 in a group, and -128 * 255.
  for (int r = 0; r < R; ++r) {
    a[size_t(r) * L] = storage_t<EA>(std::is_same_v<EA, i8> ? -128 : 255);
    a[size_t(r) * L + 1] = storage_t<EA>(std::is_same_v<EA, i8> ? -128 : 255);
  }
  b[0] = storage_t<EB>(std::is_same_v<EB, i8> ? -128 : 255);
  b[1] = storage_t<EB>(std::is_same_v<EB, i8> ? -128 : 255);
  const int32_t sentinel = 0x5a5a5a5a;
  std::vector<int32_t> want(static_cast<size_t>(R * (L / 4)), sentinel);
  for (int r = 0; r < rows; ++r)
    for (int g = 0; g * 4 < n && g < L / 4; ++g) {
      int64_t s = acc[size_t(r) * (L / 4) + size_t(g)];
      for (int j = 4 * g; j < 4 * g + 4 && j < n; ++j) s += int64_t(a[size_t(r) * L + size_t(j)]) * int64_t(b[size_t(SHARED_B ? 0 : r) * L + size_t(j)]);
      want[size_t(r) * (L / 4) + size_t(g)] = int32_t(uint32_t(uint64_t(s)));  // two's-complement wrap, as i32 adds do
    }
  constexpr auto kernel = dot4_rows<EA, EB, R, L, SHARED_B>;
  auto check = [&](const std::vector<int32_t> &got, const char *how) {
    INFO("path ", how);
    int bad = 0;
    for (size_t i = 0; i < want.size() && bad < 5; ++i)
      if (got[i] != want[i]) {
        ++bad;
        FAIL_CHECK("sum ", i, ": got ", got[i], ", want ", want[i]);
      }
    CHECK(bad == 0);
  };
  auto ptr = [](const void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); };
  ir::Function fn = kdsl_test::traced<kernel>();
  if (gpu_arch) {
    std::vector<int32_t> out(want.size(), sentinel);
    run_emulated(fn, gpu_arch, {ptr(a.data()), ptr(b.data()), ptr(acc.data()), ptr(out.data()), uint64_t(rows), uint64_t(n)});
    return check(out, gpu_arch);
  }
  // The CPU device (the automatic path, through the cache), then each forced path.
  std::vector<int32_t> out(want.size(), sentinel);
  compile<kernel>(kdsl_test::cpu())(grid(1), a.data(), b.data(), acc.data(), out.data(), rows, n);
  check(out, "auto (launch)");
  for (codegen::IntDotPath path : runnable_int_dot_paths()) {
    std::vector<int32_t> forced(want.size(), sentinel);
    run_with_int_dot_path(fn, path, fmt::format("dot4_test_{}", symbol_counter++),
                  {ptr(a.data()), ptr(b.data()), ptr(acc.data()), ptr(forced.data()), uint64_t(rows), uint64_t(n)}, 1);
    check(forced, int_dot_path_name(path));
  }
}

template <class EA, class EB, int BR, int BN, int L>
void check_cross(std::mt19937 &rng, const char *gpu_arch = nullptr) {
  INFO("[", BR, ", ", BN, ", ", L, "] ", detail::element_traits<EA>::name, " x ", detail::element_traits<EB>::name, gpu_arch ? ", on " : "",
       gpu_arch ? gpu_arch : "");
  auto a = random_full_range<EA>(rng, size_t(BN) * L);
  auto b = random_full_range<EB>(rng, size_t(BR) * L);
  auto acc = random_full_range<i32>(rng, size_t(BR) * BN * (L / 4));
  a[0] = a[1] = storage_t<EA>(std::is_same_v<EA, i8> ? -128 : 255);
  b[0] = b[1] = storage_t<EB>(std::is_same_v<EB, i8> ? -128 : 255);
  std::vector<int32_t> want(acc.size());
  for (int r = 0; r < BR; ++r)
    for (int n = 0; n < BN; ++n)
      for (int g = 0; g < L / 4; ++g) {
        const size_t at = (size_t(r) * BN + size_t(n)) * (L / 4) + size_t(g);
        int64_t s = acc[at];
        for (int j = 4 * g; j < 4 * g + 4; ++j) s += int64_t(a[size_t(n) * L + size_t(j)]) * int64_t(b[size_t(r) * L + size_t(j)]);
        want[at] = int32_t(uint32_t(uint64_t(s)));
      }
  constexpr auto kernel = dot4_cross<EA, EB, BR, BN, L>;
  ir::Function fn = kdsl_test::traced<kernel>();
  auto ptr = [](const void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); };
  std::vector<codegen::IntDotPath> paths = gpu_arch ? std::vector<codegen::IntDotPath>{codegen::IntDotPath::Auto} : runnable_int_dot_paths();
  for (codegen::IntDotPath path : paths) {
    INFO("path ", gpu_arch ? gpu_arch : int_dot_path_name(path));
    std::vector<int32_t> got(want.size(), 0x5a5a5a5a);
    std::vector<uint64_t> args{ptr(a.data()), ptr(b.data()), ptr(acc.data()), ptr(got.data())};
    if (gpu_arch) run_emulated(fn, gpu_arch, args);
    else run_with_int_dot_path(fn, path, fmt::format("dot4_test_{}", symbol_counter++), args, 1);
    int bad = 0;
    for (size_t i = 0; i < want.size() && bad < 5; ++i)
      if (got[i] != want[i]) {
        ++bad;
        FAIL_CHECK("sum ", i, ": got ", got[i], ", want ", want[i]);
      }
  }
}

template <class EA, class EB, int NARROW>
void check_narrowed(std::mt19937 &rng) {
  INFO(detail::element_traits<EA>::name, " narrowed (", NARROW, ") x ", detail::element_traits<EB>::name);
  auto a = random_full_range<EA>(rng, 64);
  auto b = random_full_range<EB>(rng, 64);
  // The extremes that would saturate a wider u8 operand: every pair at the largest narrowed value times b's most negative.
  const int a_extreme = std::is_same_v<EA, i8> ? (NARROW == 4 ? -128 : 127) : 255;
  for (int j = 0; j < 8; ++j) a[size_t(j)] = storage_t<EA>(a_extreme), b[size_t(j)] = storage_t<EB>(std::is_same_v<EB, i8> ? -128 : 255);
  std::vector<int32_t> want(16);
  for (int g = 0; g < 16; ++g)
    for (int j = 4 * g; j < 4 * g + 4; ++j) want[size_t(g)] += narrowed_reference<EA>(a[size_t(j)], NARROW) * int(b[size_t(j)]);
  constexpr auto kernel = dot4_narrowed<EA, EB, NARROW>;
  ir::Function fn = kdsl_test::traced<kernel>();
  auto ptr = [](const void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); };
  auto check = [&](const std::vector<int32_t> &got, const std::string &how) {
    INFO("path ", how);
    CHECK(got == want);
  };
  std::vector<int32_t> out(16, 0x5a5a5a5a);
  compile<kernel>(kdsl_test::cpu())(grid(1), a.data(), b.data(), out.data());
  check(out, "auto (launch)");
  for (codegen::IntDotPath path : runnable_int_dot_paths()) {
    std::vector<int32_t> forced(16, 0x5a5a5a5a);
    run_with_int_dot_path(fn, path, fmt::format("dot4_test_{}", symbol_counter++), {ptr(a.data()), ptr(b.data()), ptr(forced.data())}, 1);
    check(forced, int_dot_path_name(path));
  }
  for (const char *arch : kGpuArchs) {
    std::vector<int32_t> emulated(16, 0x5a5a5a5a);
    run_emulated(fn, arch, {ptr(a.data()), ptr(b.data()), ptr(emulated.data())});
    check(emulated, arch);
  }
}

TEST_CASE("dot4: operands narrowed by masks and shifts (nibbles, 6-bit quants, below 128) against full-range bytes, every path, at the saturation extremes") {
  KDSL_TEST_RNG(rng);
  auto narrows = [&]<class EA, class EB>() {
    check_narrowed<EA, EB, 0>(rng);
    check_narrowed<EA, EB, 1>(rng);
    check_narrowed<EA, EB, 2>(rng);
    check_narrowed<EA, EB, 3>(rng);
    if constexpr (std::is_same_v<EA, i8>) check_narrowed<EA, EB, 4>(rng);
  };
  narrows.template operator()<u8, i8>();
  narrows.template operator()<u8, u8>();
  narrows.template operator()<i8, i8>();
  narrows.template operator()<i8, u8>();
}

template <class EA, class EB>
void check_types(std::mt19937 &rng) {
  check_rows<EA, EB, 4, 32, true>(rng, 4, 32);     // a decode step: one block of 32 per row, x shared
  check_rows<EA, EB, 4, 32, false>(rng, 3, 29);    // ragged rows and bytes
  check_rows<EA, EB, 3, 64, true>(rng, 3, 64);     // one 512-bit vector
  check_rows<EA, EB, 2, 12, false>(rng, 2, 12);    // narrower than any full-speed chunk
  check_rows<EA, EB, 5, 100, true>(rng, 5, 97);    // 64 + 32 + 4
  check_rows<EA, EB, 2, 1100, false>(rng, 2, 1100);  // a loop over chunks (17 x 64) and a 12-byte tail
  check_rows<EA, EB, 2, 1100, true>(rng, 1, 1001);
}

TEST_CASE("dot4: exact sums of 4 products for i8 x i8, u8 x i8, i8 x u8, u8 x u8 over the full range, every host path, aligned and ragged") {
  KDSL_TEST_RNG(rng);
  check_types<i8, i8>(rng);
  check_types<u8, i8>(rng);
  check_types<i8, u8>(rng);
  check_types<u8, u8>(rng);
}

TEST_CASE("dot4: weight rows against rows of x, rows of 16 and 32 bytes packed side by side or not, every host path and signedness") {
  KDSL_TEST_RNG(rng);
  auto shapes = [&]<class EA, class EB>() {
    check_cross<EA, EB, 1, 8, 16>(rng);  // Q4_0 decode: four rows a 64-byte vector
    check_cross<EA, EB, 3, 4, 16>(rng);  // a few rows of x
    check_cross<EA, EB, 2, 6, 16>(rng);  // 6 rows: two a 32-byte vector
    check_cross<EA, EB, 2, 4, 32>(rng);  // Q8_0's whole block: two rows a vector
    check_cross<EA, EB, 1, 3, 16>(rng);  // an odd count: one row a vector
    check_cross<EA, EB, 2, 4, 8>(rng);   // 8-byte rows
  };
  shapes.template operator()<u8, i8>();
  shapes.template operator()<i8, i8>();
  shapes.template operator()<i8, u8>();
  shapes.template operator()<u8, u8>();
}

TEST_CASE("dot4 on the GPU lowering (SIMT emulator: NVIDIA dp4a, AMD v_dot4): every signedness, aligned and ragged, against a scalar reference") {
  KDSL_TEST_RNG(rng);
  for (const char *arch : kGpuArchs) {
    auto types = [&]<class EA, class EB>() {
      check_rows<EA, EB, 4, 32, true>(rng, 4, 32, arch);
      check_rows<EA, EB, 4, 32, false>(rng, 3, 29, arch);    // ragged rows and bytes
      check_rows<EA, EB, 2, 12, false>(rng, 2, 12, arch);    // fewer sums than threads: duplicated elements
      check_rows<EA, EB, 5, 100, true>(rng, 5, 97, arch);    // extents that are not powers of two
      check_rows<EA, EB, 2, 1100, false>(rng, 2, 1100, arch);  // more sums than threads: several a thread
      check_cross<EA, EB, 1, 8, 16>(rng, arch);                // the decode kernels' weight rows against x
      check_cross<EA, EB, 2, 4, 32>(rng, arch);
    };
    types.template operator()<i8, i8>();
    types.template operator()<u8, i8>();
    types.template operator()<i8, u8>();
    types.template operator()<u8, u8>();
  }
}

TEST_CASE("dot4 on the GPU: PTX has one dp4a per sum with the operands' signedness; gfx942 and gfx1100 use their v_dot4 instructions") {
  auto lowered = [](const ir::Function &fn, const char *arch) {
    return codegen::compile(fn, fmt::format("dot4_gpu_{}", symbol_counter++), codegen::Target::named(arch), {});
  };
  ir::Function mixed = kdsl_test::traced<dot4_rows<u8, i8, 4, 32, true>>();
  ir::Function both_signed = kdsl_test::traced<dot4_rows<i8, i8, 4, 32, true>>();
  for (const char *arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    std::string ptx = lowered(mixed, arch).ptx;
    CHECK(kdsl_test::contains(ptx, "dp4a.u32.s32"));
    CHECK(kdsl_test::contains(lowered(both_signed, arch).ptx, "dp4a.s32.s32"));
  }
  if (codegen::amdgpu::find_lld().empty()) {
    MESSAGE("ld.lld not found: AMDGPU golden checks skipped");
    return;
  }
  std::string gfx942_mixed = lowered(mixed, "gfx942").assembly, gfx942_signed = lowered(both_signed, "gfx942").assembly;
  CHECK(kdsl_test::contains(gfx942_signed, "v_dot4c_i32_i8"));
  CHECK(kdsl_test::contains(gfx942_mixed, "v_dot4c_i32_i8"));  // u8 x i8 through the signed instruction
  CHECK(kdsl_test::contains(lowered(mixed, "gfx1100").assembly, "v_dot4_i32_iu8"));
  CHECK(kdsl_test::contains(lowered(kdsl_test::traced<dot4_rows<u8, u8, 4, 32, true>>(), "gfx942").assembly, "v_dot4_u32_u8"));
}

TEST_CASE("dot4: a rank-3 block against one shared row, as the decode kernels use it") {
  KDSL_TEST_RNG(rng);
  auto a = random_full_range<i8>(rng, 192);
  auto b = random_full_range<u8>(rng, 32);
  std::vector<int32_t> out(48);
  compile<dot4_rank3<i8, u8>>(kdsl_test::cpu())(grid(1), a.data(), b.data(), out.data());
  for (int r = 0; r < 6; ++r)
    for (int g = 0; g < 8; ++g) {
      int32_t s = 0;
      for (int j = 4 * g; j < 4 * g + 4; ++j) s += int32_t(a[size_t(r * 32 + j)]) * int32_t(b[size_t(j)]);
      CHECK(out[size_t(r * 8 + g)] == s);
    }
}

#if defined(__x86_64__)
TEST_CASE("dot4: the host's machine code uses vpdpbusd where the CPU has VNNI, vpmaddwd on the AVX2 path, and vpmaddubsw only where no pair can saturate") {
  ir::Function fn = kdsl_test::traced<dot4_rows<i8, i8, 4, 32, true>>();
  for (codegen::IntDotPath path : runnable_int_dot_paths()) {
    codegen::Options options;
    options.int_dot = path;
    std::string s = kdsl_test::host_assembly(fn, fmt::format("dot4_asm_{}", int_dot_path_name(path)), options);
    INFO("path ", int_dot_path_name(path));
    CHECK(s.find("pmaddubsw") == std::string::npos);
    if (path == codegen::IntDotPath::Vnni) CHECK(s.find("vpdpbusd") != std::string::npos);
    if (path == codegen::IntDotPath::Pmaddwd) CHECK(s.find("vpmaddwd") != std::string::npos);
  }
  // A nibble (proved 0..15) against s8 bytes, and s8 against s8 kept from -128: vpmaddubsw
  // cannot saturate, and the AVX2 path takes it (the second through vpsignb).
  ir::Function nibbles = kdsl_test::traced<dot4_narrowed<u8, i8, 0>>(), within_127 = kdsl_test::traced<dot4_narrowed<i8, i8, 4>>();
  for (codegen::IntDotPath path : runnable_int_dot_paths()) {
    if (path != codegen::IntDotPath::Pmaddwd) continue;
    codegen::Options options;
    options.int_dot = path;
    CHECK(kdsl_test::contains(kdsl_test::host_assembly(nibbles, "dot4_asm_nibbles", options), "vpmaddubsw"));
    const std::string signed_asm = kdsl_test::host_assembly(within_127, "dot4_asm_within_127", options);
    CHECK(kdsl_test::contains(signed_asm, "vpsignb"));
    CHECK(kdsl_test::contains(signed_asm, "vpmaddubsw"));
  }
  if (!host_has("avx512vnni") && !host_has("avxvnni")) {
    codegen::Options vnni;
    vnni.int_dot = codegen::IntDotPath::Vnni;
    CHECK_THROWS_WITH_AS(codegen::compile(fn, "dot4_no_vnni", codegen::Target::host(), vnni), doctest::Contains("does not have"), Error);
  }
}
#endif

TEST_CASE("dot4: prints and parses back, and the verifier refuses a result that is not the operands' shape over 4 or float operands") {
  ir::Function fn = kdsl_test::traced<dot4_rank3<i8, u8>>();
  std::string text = ir::print(fn);
  CHECK(kdsl_test::contains(text, "= dot4 %"));
  CHECK(ir::print(ir::parse(text)) == text);
  CHECK(ir::verify(fn).empty());
  ir::ValueId result = ir::kNoValue;
  for (const ir::Op &op : fn.body.ops)
    if (op.kind == OpKind::Dot4) result = op.results[0];
  REQUIRE(result != ir::kNoValue);
  ir::Function wrong_shape = fn;
  wrong_shape.values[size_t(result)].shape[2] = 4;  // [2, 3, 4] from [2, 3, 32] bytes
  auto problems = ir::verify(wrong_shape);
  REQUIRE(!problems.empty());
  CHECK(kdsl_test::contains(problems[0], "cannot take dot products of 4"));
  ir::Function float_result = fn;
  float_result.values[size_t(result)].elem = DType::F32;
  CHECK(!ir::verify(float_result).empty());
}

TEST_CASE("dot4: the rank-3 decode shape compiles for NVIDIA and AMD through compile_for and runs on the emulator") {
  CHECK_NOTHROW(compile_for<dot4_rank3<i8, u8>>(Target("sm_80")));
  KDSL_TEST_RNG(rng);
  auto a = random_full_range<i8>(rng, 192);
  auto b = random_full_range<u8>(rng, 32);
  ir::Function fn = kdsl_test::traced<dot4_rank3<i8, u8>>();
  for (const char *arch : kGpuArchs) {
    INFO(arch);
    std::vector<int32_t> out(48, 0x5a5a5a5a);
    auto ptr = [](const void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); };
    run_emulated(fn, arch, {ptr(a.data()), ptr(b.data()), ptr(out.data())});
    for (int r = 0; r < 6; ++r)
      for (int g = 0; g < 8; ++g) {
        int32_t s = 0;
        for (int j = 4 * g; j < 4 * g + 4; ++j) s += int32_t(a[size_t(r * 32 + j)]) * int32_t(b[size_t(j)]);
        CHECK(out[size_t(r * 8 + g)] == s);
      }
  }
}

}  // namespace dot4_test
