// embedding.h - token embedding lookup: rows of an f32, f16 or bf16 table gathered and widened to f32
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// Program (r, j) copies columns j*BLOCK .. j*BLOCK+BLOCK-1 of table row ids[r] to out row r.
template <class T, int BLOCK>
void embedding(Ptr<const i32> ids, Ptr<const T> table, Ptr<f32> out, Scalar<i32> dim) {
  auto r = program_id(0);
  auto c = program_id(1) * BLOCK + arange<BLOCK>();
  auto mask = c < dim;
  auto id = load(ids + r);
  auto src = table + wide(id) * wide(dim);
  store(out + wide(r) * wide(dim) + c, cast<f32>(load(src + c, mask, 0)), mask);
}

}  // namespace kdsl::kernels
