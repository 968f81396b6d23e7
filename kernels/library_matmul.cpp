// library_matmul.cpp - Library::matmul: the decode matrix-vector kernel for one row, dot tiles for more
#include <algorithm>

#include "kernels/library_impl.h"
#include "kernels/matmul.h"
#include "kernels/matvec.h"
#include "kernels/matvec_rows.h"

namespace kdsl::kernels {
namespace {

// Block sizes: the matrix-vector kernels stream BN spread weight rows BK columns at a time (for
// up to kMaxFewRows rows of x at once, in blocks of a power of two rows), prefetching one step
// ahead (matvec.h says why and what it measured); the tiled kernel computes BM x BN outputs
// over BK-deep steps. 8 x 128 was the best of the 4-16 row, 64-256 column spread tiles tried
// (and of the 1-32 x 64-1024 neighbouring-row tiles before them). With dot register-blocked on
// the host, 64 x 64 x 32 tiles prefilled 512 tokens of the synthetic 110M at 660-850 tok/s
// (f32) and 530-700 (f16), against 450-570 and 335-395 with 32 x 64 x 32 and 540-610 and
// 470-550 with 128 x 64 x 32 (kdsl-bench-engine, interleaved runs): each step transposes its
// W tile for dot, and taller tiles share that cost among more rows of x.
// kMaxFewRows is 16, not 8, for short prompts (a chat turn, a 9-token prompt): 9-16 rows in a
// 32-row dot tile did 2-3.5x the arithmetic, and a 9-token prompt on the 110M f16 model took
// about 0.19 s of CPU against 0.13 s streamed once (perf stat; bench/RESULTS.md).
constexpr int kMatvecRows = 8, kMatvecCols = 128;
constexpr int kPrefetch = kMatvecCols;
constexpr int kMaxFewRows = 16;
constexpr int kTileM = 64, kShortTileM = 32, kTileN = 64, kTileK = 32;

template <class T>
void run_matmul(Library::Impl &im, const float *x, const typename T::storage *w, const float *bias, float *out, int rows, int N, int K) {
  // Without a bias the kernels get `out` for it, unread.
  const float *b = bias ? bias : out;
  if (rows == 1) {
    auto g = grid(cdiv(N, kMatvecRows));
    if (bias) im.kernel<matvec<T, kMatvecRows, kMatvecCols, true, kPrefetch>>()(g, x, w, b, out, N, K);
    else im.kernel<matvec<T, kMatvecRows, kMatvecCols, false, kPrefetch>>()(g, x, w, b, out, N, K);
    return;
  }
  if (rows <= kMaxFewRows) {
    detail::with_block<2, kMaxFewRows>("matmul", "rows", rows, [&]<int BR>() {
      auto g = grid(cdiv(N, kMatvecRows));
      if (bias) im.kernel<matvec_rows<T, BR, kMatvecRows, kMatvecCols, true, kPrefetch>>()(g, x, w, b, out, rows, N, K);
      else im.kernel<matvec_rows<T, BR, kMatvecRows, kMatvecCols, false, kPrefetch>>()(g, x, w, b, out, rows, N, K);
    });
    return;
  }
  // Up to kShortTileM rows take tiles that tall: a taller tile would multiply its clamped
  // rows past `rows` too.
  detail::with_block<kShortTileM, kTileM>("matmul", "rows", std::min(rows, kTileM), [&]<int BM>() {
    auto g = grid(cdiv(rows, BM), cdiv(N, kTileN));
    if (bias) im.kernel<kernels::matmul<T, BM, kTileN, kTileK, true>>()(g, x, w, b, out, rows, N, K);
    else im.kernel<kernels::matmul<T, BM, kTileN, kTileK, false>>()(g, x, w, b, out, rows, N, K);
  });
}

}  // namespace

void Library::matmul(const float *x, const void *w, DType wtype, const float *bias, float *out, int rows, int N, int K) {
  detail::require(rows >= 0 && N > 0 && K > 0, "matmul", [&] {
    return "sizes must be positive (rows " + std::to_string(rows) + ", N " + std::to_string(N) + ", K " + std::to_string(K) + ")";
  });
  if (rows == 0) return;
  switch (wtype) {
    case DType::F32:
      return run_matmul<f32>(*impl_, x, static_cast<const float *>(w), bias, out, rows, N, K);
    case DType::F16:
      return run_matmul<f16>(*impl_, x, static_cast<const half *>(w), bias, out, rows, N, K);
    case DType::BF16:
      return run_matmul<bf16>(*impl_, x, static_cast<const bfloat16 *>(w), bias, out, rows, N, K);
    default:
      detail::require(false, "matmul",
                      [&] { return "weight type " + std::string(dtype_name(wtype)) + " is not supported (f32, f16 or bf16)"; });
  }
}

}  // namespace kdsl::kernels
