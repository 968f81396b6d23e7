// attention_dispatch_impl.h - run_attention / run_attention_tree's bodies, included by the per-type-pair files only
#pragma once
#include <algorithm>

#include "kernels/attention_decode.h"
#include "kernels/attention_dispatch.h"
#include "kernels/attention_prefill.h"
#include "kernels/library_device.h"
#include "kernels/library_impl.h"

namespace kdsl::kernels::detail {

constexpr int kMaxSplits = 32;  // decode splits per head (the combine's block)
constexpr int kMinSplitPositions = 128;
constexpr int kPrefillRows = 16;
// On the CPU a pass of up to kFewRows rows (a speculative check, a short prompt) takes query
// tiles that tall: a 16-row tile computed 10 clamped rows for each head of a 6-row check
// (bench/RESULTS.md, the entry on few-row attention tiles). GPUs keep 16 rows, the tensor
// cores' smallest tile height.
constexpr int kFewRows = 8;

// Calls f.template operator()<BM>() with the query rows per program for a pass of `rows`.
template <class F>
void with_query_rows(const Library::Impl &im, int rows, F &&f) {
  if (rows <= kFewRows && dispatches_for_cpu(im))
    f.template operator()<kFewRows>();
  else
    f.template operator()<kPrefillRows>();
}
// The smallest head block D: 16, or the policies' fewest columns (q8_0's whole blocks of 32).
template <class KP, class VP>
constexpr int kMinHead = std::max({16, KP::kMinColumns, VP::kMinColumns});

// Calls f.template operator()<STEP, TILE_IN_PAGE>() with the positions per loop step: 32 or 16
// when page_size is a multiple (each step then lies in one page and reads the block table
// once), else 32 with a table lookup per position.
template <class F>
void with_kv_step(int page_size, F &&f) {
  if (page_size % 32 == 0)
    f.template operator()<32, true>();
  else if (page_size % 16 == 0)
    f.template operator()<16, true>();
  else
    f.template operator()<32, false>();
}

// Calls f.template operator()<FORM>() with how the prefill and tree kernels take their scores
// and the values' product (attention_prefill.h's ScoreForm): transposed on the CPU, on tensor
// cores for an f16 or bf16 cache on a GPU, reduced along head_dim for a GPU's other caches.
template <class KP, class VP, class F>
void with_score_form(const Library::Impl &im, F &&f) {
  if (dispatches_for_cpu(im)) return f.template operator()<ScoreForm::kTransposed>();
  if constexpr (kTensorCoreCache<KP, VP>)
    f.template operator()<ScoreForm::kTensorCores>();
  else
    f.template operator()<ScoreForm::kRowsReduced>();
}

// Calls f.template operator()<FULL_D>(): whether head_dim fills the block D (no masking).
template <int D, class F>
void with_full_d(int head_dim, F &&f) {
  if (head_dim == D)
    f.template operator()<true>();
  else
    f.template operator()<false>();
}

template <class KP, class VP>
void run_attention_tree(Library::Impl &im, const AttentionCall &c) {
  auto kp = kv_pages<KP>(c.k_pages);
  auto vp = kv_pages<VP>(c.v_pages);
  const int group = c.n_heads / c.n_kv_heads;
  with_block<kMinHead<KP, VP>, 256>("attention_tree", "head_dim", c.head_dim, [&]<int D>() {
    with_kv_step(c.page_size, [&]<int STEP, bool TILE_IN_PAGE>() {
      with_full_d<D>(c.head_dim, [&]<bool FULL_D>() {
        with_query_rows(im, c.rows, [&]<int BM>() {
          with_score_form<KP, VP>(im, [&]<ScoreForm FORM>() {
            const Grid g = grid(cdiv(c.rows, BM), c.n_heads);
            if (c.position)
              im.kernel<kernels::attention_tree_at<BM, STEP, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>>()(
                  g, c.q, kp, vp, c.block_table, c.ancestors, c.position, c.out, c.rows, c.n_heads, group, c.n_kv_heads, c.head_dim, c.page_size,
                  c.scale);
            else
              im.kernel<kernels::attention_tree<BM, STEP, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>>()(
                  g, c.q, kp, vp, c.block_table, c.ancestors, c.out, c.rows, c.pos0, c.n_heads, group, c.n_kv_heads, c.head_dim, c.page_size,
                  c.scale);
          });
        });
      });
    });
  });
}

template <class KP, class VP>
void run_attention(Library::Impl &im, const AttentionCall &c) {
  auto kp = kv_pages<KP>(c.k_pages);
  auto vp = kv_pages<VP>(c.v_pages);
  const int group = c.n_heads / c.n_kv_heads;
  if (c.rows > 1) {
    with_block<kMinHead<KP, VP>, 256>("attention", "head_dim", c.head_dim, [&]<int D>() {
      with_kv_step(c.page_size, [&]<int STEP, bool TILE_IN_PAGE>() {
        with_full_d<D>(c.head_dim, [&]<bool FULL_D>() {
          with_query_rows(im, c.rows, [&]<int BM>() {
            with_score_form<KP, VP>(im, [&]<ScoreForm FORM>() {
              const Grid g = grid(cdiv(c.rows, BM), c.n_heads);
              if (c.position)
                im.kernel<attention_prefill_at<BM, STEP, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>>()(
                    g, c.q, kp, vp, c.block_table, c.position, c.out, c.rows, c.n_heads, group, c.n_kv_heads, c.head_dim, c.page_size, c.scale);
              else
                im.kernel<attention_prefill<BM, STEP, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>>()(
                    g, c.q, kp, vp, c.block_table, c.out, c.rows, c.pos0, c.n_heads, group, c.n_kv_heads, c.head_dim, c.page_size, c.scale);
            });
          });
        });
      });
    });
    return;
  }

  // Decode: enough splits that every thread has programs, none shorter than kMinSplitPositions,
  // for the context or, where the position is in device memory, for the largest context.
  const bool at_position = c.position != nullptr;
  const int ctx = at_position ? c.max_context : c.pos0 + 1;
  const int want_programs = 4 * std::max(1, im.threads());
  int splits = std::min(cdiv(want_programs, c.n_kv_heads), cdiv(ctx, kMinSplitPositions));
  splits = std::clamp(splits, 1, kMaxSplits);
  float *scratch = reserve(im, im.attention_partials, size_t(c.n_heads) * kMaxSplits * (size_t(c.head_dim) + 2));
  with_block<kMinHead<KP, VP>, 256>("attention", "head_dim", c.head_dim, [&]<int D>() {
    with_kv_step(c.page_size, [&]<int STEP, bool TILE_IN_PAGE>() {
      const int split_len = cdiv(cdiv(ctx, splits), STEP) * STEP;  // whole steps, so steps stay inside pages
      const int used_splits = cdiv(ctx, split_len);                // every split holds at least one position (of max_context)
      float *part_out = used_splits == 1 ? c.out : scratch;
      float *part_ml = scratch + (used_splits == 1 ? 0 : size_t(c.n_heads) * size_t(used_splits) * size_t(c.head_dim));
      with_block<1, 16>("attention (decode)", "n_heads / n_kv_heads", group, [&]<int G>() {
        with_full_d<D>(c.head_dim, [&]<bool FULL_D>() {
          const Grid g = grid(c.n_kv_heads, used_splits);
          if (at_position)
            im.kernel<attention_decode_at<G, D, STEP, TILE_IN_PAGE, FULL_D, KP, VP>>()(g, c.q, kp, vp, c.block_table, part_out, part_ml, c.position,
                                                                                       c.max_context, group, c.n_kv_heads, c.head_dim,
                                                                                       c.page_size, c.scale);
          else
            im.kernel<attention_decode<G, D, STEP, TILE_IN_PAGE, FULL_D, KP, VP>>()(g, c.q, kp, vp, c.block_table, part_out, part_ml, ctx, group,
                                                                                    c.n_kv_heads, c.head_dim, c.page_size, split_len, c.scale);
        });
      });
      if (used_splits > 1) im.kernel<attention_combine<kMaxSplits, D>>()(grid(c.n_heads), part_out, part_ml, c.out, used_splits, c.head_dim);
    });
  });
}

}  // namespace kdsl::kernels::detail
