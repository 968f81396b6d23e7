// amdgpu_mfma_test.cpp - MFMA lane layouts checked on the host: the lowering's fragment functions through a model of the instruction, against a scalar matmul
#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "codegen/amdgpu/mfma_fragments.h"
#include "codegen/gpu/layout.h"
#include "codegen/target_info.h"

using namespace kdsl;
using namespace kdsl::codegen::amdgpu;
using kdsl::codegen::MatrixInstruction;
namespace gpu = kdsl::codegen::gpu;

namespace mfma_test {

using Matrix = std::vector<std::vector<double>>;  // [row][col]
using Lanes = std::vector<std::vector<double>>;   // [lane][item or VGPR]

Matrix random_matrix(int rows, int cols, std::mt19937 &rng) {
  std::uniform_int_distribution<int> d(-4, 4);  // small integers: every sum below is exact
  Matrix x(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols)));
  for (auto &r : x)
    for (double &e : r) e = d(rng);
  return x;
}

// One MFMA over a wave of 64 lanes, written from AMD's Matrix Instruction Calculator
// (`--detail-instruction`, single block) and the CDNA3 ISA's MFMA chapter, in their
// direction: where each matrix element lives (lane, item), not what each lane holds.
//   A[i][k]: lane i + m (k / kpl), item k % kpl    B[k][j]: lane j + n (k / kpl), item k % kpl
//   D[i][j]: 32 x 32: lane j + 32 ((i / 4) % 2), VGPR 4 (i / 8) + i % 4
//            16 x 16: lane j + 16 (i / 4),       VGPR i % 4
// Deliberately not built from mfma_fragments.h: a wrong table there disagrees with this.
Lanes model_mfma(const MatrixInstruction &mi, const Lanes &a, const Lanes &b, const Lanes &c) {
  int m = mi.m, n = mi.n, k = mi.k, kpl = k * m / 64;
  auto d_place = [&](int i, int j) -> std::pair<int, int> {
    if (m == 32) return {j + 32 * ((i / 4) % 2), 4 * (i / 8) + i % 4};
    return {j + 16 * (i / 4), i % 4};
  };
  Lanes d = c;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      auto [lane, vgpr] = d_place(i, j);
      double sum = c[size_t(lane)][size_t(vgpr)];
      for (int kk = 0; kk < k; ++kk)
        sum += a[size_t(i + m * (kk / kpl))][size_t(kk % kpl)] * b[size_t(j + n * (kk / kpl))][size_t(kk % kpl)];
      d[size_t(lane)][size_t(vgpr)] = sum;
    }
  return d;
}

using Origin = std::function<MfmaCoord<int>(const MatrixInstruction &, int lane)>;
Origin real_a_origin = [](const MatrixInstruction &mi, int lane) { return mfma_a_origin(mi, lane); };

// Runs the lowering's index math (lower_mfma.cpp) for a whole M x N x K dot over waves
// tiled `warps` in the instruction's accumulator layout: each wave's accumulator registers
// start as C at the elements the layout gives them, each k step feeds the model the A and B
// fragments read at the lowering's origins and the C fragment from mfma_c_register, and at
// the end every register must hold C + A B at its element. Returns how many do not, plus
// the D elements the layout has no register for.
int mismatches(const MatrixInstruction &mi, std::array<int, 2> warps, int tiles_per_wave, const Origin &a_origin = real_a_origin) {
  gpu::Layout l = gpu::mma_layout(mi, warps);
  int M = tiles_per_wave * l.tile(0), N = tiles_per_wave * l.tile(1), K = 2 * mi.k;
  gpu::RegisterMap map = gpu::register_map(l, ir::Shape{M, N});
  std::mt19937 rng(uint32_t(M * 131 + N * 7 + K));
  Matrix A = random_matrix(M, K, rng), B = random_matrix(K, N, rng), C = random_matrix(M, N, rng);
  int kpl = mfma_k_per_lane(mi), elements = mfma_c_elements(mi), bad = 0;
  for (int w = 0; w < warps[0] * warps[1]; ++w) {
    Lanes regs(64, std::vector<double>(size_t(map.count)));
    auto element_of = [&](int lane, int r) {
      return std::pair{gpu::thread_offset(l, 0, lane, w) + map.offset[size_t(r)][0], gpu::thread_offset(l, 1, lane, w) + map.offset[size_t(r)][1]};
    };
    for (int lane = 0; lane < 64; ++lane)
      for (int r = 0; r < map.count; ++r) {
        auto [i, j] = element_of(lane, r);
        regs[size_t(lane)][size_t(r)] = C[size_t(i)][size_t(j)];
      }
    int warp_row = gpu::thread_offset(l, 0, 0, w), warp_col = gpu::thread_offset(l, 1, 0, w);
    for (int k0 = 0; k0 < K; k0 += mi.k)
      for (int tm = 0; tm < M / l.tile(0); ++tm)
        for (int tn = 0; tn < N / l.tile(1); ++tn) {
          Lanes a(64, std::vector<double>(size_t(kpl))), b = a, c(64, std::vector<double>(size_t(elements)));
          for (int lane = 0; lane < 64; ++lane) {
            MfmaCoord<int> a0 = a_origin(mi, lane), b0 = mfma_b_origin(mi, lane);
            for (int i = 0; i < kpl; ++i) {
              a[size_t(lane)][size_t(i)] = A[size_t(warp_row + tm * l.tile(0) + a0.row)][size_t(k0 + a0.col + i)];
              b[size_t(lane)][size_t(i)] = B[size_t(k0 + b0.row + i)][size_t(warp_col + tn * l.tile(1) + b0.col)];
            }
            for (int i = 0; i < elements; ++i) {
              int r = mfma_c_register(l, map, mi, tm, tn, i);
              if (r < 0) ++bad;  // the layout has no register for this D element
              else c[size_t(lane)][size_t(i)] = regs[size_t(lane)][size_t(r)];
            }
          }
          Lanes d = model_mfma(mi, a, b, c);
          for (int lane = 0; lane < 64; ++lane)
            for (int i = 0; i < elements; ++i)
              if (int r = mfma_c_register(l, map, mi, tm, tn, i); r >= 0) regs[size_t(lane)][size_t(r)] = d[size_t(lane)][size_t(i)];
        }
    for (int lane = 0; lane < 64; ++lane)
      for (int r = 0; r < map.count; ++r) {
        auto [i, j] = element_of(lane, r);
        double want = C[size_t(i)][size_t(j)];
        for (int kk = 0; kk < K; ++kk) want += A[size_t(i)][size_t(kk)] * B[size_t(kk)][size_t(j)];
        bad += regs[size_t(lane)][size_t(r)] != want;
      }
  }
  return bad;
}

}  // namespace mfma_test

using namespace mfma_test;

TEST_CASE("mfma: gfx90a and gfx942 list f16, bf16 and their own i8 MFMA instructions; gfx1100 lists none") {
  auto names = [](const std::string &arch) {
    std::set<std::string> out;
    for (const MatrixInstruction &mi : codegen::target_info(arch).matrix_instructions) out.insert(mi.name);
    return out;
  };
  std::set<std::string> common = {"mfma.f32.32x32x8f16", "mfma.f32.16x16x16f16", "mfma.f32.32x32x8bf16.1k", "mfma.f32.16x16x16bf16.1k"};
  std::set<std::string> gfx90a = common, gfx942 = common;
  gfx90a.insert({"mfma.i32.32x32x8i8", "mfma.i32.16x16x16i8"});
  gfx942.insert({"mfma.i32.32x32x16.i8", "mfma.i32.16x16x32.i8"});
  CHECK(names("gfx90a") == gfx90a);
  CHECK(names("gfx942") == gfx942);
  CHECK(names("gfx1100").empty());
}

TEST_CASE("mfma: each lane's A, B and D fragments, run through a model of the instruction, give C + A B at every accumulator register") {
  for (const char *arch : {"gfx90a", "gfx942"})
    for (const MatrixInstruction &mi : codegen::target_info(arch).matrix_instructions)
      for (std::array<int, 2> warps : {std::array<int, 2>{1, 1}, {2, 2}, {4, 1}, {2, 4}})
        for (int tiles : {1, 2}) {
          CAPTURE(arch);
          CAPTURE(std::string(mi.name));
          CAPTURE(warps[0]);
          CAPTURE(warps[1]);
          CAPTURE(tiles);
          CHECK(mismatches(mi, warps, tiles) == 0);
        }
}

TEST_CASE("mfma: the D fragment covers the m x n tile exactly once, 4 consecutive rows per lane and VGPR quadruple") {
  for (const MatrixInstruction &mi : codegen::target_info("gfx942").matrix_instructions) {
    CAPTURE(std::string(mi.name));
    std::set<std::pair<int, int>> seen;
    for (int lane = 0; lane < 64; ++lane)
      for (int i = 0; i < mfma_c_elements(mi); ++i) {
        MfmaCoord<int> e = mfma_c_element(mi, lane, i);
        CHECK(e.col == lane % mi.n);
        if (i % 4) CHECK(e.row == mfma_c_element(mi, lane, i - 1).row + 1);
        seen.insert({e.row, e.col});
      }
    CHECK(seen.size() == size_t(mi.m * mi.n));
  }
}

TEST_CASE("mfma: the model catches a wrong layout: A fragments from the wrong k half, or D rows swapped between lane groups") {
  const MatrixInstruction &mi = codegen::target_info("gfx942").matrix_instructions.at(0);  // mfma.f32.32x32x8f16
  REQUIRE(std::string(mi.name) == "mfma.f32.32x32x8f16");
  Origin wrong_k = [](const MatrixInstruction &m, int lane) {
    MfmaCoord<int> o = mfma_a_origin(m, lane);
    return MfmaCoord<int>{o.row, mfma_k_per_lane(m) - o.col};  // lanes 0..31 and 32..63 trade k halves
  };
  CHECK(mismatches(mi, {2, 2}, 1, wrong_k) > 0);
  MatrixInstruction swapped = mi;
  swapped.c_threads_per_warp = {32, 2};  // lanes along rows: the layout's registers are not D's
  swapped.c_size_per_thread = {1, 4};
  CHECK(mismatches(swapped, {2, 2}, 1) > 0);
}
