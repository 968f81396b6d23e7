// library_dense.h - Library::matmul over f32, f16 and bf16 weights: its tuned decode, few-row and prefill dispatch, one file per type instantiating it
#pragma once
#include <algorithm>
#include <iterator>
#include <string>
#include <type_traits>

#include "kernels/library_tuning.h"
#include "kernels/library_device.h"
#include "kernels/matmul.h"
#include "kernels/matmul_narrow.h"
#include "kernels/matvec.h"
#include "kernels/matvec_lanes.h"
#include "kernels/matvec_rows.h"
#include "kernels/matvec_wide.h"

namespace kdsl::kernels::detail {

// On a GPU, one row of x (decode) takes matvec_wide (with_gpu_decode_tile), up to kMaxFewRows rows take
// matvec_rows (one program of all the rows per BN weight rows, bound by reading W), and more
// rows over f16/bf16 weights take matmul_narrow on the tensor cores (kGpuNarrowTile); none is
// tuned. On the CPU, one row of x streams BN spread weight rows BK columns at a time,
// prefetching one step ahead (matvec.h says why and what it measured), and up to
// kMaxFewRowsCpu rows take matvec_lanes in one launch: RB rows of x by BN weight rows in
// 8-lane accumulators that stay in registers, summed once at the end. Up to kOneGroupRowsCpu
// rows are one row group (kFewRowsOneGroup, by the row count; not tuned, see there); more take
// 4 x 2 or 2 x 4 groups, tuned (the best of the shapes that fit 16 registers;
// bench/RESULTS.md, the register-blocked few-row entry). More rows (every type on the CPU,
// f32 weights on a GPU) take dot tiles of BM x BN outputs over BK-deep steps. Each list's
// first entry is the hand-set default; kdsl::autotune may choose another per shape bucket on
// the CPU (library_tuning.h). 8 x 128
// was the best decode tile of the 4-16 row, 64-256 column spread tiles tried (and of the
// 1-32 x 64-1024 neighbouring-row tiles before them); the others listed are its nearest
// neighbours, which were close. With dot register-blocked on the host, 64 x 64 x 32 tiles
// prefilled 512 tokens of the synthetic 110M faster than 32 x 64 x 32 and 128 x 64 x 32
// (bench/RESULTS.md, the prefill entry after the register-blocked dot): each step transposes
// its W tile for dot, and taller tiles share that cost among more rows of x.
struct MatvecConfig {
  int rows, cols;
  std::string label() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};
struct LanesConfig {
  int x_rows, w_rows;  // matvec_lanes' RB and BN
  std::string label() const { return std::to_string(x_rows) + "x" + std::to_string(w_rows); }
};
struct TileConfig {
  int m, n, k;
  std::string label() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
};
inline constexpr MatvecConfig kDecodeCandidates[] = {{8, 128}, {4, 128}, {16, 64}, {8, 256}};
inline constexpr LanesConfig kFewRowsCandidates[] = {{4, 2}, {2, 4}};
// The few rows a speculative check or a short prompt brings (2-6) are one row group on the
// CPU: 4 x 3 up to 4 rows, 6 x 2 up to 6, each weight row prefetched kFewRowsPrefetch elements
// ahead. A second row group re-reads W from the cache, but its arithmetic then runs after the
// first's stream instead of under it, and a pass of 5 rows cost about a third more than one of
// a single row; in one group, a tenth more (bench/RESULTS.md, the entry on few-row products in
// one row group). The tuner cannot see that: it times a candidate back to back, with W in the
// cache, where a second group costs little (at 8 rows it took 2 x 4 for the FFN's shapes, with
// which the pass from memory was the slower).
inline constexpr LanesConfig kFewRowsOneGroup[] = {{4, 3}, {6, 2}};  // by x_rows, ascending
inline constexpr int kOneGroupRowsCpu = std::end(kFewRowsOneGroup)[-1].x_rows;
inline constexpr int kFewRowsPrefetch = 256;
// The first of kFewRowsOneGroup whose row group holds `rows` (<= kOneGroupRowsCpu).
constexpr int one_group_shape(int rows) {
  int i = 0;
  while (kFewRowsOneGroup[i].x_rows < rows) ++i;
  return i;
}
inline constexpr MatvecConfig kGpuFewRows = {8, 128};
// A GPU's decode: matvec_wide, 4 neighbouring rows of W by 512 columns a step where rows are
// long (K >= kGpuLongRows), 8 by 256 otherwise: on an H200 each read its shape of Llama-3-8B
// faster than the other and than matvec's 8 x 128 (bench/RESULTS.md, 2026-12-04,
// kdsl-bench-cuda's bf16 decode rows).
inline constexpr MatvecConfig kGpuDecode = {4, 512}, kGpuDecodeShortRows = {8, 256};
inline constexpr int kGpuLongRows = 8192;

// Calls f.template operator()<C>() with the GPU decode tile for rows of K values.
template <class F>
void with_gpu_decode_tile(int K, F &&f) {
  if (K >= kGpuLongRows) f.template operator()<kGpuDecode>();
  else f.template operator()<kGpuDecodeShortRows>();
}
// A GPU's prefill over f16/bf16 weights: matmul_narrow on the tensor cores, 64 x 128 x 64 with
// 4 warps and 3 stages. On an H200, at a 512-token prompt's Llama-3-8B shapes, it ran ahead of
// Triton's tutorial tile (128 x 128 x 64, 8 warps) and of the other tiles kdsl-bench-cuda times
// (bench/RESULTS.md, 2026-12-04, its prefill rows). It makes twice the programs: 256 for 512
// rows and N = 4096, where 128 x 128 tiles leave 4 of 132 SMs idle.
inline constexpr TileConfig kGpuNarrowTile = {64, 128, 64};
inline constexpr int kGpuNarrowWarps = 4, kGpuNarrowStages = 3;
inline constexpr int kMaxFewRows = 16;     // on a GPU: matvec_rows up to here, then dot tiles
inline constexpr int kMaxFewRowsCpu = 32;  // on the CPU: matvec_lanes up to here
// Up to kShortTileM rows take tiles that tall: a taller tile would multiply its clamped rows
// past `rows` too. Only a GPU's rows come here (17..32; the CPU's take matvec_lanes), and a
// GPU takes a point's first candidate untimed: one is listed.
inline constexpr int kShortTileM = 32;
inline constexpr TileConfig kShortPrefillCandidates[] = {{32, 64, 32}};
inline constexpr TileConfig kPrefillCandidates[] = {{64, 64, 32}, {128, 64, 32}, {64, 128, 32}, {32, 64, 32}};

enum class DensePoint { Decode, FewRows, Prefill };

// The tuned points' names in records and logs, one per weight type and bias.
template <class T>
const std::string &dense_point_name(DensePoint point, bool bias) {
  static const std::string names[3][2] = {
      {"matmul.decode<" + std::string(T::text) + ">", "matmul.decode<" + std::string(T::text) + ",bias>"},
      {"matmul.few_rows<" + std::string(T::text) + ">", "matmul.few_rows<" + std::string(T::text) + ",bias>"},
      {"matmul.prefill<" + std::string(T::text) + ">", "matmul.prefill<" + std::string(T::text) + ",bias>"}};
  return names[int(point)][bias];
}

// A GPU's products over T weights, x in X (f32, or T itself where x's producer wrote T:
// Library::product_input_type): one row takes matvec_wide, up to kMaxFewRows rows matvec_rows
// (one program of all the rows, BR a power of two, per kGpuFewRows.rows weight rows), more rows
// over f16/bf16 weights matmul_narrow on the tensor cores. False where none of them applies
// (f32 weights' prefill, which takes the dot tiles of run_dense_matmul).
template <class T, class X>
bool run_gpu_dense_matmul(Library::Impl &im, const typename X::storage *x, const typename T::storage *w, const float *bias, float *out, int rows, int N,
                          int K) {
  const float *b = bias ? bias : out;  // without a bias the kernels get `out` for it, unread
  const bool has_bias = bias != nullptr;
  if (rows == 1) {
    with_gpu_decode_tile(K, [&]<MatvecConfig C>() {
      auto g = grid(cdiv(N, C.rows));
      if (has_bias) im.kernel<matvec_wide<T, C.rows, C.cols, true, X>>()(g, x, w, b, out, N, K);
      else im.kernel<matvec_wide<T, C.rows, C.cols, false, X>>()(g, x, w, b, out, N, K);
    });
    return true;
  }
  if (rows <= kMaxFewRows) {
    with_block<2, kMaxFewRows>("matmul", "rows", rows, [&]<int BR>() {
      constexpr MatvecConfig C = kGpuFewRows;
      auto g = grid(cdiv(N, C.rows));
      if (has_bias) im.kernel<matvec_rows<T, BR, C.rows, C.cols, true, C.cols, X>>()(g, x, w, b, out, rows, N, K);
      else im.kernel<matvec_rows<T, BR, C.rows, C.cols, false, C.cols, X>>()(g, x, w, b, out, rows, N, K);
    });
    return true;
  }
  if constexpr (std::is_same_v<T, f32>) {
    return false;
  } else {
    constexpr TileConfig C = kGpuNarrowTile;
    constexpr int W = kGpuNarrowWarps, S = kGpuNarrowStages;
    auto g = grid(cdiv(rows, C.m), cdiv(N, C.n));
    if (has_bias) im.kernel_with<kernels::matmul_narrow<T, C.m, C.n, C.k, true, X>, W, S>()(g, x, w, b, out, rows, N, K);
    else im.kernel_with<kernels::matmul_narrow<T, C.m, C.n, C.k, false, X>, W, S>()(g, x, w, b, out, rows, N, K);
    return true;
  }
}

template <class T>
void run_dense_matmul(Library::Impl &im, const float *x, const typename T::storage *w, const float *bias, float *out, int rows, int N, int K) {
  // Without a bias the kernels get `out` for it, unread.
  const float *b = bias ? bias : out;
  const bool has_bias = bias != nullptr;
  const int64_t nb = tune_bucket(N), kb = tune_bucket(K);
  auto decode = [&](const float *xr, float *outr) {
    launch_tuned<kDecodeCandidates>(im, dense_point_name<T>(DensePoint::Decode, has_bias), "N,K", nb, kb, 0, [&]<class Use>(int i, Use use) {
      with_candidate<kDecodeCandidates>(i, [&]<MatvecConfig C>() {
        auto g = grid(cdiv(N, C.rows));
        if (has_bias) use(im.kernel<matvec<T, C.rows, C.cols, true, C.cols>>(), g, xr, w, b, outr, N, K);
        else use(im.kernel<matvec<T, C.rows, C.cols, false, C.cols>>(), g, xr, w, b, outr, N, K);
      });
    });
  };
  const bool gpu = !dispatches_for_cpu(im);
  if (gpu && run_gpu_dense_matmul<T, f32>(im, x, w, bias, out, rows, N, K)) return;
  if (rows == 1) return decode(x, out);
  if (dispatches_for_cpu(im) && rows <= kMaxFewRowsCpu) {
    // One launch for all the rows: matvec_lanes computes at most RB - 1 clamped rows, where a
    // second launch for the odd ones (9 = 8 + 1) would read W again.
    auto lanes = [&]<LanesConfig C, class Use>(Use use) {
      auto g = grid(cdiv(rows, C.x_rows), cdiv(N, C.w_rows));
      constexpr int P = kFewRowsPrefetch;
      if (has_bias) use(im.kernel<matvec_lanes<T, C.x_rows, C.w_rows, 8, true, P>>(), g, x, w, b, out, rows, N, K);
      else use(im.kernel<matvec_lanes<T, C.x_rows, C.w_rows, 8, false, P>>(), g, x, w, b, out, rows, N, K);
    };
    if (rows <= kOneGroupRowsCpu)
      return with_candidate<kFewRowsOneGroup>(one_group_shape(rows), [&]<LanesConfig C>() { lanes.template operator()<C>(LaunchIt{}); });
    launch_tuned<kFewRowsCandidates>(im, dense_point_name<T>(DensePoint::FewRows, has_bias), "rows,N,K", tune_bucket(rows), nb, kb, [&]<class Use>(int i, Use use) {
      with_candidate<kFewRowsCandidates>(i, [&]<LanesConfig C>() { lanes.template operator()<C>(use); });
    });
    return;
  }
  auto tiles = [&]<const auto &Cs>() {
    launch_tuned<Cs>(im, dense_point_name<T>(DensePoint::Prefill, has_bias), "rows,N,K", tune_bucket(rows), nb, kb, [&]<class Use>(int i, Use use) {
      with_candidate<Cs>(i, [&]<TileConfig C>() {
        auto g = grid(cdiv(rows, C.m), cdiv(N, C.n));
        if (has_bias) use(im.kernel<kernels::matmul<T, C.m, C.n, C.k, true>>(), g, x, w, b, out, rows, N, K);
        else use(im.kernel<kernels::matmul<T, C.m, C.n, C.k, false>>(), g, x, w, b, out, rows, N, K);
      });
    });
  };
  if (rows <= kShortTileM) tiles.template operator()<kShortPrefillCandidates>();
  else tiles.template operator()<kPrefillCandidates>();
}

extern template void run_dense_matmul<f32>(Library::Impl &, const float *, const float *, const float *, float *, int, int, int);
extern template void run_dense_matmul<f16>(Library::Impl &, const float *, const half *, const float *, float *, int, int, int);
extern template void run_dense_matmul<bf16>(Library::Impl &, const float *, const bfloat16 *, const float *, float *, int, int, int);
// x rounded by its producer to the weights' type (Library::product_input_type): a GPU's alone.
extern template bool run_gpu_dense_matmul<f16, f16>(Library::Impl &, const half *, const half *, const float *, float *, int, int, int);
extern template bool run_gpu_dense_matmul<bf16, bf16>(Library::Impl &, const bfloat16 *, const bfloat16 *, const float *, float *, int, int, int);

}  // namespace kdsl::kernels::detail
