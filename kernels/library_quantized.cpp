// library_quantized.cpp - Library::matmul and Library::embedding over any WeightType: the block formats' kernels as weight_types.def lists them, plain types passed on
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include <kdsl/formats/row_groups.h>

#include "kernels/decoded_formats.h"
#include "kernels/embedding_quantized.h"
#include "kernels/library_device.h"
#include "kernels/library_gpu_decode.h"
#include "kernels/library_impl.h"
#include "kernels/int_dot_policy.h"
#include "kernels/library_int_dot.h"
#include "kernels/matmul_quantized.h"
#include "kernels/matvec_kquant.h"
#include "kernels/matvec_quantized.h"
#include "kernels/matvec_quantized_wide.h"
#include "kernels/row_chunks.h"

namespace kdsl::kernels {
namespace {

// Block sizes, counted in 32-element quant blocks along K: the decode kernel takes
// kMatvecRows weight rows one block at a time, prefetching kPrefetchBytes ahead (8 x 1 with
// 512 bytes measured best of 4-16 rows and 0 / 512 bytes); the few-row kernel takes
// kFewRowsBlocks blocks, since its accumulator is rows x blocks x 32; the tiled kernel
// computes kTileM x kTileN outputs over kTileBlocks-block steps (64 rows of x rather than 32
// share each step's dequantized W tile among twice the rows; kdsl-bench-engine's 512-token
// prefill of the synthetic 110M was faster so with Q8_0 and Q4_0, in interleaved runs).
constexpr int kMatvecRows = 8, kPrefetchBytes = 512;
constexpr int kMaxFewRows = 16, kFewRowsBlocks = 2;
constexpr int kTileM = 64, kShortTileM = 32, kTileN = 64, kTileBlocks = 2;
// On the CPU up to 128 rows a tile, by the rows there are: the dequantized W tile then serves
// twice the rows of x again, which measured faster for Q8_0 and Q4_0 prompts of 128 rows and
// more (bench/RESULTS.md, 2026-12-04, "prefill tiles").
constexpr int kCpuTileM = 128;
constexpr int kEmbeddingBlocks = 8;
// The k-quant kernels (matvec_kquant.h) count 256-element super-blocks: decode takes one per
// step of kMatvecRows rows, prefetching kKQuantPrefetchBytes ahead; the batched kernel
// computes kKQuantTileM x kKQuantTileN outputs (kMaxFewRows rows for small batches); an
// embedding program dequantizes kKQuantEmbeddingBlocks super-blocks.
constexpr int kKQuantPrefetchBytes = 1024;
constexpr int kKQuantTileM = 32, kKQuantTileN = 32;  // 64 columns need 171 KiB of shared memory on NVPTX (Q6_K), past sm_80's 163
// On the CPU the batched kernel's rows go up to kKQuantCpuTileM, by the rows there are: each
// step's decoded (and transposed) W tile then serves up to 128 rows of x rather than 32, which
// measured faster at 64 and again at 128 (bench/RESULTS.md, 2026-12-04, "prefill tiles").
constexpr int kKQuantCpuTileM = 128;
constexpr int kKQuantEmbeddingBlocks = 2;

// The weights' address as the kernels take it: their quant bytes (the scales are read through a
// reinterpret of the same address, quant_formats.h).
template <class F>
const typename F::Quant::storage *quants(const void *w) {
  return static_cast<const typename F::Quant::storage *>(w);
}

template <class F>
void run_matmul(Library::Impl &im, const float *x, const void *w, const float *bias, float *out, int rows, int N, int K) {
  // On the CPU, decode and few-row products quantize x and take integer dot products (library_int_dot.h).
  if (detail::matmul_int_dot<F>(im, x, w, bias, out, rows, N, K)) return;
  auto wq = quants<F>(w);
  // Without a bias the kernels get `out` for it, unread.
  const float *b = bias ? bias : out;
  auto decode = [&](const float *xr, float *outr) {
    if (!detail::dispatches_for_cpu(im)) {
      using detail::kGpuQuantBlocks, detail::kGpuQuantRows;
      auto g = grid(cdiv(N, kGpuQuantRows));
      if (bias) im.kernel<matvec_quantized_wide<F, kGpuQuantRows, kGpuQuantBlocks, true>>()(g, xr, wq, b, outr, N, K);
      else im.kernel<matvec_quantized_wide<F, kGpuQuantRows, kGpuQuantBlocks, false>>()(g, xr, wq, b, outr, N, K);
      return;
    }
    auto g = grid(cdiv(N, kMatvecRows));
    if (bias) im.kernel<matvec_quantized<F, kMatvecRows, true, kPrefetchBytes>>()(g, xr, wq, b, outr, N, K);
    else im.kernel<matvec_quantized<F, kMatvecRows, false, kPrefetchBytes>>()(g, xr, wq, b, outr, N, K);
  };
  if (rows == 1) return decode(x, out);
  if (rows <= kMaxFewRows) {
    // Power-of-two chunks on the CPU, as the dense few-row products take them (row_chunks.h says why).
    auto few_rows = [&](int first, int count) {
      const float *xr = x + int64_t(first) * K;
      float *outr = out + int64_t(first) * N;
      if (count == 1) return decode(xr, outr);
      detail::with_block<2, kMaxFewRows>("matmul", "rows", count, [&]<int BR>() {
        auto g = grid(cdiv(N, kMatvecRows));
        if (bias) im.kernel<matvec_rows_quantized<F, BR, kMatvecRows, kFewRowsBlocks, true>>()(g, xr, wq, b, outr, count, N, K);
        else im.kernel<matvec_rows_quantized<F, BR, kMatvecRows, kFewRowsBlocks, false>>()(g, xr, wq, b, outr, count, N, K);
      });
    };
    detail::for_few_row_launches(im, rows, few_rows);
    return;
  }
  // Short prompts take shorter tiles, as in library_matmul.cpp.
  auto tiles = [&]<int BM>() {
    auto g = grid(cdiv(rows, BM), cdiv(N, kTileN));
    if (bias) im.kernel<matmul_quantized<F, BM, kTileN, kTileBlocks, true>>()(g, x, wq, b, out, rows, N, K);
    else im.kernel<matmul_quantized<F, BM, kTileN, kTileBlocks, false>>()(g, x, wq, b, out, rows, N, K);
  };
  if (!detail::dispatches_for_cpu(im)) detail::with_block<kShortTileM, kTileM>("matmul", "rows", std::min(rows, kTileM), tiles);
  else detail::with_block<kShortTileM, kCpuTileM>("matmul", "rows", std::min(rows, kCpuTileM), tiles);
}

template <class F>
void run_embedding(Library::Impl &im, const int32_t *ids, const void *table, float *out, int rows, int dim) {
  auto wq = quants<F>(table);
  auto g = grid(rows, cdiv(dim / F::kBlockElements, kEmbeddingBlocks));
  im.kernel<embedding_quantized<F, kEmbeddingBlocks>>()(g, ids, wq, out, dim);
}

template <class F>
void run_matmul_kquant(Library::Impl &im, const float *x, const void *w, const float *bias, float *out, int rows, int N, int K) {
  // On the CPU, decode and few-row products quantize x and take integer dot products (library_int_dot.h).
  if (detail::matmul_int_dot<F>(im, x, w, bias, out, rows, N, K)) return;
  auto wq = quants<F>(w);
  const float *b = bias ? bias : out;  // unread without a bias
  if (rows == 1) {
    auto g = grid(cdiv(N, kMatvecRows));
    if (bias) im.kernel<matvec_kquant<F, kMatvecRows, true, kKQuantPrefetchBytes>>()(g, x, wq, b, out, N, K);
    else im.kernel<matvec_kquant<F, kMatvecRows, false, kKQuantPrefetchBytes>>()(g, x, wq, b, out, N, K);
    return;
  }
  auto run = [&]<int BM>() {
    auto g = grid(cdiv(rows, BM), cdiv(N, kKQuantTileN));
    if (bias) im.kernel<matmul_kquant<F, BM, kKQuantTileN, true>>()(g, x, wq, b, out, rows, N, K);
    else im.kernel<matmul_kquant<F, BM, kKQuantTileN, false>>()(g, x, wq, b, out, rows, N, K);
  };
  if (rows <= kMaxFewRows) run.template operator()<kMaxFewRows>();
  else if (!detail::dispatches_for_cpu(im)) run.template operator()<kKQuantTileM>();
  else detail::with_block<kKQuantTileM, kKQuantCpuTileM>("matmul", "rows", std::min(rows, kKQuantCpuTileM), run);
}

template <class F>
void run_embedding_kquant(Library::Impl &im, const int32_t *ids, const void *table, float *out, int rows, int dim) {
  auto wq = quants<F>(table);
  auto g = grid(rows, cdiv(dim / F::kBlockElements, kKQuantEmbeddingBlocks));
  im.kernel<embedding_kquant<F, kKQuantEmbeddingBlocks>>()(g, ids, wq, out, dim);
}

// Quantized rows hold whole blocks (32 elements, 256 for the k-quants).
void require_whole_blocks(std::string_view what, std::string_view size_name, WeightType type, int n) {
  int block = weight_type_info(type).block_elements;
  detail::require(n % block == 0, what, [&] {
    return std::string(size_name) + " " + std::to_string(n) + " is not a multiple of " + std::to_string(block) + ", the block size of " +
           std::string(weight_type_info(type).name) + " weights";
  });
}

// The types there are kernels for, for a message about one there is not.
std::string kernel_types_hint() {
  return " (the kernels run " + formats::weight_type_names([](const WeightTypeInfo &t) { return t.runs_in_kernels(); }) + ")";
}

}  // namespace

namespace {

// f.template operator()<Name##Format>() for a block format of weight_types.def with kernels,
// otherwise() for any other type.
template <class F, class Otherwise>
auto with_block_format(WeightType t, F &&f, Otherwise &&otherwise) {
#define KDSL_FORMAT_None(Name)
#define KDSL_FORMAT_Plain(Name)
#define KDSL_FORMAT_Scaled(Name) \
  case WeightType::Name: return f.template operator()<Name##Format>();
#define KDSL_FORMAT_Decoded(Name) KDSL_FORMAT_Scaled(Name)
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) KDSL_FORMAT_##kernels(Name)
  switch (t) {
#include <kdsl/formats/weight_types.def>
    default: return otherwise();
  }
#undef KDSL_WEIGHT_TYPE
#undef KDSL_FORMAT_None
#undef KDSL_FORMAT_Plain
#undef KDSL_FORMAT_Scaled
#undef KDSL_FORMAT_Decoded
}

// W's rows between stored and grouped by R (formats/row_groups.h), for a format with a plan,
// split by groups among `threads` threads: a load groups every matrix once, and a prefill
// puts them back for every product, a pass over the weights that one thread takes at a few
// GB/s.
template <class F>
void regroup(const void *in, void *out, int64_t N, int64_t K, int R, bool to_groups, int threads) {
  if constexpr (requires { typename F::Layout; }) {
    using Layout = typename F::Layout;
    if constexpr (formats::has_row_groups<Layout>) {
      const int64_t blocks = K / F::kBlockElements, groups = (N + R - 1) / R;
      const int64_t parts = std::clamp<int64_t>(threads, 1, groups), each = (groups + parts - 1) / parts;
      auto part = [=](int64_t p) {
        const int64_t first = std::min(groups, p * each), last = std::min(groups, (p + 1) * each);
        if (to_groups) formats::group_rows<Layout>(in, out, N, blocks, R, first, last);
        else formats::ungroup_rows<Layout>(in, out, N, blocks, R, first, last);
      };
      std::vector<std::thread> helpers;
      for (int64_t p = 1; p < parts; ++p) helpers.emplace_back(part, p);
      part(0);
      for (std::thread &t : helpers) t.join();
      return;
    }
  }
  internal_error("Library: a format grouped by rows has no row-group plan");
}

// A product's sizes: rows >= 0, N and K positive; else a user error naming `what`.
void require_product_sizes(const char *what, int rows, int N, int K) {
  detail::require(rows >= 0 && N > 0 && K > 0, what, [&] {
    return "sizes must be positive (rows " + std::to_string(rows) + ", N " + std::to_string(N) + ", K " + std::to_string(K) + ")";
  });
}

// The grouping row_group, which W of wtype with N rows says it has: 1 (as stored), or the
// grouping the format has on this CPU (int_dot_policy.h), whether or not this Library would now
// choose it (a Library told to take the f32 path reads grouped weights through a copy). Any
// other is a user error naming both; returns row_group.
int require_row_group(const Library::Impl &im, const char *what, WeightType wtype, int row_group, int64_t N) {
  if (row_group == 1) return 1;
  const int R = with_block_format(wtype, [&]<class F>() { return row_group_on<F>(im.device); }, [] { return 1; });
  detail::require(R > 1 && row_group == R && N % R == 0, what, [&] {
    return "W is grouped by " + std::to_string(row_group) + " rows, but a " + std::string(weight_type_info(wtype).name) + " matrix of " +
           std::to_string(N) + " rows " + (R > 1 ? "is grouped by " + std::to_string(R) + " where N is a multiple of it" : "has no grouped layout");
  });
  return R;
}

// The integer-dot product over rows a step makes in its quantizer's launch (Library::
// matmul_normed, matmul_swiglu), where one takes these rows; false (nothing run) elsewhere.
// Rows past the grouped kernels' (a prefill) read W as stored, where the caller has it (as
// Library::matmul's grouped overload does); without it, the course apart puts W back.
bool matmul_made_rows(Library::Impl &im, const detail::ActivationRows &x, const void *w, WeightType wtype, const float *bias, float *out, int rows, int N,
                      int K, int row_group, const void *w_stored) {
  return with_block_format(
      wtype,
      [&]<class F>() {
        if (row_group == 1) return detail::matmul_int_dot<F>(im, x, w, bias, out, rows, N, K);
        if (detail::matmul_int_dot_grouped<F>(im, x, w, bias, out, rows, N, K)) return true;
        return w_stored && detail::matmul_int_dot<F>(im, x, w_stored, bias, out, rows, N, K);
      },
      [] { return false; });
}

// matmul_normed's and matmul_swiglu's course after their sizes are checked: K and the grouping
// checked, then the product with the step in its quantizer's launch, or else
// make_apart(made, type) writes the rows into scratch in `type` and the product reads them.
template <class MakeApart>
void product_of_made_rows(Library &lib, Library::Impl &im, const char *what, const detail::ActivationRows &x, const void *w, WeightType wtype,
                          const float *bias, float *out, int rows, int N, int K, int row_group, const void *w_stored, MakeApart &&make_apart) {
  require_whole_blocks(what, "K", wtype, K);
  require_row_group(im, what, wtype, row_group, N);
  if (rows == 0 || matmul_made_rows(im, x, w, wtype, bias, out, rows, N, K, row_group, w_stored)) return;
  const DType type = lib.product_input_type(wtype);
  void *made = detail::reserve(im, im.made_rows, size_t(rows) * size_t(K) * dtype_bytes(type));
  make_apart(made, type);
  lib.matmul(made, type, w, wtype, bias, out, rows, N, K, row_group, w_stored);
}

}  // namespace

void Library::matmul(const float *x, const void *w, WeightType wtype, const float *bias, float *out, int rows, int N, int K) {
  if (auto plain = dtype_of(wtype)) return matmul(x, w, *plain, bias, out, rows, N, K);
  require_product_sizes("matmul", rows, N, K);
  require_whole_blocks("matmul", "K", wtype, K);
  if (rows == 0) return;
  // One case per row of weight_types.def with block kernels, each format's Name##Format.
#define KDSL_KERNELS_None(Name)
#define KDSL_KERNELS_Plain(Name)
#define KDSL_KERNELS_Scaled(Name) \
  case WeightType::Name: return run_matmul<Name##Format>(*impl_, x, w, bias, out, rows, N, K);
#define KDSL_KERNELS_Decoded(Name) \
  case WeightType::Name: return run_matmul_kquant<Name##Format>(*impl_, x, w, bias, out, rows, N, K);
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) KDSL_KERNELS_##kernels(Name)
  switch (wtype) {
#include <kdsl/formats/weight_types.def>
    default: throw Error("kdsl::kernels::matmul: weight type " + std::string(weight_type_info(wtype).name) + " has no kernel" + kernel_types_hint());
  }
}

int Library::row_group(WeightType wtype, int64_t N) const {
  return with_block_format(wtype, [&]<class F>() { return detail::int_dot_row_group<F>(*impl_, N); }, [] { return 1; });
}

void Library::group_rows(const void *w, WeightType wtype, int64_t N, int64_t K, void *out) const {
  const int R = row_group(wtype, N);
  if (R == 1) return void(std::memcpy(out, w, size_t(N * weight_bytes(wtype, K))));
  with_block_format(wtype, [&]<class F>() { regroup<F>(w, out, N, K, R, true, impl_->device.threads()); }, [] {});
}

void Library::matmul(const float *x, const void *w, WeightType wtype, const float *bias, float *out, int rows, int N, int K, int row_group,
                     const void *w_stored) {
  if (row_group == 1) return matmul(x, w, wtype, bias, out, rows, N, K);
  const int R = require_row_group(*impl_, "matmul", wtype, row_group, N);
  detail::require(rows >= 0 && K > 0, "matmul", [&] { return "sizes must be positive (rows " + std::to_string(rows) + ", K " + std::to_string(K) + ")"; });
  require_whole_blocks("matmul", "K", wtype, K);
  if (rows == 0) return;
  if (with_block_format(wtype, [&]<class F>() { return detail::matmul_int_dot_grouped<F>(*impl_, x, w, bias, out, rows, N, K); }, [] { return false; }))
    return;
  // A prefill: W as stored, for the kernels that read it so: the caller's, or a copy put back
  // (W's bytes, small beside a prefill's arithmetic on them, but 2-10% of a 512-token prompt:
  // bench/RESULTS.md, the entry on prefill reading the file's rows).
  if (w_stored) return matmul(x, w_stored, wtype, bias, out, rows, N, K);
  uint8_t *stored = detail::reserve(*impl_, impl_->ungrouped_weights, size_t(int64_t(N) * weight_bytes(wtype, K)));
  with_block_format(wtype, [&]<class F>() { regroup<F>(w, stored, N, K, R, false, impl_->device.threads()); }, [] {});
  matmul(x, stored, wtype, bias, out, rows, N, K);
}

void Library::embedding(const int32_t *ids, const void *table, WeightType ttype, float *out, int rows, int dim) {
  if (auto plain = dtype_of(ttype)) return embedding(ids, table, *plain, out, rows, dim);
  detail::require(rows >= 0 && dim > 0, "embedding",
                  [&] { return "rows and dim must be positive (got rows " + std::to_string(rows) + ", dim " + std::to_string(dim) + ")"; });
  require_whole_blocks("embedding", "dim", ttype, dim);
  if (rows == 0) return;
#undef KDSL_KERNELS_Scaled
#undef KDSL_KERNELS_Decoded
#define KDSL_KERNELS_Scaled(Name) \
  case WeightType::Name: return run_embedding<Name##Format>(*impl_, ids, table, out, rows, dim);
#define KDSL_KERNELS_Decoded(Name) \
  case WeightType::Name: return run_embedding_kquant<Name##Format>(*impl_, ids, table, out, rows, dim);
  switch (ttype) {
#include <kdsl/formats/weight_types.def>
    default: throw Error("kdsl::kernels::embedding: table type " + std::string(weight_type_info(ttype).name) + " has no kernel" + kernel_types_hint());
  }
#undef KDSL_WEIGHT_TYPE
#undef KDSL_KERNELS_None
#undef KDSL_KERNELS_Plain
#undef KDSL_KERNELS_Scaled
#undef KDSL_KERNELS_Decoded
}

void Library::matmul_normed(float *x, const float *residual, const float *norm_w, float eps, const void *w, WeightType wtype, const float *bias,
                            float *out, int rows, int N, int K, int row_group, const void *w_stored) {
  const char *what = residual ? "matmul_normed (with a residual)" : "matmul_normed";
  require_product_sizes(what, rows, N, K);
  // x is the residual stream, which the product's output must not overwrite.
  const auto o = reinterpret_cast<uintptr_t>(out), i = reinterpret_cast<uintptr_t>(x);
  detail::require(o + size_t(rows) * size_t(N) * sizeof(float) <= i || i + size_t(rows) * size_t(K) * sizeof(float) <= o, what,
                  [] { return std::string("out overlaps x: x is the residual stream the product's output must not overwrite"); });
  product_of_made_rows(*this, *impl_, what, detail::ActivationRows::normed(x, residual, norm_w, eps), w, wtype, bias, out, rows, N, K, row_group,
                       w_stored, [&](void *made, DType type) {
                         if (residual) add_rmsnorm(x, residual, norm_w, made, type, rows, K, eps);
                         else rmsnorm(x, norm_w, made, type, rows, K, eps);
                       });
}

void Library::matmul_swiglu(const float *gate, const float *up, const void *w, WeightType wtype, const float *bias, float *out, int rows, int N, int K,
                            int row_group, const void *w_stored) {
  require_product_sizes("matmul_swiglu", rows, N, K);
  product_of_made_rows(*this, *impl_, "matmul_swiglu", detail::ActivationRows::swiglu(gate, up), w, wtype, bias, out, rows, N, K, row_group, w_stored,
                       [&](void *made, DType type) { swiglu(gate, up, made, type, int64_t(rows) * K); });
}

}  // namespace kdsl::kernels
