// self_draft.cpp - the target's matrices requantized row by row into memory the draft owns, and its layers cut
#include "models/spec/self_draft.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <memory>
#include <vector>

#include "models/gguf/dequantize.h"
#include "models/gguf/quantize.h"

namespace kdsl::models {
namespace {

GgmlType ggml_type(kernels::WeightType t) {
  switch (t) {
    case kernels::WeightType::F32: return GgmlType::F32;
    case kernels::WeightType::F16: return GgmlType::F16;
    case kernels::WeightType::BF16: return GgmlType::BF16;
    case kernels::WeightType::Q8_0: return GgmlType::Q8_0;
    case kernels::WeightType::Q4_0: return GgmlType::Q4_0;
    case kernels::WeightType::Q4_K: return GgmlType::Q4_K;
    case kernels::WeightType::Q6_K: return GgmlType::Q6_K;
  }
  throw Error("self_draft_weights: an unknown weight type (a bug in kdsl)");
}

// The target's memory kept alive, and the requantized matrices.
struct SelfDraftMemory {
  std::shared_ptr<const void> target;
  std::vector<std::vector<uint8_t>> matrices;
};

void requantize(Weight &w, GgmlType type, kernels::WeightType wtype, SelfDraftMemory &memory) {
  if (!w || w.type == wtype || w.cols % 32 != 0) return;
  const GgmlType from = ggml_type(w.type);
  const int64_t row_in = kernels::weight_bytes(w.type, w.cols), row_out = kernels::weight_bytes(wtype, w.cols);
  std::vector<uint8_t> &out = memory.matrices.emplace_back(size_t(w.rows * row_out));
  std::vector<float> row(static_cast<size_t>(w.cols));
  const auto *in = static_cast<const uint8_t *>(w.data);
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(from, in + r * row_in, row.data(), w.cols);
    quantize_row(type, row.data(), out.data() + r * row_out, w.cols);
  }
  w.data = out.data(), w.type = wtype;
}

}  // namespace

ModelWeights self_draft_weights(const ModelWeights &target, const SelfDraftOptions &options) {
  const int n_layer = int(target.layers.size());
  if (options.layers < 0 || options.layers > n_layer)
    throw Error(fmt::format("--draft-layers {}: expected 1 to the target's {} layers", options.layers, n_layer));
  if (options.type && *options.type != GgmlType::Q8_0 && *options.type != GgmlType::Q4_0)
    throw Error(fmt::format("--draft-type {}: expected q8_0 or q4_0", ggml_type_name(*options.type)));
  if (!options.type && (options.layers == 0 || options.layers == n_layer))
    throw Error("a self-draft needs --draft-type (q8_0, q4_0) or --draft-layers fewer than the target's: as it is, it is the target itself");
  ModelWeights d;
  d.path = target.path;
  d.hparams = target.hparams;
  d.token_embd = target.token_embd, d.output_norm = target.output_norm, d.output = target.output;
  d.layers = target.layers;
  if (options.layers > 0) d.layers.resize(size_t(options.layers)), d.hparams.n_layer = options.layers;
  auto memory = std::make_shared<SelfDraftMemory>();
  memory->target = target.keep_alive;
  if (options.type) {
    const kernels::WeightType wtype = *kernel_weight_type(*options.type);
    // The classifier is read whole every token; a tied one is the token table too, and then the copy serves both.
    bool tied = d.output.data == d.token_embd.data;
    requantize(d.output, *options.type, wtype, *memory);
    if (tied) d.token_embd = d.output;
    for (LayerWeights &l : d.layers)
      for (Weight *w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) requantize(*w, *options.type, wtype, *memory);
  }
  d.keep_alive = memory;
  return d;
}

}  // namespace kdsl::models
