// matvec_lanes.h - a few rows at once, register-blocked: out[r,n] = x[r,:] . W[n,:] with [RB, BN, L] lane accumulators summed once at the end
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// BLAS-style register blocking for the few-rows product (matvec_rows.h reduces each step's
// [BR, BN, BK] products over BK into [BR, BN], a horizontal sum per pair per step, and loads
// both operands for every product). Here each step of L columns loads RB rows of x and BN rows
// of W once and multiplies every pair into its own L lanes; the lanes are summed after the
// loop. RB * BN * L floats stay in vector registers across the loop when they fit (RB * BN
// registers of L = 8 lanes, beside RB + BN operands); the host lowering keeps them there for
// some shapes only, and the others ran several times slower (bench/RESULTS.md, the
// register-blocked few-row entry), so the Library offers a few shapes (library_dense.h).
// PREFETCH > 0 asks for each weight row PREFETCH elements past the step. With more rows of x
// per program there is more arithmetic per weight byte, and without it the loads waiting on
// memory filled the scheduler, and one program of 6 rows of x took far longer than one row did
// (bench/RESULTS.md, the entry on few-row products in one row group).
// Program (i, j) takes rows RB * i .. RB * i + RB - 1 of x and the weight rows spread_rows
// gives axis j (common.h): the row groups of x are the fastest grid axis, so the programs a
// thread runs one after another read the same weight rows.
template <class T, int RB, int BN, int L, bool HAS_BIAS, int PREFETCH = 0>
void matvec_lanes(Ptr<const f32> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> N, Scalar<i32> K) {
  auto r = program_id(0) * RB + arange<RB>();
  auto rn = spread_rows<BN, 1>(N);
  auto rk = arange<L>();
  auto x_rows = reshape<RB, 1, 1>(x + wide(minimum(r, rows - 1)) * wide(K));  // [RB, 1, 1]
  auto w_rows = reshape<1, BN, 1>(w + wide(minimum(rn, N - 1)) * wide(K));    // [1, BN, 1]
  auto step = [&](auto acc, auto kk, bool masked) {
    auto k = reshape<1, 1, L>(kk);
    auto k_ok = k < K;
    if constexpr (PREFETCH > 0)
      if (!masked) prefetch(w_rows + k + PREFETCH);
    auto xs = masked ? load(x_rows + k, k_ok, 0) : load(x_rows + k);                         // [RB, 1, L]
    auto ws = cast<f32>(masked ? load(w_rows + k, k_ok, 0) : load(w_rows + k));              // [1, BN, L]
    return acc + xs * ws;
  };
  auto k_main = K - K % L;
  auto acc = for_range(0, k_main, L, zeros<f32, RB, BN, L>(), [&](auto k, auto acc) { return step(acc, k + rk, false); });
  acc = if_(
      k_main < K, [&] { return step(acc, k_main + rk, true); }, [&] { return acc; });
  auto y = sum<2>(acc);  // [RB, BN]
  store_product<HAS_BIAS>(out, bias, y, r, rn, rows, N);
}

}  // namespace kdsl::kernels
