// quantize_activations.h - f32 rows to Q8_0-style blocks (32 int8 and one f32 scale each), the activation side of the integer-dot kernels
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// The activation blocks of one row of K (a multiple of 32) values: block b of row r holds
// xq[r*K + 32b .. +31] (int8) and its scale xd[r*K/32 + b] (f32), so that x ~ xd * xq, as
// ggml's quantize_row_q8_0 makes them (d = amax / 127, q = round(x * 127 / amax), one block
// of zeros where amax is 0). Two differences, both for precision: the scale stays f32 (ggml
// rounds it to f16), and ties round half up (floor(v + 0.5), exact here: |v| <= 127); so
// |x - xd * xq| <= xd / 2 (plus f32 rounding of x * 127 / amax), and q is never -128: every
// value lies in [-127, 127].
// Grid (cdiv(K/32, BB), rows): BB blocks of one row per program.
template <int BB>
void quantize_activations_q8(Ptr<const f32> x, Ptr<i8> xq, Ptr<f32> xd, Scalar<i32> K) {
  auto blocks = K / 32;
  auto rb = program_id(0) * BB + arange<BB>();  // this program's blocks of the row
  auto row_start = wide(program_id(1)) * wide(K);
  auto idx = row_start + col(wide(rb)) * 32 + row(wide(arange<32>()));  // [BB, 32]
  auto in_row = col(rb) * 32 + row(arange<32>()) < K;                   // whole blocks past the row's end are masked
  auto v = load(x + idx, in_row, 0.0f);
  auto amax = max<1>(abs(v));  // [BB]
  auto inverse = where(amax > 0.0f, 127.0f / amax, 0.0f);
  store(xq + idx, cast<i8>(floor(v * col(inverse) + 0.5f)), in_row);
  store(xd + wide(program_id(1)) * wide(blocks) + wide(rb), amax / 127.0f, rb < blocks);
}

}  // namespace kdsl::kernels
