// paged_kv_test_util.h - a paged KV cache on the host and attention over it in float64: the references of the attention and KV cache tests
#pragma once
#include <functional>

#include <kdsl/formats/half.h>
#include <kdsl/formats/quant_blocks.h>

#include "models/gguf/quantize.h"
#include "tests/kernels/library_test_util.h"

namespace kernels_test {

// A paged KV cache for one sequence, its pages handed out in shuffled order from a larger pool.
struct PagedCache {
  int page_size, n_kv_heads, head_dim, num_pages;
  std::vector<float> k_pages, v_pages;
  std::vector<int32_t> block_table;

  PagedCache(std::mt19937 &rng, int positions, int page_size_, int n_kv_heads_, int head_dim_)
      : page_size(page_size_), n_kv_heads(n_kv_heads_), head_dim(head_dim_) {
    int used = (positions + page_size - 1) / page_size;
    num_pages = used + 3;
    std::vector<int32_t> pool(static_cast<size_t>(num_pages));
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    block_table.assign(pool.begin(), pool.begin() + used);
    size_t floats = size_t(num_pages) * page_size * n_kv_heads * head_dim;
    k_pages = random_floats(rng, floats, -100, 100);  // garbage everywhere the kernels must not look
    v_pages = random_floats(rng, floats, -100, 100);
  }
  // Where kv head kv_head's vector at pos starts: pages are [n_kv_heads][page_size][head_dim].
  size_t at(int pos, int kv_head) const {
    return ((size_t(block_table[size_t(pos / page_size)]) * n_kv_heads + size_t(kv_head)) * page_size + size_t(pos % page_size)) * head_dim;
  }
  // Fills positions [0, n) with fresh random keys and values.
  void fill(std::mt19937 &rng, int n) {
    std::uniform_real_distribution<float> dist(-1, 1);
    for (int p = 0; p < n; ++p)
      for (int h = 0; h < n_kv_heads; ++h)
        for (int d = 0; d < head_dim; ++d) k_pages[at(p, h) + size_t(d)] = dist(rng), v_pages[at(p, h) + size_t(d)] = dist(rng);
  }
};

// Attention of rows in slots pos0.. over the cache, in float64: causal (row r sees slots up to
// pos0 + r), or whatever `visible(r, slot)` allows; size[i] is the largest |v| a row's output
// mixes, the size of the values the softmax weighs.
inline void attention_ref(const PagedCache &c, const std::vector<float> &q, int rows, int pos0, int n_heads, float scale, std::vector<double> &out,
                   std::vector<double> &size, const std::function<bool(int, int)> &visible = {}) {
  const int D = c.head_dim, group = n_heads / c.n_kv_heads;
  out.assign(size_t(rows) * n_heads * D, 0);
  size.assign(out.size(), 0);
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < n_heads; ++h) {
      const int kvh = h / group;
      const float *qh = q.data() + (size_t(r) * n_heads + h) * D;
      std::vector<int> seen;
      for (int p = 0; p < pos0 + rows; ++p)
        if (visible ? visible(r, p) : p <= pos0 + r) seen.push_back(p);
      std::vector<double> s(seen.size());
      double m = -1e300;
      for (size_t i = 0; i < seen.size(); ++i) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += double(qh[d]) * c.k_pages[c.at(seen[i], kvh) + size_t(d)];
        s[i] = dot * scale;
        m = std::max(m, s[i]);
      }
      double total = 0;
      for (double &v : s) total += (v = std::exp(v - m));
      double *o = out.data() + (size_t(r) * n_heads + h) * D;
      for (size_t i = 0; i < seen.size(); ++i)
        for (int d = 0; d < D; ++d) {
          double v = c.v_pages[c.at(seen[i], kvh) + size_t(d)];
          o[d] += s[i] / total * v;
          size[(size_t(r) * n_heads + h) * D + size_t(d)] = std::max(size[(size_t(r) * n_heads + h) * D + size_t(d)], std::fabs(v));
        }
    }
}

// Causal attention of `rows` fresh random query rows in slots pos0 .. through
// Library::attention, reading k_pages / v_pages (the cache's storage, of `types`), against
// attention_ref over c's values; returns the query rows (a caller may reuse them).
inline std::vector<float> check_causal_attention(std::mt19937 &rng, const PagedCache &c, const void *k_pages, const void *v_pages,
                                                 kdsl::kernels::KvTypes types, int rows, int pos0, int n_heads, const std::string &what) {
  auto q = random_floats(rng, size_t(rows) * n_heads * c.head_dim, -2, 2);
  const float scale = 1.0f / std::sqrt(float(c.head_dim));
  std::vector<double> ref, size;
  attention_ref(c, q, rows, pos0, n_heads, scale, ref, size);
  GuardedOutput out(ref.size(), -7.0f);
  library().attention(q.data(), k_pages, v_pages, c.block_table.data(), out.data(), rows, pos0, n_heads, c.n_kv_heads, c.head_dim, c.page_size, scale,
                      types);
  expect_close_scaled(what, out.values(), ref, size, 1e-5);
  CHECK_MESSAGE(out.intact(), what << " wrote past its output");
  return q;
}

// A PagedCache's pages as a Q8_0 KV cache stores them (kernels/kv_element.h's KvQ8_0): with V
// = n_kv_heads * page_size vectors a page, vector h * page_size + slot holding head h at slot,
// page p is V * head_dim / 32 * 34 bytes at byte p * that, its [V][head_dim] int8 quants
// first, then its [V][head_dim / 32] f16 scales. Quantized by ggml's reference quantizer
// (models/gguf quantize_row), the scalar rule the kernels must match bit for bit. A row's
// column col is head col / head_dim's value col % head_dim.
struct Q8Pages {
  int page_size, head_dim, row, blocks;
  size_t page_bytes;
  std::vector<int32_t> block_table;
  std::vector<int8_t> k, v;

  // Pages filled with random bytes: garbage wherever nothing is written (a kernel that reads
  // there sees arbitrary scales, NaN among them).
  Q8Pages(std::mt19937 &rng, const PagedCache &c)
      : page_size(c.page_size), head_dim(c.head_dim), row(c.n_kv_heads * c.head_dim), blocks(row / kdsl::formats::kQK8_0),
        page_bytes(size_t(page_size) * size_t(blocks) * sizeof(kdsl::formats::BlockQ8_0)), block_table(c.block_table) {
    k.resize(size_t(c.num_pages) * page_bytes), v.resize(k.size());
    for (int8_t &b : k) b = int8_t(rng());
    for (int8_t &b : v) b = int8_t(rng());
  }
  // The page's vector holding column col (or block) of position pos.
  size_t vector_of(int pos, int col) const { return size_t(col / head_dim) * size_t(page_size) + size_t(pos % page_size); }
  size_t quant_at(int pos, int col) const {
    return size_t(block_table[size_t(pos / page_size)]) * page_bytes + vector_of(pos, col) * size_t(head_dim) + size_t(col % head_dim);
  }
  size_t scale_at(int pos, int block) const {
    const int head_blocks = head_dim / kdsl::formats::kQK8_0;
    return size_t(block_table[size_t(pos / page_size)]) * page_bytes + size_t(page_size) * size_t(row) +
           (vector_of(pos, block * kdsl::formats::kQK8_0) * size_t(head_blocks) + size_t(block % head_blocks)) * 2;
  }
  // Position pos's row of values as ggml quantizes it, written where the cache keeps it.
  void put(std::vector<int8_t> &pages, int pos, const float *x) const {
    for (int b = 0; b < blocks; ++b) {
      kdsl::formats::BlockQ8_0 q;
      kdsl::models::quantize_row(kdsl::models::GgmlType::Q8_0, x + size_t(b) * 32, &q, 32);
      std::memcpy(&pages[scale_at(pos, b)], &q.d, 2);
      std::memcpy(&pages[quant_at(pos, b * 32)], q.qs, 32);
    }
  }
  // The value the cache holds at (pos, col): d * q.
  float value(const std::vector<int8_t> &pages, int pos, int col) const {
    uint16_t d;
    std::memcpy(&d, &pages[scale_at(pos, col / 32)], 2);
    return kdsl::f16_bits_to_f32(d) * float(pages[quant_at(pos, col)]);
  }
  // Quantizes c's positions [0, n) into these pages and sets c to the values they now hold,
  // so the float64 reference sees what the kernels read.
  void quantize_from(PagedCache &c, int n) {
    std::vector<float> kr(static_cast<size_t>(row)), vr(kr.size());
    for (int p = 0; p < n; ++p) {
      for (int i = 0; i < row; ++i) kr[size_t(i)] = c.k_pages[c.at(p, i / head_dim) + size_t(i % head_dim)], vr[size_t(i)] = c.v_pages[c.at(p, i / head_dim) + size_t(i % head_dim)];
      put(k, p, kr.data()), put(v, p, vr.data());
      for (int i = 0; i < row; ++i) c.k_pages[c.at(p, i / head_dim) + size_t(i % head_dim)] = value(k, p, i), c.v_pages[c.at(p, i / head_dim) + size_t(i % head_dim)] = value(v, p, i);
    }
  }
};

}  // namespace kernels_test
