// host_memory.h - host buffers (kdsl::Buffer on the host, the CPU device): zeroed, and large ones on 2 MiB pages where the kernel grants them
#pragma once
#include <cstddef>

namespace kdsl::runtime {

// At least this many bytes: an anonymous mapping aligned to kHugePageBytes and advised
// MADV_HUGEPAGE (Linux; elsewhere, or where the mapping fails, calloc). Why: a KV cache page
// holds page_size positions of every head, so one head's rows lie a position's whole row
// apart, and a decode attention step touched as many 4 KiB pages as it read rows: on huge
// pages its launches were shorter by a sixth (bench/RESULTS.md, the entry on decode attention).
// Untouched pages of a mapping cost no memory, as with calloc's large blocks.
inline constexpr size_t kHugePageBytes = size_t(2) << 20;
inline constexpr size_t kLargeBufferBytes = size_t(1) << 20;

// Zeroed memory for `bytes` (at least one byte's worth); throws std::bad_alloc.
void *allocate_host_buffer(size_t bytes);
// Releases what allocate_host_buffer returned (nullptr: nothing).
void release_host_buffer(void *memory) noexcept;
// Whether `memory` came from a huge-page-advised mapping (tests).
bool is_large_host_buffer(const void *memory);

}  // namespace kdsl::runtime
