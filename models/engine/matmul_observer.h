// matmul_observer.h - what the engine shows an observer of its weight products' inputs: the activations an importance matrix sums
#pragma once
#include <span>

#include "models/arch/llm_arch.h"

namespace kdsl::models {

// Engine::observe_inputs(observer) calls observe before each weight product of a forward pass
// with the activations the weight multiplies: `rows` holds rows.size() / cols rows of `cols`
// floats in host memory (copied there from a GPU). `layer` is -1 for the classifier
// (TensorName::Output, even where it is tied to the embedding). Products that share an input
// (Q, K and V; gate and up) are each shown it, as llama.cpp's imatrix records them.
class MatmulInputObserver {
 public:
  virtual ~MatmulInputObserver() = default;
  virtual void observe(TensorName weight, int layer, std::span<const float> rows, int cols) = 0;
};

}  // namespace kdsl::models
