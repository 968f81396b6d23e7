// device.h - where kernels run (the host CPU, an NVIDIA GPU) and the typed buffers that live there
#pragma once
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <kdsl/error.h>

namespace kdsl {

namespace detail {
class Backend;
}

// Where a device's kernels find their data: host memory (the CPU), or the device's own memory,
// which kernels reach through Buffers allocated on it (a GPU).
enum class MemorySpace { Host, Device };

class Device {
 public:
  enum class Kind { Cpu, Cuda, Hip };

  // The host CPU with `threads` workers (0: one per hardware thread).
  static Device cpu(int threads = 0);
  // NVIDIA GPU `ordinal` (sm_80 or newer), through the driver loaded at run time. Throws
  // kdsl::Error naming libcuda.so.1 when no driver is installed, CUDA_ERROR_NO_DEVICE when it
  // sees no GPU. One handle per ordinal: later calls return the same device.
  static Device cuda(int ordinal = 0);
  // AMD GPU `ordinal` (gfx90a, gfx942, gfx1100), through the HIP runtime loaded at run time.
  // Throws kdsl::Error naming libamdhip64.so when no runtime is installed, hipErrorNoDevice
  // when it sees no GPU, the architectures kdsl knows for another. One handle per ordinal.
  static Device hip(int ordinal = 0);
  // The best device present: CUDA GPU 0 when it initializes, else HIP GPU 0, else the CPU.
  // Never throws for a missing GPU; KDSL_DEVICE=cpu picks the CPU even where a GPU is present.
  // Chosen once.
  static Device best();

  Kind kind() const;
  std::string name() const;  // "cpu (znver3, 2 threads)", "cuda:0 (NVIDIA H200, sm_90, 132 SMs)", "hip:0 (AMD Instinct MI300X, gfx942, 304 CUs)"
  int threads() const;       // CPU: worker threads; GPU: multiprocessors
  // Host for the CPU, Device for a GPU: whether pointer arguments must be Buffers on the device.
  MemorySpace memory_space() const;
  // Waits for every launch and copy issued to the device (CPU launches are synchronous).
  void synchronize() const;
  // Bytes of memory free for buffers now: the GPU's (cuMemGetInfo), or the host's
  // MemAvailable (0 where it cannot be read).
  size_t free_memory() const;
  // Whether this is the CPU and kdsl compiles its kernels with the LLVM target feature
  // `feature` ("avx2", "avxvnni", "avx512vnni", "dotprod"): what the host lowering may use.
  // False on a GPU.
  bool has_cpu_feature(std::string_view feature) const;

  detail::Backend &impl() const { return *impl_; }
  explicit Device(std::shared_ptr<detail::Backend> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::Backend> impl_;
};

namespace detail {
// Device memory for Buffer (src/runtime/buffer.cpp): `bytes` zeroed bytes in the device's own
// memory, freed when the last owner goes; get() is the device address.
std::shared_ptr<void> device_alloc(const Device &device, size_t bytes);
void device_copy_from_host(const Device &device, void *device_dst, const void *host_src, size_t bytes);
void device_copy_to_host(const Device &device, void *host_dst, const void *device_src, size_t bytes);
[[noreturn]] void buffer_size_error(const char *call, size_t given, size_t size);
// Host memory for Buffer: `bytes` zeroed bytes (large blocks on 2 MiB pages where the system
// grants them: src/runtime/host_memory.h says why); throws std::bad_alloc.
void *host_alloc(size_t bytes);
void host_release(void *memory) noexcept;
}  // namespace detail

// A typed array in a device's memory: host memory for the CPU, GPU memory (cuMemAlloc) for a
// CUDA device. Copies of a Buffer share its memory, which is freed with the last of them.
// On a GPU, data() is a device address: pass the Buffer to kernels and move data with
// copy_from_host / copy_to_host; operator[] reads host memory only.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  // `count` zeroed elements of host memory. Not new T[](): a large block comes from fresh zero
  // pages that are faulted in on first use, so a KV cache sized for a long context costs
  // neither the time to clear it nor resident memory until positions are written.
  explicit Buffer(size_t count) : host_(zeroed_host(count)), data_(host_.get()), count_(count) {}
  // `count` zeroed elements in `device`'s memory.
  Buffer(const Device &device, size_t count) {
    if (device.memory_space() == MemorySpace::Host) {
      *this = Buffer(count);
      return;
    }
    device_memory_ = detail::device_alloc(device, count * sizeof(T));
    data_ = static_cast<T *>(device_memory_.get());
    count_ = count;
    device_.emplace(device);
  }
  // A copy of `values` in `device`'s memory.
  Buffer(const Device &device, std::span<const T> values) : Buffer(device, values.size()) { copy_from_host(values); }

  T *data() const { return data_; }
  size_t size() const { return count_; }
  // True when the memory is a GPU's (data() is then a device address).
  bool on_device() const { return device_.has_value(); }

  T &operator[](size_t i) {
    assert(!on_device() && "kdsl::Buffer::operator[] on GPU memory: use copy_to_host");
    return data_[i];
  }
  const T &operator[](size_t i) const {
    assert(!on_device() && "kdsl::Buffer::operator[] on GPU memory: use copy_to_host");
    return data_[i];
  }

  // Copies `src` to the start of the buffer; throws kdsl::Error when it is longer than size().
  void copy_from_host(std::span<const T> src) {
    if (src.size() > count_) detail::buffer_size_error("copy_from_host", src.size(), count_);
    if (src.empty()) return;
    if (device_) detail::device_copy_from_host(*device_, data_, src.data(), src.size_bytes());
    else std::memcpy(data_, src.data(), src.size_bytes());
  }
  // Copies the start of the buffer into `dst` (waiting for the device's launches first);
  // throws kdsl::Error when `dst` is longer than size().
  void copy_to_host(std::span<T> dst) const {
    if (dst.size() > count_) detail::buffer_size_error("copy_to_host", dst.size(), count_);
    if (dst.empty()) return;
    if (device_) detail::device_copy_to_host(*device_, dst.data(), data_, dst.size_bytes());
    else std::memcpy(dst.data(), data_, dst.size_bytes());
  }
  // The whole buffer, copied to host memory.
  std::vector<T> to_vector() const {
    std::vector<T> out(count_);
    copy_to_host(out);
    return out;
  }

 private:
  static std::shared_ptr<T[]> zeroed_host(size_t count) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>, "Buffer holds plain values");
    if (count > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    void *p = detail::host_alloc((count ? count : 1) * sizeof(T));
    return std::shared_ptr<T[]>(static_cast<T *>(p), [](T *q) { detail::host_release(q); });
  }

  std::shared_ptr<T[]> host_;
  std::shared_ptr<void> device_memory_;
  T *data_ = nullptr;
  size_t count_ = 0;
  std::optional<Device> device_;  // set for GPU memory
};

}  // namespace kdsl
