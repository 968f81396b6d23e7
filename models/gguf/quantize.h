// quantize.h - ggml's quantizers into every readable weight type, with or without an importance matrix: kdsl-quantize, synthetic models, self-drafts, tests
#pragma once
#include <cstdint>

#include "models/gguf/gguf_types.h"

namespace kdsl::models {

// Quantizes `n` floats (a multiple of the type's block size) into `dst`, which must hold
// GgufWriter::tensor_bytes(type, {n}) bytes, with ggml's reference algorithms (those of
// llama.cpp's quantize without an importance matrix): round to nearest with ggml's scale for
// the 32-element types, the k-quants' weighted scale and min searches, so the bytes match
// ggml's up to float rounding. Throws kdsl::Error for a type with no layout or a ragged n.
//
// `importance` (null: none) is an importance matrix's entry for the matrix this row belongs
// to: n values, the mean square of the activations each column meets (importance_matrix.h).
// Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K and IQ4_NL then run ggml's weighted searches (its
// quantize_row_*_impl), which spend the levels where the activations will weigh the error;
// x is then one whole row, since the 32-element types scale the weights by its mean square.
// Q8_0, F8_E4M3 and the float types have no weighted form and ignore it, as in ggml.
void quantize_row(GgmlType type, const float *x, void *dst, int64_t n, const float *importance = nullptr);

}  // namespace kdsl::models
