// quantize.h - simple reference quantizers into every supported ggml type, for synthetic models and tests
#pragma once
#include <cstdint>

#include "models/gguf/gguf_types.h"

namespace kdsl::models {

// Quantizes `n` floats (a multiple of the type's block size) into `dst`, which must hold
// GgufWriter::tensor_bytes(type, {n}) bytes. Scales come from each block's range and values
// round to the nearest level: plain round-to-nearest, not ggml's error-minimizing search, so
// dequantizing gives back every value within about half a quantization step.
void quantize_row(GgmlType type, const float *x, void *dst, int64_t n);

}  // namespace kdsl::models
