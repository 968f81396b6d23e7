// lower_tile_store.cpp - a tile store through a tensor descriptor written by TMA: the block's registers into a swizzled shared-memory box, one thread's cp.async.bulk.tensor stores to global memory
#include <fmt/format.h>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {

// Only the TileStores plan_gpu_kernel kept (LayoutPlan::tensor_stores) reach here; the rest
// were expanded into masked stores. The schedule:
//
//   bar.sync                                (where shared memory was read since the last one:
//                                            the box may reuse it)
//   st.shared   each thread its elements    (the box's layout, store_box_layout: swizzled
//                                            slabs where the rows are a multiple of 32 bytes)
//   fence.proxy.async.shared::cta           (the writes -> the async proxy TMA reads through)
//   bar.sync
//   thread 0:   cp.async.bulk.tensor.2d.global.shared::cta  [map, {col + slab cols, row}], [slab]
//                                           (one a swizzle slab: a box is one slab wide)
//               cp.async.bulk.commit_group
//               cp.async.bulk.wait_group.read 0
//
// Why swizzled: an accumulator's rows are spread over a warp's lanes, and with rows of 128
// bytes or more back to back, 8 lanes writing one column of 8 rows hit one bank; the swizzle
// puts those rows' chunks in 8 different ones, as it does for wgmma's operand tiles.
// TMA writes only the box's elements inside the tensor, so ragged edges need no masks. Thread 0
// waits until the box has been read before going on; every other thread reaches the next
// write to shared memory only through a bar.sync thread 0 also reaches after its wait, so the
// box is never overwritten while TMA reads it. The global writes themselves complete
// asynchronously: the kernel's end (or the next launch) sees them; a later read of the same
// elements by this kernel would need wait_group 0, which no kernel here does.
void GpuLowering::emit_tile_store(const ir::Op &op) {
  auto map = tensor_map_of_.find(&op);
  if (map == tensor_map_of_.end())
    internal_error(fmt::format("GPU lowering of '{}': a tile store was neither expanded nor planned for TMA", fn_.name));
  const ir::ValueId value = op.operands[6];
  const ir::Type &t = fn_.type(value);
  const int64_t width_bytes = t.shape[1] * dtype_bytes(t.elem);
  const StagedLayout layout = store_box_layout(t.shape[0], width_bytes);
  // TMA reads its source 128-byte aligned; a swizzled box's slabs start on the swizzle's 8 rows.
  llvm::Value *box = allocate_shared(layout.bytes(), layout.swizzled() ? StagedLayout::kSwizzleAlign : 128);
  std::vector<llvm::Value *> regs = to_regs(value);
  barrier_before_write();
  stage_operand(value, regs, box, layout, false);
  hooks_.async_proxy_fence(b_);
  barrier_after_write();
  llvm::Value *row = element(op.operands[4], {}), *col = element(op.operands[5], {});
  const int plane_operand = ir::tile_plane_operand(op);
  llvm::Value *plane = plane_operand >= 0 ? element(op.operands[size_t(plane_operand) + 2], {}) : nullptr;
  const int64_t slabs = layout.swizzled() ? width_bytes / layout.swizzle_bytes : 1, box_cols = tensor_maps_[size_t(map->second)].box_cols;
  when(b_.CreateICmpEQ(tid_, b_.getInt32(0)), [&] {
    for (int64_t slab = 0; slab < slabs; ++slab) {
      llvm::Value *src = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), box, uint64_t(slab * layout.slab_bytes));
      llvm::Value *slab_col = b_.CreateAdd(col, b_.getInt32(uint32_t(slab * box_cols)));
      if (plane) hooks_.tensor_store_3d(b_, src, tensor_map_params_[size_t(map->second)], slab_col, row, plane);
      else hooks_.tensor_store_2d(b_, src, tensor_map_params_[size_t(map->second)], slab_col, row);
    }
    hooks_.tensor_store_commit(b_);
    hooks_.tensor_store_wait_read(b_);
  });
  shared_dirty_ = true;  // the next write to shared memory waits for thread 0 (and TMA) to be done with the box
}

}  // namespace kdsl::codegen::gpu
