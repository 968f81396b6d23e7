// cuda_kernel.h - a traced kernel compiled for and launched on a CudaDevice, one cubin per specialization
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <kdsl/kernel.h>

#include "codegen/codegen.h"
#include "runtime/cuda/cuda_device.h"

namespace kdsl::detail {

// The CUDA launch path: classify arguments (pointers 16-byte aligned, integers divisible by
// 16 or equal to 1, as the host path does), trace, compile_for_cuda for the device's
// architecture, load, launch. Pointer arguments are device addresses. Until kernel.cpp
// dispatches by device kind (and the cache stores cubins), GPU tests and benchmarks use this.
class CudaKernel {
 public:
  CudaKernel(CudaDevice &device, KernelSignature signature, CompileOptions options);
  void launch(const Grid &grid, const std::vector<ArgValue> &args);
  // The compiled specialization these arguments select (compiling it if needed).
  const codegen::CompiledObject &compiled(const std::vector<ArgValue> &args);

 private:
  struct Entry {
    codegen::CompiledObject object;
    CudaFunction function;
  };
  Entry &find(const std::vector<ArgValue> &args, std::vector<uint64_t> &slots);

  CudaDevice &device_;
  KernelSignature sig_;
  CompileOptions options_;
  std::mutex mutex_;
  std::map<std::vector<ir::ArgClass>, std::unique_ptr<Entry>> entries_;
};

}  // namespace kdsl::detail
