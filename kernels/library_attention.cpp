// library_attention.cpp - Library::attention and attention_tree (and their forms with the position in memory): argument checks, then the dispatch for the cache's element types
#include <string>

#include "kernels/attention_dispatch.h"
#include "kernels/library_impl.h"

namespace kdsl::kernels {

namespace {

using detail::require;

// How a call places its rows, for its messages and its range check: pos0 or max_context by
// value, or (name null) a position in device memory, which is not checked here.
struct Placement {
  const char *name;
  int value;
  bool valid;         // pos0 >= 0, max_context > 0
  int64_t last = 0;   // the last position the call may reach: past 2^24 is refused
};

// "rows 9, pos0 37, n_heads 8, n_kv_heads 2, head_dim 64, page_size 16"
std::string sizes_text(int rows, const Placement &at, int n_heads, int n_kv_heads, int head_dim, int page_size) {
  return "rows " + std::to_string(rows) + (at.name ? ", " + std::string(at.name) + " " + std::to_string(at.value) : "") + ", n_heads " +
         std::to_string(n_heads) + ", n_kv_heads " + std::to_string(n_kv_heads) + ", head_dim " + std::to_string(head_dim) + ", page_size " +
         std::to_string(page_size);
}

void check_range(const char *what, const Placement &at) {
  require(at.last <= detail::kMaxPosition, what, [&] { return "positions past 2^24 are not supported"; });
}

// attention's and attention_at's checks.
void check_causal(const char *what, int rows, const Placement &at, int n_heads, int n_kv_heads, int head_dim, int page_size) {
  require(rows >= 0 && at.valid && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0, what,
          [&] { return "sizes must be positive (" + sizes_text(rows, at, n_heads, n_kv_heads, head_dim, page_size) + ")"; });
  require(n_heads % n_kv_heads == 0, what, [&] {
    return "n_heads (" + std::to_string(n_heads) + ") must be a multiple of n_kv_heads (" + std::to_string(n_kv_heads) + ")";
  });
  check_range(what, at);
}

// attention_tree's and attention_tree_at's checks.
void check_tree(const char *what, int rows, const Placement &at, int n_heads, int n_kv_heads, int head_dim, int page_size) {
  require(rows >= 0 && rows <= 64 && at.valid && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0 && n_heads % n_kv_heads == 0, what,
          [&] {
            return "expected 0 <= rows <= 64, positive sizes and n_heads a multiple of n_kv_heads (" +
                   sizes_text(rows, at, n_heads, n_kv_heads, head_dim, page_size) + ")";
          });
  check_range(what, at);
}

Placement at_pos0(int pos0, int rows) { return {"pos0", pos0, pos0 >= 0, int64_t(pos0) + rows}; }

}  // namespace

void Library::attention_tree(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int64_t *ancestors,
                             float *out, int rows, int pos0, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types) {
  check_tree("attention_tree", rows, at_pos0(pos0, rows), n_heads, n_kv_heads, head_dim, page_size);
  if (rows == 0) return;
  const detail::AttentionCall call{q, k_pages, v_pages, block_table, ancestors, out, rows, pos0, n_heads, n_kv_heads, head_dim, page_size, scale};
  detail::with_kv_types("attention_tree", types, head_dim, [&]<class KP, class VP>() { detail::run_attention_tree<KP, VP>(*impl_, call); });
}

void Library::attention_tree_at(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int64_t *ancestors,
                                const int32_t *position, float *out, int rows, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale,
                                KvTypes types) {
  check_tree("attention_tree_at", rows, Placement{nullptr, 0, true}, n_heads, n_kv_heads, head_dim, page_size);
  if (rows == 0) return;
  detail::AttentionCall call{q, k_pages, v_pages, block_table, ancestors, out, rows, 0, n_heads, n_kv_heads, head_dim, page_size, scale};
  call.position = position;
  detail::with_kv_types("attention_tree_at", types, head_dim, [&]<class KP, class VP>() { detail::run_attention_tree<KP, VP>(*impl_, call); });
}

void Library::attention(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, float *out, int rows,
                        int pos0, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types) {
  check_causal("attention", rows, at_pos0(pos0, rows), n_heads, n_kv_heads, head_dim, page_size);
  if (rows == 0) return;
  const detail::AttentionCall call{q, k_pages, v_pages, block_table, nullptr, out, rows, pos0, n_heads, n_kv_heads, head_dim, page_size, scale};
  detail::with_kv_types("attention", types, head_dim, [&]<class KP, class VP>() { detail::run_attention<KP, VP>(*impl_, call); });
}

void Library::attention_at(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int32_t *position, int rows,
                           int max_context, float *out, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types) {
  check_causal("attention_at", rows, Placement{"max_context", max_context, max_context > 0, max_context}, n_heads, n_kv_heads, head_dim, page_size);
  if (rows == 0) return;
  detail::AttentionCall call{q, k_pages, v_pages, block_table, nullptr, out, rows, 0, n_heads, n_kv_heads, head_dim, page_size, scale};
  call.position = position;
  call.max_context = max_context;
  detail::with_kv_types("attention_at", types, head_dim, [&]<class KP, class VP>() { detail::run_attention<KP, VP>(*impl_, call); });
}

}  // namespace kdsl::kernels
