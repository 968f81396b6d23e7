// library_attention.cpp - Library::attention and attention_tree: argument checks, then the dispatch for the cache's element types
#include <string>

#include "kernels/attention_dispatch.h"
#include "kernels/library_impl.h"

namespace kdsl::kernels {

void Library::attention_tree(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int64_t *ancestors,
                             float *out, int rows, int pos0, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types) {
  using detail::require;
  require(rows >= 0 && rows <= 64 && pos0 >= 0 && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0 && n_heads % n_kv_heads == 0,
          "attention_tree", [&] {
            return "expected 0 <= rows <= 64, positive sizes and n_heads a multiple of n_kv_heads (rows " + std::to_string(rows) + ", pos0 " +
                   std::to_string(pos0) + ", n_heads " + std::to_string(n_heads) + ", n_kv_heads " + std::to_string(n_kv_heads) +
                   ", head_dim " + std::to_string(head_dim) + ", page_size " + std::to_string(page_size) + ")";
          });
  require(int64_t(pos0) + rows <= detail::kMaxPosition, "attention_tree", [&] { return "positions past 2^24 are not supported"; });
  if (rows == 0) return;
  const detail::AttentionCall call{q, k_pages, v_pages, block_table, ancestors, out, rows, pos0, n_heads, n_kv_heads, head_dim, page_size, scale};
  detail::with_kv_types("attention_tree", types, head_dim, [&]<class KP, class VP>() { detail::run_attention_tree<KP, VP>(*impl_, call); });
}

void Library::attention_tree_at(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int64_t *ancestors,
                                const int32_t *position, float *out, int rows, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale,
                                KvTypes types) {
  using detail::require;
  require(rows >= 0 && rows <= 64 && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0 && n_heads % n_kv_heads == 0,
          "attention_tree_at", [&] {
            return "expected 0 <= rows <= 64, positive sizes and n_heads a multiple of n_kv_heads (rows " + std::to_string(rows) + ", n_heads " +
                   std::to_string(n_heads) + ", n_kv_heads " + std::to_string(n_kv_heads) + ", head_dim " + std::to_string(head_dim) +
                   ", page_size " + std::to_string(page_size) + ")";
          });
  if (rows == 0) return;
  detail::AttentionCall call{q, k_pages, v_pages, block_table, ancestors, out, rows, 0, n_heads, n_kv_heads, head_dim, page_size, scale};
  call.position = position;
  detail::with_kv_types("attention_tree_at", types, head_dim, [&]<class KP, class VP>() { detail::run_attention_tree<KP, VP>(*impl_, call); });
}

void Library::attention(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, float *out, int rows,
                        int pos0, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types) {
  using detail::require;
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
  const detail::AttentionCall call{q, k_pages, v_pages, block_table, nullptr, out, rows, pos0, n_heads, n_kv_heads, head_dim, page_size, scale};
  detail::with_kv_types("attention", types, head_dim, [&]<class KP, class VP>() { detail::run_attention<KP, VP>(*impl_, call); });
}

void Library::attention_at(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int32_t *position, int rows,
                           int max_context, float *out, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types) {
  using detail::require;
  require(rows >= 0 && max_context > 0 && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0 && n_heads % n_kv_heads == 0,
          "attention_at", [&] {
            return "expected positive sizes and n_heads a multiple of n_kv_heads (rows " + std::to_string(rows) + ", max_context " +
                   std::to_string(max_context) + ", n_heads " + std::to_string(n_heads) + ", n_kv_heads " + std::to_string(n_kv_heads) +
                   ", head_dim " + std::to_string(head_dim) + ", page_size " + std::to_string(page_size) + ")";
          });
  require(max_context <= detail::kMaxPosition, "attention_at", [&] { return "positions past 2^24 are not supported"; });
  if (rows == 0) return;
  detail::AttentionCall call{q, k_pages, v_pages, block_table, nullptr, out, rows, 0, n_heads, n_kv_heads, head_dim, page_size, scale};
  call.position = position;
  call.max_context = max_context;
  detail::with_kv_types("attention_at", types, head_dim, [&]<class KP, class VP>() { detail::run_attention<KP, VP>(*impl_, call); });
}

}  // namespace kdsl::kernels
