// library_int_dot.h - the Library's integer-dot products on the CPU (library_int_dot.cpp), for the quantized matmul dispatch
#pragma once
#include <optional>

#include "kernels/library_impl.h"
#include "kernels/quantize_activations.h"

namespace kdsl::kernels::detail {

// The rows of x an integer-dot product quantizes: rows in memory, or rows that the step before
// the product makes inside the quantizer's launch (MadeRows: Library::matmul_normed and
// matmul_swiglu), from `x` (rmsnorm's input, updated in place by AddRmsNorm; SwiGLU's gate)
// and `other` (AddRmsNorm's residual; SwiGLU's up).
struct ActivationRows {
  ActivationRows(const float *rows) : x(rows) {}  // NOLINT: plain rows convert
  // rmsnorm(x) * norm_w, after x += residual (written back) where residual is non-null.
  static ActivationRows normed(float *x, const float *residual, const float *norm_w, float eps) {
    ActivationRows r(x);
    r.made = residual ? MadeRows::AddRmsNorm : MadeRows::RmsNorm;
    r.written = residual ? x : nullptr, r.other = residual, r.norm_w = norm_w, r.eps = eps;
    return r;
  }
  // silu(gate) * up.
  static ActivationRows swiglu(const float *gate, const float *up) {
    ActivationRows r(gate);
    r.made = MadeRows::Swiglu, r.other = up;
    return r;
  }

  const float *x;
  float *written = nullptr;  // x, where the step writes it back (AddRmsNorm)
  const float *other = nullptr;
  const float *norm_w = nullptr;
  float eps = 0.0f;
  std::optional<MadeRows> made;
};

// Library::matmul over weights of format F (a Name##Format of weight_types.def) by activation
// quantization and integer dot products, where F has an integer-dot policy
// (int_dot_policy.h), the device is the CPU and rows <= the Library's integer_dot_rows; false
// (nothing run) elsewhere, for the caller's f32 dequantize path.
template <class F>
bool matmul_int_dot(Library::Impl &im, const ActivationRows &x, const void *w, const float *bias, float *out, int rows, int N, int K);

// The same over W grouped by int_dot_policy<F>::row_group rows (formats/row_groups.h) for
// products of up to a few rows on the CPU; false (nothing run) for more rows or elsewhere,
// where the caller copies W back to rows as stored.
template <class F>
bool matmul_int_dot_grouped(Library::Impl &im, const ActivationRows &x, const void *w, const float *bias, float *out, int rows, int N, int K);

// The rows a matrix of format F with N rows is grouped by for this Library (Library::row_group).
template <class F>
int int_dot_row_group(const Library::Impl &im, int64_t N);

}  // namespace kdsl::kernels::detail
