// hip_source.h - hand-written HIP C++ kernels, compiled at run time by hipRTC and launched like kdsl kernels
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <kdsl/cuda_source.h>
#include <kdsl/device.h>
#include <kdsl/kernel.h>

namespace kdsl {

struct HipSourceOptions {
  std::vector<std::string> flags;  // hipRTC options ("-ffast-math", "-DTILE=64"); --offload-arch defaults to the device's
  int shared_bytes = 0;            // dynamic LDS per workgroup
};

namespace detail {

class HipSourceImpl;
std::shared_ptr<HipSourceImpl> make_hip_source(const Device &device, std::string name, std::string source, HipSourceOptions options);
void launch_hip_source(HipSourceImpl &kernel, const Grid &grid, const ThreadBlock &block, const SourceArg *args, size_t count);
const std::string &hip_source_kernel_name(const HipSourceImpl &kernel);

}  // namespace detail

// A hand-written HIP kernel on one AMD device: k(grid(blocks), threads(256), buffer, n, ...),
// arguments as for CudaSourceKernel (each as the kernel declares it; pointers are Buffers on
// the device). The HIP runtime does not report parameter sizes, so they are not checked.
class HipSourceKernel {
 public:
  explicit HipSourceKernel(std::shared_ptr<detail::HipSourceImpl> impl) : impl_(std::move(impl)) {}

  template <class... A>
  void operator()(const Grid &g, const ThreadBlock &block, const A &...args) const {
    const detail::SourceArg values[] = {detail::source_arg(args)..., detail::SourceArg{}};
    detail::launch_hip_source(*impl_, g, block, values, sizeof...(A));
  }

  const std::string &name() const { return detail::hip_source_kernel_name(*impl_); }

 private:
  std::shared_ptr<detail::HipSourceImpl> impl_;
};

// Compiles kernel `name` of `source` (an extern "C" name, or a C++ name expression such as
// "scale<float>") for the device's gfx architecture with hipRTC, through the kernel cache
// (memory, then disk, keyed by the source's hash, the flags, the architecture and hipRTC's
// version). Throws kdsl::Error with hipRTC's log when it does not compile, naming the kernel;
// and when the device is not a HIP device or hipRTC is not installed.
HipSourceKernel hip_source(const Device &device, std::string name, std::string source, HipSourceOptions options = {});

}  // namespace kdsl
