// example_kernels.h - the kernels kdsl-compile registers and the NVPTX tests compile by name, traced without a device
#pragma once
#include <string>
#include <vector>

#include <kdsl/kernel.h>
#include <kdsl/registry.h>
#include <kdsl/specialization.h>

#include "examples/flash_attention.h"
#include "examples/layer_norm.h"
#include "examples/matmul.h"
#include "examples/matmul_descriptor.h"
#include "examples/matmul_persistent.h"
#include "examples/softmax.h"
#include "examples/vector_add.h"
#include "frontend/trace_kernel.h"
#include "ir/ir.h"
#include "kernels/argmax.h"
#include "kernels/matmul.h"
#include "kernels/matmul_narrow.h"
#include "kernels/matvec.h"
#include "kernels/matvec_quantized_wide.h"
#include "kernels/matvec_rows.h"
#include "kernels/matvec_wide.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax.h"
#include "kernels/swiglu.h"
#include "runtime/specialization_ir.h"

namespace kdsl::tools {

struct NamedKernel {
  std::string name;  // "vector_add"
  detail::KernelSignature signature;
  int num_warps = 4;  // the example's default configuration
};

template <auto K>
NamedKernel named_kernel(std::string name, int num_warps = 4) {
  return {std::move(name), detail::kernel_signature<K>(), num_warps};
}

// The examples at the block sizes their programs launch with, then library kernels.
inline std::vector<NamedKernel> example_kernels() {
  return {
      named_kernel<examples::add<1024>>("vector_add"),
      named_kernel<examples::softmax<1024>>("softmax"),
      named_kernel<examples::layer_norm<1024>>("layer_norm"),
      named_kernel<examples::matmul<32, 32, 32>>("matmul"),
      // Triton's tutorial matmul tile through tensor descriptors (TMA on sm_90a)
      named_kernel<examples::matmul_descriptor<f16, f16, 128, 128, 64>>("matmul_descriptor", 8),
      named_kernel<examples::matmul_persistent<f16, f16, 128, 128, 64>>("matmul_persistent", 8),
      // Triton's tutorial configuration at D = 128: 128 query rows, 64 keys a step, 8 warps
      named_kernel<examples::flash_attention<f16, 128, 64, 128, false>>("flash_attention", 8),
      named_kernel<examples::flash_attention_descriptor<f16, 128, 64, 128, false>>("flash_attention_descriptor", 8),
      named_kernel<kernels::rmsnorm<1024, false>>("rmsnorm"),
      named_kernel<kernels::rmsnorm<1024, true>>("rmsnorm_residual"),
      named_kernel<kernels::softmax_online<1024>>("softmax_online"),
      named_kernel<kernels::swiglu<1024>>("swiglu"),
      named_kernel<kernels::argmax<1024>>("argmax"),
      named_kernel<kernels::matvec<f16, 64, 64, true>>("matvec_f16"),
      named_kernel<kernels::matvec<f16, 8, 128, false, 128>>("matvec_f16_decode"),  // as Library::matmul launches them on the CPU
      named_kernel<kernels::matmul<f16, 64, 64, 32, false>>("matmul_f16_prefill"),
      named_kernel<kernels::matvec_wide<bf16, 4, 512, false>>("matvec_bf16_gpu_decode"),  // and on a GPU
      named_kernel<kernels::matmul_narrow<bf16, 64, 128, 64, false>>("matmul_bf16_gpu_prefill"),
      named_kernel<kernels::matmul_narrow<bf16, 64, 128, 64, false, bf16>>("matmul_bf16_gpu_prefill_bf16_x"),  // x as its producer rounded it
      // The rest of a GPU's bf16 rows (Library::product_input_type): their producers, and one and a few rows' products of them
      named_kernel<kernels::rmsnorm<1024, true, bf16>>("rmsnorm_residual_bf16_out"),
      named_kernel<kernels::swiglu<1024, bf16>>("swiglu_bf16_out"),
      named_kernel<kernels::matvec_wide<bf16, 8, 256, false, bf16>>("matvec_bf16_gpu_bf16_x"),
      named_kernel<kernels::matvec_rows<bf16, 16, 8, 128, false, 128, bf16>>("matvec_rows_bf16_gpu_bf16_x"),
      named_kernel<kernels::matvec_quantized_wide<kernels::Q8_0Format, 4, 32, false>>("matvec_q8_0_gpu_decode"),
      named_kernel<kernels::matvec_quantized_wide<kernels::Q4_0Format, 4, 32, false>>("matvec_q4_0_gpu_decode"),
      // The fused decode's heaviest forms: gate, up and SwiGLU after the norm (two rows' sums each)
      named_kernel<kernels::matvec_wide_fused<bf16, 8, 256, false, true, false, true>>("matvec_bf16_gpu_swiglu"),
      named_kernel<kernels::matvec_quantized_wide_fused<kernels::Q8_0Format, 4, 16, false, true, false, true>>("matvec_q8_0_gpu_swiglu"),
  };
}

// The classes a launch would give: "aligned", "none" or one of 16/1/_ per argument ("16,16,_"),
// read by kdsl::Specialization (the one parser of that text).
inline std::vector<ir::ArgClass> parse_specialization(const std::string &spec, const detail::KernelSignature &sig) {
  return detail::to_arg_classes(Specialization::parse(spec).classes_for(sig.params, sig.name));
}

// Traces the kernel body once into block IR, as a launch would, without a device.
inline ir::Function trace_kernel(const detail::KernelSignature &sig, const std::vector<ir::ArgClass> &classes) {
  return frontend::trace_kernel(sig, classes);
}

// The examples as registry entries: kdsl-compile registers them (example_kernels.cpp) beside a
// user's --load libraries.
inline std::vector<RegisteredKernel> example_registry_entries() {
  std::vector<RegisteredKernel> out;
  for (NamedKernel &k : example_kernels()) out.push_back({k.name, k.signature, CompileOptions{.num_warps = k.num_warps}, {}});
  return out;
}

}  // namespace kdsl::tools
