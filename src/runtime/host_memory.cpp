// host_memory.cpp - the CPU device's buffers: calloc for small ones, 2 MiB-aligned anonymous mappings advised MADV_HUGEPAGE for large ones
#include "runtime/host_memory.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kdsl::runtime {
namespace {

// The large buffers' lengths by address: munmap needs them, release is given the address alone.
struct LargeBuffers {
  std::mutex mutex;
  std::unordered_map<const void *, size_t> length;
};
LargeBuffers &large_buffers() {
  static LargeBuffers b;
  return b;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

#if defined(__linux__)
// A mapping of `length` bytes (a multiple of kHugePageBytes) at a kHugePageBytes boundary:
// map one huge page more and unmap what lies outside the boundary. nullptr if mmap fails.
void *map_aligned(size_t length) {
  const size_t padded = length + kHugePageBytes;
  void *raw = mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = uintptr_t(raw), aligned = round_up(begin, kHugePageBytes);
  if (aligned > begin) munmap(raw, aligned - begin);
  const uintptr_t end = begin + padded, used_end = aligned + length;
  if (end > used_end) munmap(reinterpret_cast<void *>(used_end), end - used_end);
  void *p = reinterpret_cast<void *>(aligned);
  madvise(p, length, MADV_HUGEPAGE);  // advice: where transparent huge pages are off it does nothing
  return p;
}
#endif

}  // namespace

void *allocate_host_buffer(size_t bytes) {
#if defined(__linux__)
  if (bytes >= kLargeBufferBytes) {
    const size_t length = round_up(bytes, kHugePageBytes);
    if (void *p = map_aligned(length)) {
      std::lock_guard lock(large_buffers().mutex);
      large_buffers().length.emplace(p, length);
      return p;
    }
  }
#endif
  void *p = std::calloc(bytes ? bytes : 1, 1);
  if (!p) throw std::bad_alloc();
  return p;
}

void release_host_buffer(void *memory) noexcept {
  if (!memory) return;
#if defined(__linux__)
  {
    std::lock_guard lock(large_buffers().mutex);
    auto it = large_buffers().length.find(memory);
    if (it != large_buffers().length.end()) {
      munmap(memory, it->second);
      large_buffers().length.erase(it);
      return;
    }
  }
#endif
  std::free(memory);
}

bool is_large_host_buffer(const void *memory) {
  std::lock_guard lock(large_buffers().mutex);
  return large_buffers().length.count(memory) != 0;
}

}  // namespace kdsl::runtime
