// checkpoint.cpp - reads llama2.c version-0 checkpoints: header checks, then tensors in file order
#include "models/llama2c/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kdsl/error.h>

namespace kdsl::models {

int64_t Llama2cTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

constexpr uint32_t kLegacyMagic = 0x616b3432;  // "ak42", llama2.c's version 1 and 2 exports

Llama2cConfig read_config(ByteReader &r) {
  uint32_t first = r.read<uint32_t>("header");
  if (first == kLegacyMagic)
    throw Error(fmt::format("{}: header: this is a llama2.c version 1/2 export (magic \"ak42\"); "
                            "only version-0 float32 checkpoints (export --version 0) are supported",
                            r.file()));
  Llama2cConfig c;
  c.dim = static_cast<int32_t>(first);
  c.hidden_dim = r.read<int32_t>("hidden_dim");
  c.n_layers = r.read<int32_t>("n_layers");
  c.n_heads = r.read<int32_t>("n_heads");
  c.n_kv_heads = r.read<int32_t>("n_kv_heads");
  int32_t vocab = r.read<int32_t>("vocab_size");
  c.seq_len = r.read<int32_t>("seq_len");
  c.shared_classifier = vocab > 0;
  // The sign says whether the classifier is shared. Negating in 64 bits: -INT32_MIN does not
  // fit in an int.
  int64_t magnitude = vocab < 0 ? -int64_t(vocab) : int64_t(vocab);
  if (magnitude == 0 || magnitude > (1 << 24))
    throw Error(fmt::format("{}: header field vocab_size: expected 1..2^24 (negative when the classifier is "
                            "separate), found {}",
                            r.file(), vocab));
  c.vocab_size = int(magnitude);

  auto positive = [&](const char *field, int value) {
    if (value <= 0 || value > (1 << 24))
      throw Error(fmt::format("{}: header field {}: expected a positive count up to 2^24, found {}",
                              r.file(), field, value));
  };
  positive("dim", c.dim);
  positive("hidden_dim", c.hidden_dim);
  positive("n_layers", c.n_layers);
  positive("n_heads", c.n_heads);
  positive("n_kv_heads", c.n_kv_heads);
  positive("seq_len", c.seq_len);
  if (c.dim % c.n_heads != 0)
    throw Error(fmt::format("{}: header: dim {} is not divisible by n_heads {}", r.file(), c.dim, c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0)
    throw Error(fmt::format("{}: header: n_heads {} is not a multiple of n_kv_heads {}", r.file(),
                            c.n_heads, c.n_kv_heads));
  if (c.head_size() % 2 != 0)
    throw Error(fmt::format("{}: header: head size {} (dim {} / n_heads {}) must be even for RoPE",
                            r.file(), c.head_size(), c.dim, c.n_heads));
  return c;
}

}  // namespace

Llama2cCheckpoint::Llama2cCheckpoint(const std::string &path)
    : file_(std::make_unique<MappedFile>(path)) {
  ByteReader r(file_->bytes(), path);
  config_ = read_config(r);
  const Llama2cConfig &c = config_;
  const int64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, vocab = c.vocab_size;
  const int64_t kv_dim = c.kv_dim(), rope = int64_t(c.seq_len) * c.head_size() / 2;

  // Counts are below 2^24 but a product of three can pass 2^64, so the sum is built with
  // overflow checks and compared with the file's size before any tensor is made.
  uint64_t floats = 0;
  bool overflow = false;
  auto add = [&](std::initializer_list<uint64_t> factors) {
    uint64_t product = 1;
    for (uint64_t f : factors) overflow |= __builtin_mul_overflow(product, f, &product);
    overflow |= __builtin_add_overflow(floats, product, &floats);
  };
  const uint64_t layer_floats = 2 * uint64_t(dim) + 2 * uint64_t(dim) * uint64_t(dim) + 2 * uint64_t(kv_dim) * uint64_t(dim) +
                             3 * uint64_t(hidden) * uint64_t(dim);  // each term below 2^51
  add({uint64_t(vocab), uint64_t(dim)});
  add({uint64_t(layers), layer_floats});
  add({uint64_t(dim)});
  add({2, uint64_t(rope)});
  if (!c.shared_classifier) add({uint64_t(vocab), uint64_t(dim)});
  uint64_t expected = 0;
  overflow |= __builtin_mul_overflow(floats, uint64_t(4), &expected);
  overflow |= __builtin_add_overflow(expected, uint64_t(7 * 4), &expected);
  if (overflow || file_->size() != expected)
    throw Error(fmt::format("{}: size: header (dim {}, hidden_dim {}, n_layers {}, n_heads {}, n_kv_heads {}, "
                            "vocab_size {}{}, seq_len {}) needs {} bytes, the file has {}",
                            path, c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size,
                            c.shared_classifier ? "" : " (separate classifier)", c.seq_len,
                            overflow ? std::string("more than 2^64") : std::to_string(expected), file_->size()));

  tensors_.reserve(size_t(layers) * 9 + 3);
  const float *p = reinterpret_cast<const float *>(file_->data() + 28);
  auto take = [&](std::string name, std::vector<int64_t> shape) {
    Llama2cTensor t{std::move(name), std::move(shape), p};
    p += t.elements();
    tensors_.push_back(std::move(t));
  };
  // Per-layer arrays are stored [layer][...]: each name covers one layer's slice.
  auto per_layer = [&](const char *suffix, std::vector<int64_t> shape) {
    for (int64_t l = 0; l < layers; ++l) take(fmt::format("blk.{}.{}", l, suffix), shape);
  };
  take("token_embd.weight", {dim, vocab});
  per_layer("attn_norm.weight", {dim});
  per_layer("attn_q.weight", {dim, dim});
  per_layer("attn_k.weight", {dim, kv_dim});
  per_layer("attn_v.weight", {dim, kv_dim});
  per_layer("attn_output.weight", {dim, dim});
  per_layer("ffn_norm.weight", {dim});
  per_layer("ffn_gate.weight", {dim, hidden});  // w1
  per_layer("ffn_down.weight", {hidden, dim});  // w2
  per_layer("ffn_up.weight", {dim, hidden});    // w3
  take("output_norm.weight", {dim});
  p += 2 * rope;  // legacy RoPE tables: the engine computes its own
  if (c.shared_classifier)
    tensors_.push_back({"output.weight", {dim, vocab}, tensors_.front().data});
  else
    take("output.weight", {dim, vocab});
}

const Llama2cTensor &Llama2cCheckpoint::tensor(std::string_view name) const {
  for (const auto &t : tensors_)
    if (t.name == name) return t;
  throw Error(fmt::format("{}: no tensor named '{}' in this llama2.c checkpoint", path(), name));
}

}  // namespace kdsl::models
