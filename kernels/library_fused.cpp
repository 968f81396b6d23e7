// library_fused.cpp - Library::matvec_fused: a GPU's decode product with the RMSNorm before it, the residual add or SwiGLU after it, in one launch
#include <string>

#include "kernels/library_dense.h"
#include "kernels/library_gpu_decode.h"
#include "kernels/matvec_quantized_wide.h"
#include "kernels/quant_formats.h"

namespace kdsl::kernels {
namespace {

using AfterProduct = Library::AfterProduct;

// What one fused product asks for: a norm before it (norm_w non-null), then what follows it.
struct FusedCall {
  const float *x, *norm_w;
  float eps;
  const float *bias;
  float *out;
  AfterProduct after;
  int N, K;
};

// Launches kernel template K<HAS_BIAS, NORMED, ADD, SWIGLU> (a matvec_wide_fused or
// matvec_quantized_wide_fused at its GPU tile) for the call's combination: a norm with or
// without a bias, an add, or a normed SwiGLU.
template <template <bool, bool, bool, bool> class Kernel, class W>
void launch_fused(Library::Impl &im, const FusedCall &c, const W *w, int rows_per_program) {
  auto g = grid(cdiv(c.N, rows_per_program));
  const float *bias = c.bias ? c.bias : c.out;  // unread without a bias
  const float *norm_w = c.norm_w ? c.norm_w : c.x;  // unread without a norm
  auto run = [&]<bool B, bool NORMED, bool ADD, bool SWIGLU>() {
    im.kernel<Kernel<B, NORMED, ADD, SWIGLU>::value>()(g, c.x, norm_w, w, bias, c.out, c.N, c.K, c.eps);
  };
  if (c.after == AfterProduct::AddToOut) run.template operator()<false, false, true, false>();
  else if (c.after == AfterProduct::Swiglu) run.template operator()<false, true, false, true>();
  else if (c.bias) run.template operator()<true, true, false, false>();
  else run.template operator()<false, true, false, false>();
}

template <class T, detail::MatvecConfig C>
struct DenseFused {
  template <bool B, bool NORMED, bool ADD, bool SWIGLU>
  struct At {
    static constexpr auto value = &matvec_wide_fused<T, C.rows, C.cols, B, NORMED, ADD, SWIGLU>;
  };
};

// The dense products at the GPU decode tile for their K (library_dense.h).
template <class T>
void launch_dense_fused(Library::Impl &im, const FusedCall &c, const typename T::storage *w) {
  detail::with_gpu_decode_tile(c.K, [&]<detail::MatvecConfig C>() { launch_fused<DenseFused<T, C>::template At>(im, c, w, C.rows); });
}

// SwiGLU's kernel keeps two rows' sums a row (gate and up), so it steps half the blocks: the
// same bytes a step, and registers for more than two programs an SM (ptxas: 202 at 4 x 32).
template <class F>
struct ScaledFused {
  template <bool B, bool NORMED, bool ADD, bool SWIGLU>
  struct At {
    static constexpr int kBlocks = SWIGLU ? detail::kGpuQuantBlocks / 2 : detail::kGpuQuantBlocks;
    static constexpr auto value = &matvec_quantized_wide_fused<F, detail::kGpuQuantRows, kBlocks, B, NORMED, ADD, SWIGLU>;
  };
};

}  // namespace

bool Library::fuses_norm_and_add(WeightType wtype) const {
  if (detail::dispatches_for_cpu(*impl_)) return false;  // the CPU keeps its own decode kernels (integer dots, tuned tiles)
  const formats::WeightKernels k = weight_type_info(wtype).kernels;
  return k == formats::WeightKernels::Plain || k == formats::WeightKernels::Scaled;
}

void Library::matvec_fused(const float *x, const float *norm_w, float eps, const void *w, WeightType wtype, const float *bias, float *out,
                           AfterProduct after, int N, int K) {
  using detail::require;
  require(N > 0 && K > 0, "matvec_fused", [&] { return "sizes must be positive (N " + std::to_string(N) + ", K " + std::to_string(K) + ")"; });
  require(fuses_norm_and_add(wtype), "matvec_fused", [&] {
    return "no fused decode kernel for " + std::string(weight_type_info(wtype).name) + " weights on " + impl_->device.name() +
           " (fuses_norm_and_add says where there is one)";
  });
  const bool add = after == AfterProduct::AddToOut;
  require((norm_w != nullptr) != add, "matvec_fused", [] { return "expected a norm before the product or an add after it, one of the two"; });
  require(!bias || after == AfterProduct::Store, "matvec_fused", [] { return "only a stored product takes a bias"; });
  require(K % weight_type_info(wtype).block_elements == 0, "matvec_fused", [&] {
    return "K " + std::to_string(K) + " is not a multiple of " + std::to_string(weight_type_info(wtype).block_elements) + ", the block size of " +
           std::string(weight_type_info(wtype).name) + " weights";
  });
  Impl &im = *impl_;
  const FusedCall c{x, norm_w, eps, bias, out, after, N, K};
  switch (wtype) {
    case WeightType::F32: return launch_dense_fused<f32>(im, c, static_cast<const float *>(w));
    case WeightType::F16: return launch_dense_fused<f16>(im, c, static_cast<const half *>(w));
    case WeightType::BF16: return launch_dense_fused<bf16>(im, c, static_cast<const bfloat16 *>(w));
#define KDSL_KERNELS_None(Name)
#define KDSL_KERNELS_Plain(Name)
#define KDSL_KERNELS_Decoded(Name)
#define KDSL_KERNELS_Scaled(Name)                                                                                                   \
  case WeightType::Name:                                                                                                            \
    return launch_fused<ScaledFused<Name##Format>::At>(im, c, static_cast<const typename Name##Format::Quant::storage *>(w),       \
                                                       detail::kGpuQuantRows);
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) KDSL_KERNELS_##kernels(Name)
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE
#undef KDSL_KERNELS_None
#undef KDSL_KERNELS_Plain
#undef KDSL_KERNELS_Decoded
#undef KDSL_KERNELS_Scaled
    default: break;
  }
}

}  // namespace kdsl::kernels
