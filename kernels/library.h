// library.h - the LLM kernel library: every hot operation of the inference engine, as kdsl kernels
#pragma once
#include <cstdint>
#include <memory>

#include <kdsl/device.h>
#include <kdsl/dtype.h>

#include "kernels/weight_type.h"

namespace kdsl::kernels {

// The storage of a paged KV cache's keys and values: f32 (the default), f16, bf16 or q8_0
// (llama.cpp's --cache-type-k / --cache-type-v), the same for both. Floats are written rounded
// to nearest even; q8_0 keeps blocks of 32 values along head_dim as int8 quants and an f16
// scale (head_dim a multiple of 32). kernels/kv_element.h lays out each type's pages; all are
// read back as f32.
struct KvTypes {
  WeightType k = WeightType::F32, v = WeightType::F32;
  friend bool operator==(const KvTypes &, const KvTypes &) = default;
};
// The types a KV cache may hold, in the order messages list them; head_dim must be a multiple
// of each one's weight_type_info(t).block_elements (32 for q8_0).
inline constexpr WeightType kKvCacheTypes[] = {WeightType::F32, WeightType::F16, WeightType::BF16, WeightType::Q8_0};

// The kernel library's host API. Pointers are device memory (host memory on the CPU device).
// Each call picks the kernel specialization for its run-time sizes (block sizes are
// compile-time: the smallest power of two that holds the row, head or page step), traces and
// compiles it at first use and finds it in the kernel cache afterwards. Steady-state calls
// allocate nothing (scratch buffers grow once and are kept). Sizes past a kernel's largest
// block throw kdsl::Error naming the operation and the size. Not thread-safe: one Library per
// thread that launches.
class LaunchRecorder;

class Library {
 public:
  // recorder: where launches are recorded (kernels/launch_recorder.h), instead of or beside
  // running them; null: launch only.
  explicit Library(const Device &device, LaunchRecorder *recorder = nullptr);
  ~Library();
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;

  // y[r,:] = x[r,:] * rsqrt(mean(x[r,:]^2) + eps) * w[:]; x, y: rows x dim contiguous (y may
  // equal x); dim <= 8192. Also per-head QK norm (rows = tokens * heads, dim = head_dim).
  void rmsnorm(const float *x, const float *w, float *y, int rows, int dim, float eps);
  // Fused residual: x[r,:] += residual[r,:] (written back); then y = rmsnorm(x) as above.
  void add_rmsnorm(float *x, const float *residual, const float *w, float *y, int rows, int dim, float eps);
  // The two with y of ytype (F32, F16 or BF16, rounded to nearest even): the rows a product
  // whose product_input_type is ytype reads. A 16-bit y may not overlap x (or residual): a user error.
  void rmsnorm(const float *x, const float *w, void *y, DType ytype, int rows, int dim, float eps);
  void add_rmsnorm(float *x, const float *residual, const float *w, void *y, DType ytype, int rows, int dim, float eps);
  // The element type in which a product over `wtype` weights best reads its rows of x, which
  // their producers (the norms, swiglu) then write: on a GPU, f16 and bf16 weights' own type,
  // which its tensor cores multiply as stored and whose prefill tiles are copied ahead of the
  // loop as W's are (cp.async; f32 rows are loaded and rounded in registers first); F32
  // elsewhere. The products round x to that type on a GPU anyway (matmul_narrow), so giving it
  // rounded changes no prefill product; decode's and a few rows' then multiply the rounded x too.
  DType product_input_type(WeightType wtype) const;
  // out[r,n] = sum_k x[r,k] * W[n,k] (+ bias[n] when bias != nullptr). W row-major [N][K] of
  // dtype wtype (F32, F16 or BF16: kdsl::half / kdsl::bfloat16 storage). rows == 1 runs the
  // matrix-vector kernel (decode), 2..8 rows a variant that streams W once for all of them
  // (small batches, speculative checks), more rows dot tiles (prefill). out may not alias x.
  void matmul(const float *x, const void *w, DType wtype, const float *bias, float *out, int rows, int N, int K);
  // The same for any WeightType (library_quantized.cpp): the block formats weight_types.def gives
  // kernels (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 with K a multiple of 32; Q4_K, Q5_K, Q6_K with K a
  // multiple of 256) are read in place in their GGUF block layout, plain types go to the
  // overload above; a type with no kernels is refused. On the CPU, products of up to
  // set_integer_dot_rows rows quantize x to 8 bits per block (32 values; 256 for the k-quants;
  // d_x = amax / 127, as llama.cpp's q8 activations) and use exact integer dot products
  // (library_int_dot.h); the result differs from the f32 product of the dequantized weights by
  // at most the sum over values of (d_x / 2) * |w| (the activations' rounding), plus f32
  // rounding; elsewhere the weights are dequantized to f32.
  void matmul(const float *x, const void *w, WeightType wtype, const float *bias, float *out, int rows, int N, int K);
  // The same over W with its rows grouped by R = row_group (formats/row_groups.h: each block's
  // fields of R consecutive rows side by side), as row_group() says this Library's decode
  // kernels read a type fastest and group_rows() lays it out; row_group 1 is the overload
  // above. Decode and few-row products read the groups in place; a product of more rows
  // (prefill) takes the path above over `w_stored`, W as stored, where the caller still has it
  // (the engine's mapped model file), and otherwise first copies W back to rows as stored,
  // into scratch. A row_group other than 1 and the format's grouping (16 rows for the
  // k-quants, N a multiple of it) is a user error naming it.
  void matmul(const float *x, const void *w, WeightType wtype, const float *bias, float *out, int rows, int N, int K, int row_group,
              const void *w_stored = nullptr);
  // The rows a matrix of `wtype` with N rows is best grouped by for this Library's products:
  // the k-quants' 16 on the CPU where N is a multiple of it (their integer-dot decode reads a
  // field of 16 rows as one vector instead of putting it together row by row); 1 (leave it as
  // stored) elsewhere: other types, GPUs, a Library with integer dot products off.
  int row_group(WeightType wtype, int64_t N) const;
  // The product with x of xtype: F32 is the overload above; F16 or BF16 where
  // product_input_type(wtype) is that type (a GPU's own f16 / bf16 weights, row_group 1);
  // anything else is a user error naming both types.
  void matmul(const void *x, DType xtype, const void *w, WeightType wtype, const float *bias, float *out, int rows, int N, int K, int row_group = 1,
              const void *w_stored = nullptr);
  // A product of rows that the step before it makes, as the matmul above (W of wtype, grouped
  // by row_group, w_stored as stored):
  //   matmul_normed: out = W . rmsnorm(x) * norm_w, rmsnorm as rmsnorm() computes it over rows
  //     of K; with a residual, x += residual first (written back), as add_rmsnorm();
  //   matmul_swiglu: out = W . (silu(gate) * up), gate and up rows of K.
  // Where the CPU's integer-dot products take the rows (library_int_dot.h), the step runs in the
  // quantizer's launch (quantize_activations.h's quantize_made_rows): a decode step's norms, residual
  // adds and SwiGLU cost no launch and no pass of their own. Elsewhere the step writes the rows
  // into scratch, in product_input_type(wtype), and the product reads them there. out may not
  // overlap x (a user error) or gate and up.
  void matmul_normed(float *x, const float *residual, const float *norm_w, float eps, const void *w, WeightType wtype, const float *bias, float *out,
                     int rows, int N, int K, int row_group = 1, const void *w_stored = nullptr);
  void matmul_swiglu(const float *gate, const float *up, const void *w, WeightType wtype, const float *bias, float *out, int rows, int N, int K,
                     int row_group = 1, const void *w_stored = nullptr);
  // W ([N][K] of wtype, as stored) grouped by row_group(wtype, N) rows into `out`, which has
  // W's bytes; where that is 1, a plain copy.
  void group_rows(const void *w, WeightType wtype, int64_t N, int64_t K, void *out) const;
  // A GPU's decode product (one row of x) with the steps around it in the same launch:
  //   Store: out[n] = W[n,:] . rmsnorm(x) (+ bias[n]), rmsnorm(x) = x * rsqrt(mean(x^2) + eps)
  //     * norm_w (norm_w non-null);
  //   AddToOut: out[n] += W[n,:] . x (the residual add after a product; norm_w and bias null);
  //   Swiglu: W holds 2N rows, the gate's then the up product's, and out[n] =
  //     silu(W[n,:] . rmsnorm(x)) * (W[N + n,:] . rmsnorm(x)) (norm_w non-null, bias null).
  // Where fuses_norm_and_add(wtype) is false (the CPU, whose decode kernels are its own; the
  // formats without a wide GPU kernel: Q4_1, Q5_0, Q5_1 and the k-quants) it is a user error
  // naming the type: callers take rmsnorm, matmul, swiglu and add_rmsnorm there. out may not
  // alias x.
  enum class AfterProduct { Store, AddToOut, Swiglu };
  void matvec_fused(const float *x, const float *norm_w, float eps, const void *w, WeightType wtype, const float *bias, float *out, AfterProduct after,
                    int N, int K);
  bool fuses_norm_and_add(WeightType wtype) const;
  // The most rows of x the quantized matmul above takes through integer dot products on the
  // CPU; products of more rows, and every product with 0, dequantize the weights to f32 as on a
  // GPU: for the tests of that path and for benchmarks that compare the two. The default,
  // kDefaultIntegerDotRows, leaves it to each format and the CPU (int_dot_policy.h's
  // default_int_dot_rows: every row on a CPU with AVX2, where every such format takes its
  // byte-dot prefill tiles; else 16 rows at most).
  static constexpr int kDefaultIntegerDotRows = -1;
  void set_integer_dot_rows(int max_rows);
  // Whether those integer products of more than a few rows take a format's byte-dot prefill
  // tiles on a CPU without AVX2 too (element by element there), where the default takes the
  // f32 tiles (int_dot_policy.h's takes_prefill_tiles): for the tests of the tiles'
  // arithmetic on any CPU. Off by default.
  void set_prefill_tiles_everywhere(bool on);
  // Whether a CPU Library dispatches as a GPU's does (the kernels a GPU takes, its fused decode
  // products: matvec_fused), run on the CPU: the engine's GPU path checked against the
  // reference where no GPU is (tests). Off by default; a GPU's Library always does.
  void set_gpu_forms(bool on);
  // Whether the dispatch picks a GPU's kernels: on a GPU, with set_gpu_forms, or recording for a
  // GPU a plan stands for (launch_recorder.h).
  bool dispatches_for_gpu() const;
  // Whether row_group() ever says to group a matrix (on by default): off, every matrix stays as
  // stored, for comparing the two layouts. Grouped matrices are read correctly either way.
  void set_row_groups(bool on);
  // Rotary embedding in place. q: [rows][n_heads][head_dim], k: [rows][n_kv_heads][head_dim];
  // token r is at position pos0 + r; freq_i = theta^(-2i/head_dim) (computed in double, the
  // angle pos * freq_i in f32); neox = false rotates pairs (2i, 2i+1) (llama2.c, GGUF llama),
  // neox = true pairs (i, i + head_dim/2) (Qwen). head_dim even, <= 256. freq_divisors: null, or
  // head_dim/2 host values each freq_i is divided by (linear or YaRN RoPE scaling, Llama 3.1's
  // rope_freqs.weight, or their product: models/arch/rope_scaling.h); the rotated pairs are
  // multiplied by magnitude (YaRN's attention scaling; positive, finite).
  void rope(float *q, float *k, int rows, int n_heads, int n_kv_heads, int head_dim, int pos0, float theta, bool neox,
            const float *freq_divisors = nullptr, float magnitude = 1.0f);
  // The same with token r at positions[r] (`rows` device ints, each below 2^24): the nodes of
  // a token tree, where siblings share a position.
  void rope_at(float *q, float *k, int rows, int n_heads, int n_kv_heads, int head_dim, const int32_t *positions, float theta, bool neox,
               const float *freq_divisors = nullptr, float magnitude = 1.0f);
  // out[i] = silu(gate[i]) * up[i] for i < n (out may equal gate or up); n < 2^31.
  void swiglu(const float *gate, const float *up, float *out, int64_t n);
  // The same with out of otype (F32, F16 or BF16, rounded to nearest even); a 16-bit out may
  // not overlap gate or up (a user error).
  void swiglu(const float *gate, const float *up, void *out, DType otype, int64_t n);
  // out[r,:] = table[ids[r], :] converted to f32; table [vocab][dim] of dtype ttype (F32, F16,
  // BF16). ids are not range-checked.
  void embedding(const int32_t *ids, const void *table, DType ttype, float *out, int rows, int dim);
  // The same for any WeightType; quantized tables (dim a multiple of the block: 32, or 256 for
  // the k-quants) are dequantized per row.
  void embedding(const int32_t *ids, const void *table, WeightType ttype, float *out, int rows, int dim);
  // Paged KV cache: k_pages / v_pages are [num_pages][n_kv_heads][page_size][head_dim] of
  // types.k / types.v, each head's positions together in a page (q8_0: pages of kv_element.h's
  // KvQ8_0 layout); block_table[j] is the page holding positions j*page_size .. j*page_size
  // + page_size - 1 of this sequence. head_dim <= 256. Writes the f32 k / v rows ([rows][n_kv_heads][head_dim])
  // of positions pos0 .. pos0 + rows - 1.
  void kv_append(const float *k, const float *v, void *k_pages, void *v_pages, const int32_t *block_table, int pos0, int rows, int n_kv_heads,
                 int head_dim, int page_size, KvTypes types = {});
  // The same with row r at positions[r] (`rows` device ints, each below the block table's
  // reach): launches that do not change with the position, for a decode step captured once
  // (kdsl::LaunchGraph). Positions are not range-checked.
  void kv_append_at(const float *k, const float *v, void *k_pages, void *v_pages, const int32_t *block_table, const int32_t *positions, int rows,
                    int n_kv_heads, int head_dim, int page_size, KvTypes types = {});
  // Causal attention of q rows (positions pos0 .. pos0 + rows - 1) over cached positions
  // 0 .. pos0 + rows - 1 (row r sees positions <= pos0 + r; append the rows' own k / v first),
  // grouped-query (head h reads kv head h / (n_heads / n_kv_heads)), scores scaled by `scale`,
  // online softmax. q, out: [rows][n_heads][head_dim], head_dim <= 256. rows > 1 runs the
  // fused flash-attention kernel over blocks of query rows; rows == 1 the decode kernel, which
  // splits long contexts across programs (split-K) and merges their partial results with a
  // second small kernel (scratch owned by the Library); n_heads / n_kv_heads <= 16 there.
  // Any page_size works; multiples of 16 are fastest (each loop step stays in one page).
  void attention(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, float *out, int rows, int pos0,
                 int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types = {});
  // attention() with the first row's position read from memory (position[0], a device int
  // below max_context), so that the launches do not change with the position and a step
  // captured once as a kdsl::LaunchGraph (a decode step, a speculative check) replays at every
  // position. One row: the decode kernels, their split count following max_context (the splits
  // past the position attend to nothing). A position past max_context - 1 attends to the first
  // max_context positions there.
  void attention_at(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int32_t *position, int rows,
                    int max_context, float *out, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types = {});
  // Attention of the nodes of a token tree: rows <= 64 query rows in cache slots pos0 .. pos0 +
  // rows - 1 (their k / v appended there), parents before children; row r sees every slot
  // before pos0 and the slots of the rows set in ancestors[r] (device int64s, bit j: row j is
  // r or one of its ancestors; bit r must be set), so each node attends along its own branch.
  void attention_tree(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int64_t *ancestors,
                      float *out, int rows, int pos0, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale, KvTypes types = {});
  // The same with pos0 read from memory (position[0], a device int): launches that do not
  // change with the position, for a tree check captured once as a kdsl::LaunchGraph.
  void attention_tree_at(const float *q, const void *k_pages, const void *v_pages, const int32_t *block_table, const int64_t *ancestors,
                         const int32_t *position, float *out, int rows, int n_heads, int n_kv_heads, int head_dim, int page_size, float scale,
                         KvTypes types = {});
  // Moves KV rows between positions: moves[2m] -> moves[2m + 1] (device ints), applied in
  // order m = 0, 1, ... (a token tree's accepted branch, moved behind the text so far).
  void kv_move(void *k_pages, void *v_pages, const int32_t *block_table, const int32_t *moves, int n_moves, int n_kv_heads, int head_dim,
               int page_size, KvTypes types = {});
  // Changes whenever the Library's scratch memory moves (a buffer grown for a larger call) or
  // a table the kernels read is rewritten (RoPE's frequencies for another theta): launches
  // captured into a kdsl::LaunchGraph point there, so a graph captured before a change is
  // stale after it and must be captured again.
  uint64_t scratch_generation() const;
  // Row-wise softmax in place (any cols: rows longer than 8192 take a two-pass online kernel).
  void softmax(float *x, int rows, int cols);
  // The first index of the maximum of x[0..n) (NaN never wins).
  int32_t argmax(const float *x, int n);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kdsl::kernels
