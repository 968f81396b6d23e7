// embedding_quantized.h - token embedding lookup from a Q8_0 / Q4_0 table, dequantized to f32 rows
#pragma once
#include "kernels/quant_formats.h"

namespace kdsl::kernels {

// The table is [vocab][dim] in format F (quant_formats.h), dim a multiple of 32. Program
// (r, j) dequantizes blocks j*BB .. j*BB + BB - 1 of table row ids[r] (columns
// j*BB*32 ..) into out row r: d * value for each element, the blocks past the row masked.
template <class F, int BB>
void embedding_quantized(Ptr<const i32> ids, Ptr<const typename F::Quant> tq, Ptr<f32> out, Scalar<i32> dim) {
  constexpr int PB = F::kPartBytes;
  auto td = reinterpret<f16>(tq);  // the scales, at half index block * kScaleStride
  auto blocks = dim / F::kBlockElements;
  auto r = program_id(0);
  auto blk = program_id(1) * BB + arange<BB>();  // [BB] block within the row
  auto ok = col(blk < blocks);                   // [BB, 1]
  auto rj = row(arange<PB>());                   // [1, PB]
  auto block = wide(load(ids + r)) * wide(blocks) + wide(blk);  // [BB] block within the table
  auto q = load(tq + (col(block * F::kBlockBytes + F::kQuantOffset) + wide(rj)), ok, 0);  // [BB, PB]
  auto d = col(cast<f32>(load(td + block * F::kScaleStride, blk < blocks, 0)));           // [BB, 1]
  auto dst = out + (wide(r) * wide(dim) + wide(col(blk * F::kBlockElements) + rj));     // [BB, PB]
  for (int p = 0; p < F::kParts; ++p) store(dst + p * PB, F::part(q, p) * d, ok);
}

}  // namespace kdsl::kernels
