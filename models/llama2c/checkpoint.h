// checkpoint.h - llama2.c version-0 float32 checkpoints: hyper-parameters and named tensors over an mmap
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/common/mapped_file.h"

namespace kdsl::models {

struct Llama2cConfig {
  int dim = 0;
  int hidden_dim = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int vocab_size = 0;  // always positive here; the sign in the file becomes shared_classifier
  int seq_len = 0;
  bool shared_classifier = true;

  int head_size() const { return dim / n_heads; }
  int kv_dim() const { return head_size() * n_kv_heads; }
};

// One float32 tensor inside the mapped file. Names follow GGUF's llama names
// (`token_embd.weight`, `blk.3.attn_q.weight`, ...) and `shape` is in GGUF order, innermost
// (contiguous) dimension first, so an engine can treat both formats alike: a row-major
// [out][in] matrix has shape {in, out}.
struct Llama2cTensor {
  std::string name;
  std::vector<int64_t> shape;
  const float *data = nullptr;

  int64_t elements() const;
};

class Llama2cCheckpoint {
 public:
  // Maps and validates `path`; throws kdsl::Error naming the file and field when the header
  // is impossible or the size does not match what the header promises.
  explicit Llama2cCheckpoint(const std::string &path);

  const Llama2cConfig &config() const { return config_; }
  const std::vector<Llama2cTensor> &tensors() const { return tensors_; }
  // Throws kdsl::Error naming the checkpoint and tensor when there is no such tensor.
  const Llama2cTensor &tensor(std::string_view name) const;
  const std::string &path() const { return file_->path(); }

 private:
  std::unique_ptr<MappedFile> file_;
  Llama2cConfig config_;
  std::vector<Llama2cTensor> tensors_;
};

}  // namespace kdsl::models
