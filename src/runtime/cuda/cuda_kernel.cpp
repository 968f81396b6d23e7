// cuda_kernel.cpp - specialization, compilation and launch of kernels on an NVIDIA GPU
#include "runtime/cuda/cuda_kernel.h"

#include <fmt/format.h>

#include <bit>

#include <kdsl/error.h>

#include "frontend/tracer.h"

namespace kdsl::detail {

CudaKernel::CudaKernel(CudaDevice &device, KernelSignature signature, CompileOptions options)
    : device_(device), sig_(std::move(signature)), options_(options) {}

CudaKernel::Entry &CudaKernel::find(const std::vector<ArgValue> &args, std::vector<uint64_t> &slots) {
  if (args.size() != sig_.params.size())
    throw Error(fmt::format("kernel '{}' takes {} arguments, {} were given", sig_.name, sig_.params.size(), args.size()));
  std::vector<ir::ArgClass> classes(args.size(), ir::ArgClass::None);
  slots.assign(args.size(), 0);
  for (size_t i = 0; i < args.size(); ++i) {
    const TypeDesc &p = sig_.params[i];
    const ArgValue &a = args[i];
    if (p.is_ptr != a.is_ptr) throw Error(fmt::format("kernel '{}': argument {} expects {}", sig_.name, i, p.is_ptr ? "a device pointer" : "a number"));
    if (p.is_ptr) {
      slots[i] = a.bits;
      if (a.bits % 16 == 0) classes[i] = ir::ArgClass::Divisible16;
    } else if (is_float(p.elem)) {
      double v = a.dtype == DType::F32 ? std::bit_cast<double>(a.bits) : double(int64_t(a.bits));
      float f = float(v);
      slots[i] = p.elem == DType::F32 ? std::bit_cast<uint32_t>(f) : p.elem == DType::F16 ? f32_to_f16_bits(f) : f32_to_bf16_bits(f);
    } else {
      slots[i] = a.bits;
      int64_t v = int64_t(a.bits);
      classes[i] = v == 1 ? ir::ArgClass::EqualToOne : v % 16 == 0 ? ir::ArgClass::Divisible16 : ir::ArgClass::None;
    }
  }
  std::lock_guard lock(mutex_);
  auto &entry = entries_[classes];
  if (!entry) {
    frontend::Tracer tracer(sig_.name, sig_.params, classes);
    sig_.trace(tracer.argument_values());
    ir::Function fn = tracer.finish();
    codegen::CudaCompileOptions options;
    options.arch = device_.info().name;
    options.num_warps = options_.num_warps;
    options.num_stages = options_.num_stages;
    auto fresh = std::make_unique<Entry>();
    std::string symbol = fmt::format("kdsl_cuda_{}", entries_.size());
    fresh->object = codegen::compile_for_cuda(fn, symbol, options, codegen::DumpOptions::from_env());
    fresh->function = device_.load(fresh->object.object, symbol, fresh->object.resources.dynamic_shared_bytes, fresh->object.resources.threads);
    entry = std::move(fresh);
  }
  return *entry;
}

const codegen::CompiledObject &CudaKernel::compiled(const std::vector<ArgValue> &args) {
  std::vector<uint64_t> slots;
  return find(args, slots).object;
}

void CudaKernel::launch(const Grid &g, const std::vector<ArgValue> &args) {
  std::vector<uint64_t> slots;
  Entry &e = find(args, slots);
  for (int64_t extent : {g.x, g.y, g.z})
    if (extent < 0 || extent > (int64_t(1) << 31) - 1)
      throw Error(fmt::format("kernel '{}': grid ({}, {}, {}) has an extent outside [0, 2^31)", sig_.name, g.x, g.y, g.z));
  if (g.y > 65535 || g.z > 65535) throw Error(fmt::format("kernel '{}': CUDA grids allow at most 65535 programs along y and z, got ({}, {}, {})", sig_.name, g.x, g.y, g.z));
  int32_t grid[3] = {int32_t(g.x), int32_t(g.y), int32_t(g.z)};
  device_.launch(e.function, grid, slots.data(), slots.size());
}

}  // namespace kdsl::detail
