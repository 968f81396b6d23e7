// attention_dispatch.h - the attention dispatch for one pair of KV cache element types, compiled one pair per file
#pragma once
#include <cstdint>

#include "kernels/library.h"

namespace kdsl::kernels::detail {

// One attention call's arguments once checked (library_attention.cpp checks them); the page
// pointers are the cache's storage, typed by the dispatch for its KP / VP.
struct AttentionCall {
  const float *q;
  const void *k_pages, *v_pages;
  const int32_t *block_table;
  const int64_t *ancestors;  // attention_tree only
  float *out;
  int rows, pos0, n_heads, n_kv_heads, head_dim, page_size;
  float scale;
  // attention_at: the first row's position in device memory (pos0 is then unused) and the
  // context the decode launches are sized for. Null for every other call.
  const int32_t *position = nullptr;
  int max_context = 0;
};

// Launch the prefill, decode or tree kernels for keys and values stored as the element
// policies KP and VP (kv_element.h). Each (KP, VP) pair is instantiated in a file of its own
// (kernels/CMakeLists.txt writes them): every pair
// brings every head size, page step and grouping (about 210 kernels), and all pairs in one
// file took about 12 GB and ten minutes to compile.
template <class KP, class VP>
void run_attention(Library::Impl &im, const AttentionCall &call);
template <class KP, class VP>
void run_attention_tree(Library::Impl &im, const AttentionCall &call);

}  // namespace kdsl::kernels::detail
