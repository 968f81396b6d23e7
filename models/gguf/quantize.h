// quantize.h - ggml's reference quantizers into every readable weight type: kdsl-quantize, synthetic models, self-drafts, tests
#pragma once
#include <cstdint>

#include "models/gguf/gguf_types.h"

namespace kdsl::models {

// Quantizes `n` floats (a multiple of the type's block size) into `dst`, which must hold
// GgufWriter::tensor_bytes(type, {n}) bytes, with ggml's reference algorithms (those of
// llama.cpp's quantize without an importance matrix): round to nearest with ggml's scale for
// the 32-element types, the k-quants' weighted scale and min searches, so the bytes match
// ggml's up to float rounding. Throws kdsl::Error for a type with no layout or a ragged n.
void quantize_row(GgmlType type, const float *x, void *dst, int64_t n);

}  // namespace kdsl::models
