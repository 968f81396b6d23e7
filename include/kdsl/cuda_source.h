// cuda_source.h - hand-written CUDA C++ kernels, compiled at run time by NVRTC and launched like kdsl kernels
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <kdsl/device.h>
#include <kdsl/kernel.h>

namespace kdsl {

// Threads per block of a hand-written kernel (kdsl kernels take theirs from num_warps).
struct ThreadBlock {
  int64_t x = 1, y = 1, z = 1;
};
inline ThreadBlock threads(int64_t x, int64_t y = 1, int64_t z = 1) { return ThreadBlock{x, y, z}; }

struct CudaSourceOptions {
  std::vector<std::string> flags;  // NVRTC options ("-use_fast_math", "-DTILE=64"); -arch defaults to the device's
  int shared_bytes = 0;            // dynamic shared memory per block (opted in beyond 48 KB)
};

namespace detail {

class CudaSourceImpl;

// One argument of a hand-written kernel, passed as the kernel declares it: a scalar's own
// bytes (an int is 4 bytes, a double 8), or a pointer, which must be a Buffer on the device.
struct SourceArg {
  enum class Kind : uint8_t { Value, HostPointer, DevicePointer };
  Kind kind = Kind::Value;
  const void *value = nullptr;  // Value: the caller's object, alive for the launch
  size_t size = 0;
  uint64_t address = 0;  // pointers
  const char *type = "";  // for messages
};

template <class T>
SourceArg source_arg(const Buffer<T> &b) {
  SourceArg a;
  a.kind = b.on_device() ? SourceArg::Kind::DevicePointer : SourceArg::Kind::HostPointer;
  a.address = reinterpret_cast<uintptr_t>(b.data());
  a.size = sizeof(void *);
  a.type = "a pointer";
  return a;
}
template <class T>
SourceArg source_arg(const DevicePointer<T> &p) {
  SourceArg a;
  a.kind = SourceArg::Kind::DevicePointer;
  a.address = reinterpret_cast<uintptr_t>(p.address);
  a.size = sizeof(void *);
  a.type = "a pointer";
  return a;
}
template <class T>
SourceArg source_arg(const T &v) {
  SourceArg a;
  if constexpr (std::is_pointer_v<T>) {
    a.kind = SourceArg::Kind::HostPointer;  // a raw pointer cannot be told from host memory
    a.address = reinterpret_cast<uintptr_t>(v);
    a.size = sizeof(void *);
    a.type = "a pointer";
  } else {
    static_assert(std::is_trivially_copyable_v<T>, "arguments of a CUDA source kernel are Buffers or trivially copyable values");
    a.value = &v;
    a.size = sizeof(T);
    a.type = std::is_floating_point_v<T> ? "a floating-point value" : std::is_integral_v<T> ? "an integer" : "a value";
  }
  return a;
}

std::shared_ptr<CudaSourceImpl> make_cuda_source(const Device &device, std::string name, std::string source, CudaSourceOptions options);
void launch_source(CudaSourceImpl &kernel, const Grid &grid, const ThreadBlock &block, const SourceArg *args, size_t count);
const std::string &source_kernel_name(const CudaSourceImpl &kernel);

}  // namespace detail

// A hand-written CUDA kernel on one device: k(grid(blocks), threads(256), buffer, n, ...).
// Pass each argument as the kernel declares it (float for float, int64_t for long long);
// pointers are kdsl::Buffers allocated on the device (or device_pointer(p) for GPU memory
// allocated elsewhere). Where the driver reports the kernel's
// parameter sizes (CUDA 12.4+), the count and the size of each argument are checked.
class CudaSourceKernel {
 public:
  explicit CudaSourceKernel(std::shared_ptr<detail::CudaSourceImpl> impl) : impl_(std::move(impl)) {}

  template <class... A>
  void operator()(const Grid &g, const ThreadBlock &block, const A &...args) const {
    const detail::SourceArg values[] = {detail::source_arg(args)..., detail::SourceArg{}};
    detail::launch_source(*impl_, g, block, values, sizeof...(A));
  }

  const std::string &name() const { return detail::source_kernel_name(*impl_); }

 private:
  std::shared_ptr<detail::CudaSourceImpl> impl_;
};

// Compiles kernel `name` of `source` (an extern "C" name, or a C++ name expression such as
// "scale<float>") for the device with NVRTC, through the kernel cache (memory, then disk,
// keyed by the source's hash, the flags and the architecture). Throws kdsl::Error with
// NVRTC's log when it does not compile, naming the kernel; and when the device is not a CUDA
// device or NVRTC is not installed.
CudaSourceKernel cuda_source(const Device &device, std::string name, std::string source, CudaSourceOptions options = {});

}  // namespace kdsl
