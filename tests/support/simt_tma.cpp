// simt_tma.cpp - Hopper's transaction barriers (mbarrier) and TMA tile copies and stores on the emulated machine, the barriers' state kept beside shared memory
#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/simt_machine.h"

namespace kdsl::simt {
namespace {

// One mbarrier object as the PTX ISA describes it ("Contents of the mbarrier object"). Kept
// here rather than in its 8 bytes so that a kernel writing over a live barrier cannot corrupt
// the emulator's view, and so that an invalidated barrier is told apart from one never made.
struct Mbarrier {
  bool valid = false;
  int32_t count = 0;    // arrivals each phase expects
  int32_t pending = 0;  // arrivals this phase still expects
  int64_t tx = 0;       // bytes announced (expect_tx) and not yet landed (complete_tx)
  int32_t parity = 0;   // of the current, incomplete phase
};

// The emulated threads run at once, so every barrier operation takes this lock.
std::mutex barriers_mutex;
std::map<uint64_t, Mbarrier> barriers;  // by host address; an invalidated one stays, not valid

// Set once a wait has timed out: the launch has faulted, and every later wait of it would time
// out too (a kernel waits each iteration), so they give up at once.
std::atomic<bool> gave_up_waiting = false;

// This thread's current spin on try_wait: which phase, since when.
struct Spin {
  uint64_t barrier = 0;
  int32_t parity = -1;
  std::chrono::steady_clock::time_point since;
};
thread_local Spin spin;

uint64_t shared_offset(uint64_t address) { return address - reinterpret_cast<uint64_t>(machine.shared); }

bool in_shared(uint64_t address, uint64_t bytes) {
  uint64_t start = reinterpret_cast<uint64_t>(machine.shared), size = sizeof machine.shared;
  return address >= start && address - start <= size && bytes <= size - (address - start);
}

// The barrier at `address` where it is valid; otherwise the block's fault, naming
// `instruction`, and null. The caller holds barriers_mutex.
Mbarrier *valid_barrier(uint64_t address, const char *instruction) {
  if (address % 8 || !in_shared(address, 8)) {
    record_fault(fmt::format("{}: the barrier address {:#x} is not 8 aligned bytes of shared memory", instruction, address));
    return nullptr;
  }
  auto it = barriers.find(address);
  if (it != barriers.end() && it->second.valid) return &it->second;
  record_fault(fmt::format("{}: the barrier at shared offset {} is {}", instruction, shared_offset(address),
                           it == barriers.end() ? "not initialized (no mbarrier.init)" : "invalidated (mbarrier.inval) and not initialized again"));
  return nullptr;
}

// A phase completes once its arrivals are all in and its announced bytes have all landed; the
// next phase expects `count` arrivals again.
void complete_if_done(Mbarrier &b) {
  if (b.pending != 0 || b.tx != 0) return;
  b.parity ^= 1;
  b.pending = b.count;
}

// What TMA does when a copy's bytes have landed. The PTX ISA lets tx-count dip below zero while
// a phase waits for its arrivals; the emulator, whose copies land at once, asks instead that
// the bytes be announced (arrive.expect_tx) before the copy is issued, the order the lowering
// emits, so that a copy nobody announced is caught rather than silently cancelling a later one.
void complete_tx(uint64_t address, int64_t bytes) {
  std::lock_guard lock(barriers_mutex);
  Mbarrier *b = valid_barrier(address, "cp.async.bulk.tensor (complete_tx)");
  if (!b) return;
  if (bytes > b->tx) {
    record_fault(fmt::format("cp.async.bulk.tensor: {} bytes landed on the barrier at shared offset {}, which expected only {} "
                             "(the transaction count went below zero: announce the bytes with arrive.expect_tx before the copy)",
                             bytes, shared_offset(address), b->tx));
    return;
  }
  b->tx -= bytes;
  complete_if_done(*b);
}

}  // namespace

void mbarrier_init(uint64_t barrier, int32_t count) {
  std::lock_guard lock(barriers_mutex);
  if (barrier % 8 || !in_shared(barrier, 8)) {
    record_fault(fmt::format("mbarrier.init: the barrier address {:#x} is not 8 aligned bytes of shared memory", barrier));
    return;
  }
  if (count < 1) {
    record_fault(fmt::format("mbarrier.init: an arrival count of {} at shared offset {} (at least 1)", count, shared_offset(barrier)));
    return;
  }
  Mbarrier &b = barriers[barrier];
  if (b.valid) {
    record_fault(fmt::format("mbarrier.init: the barrier at shared offset {} is already initialized (init again only after mbarrier.inval)", shared_offset(barrier)));
    return;
  }
  b = {true, count, count, 0, 0};
}

void mbarrier_arrive_expect_tx(uint64_t barrier, int32_t bytes) {
  std::lock_guard lock(barriers_mutex);
  Mbarrier *b = valid_barrier(barrier, "mbarrier.arrive.expect_tx");
  if (!b) return;
  if (bytes < 0) {
    record_fault(fmt::format("mbarrier.arrive.expect_tx: {} bytes announced on the barrier at shared offset {}", bytes, shared_offset(barrier)));
    return;
  }
  if (b->pending == 0) {  // the phase has all its arrivals and waits only for bytes
    record_fault(fmt::format("mbarrier.arrive.expect_tx: more arrivals in one phase than the barrier's count ({}) at shared offset {}", b->count,
                             shared_offset(barrier)));
    return;
  }
  b->tx += bytes;
  b->pending -= 1;
  complete_if_done(*b);
}

int32_t mbarrier_try_wait_parity(uint64_t barrier, int32_t parity) {
  {
    std::lock_guard lock(barriers_mutex);
    Mbarrier *b = valid_barrier(barrier, "mbarrier.try_wait.parity");
    if (!b) return 1;  // the fault ends the launch; a 0 would keep the kernel looping
    if (b->parity != (parity & 1)) {
      spin = {};
      return 1;
    }
  }
  if (gave_up_waiting) return 1;
  auto now = std::chrono::steady_clock::now();
  if (spin.barrier != barrier || spin.parity != (parity & 1)) spin = {barrier, parity & 1, now};
  if (now - spin.since > machine.mbarrier_timeout) {
    record_fault(fmt::format("mbarrier: a thread waited {} ms for a phase that never completed (thread {}, barrier at shared offset {}, parity {})",
                             machine.mbarrier_timeout.count(), thread_id(), shared_offset(barrier), parity & 1));
    gave_up_waiting = true;
    spin = {};
    return 1;
  }
  // 0 sends the kernel round its loop: let the threads that would complete the phase run.
  std::this_thread::yield();
  return 0;
}

void mbarrier_inval(uint64_t barrier) {
  std::lock_guard lock(barriers_mutex);
  if (Mbarrier *b = valid_barrier(barrier, "mbarrier.inval")) b->valid = false;
}

void mbarrier_reset() {
  std::lock_guard lock(barriers_mutex);
  barriers.clear();
  gave_up_waiting = false;
  spin = {};
}

void mbarrier_program_end() {
  std::lock_guard lock(barriers_mutex);
  for (const auto &[address, b] : barriers)
    if (b.valid) {
      record_fault(fmt::format("mbarrier: the program ended with the barrier at shared offset {} still valid (no mbarrier.inval after its last use)",
                               shared_offset(address)));
      break;
    }
  barriers.clear();
}

namespace {
// The map at `tensor_map` where it is one the emulator encoded; otherwise the block's fault and null.
const EmulatedTensorMap *tensor_map_operand(uint64_t tensor_map) {
  const auto *map = reinterpret_cast<const EmulatedTensorMap *>(tensor_map);
  if (!tensor_map || tensor_map % 64 || map->magic != EmulatedTensorMap::kMagic) {
    record_fault(fmt::format("cp.async.bulk.tensor: the tensor map operand {:#x} is not one of the kernel's tensor map parameters", tensor_map));
    return nullptr;
  }
  return map;
}

// Where byte `o` of a box (rows of swizzle_bytes, its start aligned to 8 rows) lies under
// TMA's swizzle, a function of the shared address: the 16-byte chunk bits (4 and up) XORed
// with the bits from 7 up, three of each at 128 bytes, two at 64, one at 32 (with the box so
// aligned, a box offset's bits are the address's); 0 (no swizzle) leaves it.
uint64_t swizzled(uint64_t o, int swizzle_bytes) {
  if (swizzle_bytes == 0) return o;
  return o ^ (((o >> 7) & uint64_t(swizzle_bytes / 16 - 1)) << 4);
}

// A swizzled box's rows must be the swizzle's width and its shared memory aligned to 8 of
// them; an unswizzled one (stores only), 128 bytes. The block's fault naming `instruction`
// otherwise.
bool box_fits(const EmulatedTensorMap &map, uint64_t shared, bool unswizzled_allowed, const char *instruction) {
  const int64_t row_bytes = int64_t(map.box_cols) * map.elem_bytes, box_bytes = row_bytes * map.box_rows;
  const int swizzle = map.swizzle_bytes;
  if (swizzle != 128 && swizzle != 64 && swizzle != 32 && !(swizzle == 0 && unswizzled_allowed)) {
    record_fault(fmt::format("{}: a {}-byte swizzle (the lowering's maps take 128, 64 or 32{})", instruction, swizzle, unswizzled_allowed ? ", or 0" : ""));
    return false;
  }
  if (swizzle != 0 && row_bytes != swizzle) {
    record_fault(fmt::format("{}: a box of {} columns of {} bytes under a {}-byte swizzle (a box row must be the swizzle's width)", instruction,
                             map.box_cols, map.elem_bytes, swizzle));
    return false;
  }
  const uint64_t align = swizzle != 0 ? uint64_t(8 * swizzle) : 128;
  if (shared % align || !in_shared(shared, uint64_t(box_bytes))) {
    record_fault(fmt::format("{}: the shared memory at {:#x} ({} bytes) is not shared memory aligned to {} bytes{}", instruction, shared, box_bytes, align,
                             swizzle != 0 ? " (8 rows of the swizzle)" : ""));
    return false;
  }
  return true;
}
}  // namespace

namespace {
// The map at `tensor_map` where its rank is the instruction's (`rank`); otherwise the block's
// fault and null.
const EmulatedTensorMap *tensor_map_of_rank(uint64_t tensor_map, int rank, const char *instruction) {
  const EmulatedTensorMap *map = tensor_map_operand(tensor_map);
  if (map && map->rank != rank) {
    record_fault(fmt::format("{}: a {}-D copy through a rank-{} tensor map", instruction, rank, map->rank));
    return nullptr;
  }
  return map;
}

// The tensor's element (plane, row, col) where it lies inside the tensor, else null.
const uint8_t *tensor_element(const EmulatedTensorMap &map, int64_t plane, int64_t row, int64_t col) {
  if (plane < 0 || plane >= map.planes || row < 0 || row >= map.rows || col < 0 || col >= map.cols) return nullptr;
  return reinterpret_cast<const uint8_t *>(map.base) + (plane * map.plane_stride + row * map.row_stride + col) * map.elem_bytes;
}

void tma_load(uint64_t dst, const EmulatedTensorMap *map, int32_t col, int32_t row, int32_t plane, uint64_t barrier) {
  if (!map || !box_fits(*map, dst, false, "cp.async.bulk.tensor")) return;
  const int64_t row_bytes = int64_t(map->box_cols) * map->elem_bytes, box_bytes = row_bytes * map->box_rows;
  auto *out = reinterpret_cast<uint8_t *>(dst);
  for (int64_t r = 0; r < map->box_rows; ++r)
    for (int64_t c = 0; c < map->box_cols; ++c) {
      uint8_t *to = out + swizzled(uint64_t(r * row_bytes + c * map->elem_bytes), map->swizzle_bytes);
      if (const uint8_t *from = tensor_element(*map, plane, int64_t(row) + r, int64_t(col) + c)) std::memcpy(to, from, size_t(map->elem_bytes));
      else std::memset(to, 0, size_t(map->elem_bytes));  // TMA fills what lies outside the tensor with zeros
    }
  complete_tx(barrier, box_bytes);
}
}  // namespace

void tma_load_2d(uint64_t dst, uint64_t tensor_map, int32_t col, int32_t row, uint64_t barrier) {
  tma_load(dst, tensor_map_of_rank(tensor_map, 2, "cp.async.bulk.tensor.2d"), col, row, 0, barrier);
}
void tma_load_3d(uint64_t dst, uint64_t tensor_map, int32_t col, int32_t row, int32_t plane, uint64_t barrier) {
  tma_load(dst, tensor_map_of_rank(tensor_map, 3, "cp.async.bulk.tensor.3d"), col, row, plane, barrier);
}

namespace {
// This thread's TMA stores not yet waited for: the boxes as they were read, by group.
struct StoredBox {
  uint64_t src = 0;
  std::vector<uint8_t> bytes;
};
struct BulkGroups {
  std::vector<StoredBox> open;                   // issued since the last commit_group
  std::vector<std::vector<StoredBox>> committed;
};
thread_local BulkGroups bulk_groups;
}  // namespace

namespace {
void tma_store(const EmulatedTensorMap *map, int32_t col, int32_t row, int32_t plane, uint64_t src) {
  if (!map || !box_fits(*map, src, true, "cp.async.bulk.tensor (store)")) return;
  const int64_t row_bytes = int64_t(map->box_cols) * map->elem_bytes, box_bytes = row_bytes * map->box_rows;
  const auto *in = reinterpret_cast<const uint8_t *>(src);
  for (int64_t r = 0; r < map->box_rows; ++r)
    for (int64_t c = 0; c < map->box_cols; ++c)
      if (const uint8_t *at = tensor_element(*map, plane, int64_t(row) + r, int64_t(col) + c))  // TMA skips what lies outside the tensor
        std::memcpy(const_cast<uint8_t *>(at), in + swizzled(uint64_t(r * row_bytes + c * map->elem_bytes), map->swizzle_bytes), size_t(map->elem_bytes));
  bulk_groups.open.push_back({src, std::vector<uint8_t>(in, in + box_bytes)});
}
}  // namespace

void tma_store_2d(uint64_t tensor_map, int32_t col, int32_t row, uint64_t src) {
  tma_store(tensor_map_of_rank(tensor_map, 2, "cp.async.bulk.tensor.2d (store)"), col, row, 0, src);
}
void tma_store_3d(uint64_t tensor_map, int32_t col, int32_t row, int32_t plane, uint64_t src) {
  tma_store(tensor_map_of_rank(tensor_map, 3, "cp.async.bulk.tensor.3d (store)"), col, row, plane, src);
}

void tma_store_commit() {
  bulk_groups.committed.push_back(std::move(bulk_groups.open));
  bulk_groups.open.clear();
}

void tma_store_wait_read() {
  for (const std::vector<StoredBox> &group : bulk_groups.committed)
    for (const StoredBox &box : group)
      if (std::memcmp(reinterpret_cast<const void *>(box.src), box.bytes.data(), box.bytes.size()) != 0) {
        record_fault(fmt::format("cp.async.bulk.tensor (store): the box at shared offset {} was written before cp.async.bulk.wait_group.read "
                                 "let its store go (TMA may have read the new bytes)",
                                 shared_offset(box.src)));
        break;
      }
  bulk_groups.committed.clear();
}

void tma_store_program_end() {
  if (!bulk_groups.open.empty() || !bulk_groups.committed.empty())
    record_fault("cp.async.bulk.tensor (store): the program ended with a TMA store whose shared memory was not waited for "
                 "(no cp.async.bulk.commit_group and wait_group.read after it)");
  bulk_groups = {};
}

}  // namespace kdsl::simt
