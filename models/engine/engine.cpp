// engine.cpp - one transformer forward pass as a sequence of kdsl kernel launches
#include "models/engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include <kdsl/error.h>

#include "models/common/warning.h"

namespace kdsl::models {
namespace {

using AfterProduct = kernels::Library::AfterProduct;

// The model's context, capped so the KV cache takes at most a quarter of the device's free
// memory (measured after the weights are placed there).
int default_context(const ModelHParams &h, const Device &device, kernels::KvTypes kv) {
  int64_t wanted = h.context_length > 0 ? h.context_length : 2048;
  int64_t per_position = kv_cache_bytes_per_position(h, kv);
  int64_t free_bytes = int64_t(device.free_memory());
  if (free_bytes > 0 && per_position > 0) wanted = std::min(wanted, std::max<int64_t>(256, free_bytes / 4 / per_position));
  return int(std::min<int64_t>(wanted, 1 << 20));
}

// Where a recording that stands in for a GPU puts every weight: an address aligned as a fresh
// upload's (cuMemAlloc's 256 bytes), so its launches classify as a GPU's do; nothing reads it.
// A group placed together (below) takes offsets from it, never dereferenced.
alignas(256) const uint8_t kUploadStandIn[256] = {};

bool records_only(const EngineOptions &o) { return o.recorder && !o.recorder->launches(); }

// Whether every product's weights (each layer's seven matrices and the output's) pass `test`.
template <class Test>
bool every_product_weight(const DeviceWeights &w, Test &&test) {
  if (!test(w.output)) return false;
  for (const LayerWeights &l : w.layers)
    for (const Weight *m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      if (!test(*m)) return false;
  return true;
}

// Whether a pass of several rows on this device makes its norms, residual adds and SwiGLU in
// the products' activation quantizers (Library::matmul_normed, matmul_swiglu): on the CPU
// (not dispatching as a GPU), with integer dots on, where every product's weights are
// block-quantized. Elsewhere each of q, k and v (gate and up) would make its rows apart, one
// norm a product where Apart takes one a layer. (f8_e4m3 has no integer dots and takes that
// course: correct, one pass slower.)
bool quantizers_make_rows(const DeviceWeights &w, const Device &device, const EngineOptions &o) {
  if (device.kind() != Device::Kind::Cpu || o.gpu_forms || o.integer_dot_rows == 0) return false;
  return every_product_weight(w, [](const Weight &m) { return kernels::is_quantized(m.type); });
}

// Whether b lies right after a in memory, of the same type and row grouping, so that the two read as one
// weight: a matrix of a's rows then b's (same columns), or one vector (biases).
bool back_to_back(const Weight &a, const Weight &b) {
  const bool stackable = a.cols == b.cols || (a.rows == 1 && b.rows == 1);
  return a && b && a.type == b.type && a.row_group == b.row_group && stackable && static_cast<const uint8_t *>(a.data) + a.bytes() == b.data;
}

// The weights a GPU upload places back to back, so that decode multiplies one vector by all of
// them in one launch (Engine::layer): q, k and v (and their biases); gate and up.
std::vector<std::vector<Weight *>> placed_together(LayerWeights &l) {
  std::vector<std::vector<Weight *>> groups = {{&l.wq, &l.wk, &l.wv}, {&l.w_gate, &l.w_up}};
  if (l.bq) groups.push_back({&l.bq, &l.bk, &l.bv});
  return groups;
}

// Each weight's offset in one allocation holding `group` back to back, or nothing where they
// cannot share one: a weight missing or of another type, or one that would not start
// 256-byte aligned, as its own upload would.
std::optional<std::vector<int64_t>> stacked_offsets(const std::vector<Weight *> &group) {
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (const Weight *w : group) {
    if (!*w || w->type != group.front()->type || total % 256 != 0) return std::nullopt;
    offsets.push_back(total);
    total += w->bytes();
  }
  return offsets;
}

// On the CPU, each matrix whose format the Library's decode reads faster with its rows grouped
// (Library::row_group: the k-quants) is copied so, once, and viewed there; the model's own
// bytes (a mapped file) stay the matrix's `stored` view, which a prefill's products read
// (Library::matmul). Matrices that lie back to back (q, k and v; gate and up), which
// decode multiplies by a row as one, stay so, in one allocation. A table the embedding reads
// (the output tied to token_embd) stays as stored. A recording (kdsl-prewarm) marks the
// matrices grouped without copying them, as its launches read no weights.
void group_rows_for_cpu(DeviceWeights &d, const Device &device, const kernels::Library &lib, bool copy) {
  auto row_group = [&](const Weight &w) { return w && w.rows > 1 ? lib.row_group(w.type, w.rows) : 1; };
  auto group = [&](const std::vector<Weight *> &run) {
    int64_t total = 0;
    for (const Weight *w : run) total += w->bytes();
    uint8_t *at = copy ? d.uploads.emplace_back(device, size_t(total)).data() : nullptr;
    for (Weight *w : run) {
      w->row_group = row_group(*w);
      if (copy) lib.group_rows(w->data, w->type, w->rows, w->cols, at), w->stored = w->data, w->data = at, at += w->bytes();
    }
  };
  auto grouped = [&](const Weight *w) { return row_group(*w) > 1; };
  if (grouped(&d.output) && d.output.data != d.token_embd.data) group({&d.output});
  for (LayerWeights &l : d.layers) {
    std::vector<Weight *> done;
    for (const std::vector<Weight *> &run : placed_together(l)) {
      const bool together = std::all_of(run.begin(), run.end(), grouped) &&
                            std::adjacent_find(run.begin(), run.end(), [](const Weight *a, const Weight *b) { return !back_to_back(*a, *b); }) == run.end();
      if (!together) continue;
      group(run);
      done.insert(done.end(), run.begin(), run.end());
    }
    for (Weight *w : l.all())
      if (grouped(w) && std::find(done.begin(), done.end(), w) == done.end()) group({w});
  }
}

// The model's views on the CPU; on a GPU, each tensor uploaded once and viewed there.
DeviceWeights place_weights(const ModelWeights &model, const Device &device, const kernels::Library &lib, const EngineOptions &options) {
  DeviceWeights d;
  d.token_embd = model.token_embd, d.output_norm = model.output_norm, d.output = model.output;
  d.layers = model.layers;
  if (records_only(options) && options.recorder->stand_in().gpu) {
    const auto stand_in = reinterpret_cast<uintptr_t>(kUploadStandIn);
    for (Weight *w : {&d.token_embd, &d.output_norm, &d.output})
      if (*w) w->data = kUploadStandIn;
    for (LayerWeights &l : d.layers) {
      for (Weight *w : l.all())
        if (*w) w->data = kUploadStandIn;
      for (const std::vector<Weight *> &group : placed_together(l))
        if (auto offsets = stacked_offsets(group))
          for (size_t i = 0; i < group.size(); ++i) group[i]->data = reinterpret_cast<const void *>(stand_in + uintptr_t((*offsets)[i]));
    }
    return d;
  }
  if (device.memory_space() == MemorySpace::Host) {
    group_rows_for_cpu(d, device, lib, !records_only(options));
    return d;
  }
  // A tensor shared by two views (tied embeddings) is uploaded once.
  std::vector<std::pair<const void *, const void *>> uploaded;  // host data, device data
  auto place = [&](Weight &w) {
    if (!w) return;
    for (auto &[host, dev] : uploaded)
      if (host == w.data) return void(w.data = dev);
    const auto *bytes = static_cast<const uint8_t *>(w.data);
    Buffer<uint8_t> &b = d.uploads.emplace_back(device, std::span<const uint8_t>(bytes, size_t(w.bytes())));
    uploaded.emplace_back(w.data, b.data());
    d.uploaded_bytes += w.bytes();
    w.data = b.data();
  };
  place(d.token_embd), place(d.output_norm), place(d.output);
  for (LayerWeights &l : d.layers) {
    std::vector<const Weight *> stacked;
    for (const std::vector<Weight *> &group : placed_together(l)) {
      std::optional<std::vector<int64_t>> offsets = stacked_offsets(group);
      if (!offsets) continue;  // placed one by one below
      const int64_t total = offsets->back() + group.back()->bytes();
      Buffer<uint8_t> &b = d.uploads.emplace_back(device, size_t(total));
      for (size_t i = 0; i < group.size(); ++i) {
        uint8_t *at = b.data() + (*offsets)[i];
        kdsl::detail::device_copy_from_host(device, at, group[i]->data, size_t(group[i]->bytes()));
        group[i]->data = at;
        stacked.push_back(group[i]);
      }
      d.uploaded_bytes += total;
    }
    // The rest, and the groups that could not share an allocation.
    for (Weight *w : l.all())
      if (std::find(stacked.begin(), stacked.end(), w) == stacked.end()) place(*w);
  }
  return d;
}


// The KV cache's bytes for `context` tokens, whole pages, both K and V, every layer; as int64,
// since a context read from the command line may be anything up to INT_MAX.
int64_t kv_cache_bytes(const ModelHParams &h, int64_t context, int page_size, kernels::KvTypes kv) {
  int64_t pages = (context + page_size - 1) / page_size;
  return pages * page_size * kv_cache_bytes_per_position(h, kv);
}

// A context given by the user is what they get, or a clear refusal: never an overflow, never an
// allocation that cannot succeed.
// A recording's cache is not allocated (`allocated` false): only the range is checked.
void check_context(const ModelHParams &h, const Device &device, int context, int page_size, kernels::KvTypes kv, bool allocated) {
  constexpr int kMaxContext = 1 << 24;
  if (context < 0 || context > kMaxContext)
    throw Error(fmt::format("context of {} tokens: expected 1 to {} (--ctx)", context, kMaxContext));
  if (!allocated) return;
  int64_t bytes = kv_cache_bytes(h, context, page_size, kv);
  int64_t free_bytes = int64_t(device.free_memory());
  if (free_bytes > 0 && bytes > free_bytes) {
    int64_t fits = free_bytes / std::max<int64_t>(1, kv_cache_bytes(h, page_size, page_size, kv)) * page_size;
    throw Error(fmt::format("a context of {} tokens needs a {:.2f} GB KV cache, more than the {:.2f} GB of free memory on {}: "
                            "lower --ctx (about {} tokens fit)",
                            context, double(bytes) / 1e9, double(free_bytes) / 1e9, device.name(), fits));
  }
}

// The cache types the kernels hold (kernels::kKvCacheTypes), one type for keys and values,
// and a head_dim of whole blocks of the type (q8_0: 32).
void check_kv_types(const ModelHParams &h, kernels::KvTypes kv) {
  auto name = [](kernels::WeightType t) { return kernels::weight_type_info(t).name; };
  for (kernels::WeightType t : {kv.k, kv.v})
    if (std::find(std::begin(kernels::kKvCacheTypes), std::end(kernels::kKvCacheTypes), t) == std::end(kernels::kKvCacheTypes))
      throw Error(fmt::format("KV cache type {}: expected f32, f16, bf16 or q8_0 (--cache-type-k, --cache-type-v)", name(t)));
  if (kv.k != kv.v)
    throw Error(fmt::format("KV cache types: keys {} and values {}; expected one type for both (--cache-type-k, --cache-type-v)", name(kv.k),
                            name(kv.v)));
  const int block = kernels::weight_type_info(kv.k).block_elements;
  if (h.head_dim % block != 0)
    throw Error(fmt::format("--cache-type-k {} --cache-type-v {}: the model's head_dim is {}; a {} KV cache needs a multiple of {} "
                            "(its blocks of {} values lie along head_dim): use f32, f16 or bf16",
                            name(kv.k), name(kv.v), h.head_dim, name(kv.k), block, block));
}

}  // namespace

// A position's row of n_head_kv * head_dim values of each type in every layer (q8_0: 34 bytes
// per 32 values, its quants and scale).
int64_t kv_cache_bytes_per_position(const ModelHParams &h, kernels::KvTypes kv) {
  const int64_t row = h.n_head_kv * h.head_dim;
  return h.n_layer * (kernels::weight_bytes(kv.k, row) + kernels::weight_bytes(kv.v, row));
}

Engine::Engine(const ModelWeights &model, const Device &device, EngineOptions options)
    : model_(model), device_(device), kernels_(device, options.recorder), options_(options) {
  const ModelHParams &h = model.hparams;
  // The Library's settings first: they decide how the weights are placed (row groups).
  if (options.integer_dot_rows >= 0) kernels_.set_integer_dot_rows(options.integer_dot_rows);
  kernels_.set_gpu_forms(options.gpu_forms);
  kernels_.set_row_groups(options.row_groups);
  weights_ = place_weights(model, device, kernels_, options);
  fuses_norms_ = every_product_weight(weights_, [&](const Weight &w) { return kernels_.fuses_norm_and_add(w.type); });
  rows_made_in_quantizers_ = options.fuse_steps && quantizers_make_rows(weights_, device, options);
  if (options.page_size < 1 || options.page_size > 4096) throw Error(fmt::format("KV page size: expected 1 to 4096, got {}", options.page_size));
  if (options.max_logit_rows < 1 || options.max_logit_rows > 1024)
    throw Error(fmt::format("rows of logits per forward pass: expected 1 to 1024, got {} (--draft-max is at most 1023)", options.max_logit_rows));
  check_kv_types(h, options.kv_types);
  if (options.context != 0) check_context(h, device, options.context, options.page_size, options.kv_types, !records_only(options));
  context_ = options.context > 0 ? options.context : default_context(h, device, options.kv_types);
  dim_ = int(h.n_embd);
  q_dim_ = int(h.n_head * h.head_dim);
  kv_dim_ = int(h.n_head_kv * h.head_dim);
  ff_ = int(h.n_ff);
  vocab_ = int(h.n_vocab);
  size_t b = size_t(std::max(1, options.max_batch));
  x_ = Buffer<float>(device, b * size_t(dim_));
  xb_ = Buffer<float>(device, b * size_t(std::max(dim_, q_dim_)));
  q_ = Buffer<float>(device, b * size_t(q_dim_));
  k_ = Buffer<float>(device, b * size_t(kv_dim_));
  v_ = Buffer<float>(device, b * size_t(kv_dim_));
  att_ = Buffer<float>(device, b * size_t(q_dim_));
  proj_ = Buffer<float>(device, b * size_t(dim_));
  gate_ = Buffer<float>(device, b * size_t(ff_));
  up_ = Buffer<float>(device, b * size_t(ff_));
  qkv_ = Buffer<float>(device, size_t(q_dim_ + 2 * kv_dim_));
  gate_up_ = Buffer<float>(device, 2 * size_t(ff_));
  auto common_input = [&](std::initializer_list<const Weight *> products) {
    const DType type = kernels_.product_input_type(products.begin()[0]->type);
    for (const Weight *w : products)
      if (kernels_.product_input_type(w->type) != type) return DType::F32;
    return type;
  };
  for (const LayerWeights &l : weights_.layers) {
    product_inputs_.push_back({common_input({&l.wq, &l.wk, &l.wv}), common_input({&l.w_gate, &l.w_up}), common_input({&l.w_down})});
    if (product_inputs_.back().down != DType::F32 && !down_in_.data()) down_in_ = Buffer<uint8_t>(device, b * size_t(ff_) * sizeof(uint16_t));
  }
  output_input_ = common_input({&weights_.output});
  logits_ = Buffer<float>(device, size_t(options.max_logit_rows) * size_t(vocab_));
  if (logits_.on_device()) logits_host_.resize(logits_.size());
  ids_ = Buffer<int32_t>(device, b);
  ids_host_.resize(b);
  int pages = int((int64_t(context_) + options.page_size - 1) / options.page_size);
  const int allocated_pages = records_only(options) ? 1 : pages;  // nothing reads a recording's cache
  const int64_t page_values = int64_t(options.page_size) * kv_dim_;
  for (size_t l = 0; l < model.layers.size(); ++l) {
    k_pages_.emplace_back(device, size_t(allocated_pages) * size_t(kernels::weight_bytes(options.kv_types.k, page_values)));
    v_pages_.emplace_back(device, size_t(allocated_pages) * size_t(kernels::weight_bytes(options.kv_types.v, page_values)));
  }
  // One sequence owns every page, in order; the kernels read through the table all the same.
  std::vector<int32_t> table(static_cast<size_t>(pages));
  for (int p = 0; p < pages; ++p) table[size_t(p)] = p;
  block_table_ = Buffer<int32_t>(device, std::span<const int32_t>(table));
  tree_positions_ = Buffer<int32_t>(device, kMaxTreeNodes);
  tree_ancestors_ = Buffer<int64_t>(device, kMaxTreeNodes);
  branch_moves_ = Buffer<int32_t>(device, 2 * kMaxTreeNodes);
  tree_positions_host_.resize(kMaxTreeNodes);
  tree_ancestors_host_.resize(kMaxTreeNodes);
  branch_moves_host_.resize(2 * kMaxTreeNodes);
  step_ = Buffer<int32_t>(device, 2 * size_t(options.max_logit_rows));
  step_host_.resize(step_.size());
  step_graphs_.resize(size_t(options.max_logit_rows) + 1);
  tree_graphs_.resize(size_t(std::min(options.max_logit_rows, kMaxTreeNodes)) + 1);
  graph_decode_ = options.decode_graph == DecodeGraph::On || (options.decode_graph == DecodeGraph::Auto && kernels_.dispatches_for_gpu());
}

std::span<const float> Engine::forward(std::span<const int> tokens, int pos) { return run(tokens, pos, 1); }

std::span<const float> Engine::forward_rows(std::span<const int> tokens, int pos) {
  if (int64_t(tokens.size()) > options_.max_logit_rows)
    throw Error(fmt::format("forward_rows: {} tokens, but the engine keeps logits for at most {} rows (EngineOptions::max_logit_rows)", tokens.size(),
                            options_.max_logit_rows));
  return run(tokens, pos, int(tokens.size()));
}

std::span<const float> Engine::forward_tree(std::span<const int> tokens, std::span<const int> parents, int pos) {
  const int n = int(tokens.size());
  if (n == 0 || parents.size() != tokens.size() || n > kMaxTreeNodes || n > options_.max_logit_rows || n > options_.max_batch)
    throw Error(fmt::format("forward_tree: {} nodes and {} parents: expected as many of each, 1 to {} (and at most max_logit_rows {}, max_batch {})",
                            n, parents.size(), kMaxTreeNodes, options_.max_logit_rows, options_.max_batch));
  if (parents[0] != -1) throw Error(fmt::format("forward_tree: node 0 is the root, its parent must be -1 (got {})", parents[0]));
  tree_positions_host_[0] = pos, tree_ancestors_host_[0] = 1;
  for (int i = 1; i < n; ++i) {
    int p = parents[size_t(i)];
    if (p < 0 || p >= i) throw Error(fmt::format("forward_tree: node {} has parent {}; a parent must be an earlier node", i, p));
    tree_positions_host_[size_t(i)] = tree_positions_host_[size_t(p)] + 1;
    tree_ancestors_host_[size_t(i)] = tree_ancestors_host_[size_t(p)] | (int64_t(1) << i);
  }
  // Slots run to pos + n - 1 (positions stop short of that unless the tree is a chain).
  if (int64_t(pos) + n > context_)
    throw Error(fmt::format("forward_tree: slots {}..{} do not fit the context of {} tokens", pos, int64_t(pos) + n - 1, context_));
  tree_positions_.copy_from_host(std::span<const int32_t>(tree_positions_host_.data(), size_t(n)));
  tree_ancestors_.copy_from_host(std::span<const int64_t>(tree_ancestors_host_.data(), size_t(n)));
  return run(tokens, pos, n, true);
}

void Engine::keep_branch(std::span<const int> nodes, int pos) {
  const int n = int(nodes.size());
  if (n == 0 || n > kMaxTreeNodes || nodes[0] != 0)
    throw Error(fmt::format("keep_branch: a branch starts at the root (node 0) and has 1 to {} nodes (got {} nodes)", kMaxTreeNodes, n));
  int moves = 0;
  for (int j = 1; j < n; ++j) {
    if (nodes[size_t(j)] <= nodes[size_t(j - 1)] || nodes[size_t(j)] >= kMaxTreeNodes)
      throw Error(fmt::format("keep_branch: node {} follows node {}; a branch goes from parents to later children", nodes[size_t(j)], nodes[size_t(j - 1)]));
    // Node k sits in slot pos + k >= pos + j: moving in branch order never overwrites a slot a
    // later move reads (a later node's slot is past every earlier destination).
    if (nodes[size_t(j)] != j) branch_moves_host_[size_t(2 * moves)] = pos + nodes[size_t(j)], branch_moves_host_[size_t(2 * moves + 1)] = pos + j, ++moves;
  }
  if (moves == 0) return;  // a chain's branch is already in place
  branch_moves_.copy_from_host(std::span<const int32_t>(branch_moves_host_.data(), size_t(2 * moves)));
  for (size_t l = 0; l < k_pages_.size(); ++l)
    kernels_.kv_move(k_pages_[l].data(), v_pages_[l].data(), block_table_.data(), branch_moves_.data(), moves, int(model_.hparams.n_head_kv),
                     int(model_.hparams.head_dim), options_.page_size, options_.kv_types);
}

std::span<const float> Engine::run(std::span<const int> tokens, int pos, int logit_rows, bool tree) {
  int total = int(tokens.size());
  if (total == 0) throw Error("forward needs at least one token");
  if (pos < 0 || int64_t(pos) + total > context_)
    throw Error(fmt::format("positions {}..{} do not fit the context of {} tokens (raise --ctx)", pos, int64_t(pos) + total - 1, context_));
  for (int id : tokens)
    if (id < 0 || id >= vocab_) throw Error(fmt::format("token id {} is outside the vocabulary of {}", id, vocab_));
  // A decode step, or a speculative check of a chain or a tree (every row's logits), through
  // its graph.
  if (graph_decode_ && !observer_ && logit_rows == total && total <= options_.max_batch) {
    graph_step(tokens, pos, tree);
    return host_logits(logit_rows);
  }
  const int first_logit = total - logit_rows;  // the rows whose logits are wanted: first_logit .. total - 1
  for (int start = 0; start < total; start += options_.max_batch) {
    int n = std::min(options_.max_batch, total - start);
    if (graph_decode_ && n == 1 && !tree) {
      // A one-row chunk (a prompt's last) launches what a decode step does, so that the
      // engine has one decode attention form, the one kernel plans list.
      const int32_t *ids = put_step(tokens.subspan(size_t(start), 1), pos + start);
      run_chunk(ids, 1, start, RowPositions{pos + start, false, ids + 1}, first_logit);
      continue;
    }
    std::copy_n(tokens.begin() + start, n, ids_host_.begin());
    ids_.copy_from_host(std::span<const int32_t>(ids_host_.data(), size_t(n)));
    run_chunk(ids_.data(), n, start, RowPositions{pos + start, tree}, first_logit);
  }
  return host_logits(logit_rows);
}

void Engine::run_chunk(const int32_t *ids, int n, int start, RowPositions where, int first_logit) {
  const ModelHParams &h = model_.hparams;
  kernels_.embedding(ids, weights_.token_embd.data, weights_.token_embd.type, x_.data(), n, dim_);
  // One row takes the norms, residual adds and SwiGLU with the products: on a GPU inside them,
  // elsewhere in the launches that make their rows; so do more rows on the CPU where every
  // product's weights are block-quantized (their quantizers make the rows). An observer is
  // shown the rows apart.
  Fusion fusion = Fusion::Apart;
  if (n == 1 && !observer_) fusion = fuses_norms_ ? Fusion::InProducts : options_.fuse_steps ? Fusion::BeforeProducts : Fusion::Apart;
  else if (!observer_ && rows_made_in_quantizers_) fusion = Fusion::BeforeProducts;
  const bool fused = fusion == Fusion::InProducts;
  pending_residual_ = nullptr;
  if (fusion == Fusion::Apart)
    kernels_.rmsnorm(x_.data(), weights_.layers[0].attn_norm.f32(), xb_.data(), input_type(product_inputs_[0].attn), n, dim_, h.rms_eps);
  for (int l = 0; l < int(weights_.layers.size()); ++l) layer(l, n, where, fusion);
  // After the last layer xb holds the final norm of every row (InProducts: x, not yet normed;
  // BeforeProducts: x, with pending_residual_ still to add); only the wanted rows' logits are
  // computed (a prompt's prefill wants its last row alone).
  int from = std::max(start, first_logit);
  if (from >= start + n) return;
  float *out = logits_.data() + size_t(from - first_logit) * size_t(vocab_);
  const Weight &o = weights_.output;
  if (fused) {
    kernels_.matvec_fused(x_.data(), weights_.output_norm.f32(), h.rms_eps, o.data, o.type, nullptr, out, AfterProduct::Store, vocab_, dim_);
  } else if (fusion == Fusion::BeforeProducts) {
    // The rows wanted alone: x's others are not read again this pass.
    const size_t skipped = size_t(from - start) * size_t(dim_);
    kernels_.matmul_normed(x_.data() + skipped, pending_residual_ ? pending_residual_ + skipped : nullptr, weights_.output_norm.f32(), h.rms_eps, o.data,
                           o.type, nullptr, out, start + n - from, vocab_, dim_, o.row_group, o.stored);
  } else {
    const DType type = input_type(output_input_);
    const void *rows = reinterpret_cast<const uint8_t *>(xb_.data()) + size_t(from - start) * size_t(dim_) * dtype_bytes(type);
    show_input(TensorName::Output, -1, xb_, from - start, start + n - from, dim_);
    kernels_.matmul(rows, type, o.data, o.type, nullptr, out, start + n - from, vocab_, dim_, o.row_group, o.stored);
  }
}

const int32_t *Engine::put_step(std::span<const int> tokens, int pos) {
  const size_t n = tokens.size();
  int32_t *host = step_host_.data();
  for (size_t i = 0; i < n; ++i) host[i] = tokens[i], host[n + i] = pos + int32_t(i);
  step_.copy_from_host(std::span<const int32_t>(host, 2 * n));
  return step_.data();
}

void Engine::graph_step(std::span<const int> tokens, int pos, bool tree) {
  const int n = int(tokens.size());
  const int32_t *ids = put_step(tokens, pos);  // then the rows' slots, pos .. pos + n - 1
  auto launches = [&] { run_chunk(ids, n, 0, RowPositions{pos, tree, ids + n}, 0); };
  StepGraph &g = (tree ? tree_graphs_ : step_graphs_)[size_t(n)];
  if (g.graph && g.generation == kernels_.scratch_generation()) return g.graph.replay();
  // Run once as it will be replayed: this compiles the step's kernels and sizes the Library's
  // scratch, neither of which a capture can do on a GPU. A recorder sees every step run so.
  launches();
  if (options_.recorder) return;
  try {
    g.graph = kdsl::LaunchGraph::capture(device_, launches);
  } catch (const Error &e) {
    // The step ran; a device that refuses the capture (an old driver) decodes without graphs,
    // said once, rather than stopping the generation (--decode-graph off does so from the start).
    graph_decode_ = false;
    report_warning(fmt::format("decoding without graphs: {}", e.what()));
    return;
  }
  g.generation = kernels_.scratch_generation();
}

std::span<const float> Engine::host_logits(int logit_rows) {
  size_t count = size_t(logit_rows) * size_t(vocab_);
  float *host = logits_.data();
  if (logits_.on_device()) {
    logits_.copy_to_host(std::span<float>(logits_host_.data(), count));  // waits for the launches
    host = logits_host_.data();
  }
  // The lowest float, not -inf: it is finite (the non-finite check passes) and its probability
  // underflows to 0 after any temperature.
  if (options_.sampled_vocab > 0 && options_.sampled_vocab < vocab_)
    for (int r = 0; r < logit_rows; ++r)
      std::fill(host + size_t(r) * size_t(vocab_) + size_t(options_.sampled_vocab), host + size_t(r + 1) * size_t(vocab_),
                std::numeric_limits<float>::lowest());
  return {host, count};
}

void Engine::show_input(TensorName weight, int layer, const Buffer<float> &input, int first_row, int n, int cols) {
  if (!observer_ || n <= 0 || records_only(options_)) return;
  const size_t offset = size_t(first_row) * size_t(cols), count = size_t(n) * size_t(cols);
  const float *rows = input.data() + offset;
  if (input.on_device()) {
    observed_host_.resize(offset + count);
    input.copy_to_host(std::span<float>(observed_host_));  // waits for the launches
    rows = observed_host_.data() + offset;
  }
  observer_->observe(weight, layer, std::span<const float>(rows, count), cols);
}

// Apart, expects xb = attn_norm(x) for this layer and leaves xb = the next layer's
// attn_norm(x) (or the final output norm). InProducts (one row on a GPU) reads and updates x
// alone: each norm is part of the product after it, each residual add part of the product
// before it, and xb is not written. BeforeProducts (run_chunk says where) expects x plus
// pending_residual_ and leaves the same: each norm, with the residual add before it, and
// SwiGLU are made in the launch of the product after them.
void Engine::layer(int l, int n, RowPositions where, Fusion fusion) {
  const bool fused = fusion == Fusion::InProducts, before = fusion == Fusion::BeforeProducts;
  const int pos = where.pos;
  const ModelHParams &h = model_.hparams;
  const LayerWeights &w = weights_.layers[size_t(l)];
  int hd = int(h.head_dim), heads = int(h.n_head), kv_heads = int(h.n_head_kv);
  auto bias = [](const Weight &b) { return b ? b.f32() : nullptr; };
  // The types in which this layer's producers write the products' rows; decode's fused
  // products read f32 x and write f32 (SwiGLU inside the gate and up product).
  const ProductInputs &inputs = product_inputs_[size_t(l)];
  const DType attn_in = input_type(inputs.attn), ffn_in = input_type(inputs.ffn), down_in = fused || before ? DType::F32 : input_type(inputs.down);
  const bool last = l + 1 == int(weights_.layers.size());
  const DType next_in = input_type(last ? output_input_ : product_inputs_[size_t(l + 1)].attn);
  // A product of the normed residual stream: of xb (rows of xb_type), or of x with `norm` fused in.
  auto product_in = [&](const Weight &wt, const Weight &b, const Weight &norm, float *out, int N, DType xb_type) {
    if (fused) return kernels_.matvec_fused(x_.data(), norm.f32(), h.rms_eps, wt.data, wt.type, bias(b), out, AfterProduct::Store, N, dim_);
    if (!before) return kernels_.matmul(xb_.data(), xb_type, wt.data, wt.type, bias(b), out, n, N, dim_, wt.row_group, wt.stored);
    kernels_.matmul_normed(x_.data(), pending_residual_, norm.f32(), h.rms_eps, wt.data, wt.type, bias(b), out, n, N, dim_, wt.row_group, wt.stored);
    pending_residual_ = nullptr;  // added to x now
  };
  // The first of weights that lie back to back, read as one: the rows as the file stores them
  // need not be back to back there, so the view has none.
  auto stacked = [](Weight first) {
    first.stored = nullptr;
    return first;
  };
  // A product of `in` (rows of in_type) added to the residual stream, then normed by
  // `next_norm` into xb as rows of xb_type (unfused).
  auto product_out = [&](const void *in, DType in_type, const Weight &wt, int K, const float *next_norm, DType xb_type) {
    if (fused)
      return kernels_.matvec_fused(static_cast<const float *>(in), nullptr, 0.0f, wt.data, wt.type, nullptr, x_.data(), AfterProduct::AddToOut, dim_, K);
    kernels_.matmul(in, in_type, wt.data, wt.type, nullptr, proj_.data(), n, dim_, K, wt.row_group, wt.stored);
    if (before) pending_residual_ = proj_.data();  // the next norm adds it
    else kernels_.add_rmsnorm(x_.data(), proj_.data(), next_norm, xb_.data(), xb_type, n, dim_, h.rms_eps);
  };

  // Decode multiplies one row by q, k and v (and by gate and up) in one product where their
  // weights lie back to back (on a GPU always: place_weights puts them so): fewer launches,
  // and the small k and v products no longer leave most of a GPU idle. The rows of a larger
  // batch stay in separate outputs, as the kernels after the products read them.
  for (TensorName t : {TensorName::AttnQ, TensorName::AttnK, TensorName::AttnV}) show_input(t, l, xb_, 0, n, dim_);
  float *q = q_.data(), *k = k_.data(), *v = v_.data();
  const bool qkv_biases = !w.bq && !w.bk && !w.bv ? true : back_to_back(w.bq, w.bk) && back_to_back(w.bk, w.bv);
  if (n == 1 && back_to_back(w.wq, w.wk) && back_to_back(w.wk, w.wv) && qkv_biases) {
    q = qkv_.data(), k = q + q_dim_, v = k + kv_dim_;
    product_in(stacked(w.wq), w.bq, w.attn_norm, q, q_dim_ + 2 * kv_dim_, attn_in);
  } else {
    product_in(w.wq, w.bq, w.attn_norm, q, q_dim_, attn_in);
    product_in(w.wk, w.bk, w.attn_norm, k, kv_dim_, attn_in);
    product_in(w.wv, w.bv, w.attn_norm, v, kv_dim_, attn_in);
  }
  if (w.q_norm) kernels_.rmsnorm(q, w.q_norm.f32(), q, n * heads, hd, h.rms_eps);
  if (w.k_norm) kernels_.rmsnorm(k, w.k_norm.f32(), k, n * kv_heads, hd, h.rms_eps);
  const float *divisors = model_.rope_freq_divisors.empty() ? nullptr : model_.rope_freq_divisors.data();
  const bool neox = h.rope_type == RopeType::Neox;
  void *k_pages = k_pages_[size_t(l)].data(), *v_pages = v_pages_[size_t(l)].data();
  const float scale = 1.0f / std::sqrt(float(hd));
  if (where.tree || where.at)
    kernels_.rope_at(q, k, n, heads, kv_heads, hd, where.tree ? tree_positions_.data() : where.at, h.rope_freq_base, neox, divisors,
                     model_.rope_magnitude);
  else
    kernels_.rope(q, k, n, heads, kv_heads, hd, pos, h.rope_freq_base, neox, divisors, model_.rope_magnitude);
  if (where.at)
    kernels_.kv_append_at(k, v, k_pages, v_pages, block_table_.data(), where.at, n, kv_heads, hd, options_.page_size, options_.kv_types);
  else
    kernels_.kv_append(k, v, k_pages, v_pages, block_table_.data(), pos, n, kv_heads, hd, options_.page_size, options_.kv_types);
  if (where.at && where.tree)
    kernels_.attention_tree_at(q, k_pages, v_pages, block_table_.data(), tree_ancestors_.data(), where.at, att_.data(), n, heads, kv_heads, hd,
                               options_.page_size, scale, options_.kv_types);
  else if (where.at)
    kernels_.attention_at(q, k_pages, v_pages, block_table_.data(), where.at, n, context_, att_.data(), heads, kv_heads, hd, options_.page_size, scale,
                          options_.kv_types);
  else if (where.tree)
    kernels_.attention_tree(q, k_pages, v_pages, block_table_.data(), tree_ancestors_.data(), att_.data(), n, pos, heads, kv_heads, hd,
                            options_.page_size, scale, options_.kv_types);
  else
    kernels_.attention(q, k_pages, v_pages, block_table_.data(), att_.data(), n, pos, heads, kv_heads, hd, options_.page_size, scale,
                       options_.kv_types);
  show_input(TensorName::AttnOutput, l, att_, 0, n, q_dim_);
  product_out(att_.data(), DType::F32, w.wo, q_dim_, w.ffn_norm.f32(), ffn_in);

  for (TensorName t : {TensorName::FfnGate, TensorName::FfnUp}) show_input(t, l, xb_, 0, n, dim_);
  void *down_rows = down_in == DType::F32 ? static_cast<void *>(gate_.data()) : down_in_.data();
  if (fused && back_to_back(w.w_gate, w.w_up)) {  // gate, up and SwiGLU in one launch
    kernels_.matvec_fused(x_.data(), w.ffn_norm.f32(), h.rms_eps, w.w_gate.data, w.w_gate.type, nullptr, gate_.data(), AfterProduct::Swiglu, ff_, dim_);
  } else {
    // SwiGLU of the gate and up rows, into down's rows; BeforeProducts makes them in the down
    // product's launch.
    const float *gate = gate_.data(), *up = up_.data();
    if (n == 1 && back_to_back(w.w_gate, w.w_up)) {
      float *gate_up = gate_up_.data();
      product_in(stacked(w.w_gate), Weight{}, w.ffn_norm, gate_up, 2 * ff_, ffn_in);
      gate = gate_up, up = gate_up + ff_;
    } else {
      product_in(w.w_gate, Weight{}, w.ffn_norm, gate_.data(), ff_, ffn_in);
      product_in(w.w_up, Weight{}, w.ffn_norm, up_.data(), ff_, ffn_in);
    }
    if (before) {
      const Weight &wd = w.w_down;
      kernels_.matmul_swiglu(gate, up, wd.data, wd.type, nullptr, proj_.data(), n, dim_, ff_, wd.row_group, wd.stored);
      pending_residual_ = proj_.data();
      return;
    }
    kernels_.swiglu(gate, up, down_rows, down_in, int64_t(n) * ff_);
  }
  show_input(TensorName::FfnDown, l, gate_, 0, n, ff_);
  const float *next_norm = last ? weights_.output_norm.f32() : weights_.layers[size_t(l + 1)].attn_norm.f32();
  product_out(down_rows, down_in, w.w_down, ff_, next_norm, next_in);
}

}  // namespace kdsl::models
