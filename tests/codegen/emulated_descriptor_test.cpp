// emulated_descriptor_test.cpp - kernels reading and writing tiles through tensor descriptors, emulated with TMA and mbarriers on sm_90a (and as masked loads and stores elsewhere), against the CPU backend
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <random>

#include <kdsl/kdsl.h>

#include "codegen/codegen.h"
#include "codegen/nvptx/ptxas.h"
#include "examples/flash_attention.h"
#include "examples/matmul_descriptor.h"
#include "examples/matmul_fp8.h"
#include "examples/matmul_persistent.h"
#include "tests/codegen/emulator_compare.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace emulator_test;

namespace {

// A descriptor tile for A and a plain pointer tile for B in one loop: TMA's mbarrier waits
// and cp.async's group waits in the same steps.
template <int BM, int BN, int BK>
void mixed_matmul(Ptr<const f16> a, Ptr<const f16> b, Ptr<f32> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto da = make_tensor_descriptor(a, M, K, K);
  auto rn = expand_dims<0>(program_id(1) * BN + arange<BN>());
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    auto kb = expand_dims<1>(k + arange<BK>());
    return dot(da.template load<BM, BK>(program_id(0) * BM, k), load(b + kb * N + rn, kb < K && rn < N, 0), acc);
  });
  auto rm = expand_dims<1>(program_id(0) * BM + arange<BM>());
  store(c + rm * N + rn, acc, rm < M && rn < N);
}

// y = 2x + 1 a tile at a time, the tiles shifted up and left of the tensor's grid by (5, 8)
// so that the first ones start at negative coordinates and the last ones hang past the end;
// each is read through one descriptor and written through another (TMA stores on sm_90a).
template <class T, int BR, int BC>
void shifted_tiles(Ptr<const T> x, Ptr<T> y, Scalar<i32> rows, Scalar<i32> cols) {
  auto r0 = program_id(0) * BR - 5, c0 = program_id(1) * BC - 8;
  auto tile = make_tensor_descriptor(x, rows, cols, cols).template load<BR, BC>(r0, c0);
  make_tensor_descriptor(y, rows, cols, cols).store(r0, c0, cast<T>(cast<f32>(tile) * 2.0f + 1.0f));
}

// Tiles whose registers come in other layouts than an elementwise result's: a constant, a row
// broadcast down the tile, and a tile that also feeds a dot (held as the dot's operand),
// each written through a descriptor at (program * 16, 0) of its own tensor.
void store_layouts(Ptr<const f16> a, Ptr<const f16> b, Ptr<f16> ones, Ptr<f16> rows, Ptr<f16> copy, Ptr<f32> product, Scalar<i32> n) {
  auto r0 = program_id(0) * 16;
  make_tensor_descriptor(ones, n, 64, 64).store(r0, 0, full<f16, 16, 64>(1.0f));
  make_tensor_descriptor(rows, n, 64, 64).store(r0, 0, broadcast_to<16, 64>(expand_dims<0>(cast<f16>(arange<64>()))));
  auto tile = make_tensor_descriptor(a, n, 64, 64).template load<16, 64>(r0, 0);
  make_tensor_descriptor(copy, n, 64, 64).store(r0, 0, tile);
  auto bt = make_tensor_descriptor(b, 64, 64, 64).template load<64, 64>(0, 0);
  make_tensor_descriptor(product, n, 64, 64).store(r0, 0, dot(tile, bt, zeros<f32, 16, 64>()));
}

// [M][K] A and B ([K][N], or [N][K] for examples/matmul_fp8.h: the same count of elements) of
// T; `scale` ends the arguments where given (matmul_fp8's).
template <class T = half>
double compare_matmul(const tools::NamedKernel &k, int bm, int bn, int M, int N, int K, std::mt19937 &rng, const Flavour &f,
                      std::optional<float> scale = std::nullopt) {
  std::vector<Arg> args = {array(random_of<T>(size_t(M) * K, rng)), array(random_of<T>(size_t(K) * N, rng)), array(std::vector<float>(size_t(M) * N)),
                           value(M), value(N), value(K)};
  if (scale) args.push_back(value(*scale));
  return compare(k, grid(cdiv(M, bm), cdiv(N, bn)), args, f);
}

// `k` compiled for sm_90a at 3 stages, as a GPU would take it (arguments aligned); ptxas
// assembles it where it is installed.
codegen::CompiledObject compile_sm90a(const tools::NamedKernel &k) {
  codegen::Options options;
  options.num_warps = k.num_warps;
  options.num_stages = 3;
  codegen::CompiledObject obj =
      codegen::compile(tools::trace_kernel(k.signature, tools::parse_specialization("aligned", k.signature)), "kdsl_" + k.name, codegen::Target::named("sm_90a"), options);
  if (!codegen::nvptx::find_ptxas().empty()) CHECK(obj.resources.assembled);
  return obj;
}

}  // namespace

// f16 products summed in f32 in another order: the bound of the other emulated tensor-core
// matmuls; a tile copied to the wrong place, a wrong swizzle or a stage read before it landed
// is off by O(1). K and N multiples of 16 (TMA's strides) but not of the tiles, M ragged; at
// 3 and 4 stages the wgmma group stays in flight across k steps.
TEST_CASE("emulated TMA: the descriptor matmul on sm_90a (TMA, mbarriers, wgmma) at 2-4 stages and on sm_80 matches the CPU, aligned and ragged") {
  KDSL_TEST_RNG(rng);
  const auto k = tools::named_kernel<examples::matmul_descriptor<f16, f32, 64, 64, 32>>("matmul_descriptor_64", 4);
  for (auto [M, N, K] : {std::tuple{128, 128, 128}, std::tuple{100, 80, 112}, std::tuple{70, 144, 48}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    for (int stages : {2, 3, 4}) {
      CAPTURE(stages);
      CHECK(compare_matmul(k, 64, 64, M, N, K, rng, {"sm_90a", true, stages}) <= 2e-2);
    }
    CHECK(compare_matmul(k, 64, 64, M, N, K, rng, {"sm_80", true, 2}) <= 2e-2);
  }
  // B's rows of 128 f16 (256 bytes) are two 128-byte swizzle slabs: two boxes a tile.
  const auto wide = tools::named_kernel<examples::matmul_descriptor<f16, f32, 64, 128, 64>>("matmul_descriptor_64x128", 4);
  for (int stages : {2, 3}) {
    CAPTURE(stages);
    CHECK(compare_matmul(wide, 64, 128, 100, 272, 144, rng, {"sm_90a", true, stages}) <= 2e-2);
  }
}

TEST_CASE("emulated TMA: a loop with a TMA tile and a cp.async tile waits for both") {
  KDSL_TEST_RNG(rng);
  const auto k = tools::named_kernel<mixed_matmul<64, 64, 32>>("mixed_matmul", 4);
  for (int stages : {2, 3})
    for (auto [M, N, K] : {std::tuple{128, 128, 96}, std::tuple{90, 64, 80}}) {
      CAPTURE(stages);
      CAPTURE(M);
      CHECK(compare_matmul(k, 64, 64, M, N, K, rng, {"sm_90a", true, stages}) <= 2e-2);
    }
}

// K and V through descriptors over all heads' rows (the tutorial's form): keys past a head's
// length are the next head's rows, masked by the length; ragged lengths, causal bf16. The
// bound is the pointer form's in simt_emulator_test.cpp.
TEST_CASE("emulated TMA: flash attention through tensor descriptors on sm_90a matches the CPU, ragged lengths, causal and not") {
  KDSL_TEST_RNG(rng);
  auto run = [&]<class Tag, bool CAUSAL>(int heads, int seq, int stages) {
    using T = typename Tag::storage;
    const auto k = tools::named_kernel<examples::flash_attention_descriptor<Tag, 64, 32, 64, CAUSAL>>("flash_descriptor", 4);
    const size_t n = size_t(heads) * seq * 64;
    return compare(k, grid(cdiv(seq, 64), heads),
                   {array(random_of<T>(n, rng)), array(random_of<T>(n, rng)), array(random_of<T>(n, rng)), array(std::vector<T>(n)), value(seq),
                    value(heads * seq), value(0.125f)},
                   {"sm_90a", true, stages});
  };
  for (int stages : {2, 3}) {
    CAPTURE(stages);
    CHECK(run.template operator()<f16, false>(2, 150, stages) <= 2e-2);
    CHECK(run.template operator()<bf16, true>(3, 100, stages) <= 1.6e-1);
  }
}

// Every element of y written once, by whichever tile covers it; the parts of tiles outside
// the tensor write nothing (y starts random, and the emulator's guards past its end must stay
// as they were). The box is swizzled as wide as its rows allow (128, 64 or 32 bytes, several
// slabs for wider rows) and unswizzled for 16-byte rows; the tensors' columns are multiples
// of 16, so the launch proves the strides' 16 bytes TMA needs.
TEST_CASE("emulated TMA: tile stores through tensor descriptors on sm_90a write only the tensor's elements, at negative and past-the-end tiles") {
  KDSL_TEST_RNG(rng);
  auto run = [&]<class Tag, int BR, int BC>(int rows, int cols, const char *arch) {
    using T = typename Tag::storage;
    const auto k = tools::named_kernel<shifted_tiles<Tag, BR, BC>>("shifted_tiles", 4);
    const size_t n = size_t(rows) * cols;
    return compare(k, grid(cdiv(rows + 5, BR), cdiv(cols + 8, BC)), {array(random_of<T>(n, rng)), array(random_of<T>(n, rng)), value(rows), value(cols)},
                   {arch, true, 2});
  };
  for (const char *arch : {"sm_90a", "sm_80"}) {
    CAPTURE(arch);
    CHECK(run.template operator()<f32, 32, 32>(70, 112, arch) == 0);   // 128-byte swizzle
    CHECK(run.template operator()<f16, 16, 64>(37, 144, arch) == 0);   // 128-byte swizzle
    CHECK(run.template operator()<f16, 64, 128>(64, 208, arch) == 0);  // two 128-byte slabs: two stores a tile
    CHECK(run.template operator()<f32, 16, 16>(45, 48, arch) == 0);    // 64-byte swizzle
    CHECK(run.template operator()<f16, 32, 16>(70, 48, arch) == 0);    // 32-byte swizzle
    CHECK(run.template operator()<f16, 16, 8>(21, 32, arch) == 0);     // 16-byte rows: unswizzled
  }
}

// The persistent form: 3 programs over up to 12 tiles, so each program runs the pipelined k
// loop (its barriers made and invalidated) and the TMA store several times, a tile's box
// reusing the shared memory the last tile's stages had.
TEST_CASE("emulated TMA: the persistent descriptor matmul on sm_90a walks its tiles with TMA loads and stores, and on sm_80, matching the CPU") {
  KDSL_TEST_RNG(rng);
  const auto k = tools::named_kernel<examples::matmul_persistent<f16, f32, 64, 64, 32, 2>>("matmul_persistent_64", 4);
  for (auto [M, N, K] : {std::tuple{128, 192, 96}, std::tuple{150, 176, 80}}) {
    CAPTURE(M);
    CAPTURE(N);
    auto run = [&](const Flavour &f) {
      return compare(k, grid(3),
                     {array(random_of<half>(size_t(M) * K, rng)), array(random_of<half>(size_t(K) * N, rng)), array(random_of<float>(size_t(M) * N, rng)),
                      value(M), value(N), value(K)},
                     f);
    };
    for (int stages : {2, 3}) {
      CAPTURE(stages);
      CHECK(run({"sm_90a", true, stages}) <= 2e-2);
    }
    CHECK(run({"sm_80", true, 2}) <= 2e-2);
  }
}

// Tensors with no rows or no columns, which TMA cannot describe: their maps go over a 1 x 1
// stand-in (codegen/tensor_map_limits.h). A K = 0 descriptor matmul reads no tile of A or B and
// writes zeros to C; tiles of an empty y read nothing and its stores write nothing (the
// arrays, never part of the tensors, must stay as they were).
TEST_CASE("emulated TMA: tensors with no rows or columns: a K = 0 descriptor matmul writes zeros, and a store into an empty tensor writes nothing") {
  KDSL_TEST_RNG(rng);
  const auto k = tools::named_kernel<examples::matmul_descriptor<f16, f32, 64, 64, 32>>("matmul_descriptor_64", 4);
  for (int stages : {2, 3}) {
    CAPTURE(stages);
    CHECK(compare(k, grid(2, 1),
                  {array(random_of<half>(16, rng)), array(random_of<half>(16, rng)), array(random_of<float>(70 * 64, rng)), value(70), value(64), value(0)},
                  {"sm_90a", true, stages}) == 0);
  }
  const auto t = tools::named_kernel<shifted_tiles<f16, 16, 64>>("shifted_tiles", 4);
  CHECK(compare(t, grid(1, 3), {array(random_of<half>(64, rng)), array(random_of<half>(64, rng)), value(0), value(144)}, {"sm_90a", true, 2}) == 0);
}

TEST_CASE("emulated TMA: tile stores of a constant, a broadcast row and a dot's operand on sm_90a match the CPU") {
  KDSL_TEST_RNG(rng);
  const auto k = tools::named_kernel<store_layouts>("store_layouts", 4);
  const int n = 40;
  auto tensor = [&] { return array(random_of<half>(size_t(n) * 64, rng)); };
  CHECK(compare(k, grid(cdiv(n, 16)),
                {tensor(), array(random_of<half>(64 * 64, rng)), tensor(), tensor(), tensor(), array(random_of<float>(size_t(n) * 64, rng)), value(n)},
                {"sm_90a", true, 2}) <= 2e-2);
}

// fp8 e4m3 through descriptors (examples/matmul_fp8.h): K-major A and W copied by TMA into the
// tiles wgmma m64nNk32 .e4m3 reads (64-byte rows: the 64-byte swizzle), scaled, stored by TMA;
// a [K][N] B, which 8-bit wgmma cannot read as stored, goes through registers. Products exact, sums in f32: 1e-4, where a misplaced byte
// is off by O(1). K and N multiples of 16 bytes (TMA's strides), M and N ragged against the tiles.
TEST_CASE("emulated TMA: fp8 e4m3 descriptor matmuls on sm_90a (TMA into wgmma .e4m3 tiles) and on sm_80 (widened to f16) match the CPU") {
  KDSL_TEST_RNG(rng);
  const auto nt = tools::named_kernel<examples::matmul_fp8<f32, 64, 64, 64>>("matmul_fp8", 4);
  const auto nn = tools::named_kernel<examples::matmul_descriptor<f8e4m3, f32, 64, 64, 64>>("matmul_descriptor_f8", 4);
  for (auto [M, N, K] : {std::tuple{128, 128, 128}, std::tuple{100, 80, 112}, std::tuple{70, 144, 48}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    for (int stages : {2, 3}) {
      CAPTURE(stages);
      CHECK(compare_matmul<float8_e4m3>(nt, 64, 64, M, N, K, rng, {"sm_90a", true, stages}, 0.75f) <= 1e-4);
      CHECK(compare_matmul<float8_e4m3>(nn, 64, 64, M, N, K, rng, {"sm_90a", true, stages}) <= 1e-4);
    }
    CHECK(compare_matmul<float8_e4m3>(nt, 64, 64, M, N, K, rng, {"sm_80", true, 2}, 0.75f) <= 1e-4);
  }
  // What sm_90a's code does: both tiles are TMA copies (one box each a stage, 64 bytes wide)
  // into wgmma .e4m3, C a TMA store; no thread copies a tile itself.
  const std::string ptx = compile_sm90a(nt).ptx;
  CHECK(ptx.find("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3") != std::string::npos);
  CHECK(ptx.find("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") != std::string::npos);
  CHECK(ptx.find("cp.async.cg.shared.global") == std::string::npos);
}

namespace {

// C[b] = A[b] W[b]^T for each of `batch` planes (program_id(2)), through 3-D descriptors: A
// [batch][M][K], W [batch][N][K] and C [batch][M][N], planes a stride apart that may leave a
// gap after each.
template <int BM, int BN, int BK>
void batched_matmul_nt(Ptr<const f16> a, Ptr<const f16> w, Ptr<f32> c, Scalar<i32> batch, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K, Scalar<i32> a_plane,
                       Scalar<i32> w_plane, Scalar<i32> c_plane) {
  auto da = make_tensor_descriptor(a, batch, M, K, a_plane, K);
  auto dw = make_tensor_descriptor(w, batch, N, K, w_plane, K);
  auto b = program_id(2), m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    return dot(da.template load<BM, BK>(b, m0, k), trans(dw.template load<BN, BK>(b, n0, k)), acc);
  });
  make_tensor_descriptor(c, batch, M, N, c_plane, N).store(b, m0, n0, acc);
}

}  // namespace

// Planes padded to a multiple of 16 elements past their last row (a gap TMA must skip), M
// ragged against the tiles, K and N multiples of 16 (TMA's strides). On sm_90a every tile is
// a 3-D TMA copy or store; on sm_80 masked loads and stores: both against the CPU.
TEST_CASE("emulated TMA: 3-D descriptors (a batched matmul) on sm_90a are 3-D TMA copies and stores, and match the CPU; on sm_80 too") {
  KDSL_TEST_RNG(rng);
  const auto k = tools::named_kernel<batched_matmul_nt<64, 64, 32>>("batched_matmul_nt", 4);
  auto padded = [](int elements) { return (elements + 16 + 15) / 16 * 16; };
  for (auto [batch, M, N, K] : {std::tuple{2, 64, 64, 64}, std::tuple{3, 100, 80, 48}}) {
    CAPTURE(batch);
    CAPTURE(M);
    const int a_plane = padded(M * K), w_plane = padded(N * K), c_plane = padded(M * N);
    for (const Flavour &f : {Flavour{"sm_90a", true, 2}, Flavour{"sm_90a", true, 3}, Flavour{"sm_80", true, 2}}) {
      CAPTURE(f.arch);
      CAPTURE(f.num_stages);
      const double worst =
          compare(k, grid(cdiv(M, 64), cdiv(N, 64), batch),
                  {array(random_of<half>(size_t(batch) * size_t(a_plane), rng)), array(random_of<half>(size_t(batch) * size_t(w_plane), rng)),
                   array(std::vector<float>(size_t(batch) * size_t(c_plane), -7.0f)), value(batch), value(M), value(N), value(K), value(a_plane), value(w_plane),
                   value(c_plane)},
                  f);
      CHECK(worst <= 2e-2);
    }
  }
  const std::string ptx = compile_sm90a(k).ptx;  // ptxas takes the 3-D forms
  CHECK(ptx.find("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") != std::string::npos);
  CHECK(ptx.find("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group") != std::string::npos);
  CHECK(ptx.find("cp.async.bulk.tensor.2d") == std::string::npos);
  CHECK(ptx.find("cp.async.cg.shared.global") == std::string::npos);
}
