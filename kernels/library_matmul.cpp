// library_matmul.cpp - Library::matmul over f32, f16 and bf16 weights: the sizes checked, the weight type's tuned dispatch called (library_dense.h)
#include "kernels/library_dense.h"

namespace kdsl::kernels {

void Library::matmul(const float *x, const void *w, DType wtype, const float *bias, float *out, int rows, int N, int K) {
  detail::require(rows >= 0 && N > 0 && K > 0, "matmul", [&] {
    return "sizes must be positive (rows " + std::to_string(rows) + ", N " + std::to_string(N) + ", K " + std::to_string(K) + ")";
  });
  if (rows == 0) return;
  switch (wtype) {
    case DType::F32:
      return detail::run_dense_matmul<f32>(*impl_, x, static_cast<const float *>(w), bias, out, rows, N, K);
    case DType::F16:
      return detail::run_dense_matmul<f16>(*impl_, x, static_cast<const half *>(w), bias, out, rows, N, K);
    case DType::BF16:
      return detail::run_dense_matmul<bf16>(*impl_, x, static_cast<const bfloat16 *>(w), bias, out, rows, N, K);
    default:
      detail::require(false, "matmul",
                      [&] { return "weight type " + std::string(dtype_name(wtype)) + " is not supported (f32, f16 or bf16)"; });
  }
}

}  // namespace kdsl::kernels
