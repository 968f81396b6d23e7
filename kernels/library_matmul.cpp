// library_matmul.cpp - Library::matmul over f32, f16 and bf16 weights, and over x its producer rounded to them: the sizes checked, the weight type's dispatch called (library_dense.h)
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

void Library::matmul(const void *x, DType xtype, const void *w, WeightType wtype, const float *bias, float *out, int rows, int N, int K, int row_group,
                     const void *w_stored) {
  if (xtype == DType::F32) return matmul(static_cast<const float *>(x), w, wtype, bias, out, rows, N, K, row_group, w_stored);
  detail::require(xtype == product_input_type(wtype) && row_group == 1, "matmul", [&] {
    return "x of " + std::string(dtype_name(xtype)) + " is multiplied by weights of its own type on a GPU, as product_input_type says (got " +
           std::string(weight_type_info(wtype).name) + " weights" + (dispatches_for_gpu() ? "" : " on the CPU") +
           (row_group == 1 ? "" : ", grouped by " + std::to_string(row_group) + " rows") + ")";
  });
  detail::require(rows >= 0 && N > 0 && K > 0, "matmul", [&] {
    return "sizes must be positive (rows " + std::to_string(rows) + ", N " + std::to_string(N) + ", K " + std::to_string(K) + ")";
  });
  if (rows == 0) return;
  if (xtype == DType::F16)
    detail::run_gpu_dense_matmul<f16, f16>(*impl_, static_cast<const half *>(x), static_cast<const half *>(w), bias, out, rows, N, K);
  else
    detail::run_gpu_dense_matmul<bf16, bf16>(*impl_, static_cast<const bfloat16 *>(x), static_cast<const bfloat16 *>(w), bias, out, rows, N, K);
}

}  // namespace kdsl::kernels
