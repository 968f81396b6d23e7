// library_attention.cpp - Library::attention: flash-attention prefill, split-K decode and its combine
#include <algorithm>

#include "kernels/attention_decode.h"
#include "kernels/attention_prefill.h"
#include "kernels/library_impl.h"

namespace kdsl::kernels {
namespace {

constexpr int kMaxSplits = 32;  // decode splits per head (the combine's block)
constexpr int kMinSplitPositions = 128;
constexpr int kPrefillRows = 16;

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

}  // namespace

void Library::attention_tree(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int64_t *ancestors,
                             float *out, int rows, int pos0, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types) {
  using detail::require;
  using detail::with_block;
  require(rows >= 0 && rows <= 64 && pos0 >= 0 && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0 && n_heads % n_kv_heads == 0,
          "attention_tree", [&] {
            return "expected 0 <= rows <= 64, positive sizes and n_heads a multiple of n_kv_heads (rows " + std::to_string(rows) + ", pos0 " +
                   std::to_string(pos0) + ", n_heads " + std::to_string(n_heads) + ", n_kv_heads " + std::to_string(n_kv_heads) +
                   ", head_dim " + std::to_string(head_dim) + ", page_size " + std::to_string(page_size) + ")";
          });
  require(int64_t(pos0) + rows <= detail::kMaxPosition, "attention_tree", [&] { return "positions past 2^24 are not supported"; });
  if (rows == 0) return;
  Impl &im = *impl_;
  const int group = n_heads / n_kv_heads;
  detail::with_kv_types("attention_tree", types, [&]<class KT, class VT>() {
    auto kp = detail::kv_pages<KT>(k_pages);
    auto vp = detail::kv_pages<VT>(v_pages);
    with_block<16, 256>("attention_tree", "head_dim", head_dim, [&]<int D>() {
      with_kv_step(page_size, [&]<int STEP, bool TILE_IN_PAGE>() {
        auto run = [&]<bool FULL_D>() {
          im.kernel<kernels::attention_tree<kPrefillRows, STEP, D, TILE_IN_PAGE, FULL_D, KT, VT>>()(
              grid(cdiv(rows, kPrefillRows), n_heads), q, kp, vp, block_table, ancestors, out, rows, pos0, n_heads, group, n_kv_heads, head_dim,
              page_size, scale);
        };
        if (head_dim == D)
          run.template operator()<true>();
        else
          run.template operator()<false>();
      });
    });
  });
}

void Library::attention(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, float *out, int rows,
                        int pos0, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types) {
  using detail::require;
  using detail::with_block;
  require(rows >= 0 && pos0 >= 0 && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0, "attention", [&] {
    return "sizes must be positive (rows " + std::to_string(rows) + ", pos0 " + std::to_string(pos0) + ", n_heads " +
           std::to_string(n_heads) + ", n_kv_heads " + std::to_string(n_kv_heads) + ", head_dim " + std::to_string(head_dim) +
           ", page_size " + std::to_string(page_size) + ")";
  });
  require(n_heads % n_kv_heads == 0, "attention", [&] {
    return "n_heads (" + std::to_string(n_heads) + ") must be a multiple of n_kv_heads (" + std::to_string(n_kv_heads) + ")";
  });
  require(int64_t(pos0) + rows <= detail::kMaxPosition, "attention", [&] { return "positions past 2^24 are not supported"; });
  if (rows == 0) return;
  Impl &im = *impl_;
  const int group = n_heads / n_kv_heads;

  detail::with_kv_types("attention", types, [&]<class KT, class VT>() {
    auto kp = detail::kv_pages<KT>(k_pages);
    auto vp = detail::kv_pages<VT>(v_pages);
    if (rows > 1) {
      with_block<16, 256>("attention", "head_dim", head_dim, [&]<int D>() {
        with_kv_step(page_size, [&]<int STEP, bool TILE_IN_PAGE>() {
          auto run = [&]<bool FULL_D>() {
            im.kernel<attention_prefill<kPrefillRows, STEP, D, TILE_IN_PAGE, FULL_D, KT, VT>>()(grid(cdiv(rows, kPrefillRows), n_heads), q, kp, vp,
                                                                                                block_table, out, rows, pos0, n_heads, group,
                                                                                                n_kv_heads, head_dim, page_size, scale);
          };
          if (head_dim == D)
            run.template operator()<true>();
          else
            run.template operator()<false>();
        });
      });
      return;
    }

    // Decode: enough splits that every thread has programs, none shorter than kMinSplitPositions.
    const int ctx = pos0 + 1;
    const int want_programs = 4 * std::max(1, im.threads());
    int splits = std::min(cdiv(want_programs, n_kv_heads), cdiv(ctx, kMinSplitPositions));
    splits = std::clamp(splits, 1, kMaxSplits);
    float *scratch = detail::reserve(im.device, im.attention_partials, size_t(n_heads) * kMaxSplits * (size_t(head_dim) + 2));
    with_block<16, 256>("attention", "head_dim", head_dim, [&]<int D>() {
      with_kv_step(page_size, [&]<int STEP, bool TILE_IN_PAGE>() {
        const int split_len = cdiv(cdiv(ctx, splits), STEP) * STEP;  // whole steps, so steps stay inside pages
        const int used_splits = cdiv(ctx, split_len);                // every split holds at least one position
        float *part_out = used_splits == 1 ? out : scratch;
        float *part_ml = scratch + (used_splits == 1 ? 0 : size_t(n_heads) * size_t(used_splits) * size_t(head_dim));
        with_block<1, 16>("attention (decode)", "n_heads / n_kv_heads", group, [&]<int G>() {
          auto run = [&]<bool FULL_D>() {
            im.kernel<attention_decode<G, D, STEP, TILE_IN_PAGE, FULL_D, KT, VT>>()(grid(n_kv_heads, used_splits), q, kp, vp, block_table, part_out,
                                                                                    part_ml, ctx, group, n_kv_heads, head_dim, page_size, split_len,
                                                                                    scale);
          };
          if (head_dim == D)
            run.template operator()<true>();
          else
            run.template operator()<false>();
        });
        if (used_splits > 1) im.kernel<attention_combine<kMaxSplits, D>>()(grid(n_heads), part_out, part_ml, out, used_splits, head_dim);
      });
    });
  });
}

}  // namespace kdsl::kernels
