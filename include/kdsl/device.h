// device.h - where kernels run: the host CPU (a thread pool) today; GPUs through the same handle
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace kdsl {

namespace detail {
class DeviceImpl;
}

class Device {
 public:
  enum class Kind { Cpu, Cuda, Hip };

  // The host CPU with `threads` workers (0: one per hardware thread).
  static Device cpu(int threads = 0);
  // The best device present: a GPU where one is found, else the CPU.
  static Device best();

  Kind kind() const;
  std::string name() const;  // "cpu (znver3, 2 threads)"
  int threads() const;

  detail::DeviceImpl &impl() const { return *impl_; }
  explicit Device(std::shared_ptr<detail::DeviceImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::DeviceImpl> impl_;
};

// A typed array in a device's memory (host memory for the CPU).
template <class T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t count) : data_(new T[count]()), count_(count) {}
  T *data() const { return data_.get(); }
  size_t size() const { return count_; }
  T &operator[](size_t i) { return data_[i]; }
  const T &operator[](size_t i) const { return data_[i]; }

 private:
  std::shared_ptr<T[]> data_;
  size_t count_ = 0;
};

}  // namespace kdsl
