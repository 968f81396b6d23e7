// library.h - the LLM kernel library: every hot operation of the inference engine, as kdsl kernels
#pragma once
#include <cstdint>
#include <memory>

#include <kdsl/device.h>
#include <kdsl/dtype.h>

namespace kdsl::kernels {

// Host entry points over device memory (host memory on the CPU device). Each call picks the
// kernel specialization for its run-time sizes (block sizes are compile-time), compiles it on
// first use and finds it in the cache afterwards; steady-state calls do not allocate.
class Library {
 public:
  explicit Library(const Device &device);
  ~Library();
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;

  // y[r,:] = x[r,:] * rsqrt(mean(x[r,:]^2) + eps) * w[:]; x, y: rows x dim contiguous (y may equal x).
  void rmsnorm(const float *x, const float *w, float *y, int rows, int dim, float eps);
  // x[r,:] += residual[r,:]; then y = rmsnorm(x).
  void add_rmsnorm(float *x, const float *residual, const float *w, float *y, int rows, int dim, float eps);
  // out[r,n] = sum_k x[r,k] * W[n,k] (+ bias[n]); W row-major [N][K] of dtype wtype (F32, F16, BF16).
  void matmul(const float *x, const void *w, DType wtype, const float *bias, float *out, int rows, int N, int K);
  // Rotary embedding in place; token r at position pos0 + r; neox: pairs (i, i + head_dim/2), else (2i, 2i+1).
  void rope(float *q, float *k, int rows, int n_heads, int n_kv_heads, int head_dim, int pos0, float theta, bool neox);
  // out[i] = silu(gate[i]) * up[i] (out may equal gate).
  void swiglu(const float *gate, const float *up, float *out, int64_t n);
  // out[r,:] = table[ids[r], :] as f32; table [vocab][dim] of dtype ttype.
  void embedding(const int32_t *ids, const void *table, DType ttype, float *out, int rows, int dim);
  // Writes k/v rows ([rows][n_kv_heads][head_dim]) for positions pos0.. into the paged cache.
  void kv_append(const float *k, const float *v, float *k_pages, float *v_pages, const int32_t *block_table, int pos0, int rows,
                 int n_kv_heads, int head_dim, int page_size);
  // Causal grouped-query attention of q rows (positions pos0..) over the paged cache.
  void attention(const float *q, const float *k_pages, const float *v_pages, const int32_t *block_table, float *out, int rows, int pos0,
                 int n_heads, int n_kv_heads, int head_dim, int page_size, float scale);
  // Row-wise softmax in place.
  void softmax(float *x, int rows, int cols);
  // The first index of the maximum of x[0..n).
  int32_t argmax(const float *x, int n);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kdsl::kernels
