// buffer.cpp - device memory behind kdsl::Buffer: allocation (zeroed) and host copies through the device's Backend
#include <fmt/format.h>

#include <kdsl/device.h>
#include <kdsl/error.h>

#include "runtime/backend.h"
#include "runtime/host_memory.h"

namespace kdsl::detail {

std::shared_ptr<void> device_alloc(const Device &device, size_t bytes) {
  if (device.impl().capturing()) capture_refusal("allocating a Buffer", device.name());
  void *p = device.impl().allocate(bytes);
  // The deleter holds the device, so memory never outlives the context it belongs to.
  return std::shared_ptr<void>(p, [device](void *q) { device.impl().release(q); });
}

void device_copy_from_host(const Device &device, void *device_dst, const void *host_src, size_t bytes) {
  if (device.impl().capturing()) capture_refusal("Buffer::copy_from_host", device.name());
  device.impl().copy_from_host(device_dst, host_src, bytes);
}

void device_copy_to_host(const Device &device, void *host_dst, const void *device_src, size_t bytes) {
  if (device.impl().capturing()) capture_refusal("Buffer::copy_to_host", device.name());
  device.impl().copy_to_host(host_dst, device_src, bytes);
}

void *host_alloc(size_t bytes) { return runtime::allocate_host_buffer(bytes); }

void host_release(void *memory) noexcept { runtime::release_host_buffer(memory); }

void buffer_size_error(const char *call, size_t given, size_t size) {
  throw Error(fmt::format("kdsl::Buffer::{}: {} elements given, the buffer holds {}", call, given, size));
}

}  // namespace kdsl::detail
