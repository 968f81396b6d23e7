// host_memory_test.cpp - host buffers: zeroed at every size, large ones 2 MiB-aligned mappings released by address, kdsl::Buffer through them
#include <doctest/doctest.h>
#include <kdsl/device.h>

#include <cstdint>
#include <cstring>

#include "runtime/host_memory.h"

using namespace kdsl::runtime;

namespace {
// Every byte of [p, p + n) is zero.
bool all_zero(const void *p, size_t n) {
  const auto *b = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i]) return false;
  return true;
}
}  // namespace

TEST_CASE("runtime: host buffers are zeroed; large ones are huge-page-aligned mappings, small ones are not") {
  for (size_t bytes : {size_t(0), size_t(1), size_t(100), kLargeBufferBytes - 1, kLargeBufferBytes, kHugePageBytes + 3, 3 * kHugePageBytes}) {
    CAPTURE(bytes);
    void *p = allocate_host_buffer(bytes);
    REQUIRE(p != nullptr);
    CHECK(all_zero(p, bytes));
    const bool large = bytes >= kLargeBufferBytes;
#if defined(__linux__)
    CHECK(is_large_host_buffer(p) == large);
    if (large) CHECK(reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0);
#endif
    if (bytes) std::memset(p, 0xab, bytes);  // every byte is writable
    release_host_buffer(p);
    CHECK(!is_large_host_buffer(p));
  }
  release_host_buffer(nullptr);  // nothing
}

TEST_CASE("runtime: released large buffers are unmapped and their addresses forgotten, many times over") {
  // Each round maps and unmaps 4 MiB; a leak of mappings or of the length table would show as
  // a failed mapping (then calloc: no longer aligned) or a stale entry.
  for (int i = 0; i < 200; ++i) {
    void *p = allocate_host_buffer(2 * kHugePageBytes);
    static_cast<char *>(p)[2 * kHugePageBytes - 1] = 1;
#if defined(__linux__)
    REQUIRE(is_large_host_buffer(p));
#endif
    release_host_buffer(p);
    REQUIRE(!is_large_host_buffer(p));
  }
}

TEST_CASE("runtime: a host kdsl::Buffer of a KV cache's size is zeroed and usable") {
  kdsl::Buffer<float> b(size_t(3) << 20);  // 12 MiB
  CHECK(all_zero(b.data(), b.size() * sizeof(float)));
  b.data()[b.size() - 1] = 2.5f;
  kdsl::Buffer<float> copy = b;  // shares the memory
  CHECK(copy.data()[copy.size() - 1] == 2.5f);
#if defined(__linux__)
  CHECK(is_large_host_buffer(b.data()));
#endif
}
