// llama2c_test.cpp - llama2.c checkpoints: the shared models, tensor order, classifier, header errors
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <kdsl/error.h>
#include <vector>

#include "models/llama2c/checkpoint.h"
#include "models/llama2c/reference_model.h"
#include "models/sampler/rng.h"
#include "models/tokenizer/tokenizer.h"
#include "shared_models.h"

using namespace kdsl::models;
using kdsl::test::scratch_path;
using kdsl::test::shared_model;

namespace {

// Writes a checkpoint whose every array is filled with its own index (1, 2, 3, ...) in file
// order, so a tensor's first value says which array the reader mapped it to.
std::string write_checkpoint(const std::string &name, std::vector<int32_t> header, size_t extra_floats = 0) {
  int dim = header[0], hidden = header[1], layers = header[2], heads = header[3], kv = header[4];
  int vocab = header[5] < 0 ? -header[5] : header[5], seq = header[6];
  int kv_dim = dim / heads * kv;
  std::vector<size_t> sizes = {size_t(vocab * dim)};
  for (size_t per : {dim, dim * dim, kv_dim * dim, kv_dim * dim, dim * dim, dim, hidden * dim, dim * hidden, hidden * dim})
    sizes.push_back(size_t(layers) * per);
  sizes.push_back(size_t(dim));
  sizes.push_back(size_t(seq * dim / heads / 2));
  sizes.push_back(size_t(seq * dim / heads / 2));
  if (header[5] < 0) sizes.push_back(size_t(vocab * dim));
  std::string path = scratch_path(name);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(header.data()), std::streamsize(header.size() * 4));
  for (size_t a = 0; a < sizes.size(); ++a) {
    std::vector<float> values(sizes[a], float(a + 1));
    out.write(reinterpret_cast<const char *>(values.data()), std::streamsize(values.size() * 4));
  }
  std::vector<float> extra(extra_floats, 0.0f);
  out.write(reinterpret_cast<const char *>(extra.data()), std::streamsize(extra.size() * 4));
  return path;
}

std::string error_of(const std::string &path) {
  try {
    Llama2cCheckpoint c(path);
  } catch (const kdsl::Error &e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("llama2c: aidreams260K header and shared classifier") {
  auto path = shared_model("aidreams260K.bin");
  if (!path) return;
  Llama2cCheckpoint ckpt(*path);
  const Llama2cConfig &c = ckpt.config();
  CHECK(c.dim == 64);
  CHECK(c.hidden_dim == 172);
  CHECK(c.n_layers == 4);
  CHECK(c.n_heads == 4);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.vocab_size == 512);
  CHECK(c.seq_len == 128);
  CHECK(c.shared_classifier);
  CHECK(ckpt.tensors().size() == 4 * 9 + 3);
  CHECK(ckpt.tensor("output.weight").data == ckpt.tensor("token_embd.weight").data);
  CHECK(ckpt.tensor("blk.0.attn_q.weight").shape == std::vector<int64_t>{64, 64});
  CHECK(ckpt.tensor("blk.3.ffn_down.weight").shape == std::vector<int64_t>{172, 64});
}

TEST_CASE("llama2c: stories260K has grouped-query attention") {
  auto path = shared_model("stories260K.bin");
  if (!path) return;
  Llama2cCheckpoint ckpt(*path);
  CHECK(ckpt.config().n_heads == 8);
  CHECK(ckpt.config().n_kv_heads == 4);
  CHECK(ckpt.config().n_layers == 5);
  CHECK(ckpt.config().seq_len == 512);
  CHECK(ckpt.tensor("blk.4.attn_k.weight").shape == std::vector<int64_t>{64, 32});
}

TEST_CASE("llama2c: the reference forward pass reproduces the README's greedy ids") {
  auto model = shared_model("aidreams260K.bin");
  auto tok_path = shared_model("aidreams-tok512.bin");
  if (!model || !tok_path) return;
  Llama2cCheckpoint ckpt(*model);
  auto tok = load_tokenizer_bin(*tok_path, ckpt.config().vocab_size);
  std::vector<int> prompt = tok->encode("The river", true);
  REQUIRE(prompt == std::vector<int>{1, 368, 430, 429, 322, 350});
  // The first 24 ids of NEXT: early steps never flip on float rounding.
  std::vector<int> expected = {368, 430, 429, 322, 350, 275, 280, 302, 450, 405, 403, 399,
                               327, 446, 262, 263, 428, 434, 436, 451, 275, 280, 302, 450};
  ReferenceLlama ref(ckpt);
  std::vector<int> next;
  int token = prompt[0];
  for (int pos = 0; pos < int(expected.size()); ++pos) {
    auto logits = ref.forward(token, pos);
    token = pos + 1 < int(prompt.size()) ? prompt[size_t(pos + 1)]
                                         : int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    next.push_back(token);
  }
  CHECK(next == expected);
}

TEST_CASE("llama2c: stories260K greedy from BOS") {
  auto model = shared_model("stories260K.bin");
  if (!model) return;
  Llama2cCheckpoint ckpt(*model);
  ReferenceLlama ref(ckpt);
  std::vector<int> expected = {461, 461, 401, 401, 401, 461, 378, 455, 473, 456, 435, 299, 362, 409, 283, 264};
  std::vector<int> next;
  int token = 1;
  for (int pos = 0; pos < int(expected.size()); ++pos) {
    auto logits = ref.forward(token, pos);
    token = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    next.push_back(token);
  }
  CHECK(next == expected);
}

TEST_CASE("llama2c: tensors map to the arrays in file order") {
  // dim 8, hidden 12, 2 layers, 4 heads, 2 KV heads, separate classifier (vocab -10), seq 6
  Llama2cCheckpoint ckpt(write_checkpoint("order.bin", {8, 12, 2, 4, 2, -10, 6}));
  CHECK_FALSE(ckpt.config().shared_classifier);
  CHECK(ckpt.config().vocab_size == 10);
  CHECK(ckpt.config().kv_dim() == 4);
  auto first = [&](const char *name) { return ckpt.tensor(name).data[0]; };
  auto last = [&](const char *name) {
    const auto &t = ckpt.tensor(name);
    return t.data[t.elements() - 1];
  };
  CHECK(first("token_embd.weight") == 1);
  CHECK(first("blk.0.attn_norm.weight") == 2);
  CHECK(last("blk.1.attn_norm.weight") == 2);
  CHECK(first("blk.1.attn_q.weight") == 3);
  CHECK(first("blk.0.attn_k.weight") == 4);
  CHECK(first("blk.1.attn_v.weight") == 5);
  CHECK(first("blk.0.attn_output.weight") == 6);
  CHECK(first("blk.1.ffn_norm.weight") == 7);
  CHECK(first("blk.0.ffn_gate.weight") == 8);
  CHECK(first("blk.1.ffn_down.weight") == 9);
  CHECK(last("blk.1.ffn_up.weight") == 10);
  CHECK(first("output_norm.weight") == 11);
  CHECK(first("output.weight") == 14);  // after the two RoPE tables (12, 13)
  CHECK(ckpt.tensor("output.weight").shape == std::vector<int64_t>{8, 10});
  CHECK_THROWS_WITH_AS(ckpt.tensor("blk.2.attn_q.weight"), doctest::Contains("no tensor named 'blk.2.attn_q.weight'"),
                       kdsl::Error);
}

TEST_CASE("llama2c: header errors name the file, field and values") {
  std::string trailing = write_checkpoint("trailing.bin", {8, 12, 2, 4, 2, 10, 6}, 3);
  CHECK(error_of(trailing).find("trailing.bin: size:") != std::string::npos);
  CHECK(error_of(trailing).find("the file has") != std::string::npos);
  CHECK(error_of(write_checkpoint("heads.bin", {8, 12, 2, 3, 3, 10, 6})).find("dim 8 is not divisible by n_heads 3") !=
        std::string::npos);
  CHECK(error_of(write_checkpoint("kv.bin", {8, 12, 2, 4, 3, 10, 6})).find("n_heads 4 is not a multiple of n_kv_heads 3") !=
        std::string::npos);
  CHECK(error_of(write_checkpoint("zero.bin", {8, 12, 0, 4, 2, 10, 6})).find("n_layers: expected a positive count") !=
        std::string::npos);
  std::string legacy = scratch_path("legacy.bin");
  std::ofstream(legacy, std::ios::binary).write("24ka\1\0\0\0", 8);
  CHECK(error_of(legacy).find("version 1/2 export") != std::string::npos);
  std::string tiny = scratch_path("tiny.bin");
  std::ofstream(tiny, std::ios::binary).write("\x08\0\0\0", 4);
  CHECK(error_of(tiny).find("truncated while reading hidden_dim") != std::string::npos);
  CHECK(error_of(scratch_path("missing.bin")).find("cannot open") != std::string::npos);
}

TEST_CASE("llama2c: a header whose size wraps past 2^64 or whose vocab_size is INT32_MIN is refused") {
  // 28 + 4 * floats for this header is 2^64 + 36 (found by search): without overflow checks a
  // 36-byte file passes the size check and its tensors point far outside it.
  std::string wrap = scratch_path("wrap.bin");
  {
    std::vector<int32_t> header = {1 << 24, 1 << 24, 4681, 1 << 23, 1 << 23, 16767853, 1, 0, 0};
    std::ofstream(wrap, std::ios::binary).write(reinterpret_cast<const char *>(header.data()), 36);
  }
  CHECK(error_of(wrap).find("wrap.bin: size: header (dim 16777216, hidden_dim 16777216, n_layers 4681") != std::string::npos);
  CHECK(error_of(wrap).find("needs more than 2^64 bytes, the file has 36") != std::string::npos);

  std::string min = scratch_path("int32_min.bin");
  {
    std::vector<int32_t> header = {8, 12, 2, 4, 2, INT32_MIN, 6};
    std::ofstream(min, std::ios::binary).write(reinterpret_cast<const char *>(header.data()), 28);
  }
  CHECK(error_of(min) == min + ": header field vocab_size: expected 1..2^24 (negative when the classifier is separate), "
                               "found -2147483648");
}

TEST_CASE("llama2c: random headers are refused with kdsl::Error, whatever their values") {
  // Fields drawn from small counts, powers of two near the limits, and any 32-bit value, so the
  // size arithmetic meets its extremes (UBSan checks it in the sanitize build).
  Rng rng(7);
  auto field = [&]() -> int32_t {
    switch (rng.next() % 4) {
      case 0: return int32_t(rng.next() % 9);
      case 1: return int32_t(1) << (rng.next() % 31);
      case 2: return -(int32_t(1) << (rng.next() % 31));
      default: return int32_t(uint32_t(rng.next()));
    }
  };
  std::string path = scratch_path("random_header.bin");
  int refused = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<int32_t> header(7 + rng.next() % 4);
    for (int32_t &v : header) v = field();
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char *>(header.data()), std::streamsize(header.size() * 4));
    try {
      Llama2cCheckpoint c(path);
    } catch (const kdsl::Error &) {
      ++refused;
    }
  }
  CHECK(refused == 3000);
}
