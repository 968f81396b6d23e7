// example_kernels.h - the kernels kdsl-compile and the NVPTX tests compile by name, traced without a device
#pragma once
#include <string>
#include <vector>

#include <kdsl/kernel.h>

#include "examples/layer_norm.h"
#include "examples/matmul.h"
#include "examples/softmax.h"
#include "examples/vector_add.h"
#include "frontend/tracer.h"
#include "ir/ir.h"
#include "kernels/argmax.h"
#include "kernels/matmul.h"
#include "kernels/matvec.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax.h"
#include "kernels/swiglu.h"

namespace kdsl::tools {

struct NamedKernel {
  std::string name;  // "vector_add"
  detail::KernelSignature signature;
  int num_warps = 4;  // the example's default configuration
};

template <auto K>
NamedKernel named_kernel(std::string name, int num_warps = 4) {
  using Params = detail::kernel_params<decltype(K)>;
  return {std::move(name), {detail::kernel_name<K>(), Params::types(), &Params::template trace<K>}, num_warps};
}

// The examples at the block sizes their programs launch with, then library kernels.
inline std::vector<NamedKernel> example_kernels() {
  return {
      named_kernel<examples::add<1024>>("vector_add"),
      named_kernel<examples::softmax<1024>>("softmax"),
      named_kernel<examples::layer_norm<1024>>("layer_norm"),
      named_kernel<examples::matmul<32, 32, 32>>("matmul"),
      named_kernel<kernels::rmsnorm<1024, false>>("rmsnorm"),
      named_kernel<kernels::rmsnorm<1024, true>>("rmsnorm_residual"),
      named_kernel<kernels::softmax_online<1024>>("softmax_online"),
      named_kernel<kernels::swiglu<1024>>("swiglu"),
      named_kernel<kernels::argmax<1024>>("argmax"),
      named_kernel<kernels::matvec<f16, 64, 64, true>>("matvec_f16"),
      named_kernel<kernels::matvec<f16, 8, 128, false, 128>>("matvec_f16_decode"),  // as Library::matmul launches them
      named_kernel<kernels::matmul<f16, 64, 64, 32, false>>("matmul_f16_prefill"),
  };
}

// The specialization a launch with these classes would get: "aligned" (every pointer 16-byte
// aligned and every integer but a Dynamic<T> a multiple of 16), "none", or one class per argument: "16", "1", "_".
inline std::vector<ir::ArgClass> parse_specialization(const std::string &spec, const detail::KernelSignature &sig) {
  std::vector<ir::ArgClass> classes(sig.params.size(), ir::ArgClass::None);
  if (spec == "none") return classes;
  if (spec == "aligned") {
    for (size_t i = 0; i < classes.size(); ++i)
      if (sig.params[i].is_ptr || (!is_float(sig.params[i].elem) && !sig.params[i].no_specialize)) classes[i] = ir::ArgClass::Divisible16;
    return classes;
  }
  size_t i = 0, start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    std::string item = spec.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (i >= classes.size())
      throw Error("specialization '" + spec + "' has more entries than kernel '" + sig.name + "' has arguments (" + std::to_string(classes.size()) + ")");
    if (item != "_" && sig.params[i].no_specialize)
      throw Error("specialization entry '" + item + "': argument " + std::to_string(i) + " of kernel '" + sig.name + "' is a Dynamic scalar, never specialized: write _");
    if (item == "16") classes[i] = ir::ArgClass::Divisible16;
    else if (item == "1") classes[i] = ir::ArgClass::EqualToOne;
    else if (item != "_") throw Error("specialization entry '" + item + "' must be 16, 1 or _");
    ++i;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (i != classes.size())
    throw Error("specialization '" + spec + "' has " + std::to_string(i) + " entries; kernel '" + sig.name + "' has " + std::to_string(classes.size()) + " arguments");
  return classes;
}

// Traces the kernel body once into block IR, as a launch would, without a device.
inline ir::Function trace_kernel(const detail::KernelSignature &sig, const std::vector<ir::ArgClass> &classes) {
  frontend::Tracer tracer(sig.name, sig.params, classes);
  sig.trace(tracer.argument_values());
  return tracer.finish();
}

}  // namespace kdsl::tools
