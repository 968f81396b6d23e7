// dequantize.h - scalar reference dequantizers for every supported ggml tensor type
#pragma once
#include <cstdint>
#include <span>

#include "models/gguf/gguf_types.h"
#include <kdsl/formats/quant_blocks.h>

namespace kdsl::models {

// One block each, written straight from the format's definition: the reference that
// kernels are checked against. `out` receives the block's element count.
void dequantize_block(const formats::BlockQ4_0 &b, float *out);
void dequantize_block(const formats::BlockQ4_1 &b, float *out);
void dequantize_block(const formats::BlockQ5_0 &b, float *out);
void dequantize_block(const formats::BlockQ5_1 &b, float *out);
void dequantize_block(const formats::BlockQ8_0 &b, float *out);
void dequantize_block(const formats::BlockQ4_K &b, float *out);
void dequantize_block(const formats::BlockQ5_K &b, float *out);
void dequantize_block(const formats::BlockQ6_K &b, float *out);

// `n` elements of type `type` starting at `src` (n a multiple of the block size); throws
// kdsl::Error for a type kdsl cannot dequantize or a ragged n.
void dequantize_row(GgmlType type, const void *src, float *out, int64_t n);

// Q4_K / Q5_K: scale and min of sub-block j (0..7) from the 12 packed bytes.
void unpack_scale_min_k4(int j, const uint8_t *scales, uint8_t *scale, uint8_t *min);

}  // namespace kdsl::models
