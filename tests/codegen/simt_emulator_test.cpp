// simt_emulator_test.cpp - the GPU lowering, NVIDIA (warp 32) and AMD (wave64) flavoured, run on CPU threads (tests/support/simt_emulator) agrees with the host backend
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include <kdsl/kdsl.h>

#include "tests/codegen/emulator_compare.h"
#include "tests/codegen/nvptx_test_kernels.h"
#include "tests/support/simt_machine.h"
#include "tests/test_util.h"

using namespace kdsl;

namespace emulator_test {

// C = A B for [M, K] x [K, N] through a tiled_matmul kernel of BM x BN tiles.
template <class T, class Acc>
double compare_matmul(const char *kernel, int bm, int bn, int M, int N, int K, std::mt19937 &rng, const Flavour &flavour) {
  return compare(nvptx_test::find(kernel), grid(cdiv(M, bm), cdiv(N, bn)),
                 {array(random_of<T>(size_t(M) * K, rng)), array(random_of<T>(size_t(K) * N, rng)), array(std::vector<Acc>(size_t(M) * N)), value(M),
                  value(N), value(K)},
                 flavour);
}

const Flavour kTensorCores{"sm_80", true};

// Each program writes its coordinates and the grid's extents at its linear index, then
// doubles x in a grid-stride loop: the block ids and grid sizes as the target reads them
// (NVIDIA's special registers; AMD's workgroup ids and the dispatch packet).
template <int BLOCK>
void grid_stride(Ptr<f32> x, Ptr<f32> out, Ptr<i32> coordinates, Scalar<i32> n) {
  auto linear = (program_id(2) * num_programs(1) + program_id(1)) * num_programs(0) + program_id(0);
  auto at = coordinates + linear * 6;
  store(at, program_id(0)), store(at + 1, program_id(1)), store(at + 2, program_id(2));
  store(at + 3, num_programs(0)), store(at + 4, num_programs(1)), store(at + 5, num_programs(2));
  auto programs = num_programs(0) * num_programs(1) * num_programs(2);
  for_range(linear * BLOCK, n, programs * BLOCK, [&](auto i) {
    auto offs = i + arange<BLOCK>();
    store(out + offs, load(x + offs, offs < n, 0) * 2.0f, offs < n);
  });
}

tools::NamedKernel with_warps(tools::NamedKernel k, int num_warps) {
  k.num_warps = num_warps;
  return k;
}

}  // namespace emulator_test

using namespace emulator_test;
using nvptx_test::find;

TEST_CASE("emulated: elementwise kernels with aligned, ragged and duplicated layouts") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(3);
  for (int n : {4096, 5000, 77}) {
    CAPTURE(n);
    CHECK(compare(find("vector_add"), grid(cdiv(n, 1024)), {array(random_f32(size_t(n), rng)), array(random_f32(size_t(n), rng)), array(std::vector<float>(size_t(n))), value(n)}, f) <= 1e-6);
    CHECK(compare(find("swiglu"), grid(cdiv(n, 1024)), {array(random_f32(size_t(n), rng)), array(random_f32(size_t(n), rng)), array(std::vector<float>(size_t(n))), value(n)}, f) <= 1e-5);
  }
  std::vector<bfloat16> x(200);
  for (auto &v : x) v = bfloat16(std::uniform_real_distribution<float>(0.1f, 4)(rng));
  CHECK(compare(find("bf16_math"), grid(4), {array(x), array(std::vector<bfloat16>(200)), value(200)}, f) <= 1e-2);
}

TEST_CASE("emulated: program ids and num_programs on 1- to 3-D grids, a grid-stride loop") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(11);
  for (int warps : {1, 2}) {
    CAPTURE(warps);
    auto k = tools::named_kernel<grid_stride<128>>("grid_stride", warps);
    for (Grid g : {grid(3), grid(3, 2), grid(2, 3, 2)})
      for (int n : {5000, 4096, 77}) {
        CAPTURE(n);
        size_t programs = size_t(g.x * g.y * g.z);
        CHECK(compare(k, g, {array(random_f32(size_t(n), rng)), array(std::vector<float>(size_t(n))), array(std::vector<int32_t>(programs * 6)), value(n)}, f) ==
              0);
      }
  }
}

TEST_CASE("emulated: erf, floor, ceil and pow (libdevice or ocml, run as libm) at aligned and ragged sizes") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(8);
  for (int n : {1024, 1000, 45}) {
    CAPTURE(n);
    // Host: erf is kdsl's polynomial, pow is powf; the emulator runs libdevice's names as libm's.
    CHECK(compare(find("math_ops"), grid(cdiv(n, 256)), {array(random_f32(size_t(n), rng, -4, 4)), array(random_f32(size_t(n), rng, -3, 3)),
                                                          array(std::vector<float>(size_t(3 * n))), value(n)}, f) <= 1e-5);
  }
}

TEST_CASE("emulated: reinterpret<U> of pointers reads at the same byte address, offsets counting U elements") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(9);
  for (int n : {128, 77}) {
    CAPTURE(n);
    std::vector<uint8_t> records(size_t(n) * 34);
    for (int r = 0; r < n; ++r) {
      uint16_t scale = f32_to_f16_bits(std::uniform_real_distribution<float>(-2, 2)(rng));
      std::memcpy(&records[size_t(r) * 34], &scale, 2);
      for (int j = 0; j < 32; ++j) records[size_t(r) * 34 + 2 + size_t(j)] = uint8_t(rng());
    }
    CHECK(compare(find("reinterpret_records"), grid(cdiv(n, 128)), {array(records), array(std::vector<float>(size_t(n))), value(n)}, f) == 0);
  }
}

TEST_CASE("emulated: row reductions (softmax, layer norm, rmsnorm) across lanes and warps") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(4);
  for (int cols : {1024, 1000, 33}) {
    CAPTURE(cols);
    const int rows = 3;
    size_t n = size_t(rows) * cols;
    CHECK(compare(find("softmax"), grid(rows), {array(random_f32(n, rng)), array(std::vector<float>(n)), value(cols), value(cols)}, f) <= 1e-5);
    for (int warps : {1, 8}) {  // one warp: no exchange across warps; eight: 512 threads at wave64
      CAPTURE(warps);
      std::mt19937 own(size_t(cols * warps));  // the other kernels' inputs stay as they were
      CHECK(compare(with_warps(find("softmax"), warps), grid(rows), {array(random_f32(n, own)), array(std::vector<float>(n)), value(cols), value(cols)}, f) <=
            1e-5);
    }
    CHECK(compare(find("softmax_online"), grid(rows), {array(random_f32(n, rng)), value(cols)}, f) <= 1e-5);
    CHECK(compare(find("layer_norm"), grid(rows),
                  {array(random_f32(n, rng)), array(random_f32(size_t(cols), rng)), array(random_f32(size_t(cols), rng)), array(std::vector<float>(n)),
                   value(cols), value(1e-5f)}, f) <= 1e-4);
    CHECK(compare(find("rmsnorm_residual"), grid(rows),
                  {array(random_f32(n, rng)), array(random_f32(n, rng)), array(random_f32(size_t(cols), rng)), array(std::vector<float>(n)), value(cols),
                   value(1e-5f)}, f) <= 1e-4);
  }
}

TEST_CASE("emulated: argmax in a loop, 2-D reductions on both axes, transposes and reshapes") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(5);
  CHECK(compare(find("argmax"), grid(1), {array(random_f32(3000, rng)), array(std::vector<int32_t>(1)), value(3000)}, f) == 0);
  CHECK(compare(find("row_and_column_sums"), grid(1), {array(random_f32(32 * 64, rng)), array(std::vector<float>(32)), array(std::vector<float>(64))}, f) <= 1e-4);  // summation order differs
  std::vector<half> t(64 * 32);
  for (auto &v : t) v = half(std::uniform_real_distribution<float>(-1, 1)(rng));
  CHECK(compare(find("transpose"), grid(1), {array(t), array(std::vector<half>(64 * 32))}, f) == 0);
  CHECK(compare(find("reshape_and_argmax"), grid(1), {array(random_f32(256, rng)), array(std::vector<int32_t>(33))}, f) == 0);
}

TEST_CASE("emulated: for_range, if_ and atomics") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(6);
  CHECK(compare(find("loops_and_atomics"), grid(3), {array(random_f32(1000, rng)), array(std::vector<float>(1)), array(std::vector<int32_t>(4)), value(1000)}, f) <= 1e-4);
}

TEST_CASE("emulated: dot through shared memory (f16 tiles in a K loop, i8)") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(7);
  const int M = 70, N = 40, K = 50;
  std::vector<half> a(size_t(M) * K), b(size_t(K) * N);
  for (auto &v : a) v = half(std::uniform_real_distribution<float>(-1, 1)(rng));
  for (auto &v : b) v = half(std::uniform_real_distribution<float>(-1, 1)(rng));
  CHECK(compare(find("matmul"), grid(cdiv(M, 32), cdiv(N, 32)), {array(a), array(b), array(std::vector<float>(size_t(M) * N)), value(M), value(N), value(K)}, f) <= 1e-4);
  std::vector<int8_t> ia(32 * 64), ib(64 * 32);
  for (auto &v : ia) v = int8_t(std::uniform_int_distribution<int>(-128, 127)(rng));
  for (auto &v : ib) v = int8_t(std::uniform_int_distribution<int>(-128, 127)(rng));
  CHECK(compare(find("int8_dot"), grid(1), {array(ia), array(ib), array(std::vector<int32_t>(32 * 32))}, f) == 0);
  std::vector<uint8_t> ua(32 * 64), ub(64 * 32);  // u8: zero-extended (255 * 255 per product)
  for (auto &v : ua) v = uint8_t(std::uniform_int_distribution<int>(0, 255)(rng));
  for (auto &v : ub) v = uint8_t(std::uniform_int_distribution<int>(0, 255)(rng));
  CHECK(compare(find("uint8_dot"), grid(1), {array(ua), array(ub), array(std::vector<int32_t>(32 * 32))}, f) == 0);
}

TEST_CASE("emulated: f32 matmul and tiles that are not whole instruction tiles (the FMA path, also on sm_80's plan)") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(8);
  for (bool tensor_cores : {false, true}) {
    if (tensor_cores && f.arch != "sm_80") continue;  // AMD: no matrix instructions emulated, dot on FMAs
    CAPTURE(tensor_cores);
    const Flavour plan{f.arch, tensor_cores};
    CHECK(compare_matmul<float, float>("matmul_f32", 32, 32, 70, 40, 50, rng, plan) <= 1e-4);
    CHECK(compare_matmul<half, float>("matmul_f16_k8", 32, 32, 70, 40, 50, rng, plan) <= 1e-4);
    CHECK(compare_matmul<half, float>("matmul_f16_n4", 32, 4, 33, 10, 40, rng, plan) <= 1e-4);
    CHECK(compare_matmul<half, float>("matmul_f16_one_tile", 16, 16, 20, 20, 33, rng, plan) <= 1e-4);
  }
}

// The tensor-core lowering run end to end: operands staged in shared memory, ldmatrix at the
// lowering's row addresses, mma.sync on the ISA's fragments, the accumulator layout through
// loops, stores, conversions, reductions and a second dot.
// mma.sync sums each k step in its own order (the emulator: in double, rounded once), so
// sums that cancel to near zero differ from the host's FMA chain in the last bits: 1e-3
// against a floor of 1e-3 (a misplaced element is off by O(1)).
TEST_CASE("emulated sm_80 tensor cores: f16, bf16 and i8 matmuls (ragged sizes), epilogues on the accumulator, chained dots") {
  std::mt19937 rng(9);
  CHECK(compare_matmul<half, float>("matmul", 32, 32, 70, 40, 50, rng, kTensorCores) <= 1e-3);
  CHECK(compare_matmul<half, float>("matmul_f16_128x128", 128, 128, 130, 129, 40, rng, kTensorCores) <= 1e-3);
  CHECK(compare_matmul<bfloat16, float>("matmul_bf16", 64, 64, 100, 70, 80, rng, kTensorCores) <= 1e-3);
  CHECK(compare_matmul<int8_t, int32_t>("matmul_i8", 64, 64, 64, 128, 192, rng, kTensorCores) == 0);
  const int K = 64;
  CHECK(compare(find("matmul_relu_f16"), grid(1),
                {array(random_of<half>(64 * K, rng)), array(random_of<half>(K * 32, rng)), array(std::vector<half>(64 * 32)), array(std::vector<float>(64)),
                 value(K)},
                kTensorCores) <= 2e-3);
  CHECK(compare(find("attention_tile"), grid(1),
                {array(random_of<half>(32 * 64, rng)), array(random_of<half>(32 * 64, rng)), array(random_of<half>(32 * 64, rng)),
                 array(std::vector<float>(32 * 64))},
                kTensorCores) <= 5e-3);
}

// Software pipelining: iteration counts below, at and above the number of stages, ragged K
// (the masked-off groups are zero-filled), one stage (no cp.async) for comparison.
TEST_CASE("emulated sm_80 tensor cores: cp.async pipelines of 1 to 4 stages over 1 to 5 iterations") {
  std::mt19937 rng(10);
  for (int stages : {1, 2, 3, 4})
    for (int K : {20, 64, 96, 150}) {
      CAPTURE(stages);
      CAPTURE(K);
      CHECK(compare_matmul<half, float>("matmul", 32, 32, 40, 64, K, rng, {"sm_80", true, stages}) <= 1e-3);
    }
  CHECK(compare_matmul<int8_t, int32_t>("matmul_i8", 64, 64, 64, 64, 130, rng, {"sm_80", true, 3}) == 0);
}

// Hopper's warpgroup MMA end to end: A staged (or copied by cp.async) as core matrices,
// B transposed into them through registers or, as trans(W[N][K]), copied as stored;
// descriptors, wgmma's D fragment, one warpgroup (4 warps, two m tiles of 64 at 128 rows)
// and two (8 warps); n = 32 (an epilogue with row sums on the accumulator), 64, 128 and 256
// a wgmma. Dots too small for a warpgroup (attention_tile's 32 rows) take mma.sync.
// Tolerances as for mma.sync above.
TEST_CASE("emulated sm_90a warpgroup MMA: f16, bf16, s8 and u8 matmuls (ragged sizes, 4 and 8 warps, n up to 256), epilogues, the mma.sync fallback") {
  std::mt19937 rng(11);
  const Flavour hopper{"sm_90a", true, 3};
  CHECK(compare_matmul<half, float>("matmul_f16_128x128", 128, 128, 130, 129, 40, rng, hopper) <= 1e-3);
  CHECK(compare_matmul<half, float>("matmul_f16_128x128_w8", 128, 128, 200, 136, 72, rng, hopper) <= 1e-3);
  CHECK(compare_matmul<bfloat16, float>("matmul_bf16", 64, 64, 100, 70, 80, rng, hopper) <= 1e-3);
  CHECK(compare_matmul<half, float>("matmul_nt_f16_64x256", 64, 256, 70, 300, 50, rng, hopper) <= 1e-3);
  CHECK(compare_matmul<bfloat16, float>("matmul_nt_bf16_128x64_w8", 128, 64, 129, 65, 130, rng, hopper) <= 1e-3);
  CHECK(compare_matmul<int8_t, int32_t>("matmul_i8", 64, 64, 100, 70, 200, rng, hopper) == 0);  // s8 and u8: k32, exact
  std::vector<uint8_t> ua(size_t(100) * 130), ub(size_t(130) * 70);
  for (auto &x : ua) x = uint8_t(std::uniform_int_distribution<int>(0, 255)(rng));
  for (auto &x : ub) x = uint8_t(std::uniform_int_distribution<int>(0, 255)(rng));
  CHECK(compare(find("matmul_u8"), grid(cdiv(100, 64), cdiv(70, 64)), {array(ua), array(ub), array(std::vector<int32_t>(100 * 70)), value(100), value(70), value(130)},
                hopper) == 0);
  const int K = 64;
  CHECK(compare(find("matmul_relu_f16"), grid(1),
                {array(random_of<half>(64 * K, rng)), array(random_of<half>(K * 32, rng)), array(std::vector<half>(64 * 32)), array(std::vector<float>(64)),
                 value(K)},
                hopper) <= 2e-3);
  // p is rounded to f16 between the dots, so a last-bit difference in s moves some of p by
  // 2^-11, and outputs whose sums cancel to about 1e-2 see that at 1e-2 (sm_80 gives the
  // same figure on these inputs); a misplaced element is off by O(1).
  std::vector<half> q = random_of<half>(32 * 64, rng), k = random_of<half>(32 * 64, rng), v = random_of<half>(32 * 64, rng);
  CHECK(compare(find("attention_tile"), grid(1), {array(q), array(k), array(v), array(std::vector<float>(32 * 64))}, hopper) <= 2e-2);
  // 64 rows: both dots on wgmma, P the second's A from registers.
  std::vector<half> q64 = random_of<half>(64 * 64, rng), k64 = random_of<half>(64 * 64, rng), v64 = random_of<half>(64 * 64, rng);
  CHECK(compare(find("attention_tile_64"), grid(1), {array(q64), array(k64), array(v64), array(std::vector<float>(64 * 64))}, hopper) <= 2e-2);
}

TEST_CASE("emulated sm_90a warpgroup MMA: cp.async pipelines of 1 to 4 stages into core matrices, A alone and A and B") {
  std::mt19937 rng(12);
  for (int stages : {1, 2, 3, 4})
    for (int K : {32, 64, 128, 160}) {  // K a multiple of 8: 16-byte rows, so the loads are pipelined
      CAPTURE(stages);
      CAPTURE(K);
      CHECK(compare_matmul<half, float>("matmul_f16_128x128", 128, 128, 128, 128, K, rng, {"sm_90a", true, stages}) <= 1e-3);
      CHECK(compare_matmul<bfloat16, float>("matmul_nt_bf16_128x64_w8", 128, 64, 128, 64, K, rng, {"sm_90a", true, stages}) <= 1e-3);
    }
}

// TF32: the tensor cores multiply f32 inputs with their low 13 mantissa bits dropped. Inputs
// that TF32 holds exactly make the products exact, so the emulated tensor cores must agree
// with the host's f32 dot to summation order (the mma.sync bound above); the FMA path (the
// same kernel without the tensor cores) is IEEE on any input.
TEST_CASE("emulated tensor cores: a TF32 dot of f32 blocks on sm_80's mma.sync and sm_90a's wgmma (ragged sizes, pipelined A), and the same kernel on FMAs") {
  std::mt19937 rng(13);
  auto tf32_exact = [&](size_t n) {
    std::vector<float> v = random_of<float>(n, rng);
    for (float &x : v) x = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xFFFFE000u);
    return v;
  };
  const int M = 100, N = 70;
  for (int K : {40, 64, 200}) {
    CAPTURE(K);
    std::vector<Arg> args{array(tf32_exact(size_t(M) * K)), array(tf32_exact(size_t(K) * N)), array(std::vector<float>(size_t(M) * N)), value(M),
                          value(N), value(K)};
    CHECK(compare(find("matmul_tf32"), grid(cdiv(M, 64), cdiv(N, 64)), args, kTensorCores) <= 1e-3);
    CHECK(compare(find("matmul_tf32"), grid(cdiv(M, 64), cdiv(N, 64)), args, {"sm_90a", true, 3}) <= 1e-3);  // wgmma m64nNk8 .tf32
    CHECK(compare_matmul<float, float>("matmul_tf32", 64, 64, M, N, K, rng, {"sm_80", false}) <= 1e-4);
  }
}

// Flash attention as Triton's tutorial runs it (examples/flash_attention.h): Q staged once
// before the key loop, K and V copied ahead by cp.async from a head's base pointer that the
// loop body computes, the online softmax on the accumulator layout, P fed to the second dot
// (from registers on sm_90a). seq 150 and 100 are ragged against both BM and BN (masked rows
// and keys); causal at bf16. P is rounded to the input type between the dots on both sides, so
// a last-bit difference in a score moves some of P by one rounding step (f16 2^-11, bf16
// 2^-8): the bounds of the attention tiles above, scaled by that step; a misplaced element
// is off by O(1).
TEST_CASE("emulated tensor cores: flash attention on sm_80's mma.sync and sm_90a's wgmma, 2 and 3 stages, causal and not, ragged lengths") {
  std::mt19937 rng(14);
  auto run = [&]<class T>(const char *kernel, int bm, int heads, int seq, int D, const Flavour &f) {
    size_t n = size_t(heads) * seq * D;
    return compare(find(kernel), grid(cdiv(seq, bm), heads),
                   {array(random_of<T>(n, rng)), array(random_of<T>(n, rng)), array(random_of<T>(n, rng)), array(std::vector<T>(n)), value(seq),
                    value(1.0f / std::sqrt(float(D)))},
                   f);
  };
  for (const char *arch : {"sm_80", "sm_90a"})
    for (int stages : {2, 3}) {
      CAPTURE(arch);
      CAPTURE(stages);
      const Flavour f{arch, true, stages};
      double plain = run.template operator()<half>("flash_attention", 128, 2, 150, 128, f);
      double causal = run.template operator()<bfloat16>("flash_attention_causal_64", 64, 3, 100, 64, f);
      MESSAGE(arch << " " << stages << " stages: " << plain << " " << causal);
      CHECK(plain <= 2e-2);
      CHECK(causal <= 1.6e-1);
    }
}

// The emulator computes a wgmma when it is issued; what keeps the lowering honest about the
// asynchrony is that the operands are read again when wait_group completes the group. A write
// to them in between, or a program that ends with a group in flight, is a fault.
TEST_CASE("emulator: shared memory written under an in-flight wgmma, or a wgmma never waited for, is a fault") {
  using namespace kdsl::simt;
  set_thread(0);
  // An f16 A and B, 64 rows of 32 bytes each, swizzled by 32 bytes: descriptors at offsets 0
  // and 4096 of the emulated shared memory, 8 rows (256 bytes) apart.
  auto descriptor = [](uint64_t offset) { return (offset >> 4) | (uint64_t(256 >> 4) << 32) | (uint64_t(3) << 62); };
  std::memset(machine.shared, 0x3c, 8192);  // every element 1.0078125 in f16
  auto issue = [&] {
    uint32_t d[4] = {};
    wgmma(descriptor(0), descriptor(4096), 8, kWgmmaF16, 0, d);
    wgmma_commit();
  };
  machine.fault.clear();
  issue();
  wgmma_wait(0);
  CHECK(machine.fault.empty());
  issue();
  machine.shared[4096] ^= 0x01;  // thread 0 reads B's row 0, column 0: written while in flight
  wgmma_wait(0);
  CHECK(kdsl_test::contains(machine.fault, "written before the wgmma.wait_group that completes it"));
  machine.fault.clear();
  issue();
  wgmma_wait(1);  // one group may stay in flight: nothing checked yet
  CHECK(machine.fault.empty());
  wgmma_program_end();
  CHECK(kdsl_test::contains(machine.fault, "the program ended with wgmma.mma_async in flight"));
  machine.fault.clear();
}

// fp8 e4m3 operands: on sm_90a wgmma m64nNk32 .e4m3 reads the bytes as stored, as mma.sync
// m16n8k32 .e4m3 does on sm_89; on sm_80 and sm_90, and on sm_90a for a dot of too few rows for
// its warpgroups, the operands are widened to f16 (exactly; by cvt on sm_90) for mma.sync (as for MFMA on CDNA, which the emulator
// does not run); without tensor cores, FMAs, on NVIDIA's warps and AMD's waves. Every product of two E4M3 values is exact in f32, so the backends differ only in the
// order the f32 sums are rounded: 1e-4 relative, where a misplaced element is off by O(1).
TEST_CASE("emulated fp8 e4m3 matmuls: wgmma k32 on sm_90a, mma.sync k32 on sm_89, widened to f16 tensor cores on sm_80 and sm_90, FMAs; ragged sizes") {
  std::mt19937 rng(23);
  for (const Flavour &flavour :
       {Flavour{"sm_90a", true, 3}, Flavour{"sm_89", true, 2}, Flavour{"sm_90", true, 2}, Flavour{"sm_80", true, 2}, Flavour{"sm_80", false, 2}, Flavour{"gfx942", false, 2}}) {
    CAPTURE(flavour.arch);
    CAPTURE(flavour.tensor_cores);
    CHECK(compare_matmul<float8_e4m3, float>("matmul_f8e4m3", 64, 64, 100, 70, 200, rng, flavour) <= 1e-4);
    CHECK(compare_matmul<float8_e4m3, float>("matmul_f8e4m3_32_rows", 32, 64, 45, 70, 100, rng, flavour) <= 1e-4);  // mma.sync on sm_90a
    if (flavour.arch == "gfx942") continue;  // 128 x 128 on FMAs: 66,304 bytes of operand copies, past CDNA's 64 KiB of LDS
    CHECK(compare_matmul<float8_e4m3, float>("matmul_f8e4m3_128x128_w8", 128, 128, 130, 136, 72, rng, flavour) <= 1e-4);
  }
}

// The E4M3 conversions are integer IR shared by every backend, except on sm_89+, which has
// cvt instructions (emulated as PTX defines them); here through each GPU lowering's byte loads
// and stores: value for value what the CPU backend gives, every code and ties, saturation, NaN
// and signed zeros included.
TEST_CASE("emulated: f8e4m3 stores, loads and casts give the CPU backend's values (integer IR; cvt on sm_89 and sm_90)") {
  Flavour flavour = each_emulated_target();
  SUBCASE("sm_89") flavour.arch = "sm_89";
  SUBCASE("sm_90") flavour.arch = "sm_90";
  std::mt19937 rng(5);
  std::vector<float> x = random_f32(700, rng, -500, 500);
  for (int c = 0; c < 256; ++c) x.push_back(float(e4m3_bits_to_f32(uint8_t(c))) * 1.0625f);  // between codes: ties and near-ties
  for (float v : {448.0f, 464.0f, INFINITY, -INFINITY, NAN, -0.0f, 0x1p-10f, 0x1p-11f}) x.push_back(v);
  const int n = int(x.size());
  std::vector<float8_e4m3> codes(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) codes[size_t(i)] = float8_e4m3::from_bits(uint8_t(i));
  CHECK(compare(find("f8e4m3_convert"), grid(cdiv(n, 256)),
                {array(x), array(std::vector<float8_e4m3>(size_t(n))), array(std::vector<float>(size_t(n))), array(codes), array(std::vector<float>(size_t(n))),
                 value(n)},
                flavour) == 0);
}
