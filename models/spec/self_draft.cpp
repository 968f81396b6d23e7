// self_draft.cpp - the target's matrices requantized row by row into memory the draft owns (q, k, v and gate, up back to back), and its layers cut
#include "models/spec/self_draft.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/gguf/dequantize.h"
#include "models/arch/llm_arch.h"
#include "models/gguf/quantize.h"

namespace kdsl::models {
namespace {

// The target's memory kept alive, and the requantized matrices.
struct SelfDraftMemory {
  std::shared_ptr<const void> target;
  std::vector<std::vector<uint8_t>> matrices;
};

bool needs_requantizing(const Weight &w, kernels::WeightType wtype) { return w && w.type != wtype && w.cols % 32 == 0; }

// Requantizes `group` (one weight, or weights of one column count) into one allocation, back to
// back in order, so that the engine multiplies a row by all of them in one launch, as it does
// with a file that holds q, k and v (or gate and up) together.
void requantize(const std::vector<std::pair<Weight *, std::string>> &group, GgmlType type, kernels::WeightType wtype,
                SelfDraftMemory &memory, const ImportanceMatrix *imatrix) {
  int64_t total = 0;
  for (auto &[w, name] : group) total += w->rows * kernels::weight_bytes(wtype, w->cols);
  std::vector<uint8_t> &out = memory.matrices.emplace_back(size_t(total));
  uint8_t *at = out.data();
  for (auto &[w, name] : group) {
    const std::vector<float> importance = imatrix ? imatrix->column_weights(name, w->cols, "importance matrix", "the model's matrix") : std::vector<float>{};
    const int64_t row_in = kernels::weight_bytes(w->type, w->cols), row_out = kernels::weight_bytes(wtype, w->cols);
    std::vector<float> row(static_cast<size_t>(w->cols));
    const auto *in = static_cast<const uint8_t *>(w->data);
    for (int64_t r = 0; r < w->rows; ++r) {
      dequantize_row(w->type, in + r * row_in, row.data(), w->cols);
      quantize_row(type, row.data(), at + r * row_out, w->cols, importance.empty() ? nullptr : importance.data());
    }
    w->data = at, w->type = wtype;
    at += w->rows * row_out;
  }
}

}  // namespace

bool is_self_draft_type(GgmlType t) {
  const formats::WeightTypeInfo &info = ggml_type_traits(t);
  return info.runs_in_kernels() && info.block_elements == 32;
}

std::string self_draft_type_names() {
  return formats::weight_type_names([](const formats::WeightTypeInfo &t) { return is_self_draft_type(t.type); });
}

GgmlType parse_self_draft_type(std::string_view option, std::string_view text) {
  std::optional<GgmlType> t = parse_ggml_type(text);
  if (!t || !is_self_draft_type(*t)) throw Error(fmt::format("{} {}: expected one of {}", option, text, self_draft_type_names()));
  return *t;
}

ModelWeights self_draft_weights(const ModelWeights &target, const SelfDraftOptions &options) {
  const int n_layer = int(target.layers.size());
  if (options.layers < 0 || options.layers > n_layer)
    throw Error(fmt::format("--draft-layers {}: expected 1 to the target's {} layers", options.layers, n_layer));
  if (options.type && !is_self_draft_type(*options.type))
    throw Error(fmt::format("--draft-type {}: expected one of {}", ggml_type_traits(*options.type).name, self_draft_type_names()));
  if (!options.type && (options.layers == 0 || options.layers == n_layer))
    throw Error(fmt::format("a self-draft needs --draft-type ({}) or --draft-layers fewer than the target's: as it is, it is the target itself",
                            self_draft_type_names()));
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
    if (needs_requantizing(d.output, wtype)) requantize({{&d.output, tensor_name(TensorName::Output)}}, *options.type, wtype, *memory, options.imatrix);
    if (tied) d.token_embd = d.output;
    for (size_t l = 0; l < d.layers.size(); ++l) {
      LayerWeights &lw = d.layers[l];
      const int layer = int(l);
      const std::vector<std::pair<Weight *, std::string>> groups[] = {
          {{&lw.wq, tensor_name(TensorName::AttnQ, layer)}, {&lw.wk, tensor_name(TensorName::AttnK, layer)}, {&lw.wv, tensor_name(TensorName::AttnV, layer)}},
          {{&lw.wo, tensor_name(TensorName::AttnOutput, layer)}},
          {{&lw.w_gate, tensor_name(TensorName::FfnGate, layer)}, {&lw.w_up, tensor_name(TensorName::FfnUp, layer)}},
          {{&lw.w_down, tensor_name(TensorName::FfnDown, layer)}}};
      for (const auto &group : groups) {
        const bool together = std::all_of(group.begin(), group.end(), [&](const auto &m) {
          return needs_requantizing(*m.first, wtype) && m.first->cols == group.front().first->cols;
        });
        if (together) requantize(group, *options.type, wtype, *memory, options.imatrix);
        else
          for (const auto &m : group)
            if (needs_requantizing(*m.first, wtype)) requantize({m}, *options.type, wtype, *memory, options.imatrix);
      }
    }
  }
  d.keep_alive = memory;
  return d;
}

}  // namespace kdsl::models
