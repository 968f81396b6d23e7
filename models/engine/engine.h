// engine.h - the transformer forward pass on kdsl kernels: batched prefill, paged KV cache, decode
#pragma once
#include <span>
#include <vector>

#include <kdsl/device.h>
#include <kdsl/launch_graph.h>

#include "kernels/launch_recorder.h"
#include "kernels/library.h"
#include "models/engine/matmul_observer.h"
#include "models/engine/model_weights.h"

namespace kdsl::models {

// Whether decode steps go through a kdsl::LaunchGraph (Engine::graph_step): Auto takes one
// where the Library dispatches for a GPU.
enum class DecodeGraph { Auto, On, Off };

struct EngineOptions {
  int context = 0;      // tokens of KV cache; 0: the model's context, or what a quarter of free memory holds
  // Positions per KV page. A page holds each head's positions as one run (kv_element.h), so
  // longer pages are longer streams for the decode attention: 256 against 16 took its launches
  // on the CPU from 22-23 to 19-20 us (f16) at a 130-token context (bench/RESULTS.md, the entry
  // on head-major KV pages). The cost is rounding the context up to whole pages.
  int page_size = 256;
  int max_batch = 512;  // prompt tokens per prefill chunk
  // Rows forward_rows() can return logits for: a speculative check runs the last token and
  // up to draft_max drafted ones (draft_max + 1). Their buffers are allocated here, once.
  int max_logit_rows = 1;
  // Token ids a sampler may pick: the tokenizer's size where it is smaller than the embedding
  // (padding rows, as llama.cpp allows); 0: every row. Logits of the ids past it are returned as
  // the lowest float, so no sampling rule picks a token the tokenizer cannot print.
  int sampled_vocab = 0;
  // The KV cache's key and value type: f32, f16, bf16 or q8_0, one for both (--cache-type-k /
  // -v): f16 halves the cache's memory and the bytes attention reads per position, q8_0 (head_dim
  // a multiple of 32) takes 34 bytes per 32 values.
  kernels::KvTypes kv_types;
  // Where the kernel launches are recorded (kernel_plan.h), null: nowhere. A recorder that
  // records instead of launching runs nothing: the logits are not computed, the KV cache is one
  // page (no kernel reads it) and, standing in for a GPU, the weights are not uploaded but
  // placed where an upload puts them (an aligned address nothing reads).
  kernels::LaunchRecorder *recorder = nullptr;
  // The most rows a quantized product on the CPU takes through integer dot products
  // (Library::set_integer_dot_rows; -1: the Library's default, 0: none), for comparing paths.
  int integer_dot_rows = -1;
  // The Library dispatches as a GPU's does (Library::set_gpu_forms), the engine's GPU path with
  // it: on the CPU, for the tests that check that path against the reference.
  bool gpu_forms = false;
  // Matrices the CPU's decode reads faster with their rows grouped are copied so at load
  // (Library::row_group); false leaves every matrix as stored, for comparing the two.
  bool row_groups = true;
  // A decode step on the CPU makes its norms, residual adds and SwiGLU in the launches of the
  // products after them (Engine::Fusion::BeforeProducts), and so does a prefill whose products'
  // weights are all block-quantized; false gives each its own launch, for comparing the two.
  bool fuse_steps = true;
  // A decode step (one token, no tree, nothing observing) runs as launches that read its token
  // and position from device memory, captured once as a kdsl::LaunchGraph (a CUDA graph on
  // NVIDIA) and replayed at every later step (--decode-graph); so does a speculative check of
  // n rows (forward_rows, forward_tree), with a graph per n.
  DecodeGraph decode_graph = DecodeGraph::Auto;
};

// Bytes of the KV cache one position takes over all layers (keys and values, as the cache
// types store them): what a decode step at context c reads besides the weights, c times over.
int64_t kv_cache_bytes_per_position(const ModelHParams &h, kernels::KvTypes kv);

// The weights as the kernels read them, in the device's memory: on the CPU the ModelWeights'
// own views (the mapped file, nothing copied); on a GPU views of copies uploaded once.
struct DeviceWeights {
  Weight token_embd, output_norm, output;
  std::vector<LayerWeights> layers;
  // The memory the views point into where it is not the model's: a GPU's uploads; on the CPU,
  // the matrices grouped by rows for its decode kernels (group_rows_for_cpu, engine.cpp).
  std::vector<Buffer<uint8_t>> uploads;
  int64_t uploaded_bytes = 0;
};

// One sequence on one device (the CPU or a GPU: the same steps, with activations, KV cache
// and weights in that device's memory; a GPU's decode takes q, k and v, and gate and up, as
// one product each, with the norms, residual adds and SwiGLU fused into the products: layer()).
// All buffers are allocated up front, so forward() allocates nothing; llama, qwen2 (QKV bias)
// and qwen3 (QK norm) share this code, as llama.cpp's graph builders share theirs.
class Engine {
 public:
  Engine(const ModelWeights &model, const Device &device, EngineOptions options = {});

  // Runs `tokens` at positions pos .. pos + n - 1 (a prefill chunk, or one decode token) and
  // returns the logits of the last one. Positions must continue the cached ones.
  std::span<const float> forward(std::span<const int> tokens, int pos);
  // The same, returning the logits of every one of the n tokens: n rows of vocab() floats,
  // row i the distribution of the token after tokens[i] (a speculative check of drafted
  // tokens). n <= max_logit_rows. A rejected draft needs no undo: the cache is addressed by
  // position, and the next call at a lower position overwrites its rows.
  std::span<const float> forward_rows(std::span<const int> tokens, int pos);
  // A token tree checked in one pass (SpecInfer, EAGLE-2): node i is tokens[i], following
  // node parents[i]; node 0 is the root (parents[0] = -1, the token at position pos, right
  // after the text so far), every other parent comes before its child. Node i runs at
  // position pos + depth(i) in cache slot pos + i and attends to the text and its own
  // ancestors only, so row i of the returned logits (one per node) is what the chain from
  // the root to node i would give. At most kMaxTreeNodes nodes, within max_logit_rows and
  // max_batch. Follow it with keep_branch.
  static constexpr int kMaxTreeNodes = 64;
  std::span<const float> forward_tree(std::span<const int> tokens, std::span<const int> parents, int pos);
  // After forward_tree at `pos`: the accepted branch, nodes[0] = 0 (the root) then each
  // node's child in order, moves its keys and values to positions pos .. pos + n - 1, where a
  // plain pass would have put them; the cache then continues at pos + n.
  void keep_branch(std::span<const int> nodes, int pos);

  int context() const { return context_; }
  int vocab() const { return vocab_; }
  int max_logit_rows() const { return options_.max_logit_rows; }
  int max_batch() const { return options_.max_batch; }
  const ModelWeights &model() const { return model_; }
  const Device &device() const { return device_; }
  // Bytes of weights copied to the device (0 on the CPU, which reads the model in place).
  int64_t uploaded_bytes() const { return weights_.uploaded_bytes; }
  // The weights as the kernels read them (on a GPU: where the upload placed them).
  const DeviceWeights &weights() const { return weights_; }
  kernels::Library &kernels() { return kernels_; }
  // From now on, every weight product's input is shown to `observer` (null: none) before the
  // product runs (an importance matrix's collection; matmul_observer.h). On a GPU each input
  // is copied back first, which waits for the launches before it.
  void observe_inputs(MatmulInputObserver *observer) { observer_ = observer; }

 private:
  // Runs the tokens and computes the logits of the last `logit_rows` of them; with `tree`,
  // as the nodes of a token tree (forward_tree) in one chunk.
  std::span<const float> run(std::span<const int> tokens, int pos, int logit_rows, bool tree = false);
  // Where a chunk's rows are: at pos .. pos + n - 1 (a prefill chunk, an eager decode step), as
  // a token tree's nodes (tree_positions_), or at the device ints at[0 .. n) (a step captured
  // as a graph: graph_step).
  struct RowPositions {
    int pos;
    bool tree = false;
    const int32_t *at = nullptr;
  };
  // Runs rows start .. start + n - 1 of a pass (token ids at `ids` in device memory) and
  // computes the logits of those from first_logit on.
  void run_chunk(const int32_t *ids, int n, int start, RowPositions where, int first_logit);
  // Where a pass's norms, residual adds and SwiGLU run (run_chunk chooses):
  //   Apart: launches of their own, xb_ holding the normed rows the products read;
  //   InProducts: a GPU's decode, inside the product kernels (Library::matvec_fused);
  //   BeforeProducts: a decode step elsewhere, or a prefill on the CPU over block-quantized
  //     weights, in the launch that makes each product's rows (Library::matmul_normed,
  //     matmul_swiglu: on the CPU, the activation quantizer's); a product's residual add waits
  //     in pending_residual_ for the norm after it.
  enum class Fusion { Apart, InProducts, BeforeProducts };
  void layer(int l, int n, RowPositions where, Fusion fusion);
  // A decode step or a speculative check (n rows, every row's logits; a chain, or a tree whose
  // node positions and ancestors forward_tree has copied) through the graph for n rows: the
  // tokens and positions copied to step_, the graph replayed, or captured first (after one
  // eager run of the same launches) where there is none or the Library's scratch moved since.
  void graph_step(std::span<const int> tokens, int pos, bool tree);
  // Copies the n tokens and their positions pos .. pos + n - 1 to step_ ([ids | positions], the
  // device memory a graph's launches read); returns step_'s address, where the ids are.
  const int32_t *put_step(std::span<const int> tokens, int pos);
  // The logits of the last `logit_rows` rows, on the host, past-the-tokenizer ids lowered.
  std::span<const float> host_logits(int logit_rows);
  // Shows the observer (if any) rows first_row .. first_row + n - 1 of `input`, cols floats each.
  void show_input(TensorName weight, int layer, const Buffer<float> &input, int first_row, int n, int cols);

  const ModelWeights &model_;
  Device device_;
  kernels::Library kernels_;
  EngineOptions options_;
  DeviceWeights weights_;
  int context_ = 0;
  int dim_ = 0, q_dim_ = 0, kv_dim_ = 0, ff_ = 0, vocab_ = 0;
  // Activations in device memory, sized for max_batch rows; logits for max_logit_rows.
  Buffer<float> x_, xb_, q_, k_, v_, att_, proj_, gate_, up_, logits_;
  Buffer<float> qkv_, gate_up_;  // one row's fused products (decode): q | k | v, gate | up
  Buffer<int32_t> ids_;
  std::vector<int32_t> ids_host_;
  std::vector<float> logits_host_;  // GPU only: the logits, copied back
  // KV cache: per layer, pages of [n_kv_heads][page_size][head_dim]; one block table.
  std::vector<Buffer<uint8_t>> k_pages_, v_pages_;  // of options_.kv_types
  Buffer<int32_t> block_table_;
  // A token tree's node positions and ancestor sets (forward_tree), the branch moves
  // (keep_branch): device copies of host arrays, allocated once.
  Buffer<int32_t> tree_positions_, branch_moves_;
  Buffer<int64_t> tree_ancestors_;
  std::vector<int32_t> tree_positions_host_, branch_moves_host_;
  std::vector<int64_t> tree_ancestors_host_;
  MatmulInputObserver *observer_ = nullptr;
  std::vector<float> observed_host_;  // GPU only: an input copied back for the observer
  // The step graphs (graph_step): whether decode and checks take them, a step's ids and
  // positions in device memory (and their host staging), and per row count the graph with the
  // Library's scratch generation when it was captured.
  bool graph_decode_ = false;
  Buffer<int32_t> step_;
  std::vector<int32_t> step_host_;
  struct StepGraph {
    kdsl::LaunchGraph graph;
    uint64_t generation = 0;
  };
  std::vector<StepGraph> step_graphs_, tree_graphs_;  // by row count: chains, trees
  // Whether every product's weights have a kernel here that fuses the norm before it and the
  // residual add after it (Library::fuses_norm_and_add: on a GPU), so decode takes them.
  bool fuses_norms_ = false;
  // Whether a pass of several rows makes its norms, residual adds and SwiGLU in the products'
  // activation quantizers (Fusion::BeforeProducts; quantizers_make_rows in engine.cpp).
  bool rows_made_in_quantizers_ = false;
  // The element types in which the unfused steps' producers write the rows the products read
  // (Library::product_input_type: on a GPU, the f16 / bf16 of the weights that follow, which the
  // tensor cores take as stored; F32 elsewhere): per layer, the attention norm's (q, k, v), the
  // FFN norm's (gate, up) and SwiGLU's (down); after the last layer, the final norm's (output).
  // Rows of several products take F32 unless all of them read the same type.
  struct ProductInputs {
    DType attn = DType::F32, ffn = DType::F32, down = DType::F32;
  };
  std::vector<ProductInputs> product_inputs_;
  DType output_input_ = DType::F32;
  // A planned type, or F32 while an observer is set (it is shown the f32 rows).
  DType input_type(DType planned) const { return observer_ ? DType::F32 : planned; }
  // SwiGLU's rows where the down product reads them in 16 bits (in gate_ where f32): a narrower
  // type cannot be written over its own f32 inputs in place.
  Buffer<uint8_t> down_in_;
  // Fusion::BeforeProducts: the rows (proj_) still to be added to x_, by the next norm; null
  // where x_ is whole.
  const float *pending_residual_ = nullptr;
};

}  // namespace kdsl::models
