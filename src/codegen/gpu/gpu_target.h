// gpu_target.h - the hooks the target-neutral GPU lowering calls for what differs per GPU vendor (Triton's TargetInfoBase)
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <string>
#include <vector>

#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::gpu {

class GpuLowering;

// Everything the generic lowering (gpu_lowering.h) needs of a GPU beside its TargetInfo
// data: the few instructions, address spaces and calling conventions that are spelled
// differently by NVVM and AMDGCN. One implementation per backend (nvptx/nvptx_target.h,
// amdgpu/amdgpu_target.h); the SIMT emulator (tests/support/) runs either one's output on
// CPU threads. The lowering never names an intrinsic itself.
class GpuTarget {
 public:
  explicit GpuTarget(const TargetInfo &info) : info_(info) {}
  virtual ~GpuTarget() = default;
  const TargetInfo &info() const { return info_; }

  // Address spaces of kernel pointer arguments (global memory) and of shared memory (LDS).
  virtual unsigned global_address_space() const = 0;
  virtual unsigned shared_address_space() const = 0;

  // The thread's index in its block (x only: kdsl blocks are one-dimensional), the block's
  // index in the grid and the grid's extent along `axis` (0..2), all i32.
  virtual llvm::Value *thread_id(llvm::IRBuilder<> &b) = 0;
  virtual llvm::Value *block_id(llvm::IRBuilder<> &b, int axis) = 0;
  virtual llvm::Value *grid_size(llvm::IRBuilder<> &b, int axis) = 0;

  // Every thread of the block waits here, and shared-memory writes before it are visible to
  // reads after it.
  virtual void barrier(llvm::IRBuilder<> &b) = 0;

  // The value of `v` (f32 or i32) in the lane of this warp (wave) whose id is this lane's
  // xor `lane_mask`; lane_mask < info().warp_size.
  virtual llvm::Value *shuffle_xor(llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask) = 0;

  // f32 math for one elementwise op (Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Sin, Cos, Tanh,
  // Sigmoid, Erf, Rem, Pow): the target's instructions or its device library's functions
  // (which compile() links in afterwards).
  virtual llvm::Value *math(llvm::IRBuilder<> &b, llvm::Module &m, OpKind kind, llvm::Value *x, llvm::Value *y) = 0;

  // x / y of f32s. IEEE-rounded here; NVIDIA overrides it with div.full.f32 (within 2 ulp
  // over the whole range, a fraction of div.rn's instructions), as Triton divides.
  virtual llvm::Value *divide(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) { return b.CreateFDiv(x, y); }

  // f8e4m3 bytes (i8) to f32 (exact) and f32 to bytes (nearest even, past 448 saturated, NaN
  // to NaN), and the byte e4m3_to_f32 widened to `v` (null where v is not its result). The
  // defaults are fp8_conversions.h's integer IR; NVIDIA's sm_89+ (info().fp8_conversions)
  // converts with cvt.
  virtual llvm::Value *e4m3_to_f32(llvm::IRBuilder<> &b, llvm::Value *byte);
  virtual llvm::Value *f32_to_e4m3(llvm::IRBuilder<> &b, llvm::Value *x);
  virtual llvm::Value *e4m3_byte_of(llvm::Value *v);

  // Makes `f` a kernel entry launched with at most `threads` threads per block.
  virtual void mark_kernel(llvm::Function *f, int threads) = 0;

  // device_print: one formatted line (C printf conversions, doubles and 32/64-bit integers)
  // from this thread. device_assert failed in this thread: report `format` with `args`
  // (where it failed) where the target can, then stop the kernel so that the launch fails;
  // `message` is the assertion's text, `kernel` the kernel's name.
  virtual void print(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args) = 0;
  virtual void assert_fail(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args,
                           const std::string &message, const std::string &kernel) = 0;

  // A dot the layout plan put on one of info().matrix_instructions, its result in that
  // instruction's accumulator layout. Only targets listing matrix instructions are asked.
  virtual void matrix_dot(GpuLowering &lowering, const ir::Op &op, const MatrixInstruction &instruction);

  // dot4 on one 32-bit word of each operand: acc + the sum of the four byte products
  // a.byte[t] * b.byte[t], each byte signed (i8) or not (u8), wrapping as i32 adds do (the
  // instruction's non-saturating form). The default extracts, widens and multiplies the bytes;
  // targets override it with their instruction (NVIDIA dp4a, AMD v_dot4).
  virtual llvm::Value *dot4(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *bw, llvm::Value *acc, bool a_signed, bool b_signed);

  // Asynchronous 16-byte copies global -> shared for software pipelining (info().async_copy):
  // `src_bytes` (16 or 0) are read and the rest zero-filled; commit closes this thread's
  // copies since the last commit into a group; wait lets at most `groups` stay in flight.
  // Only targets with async_copy are asked.
  virtual void async_copy_16(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *global, llvm::Value *src_bytes);
  virtual void async_commit(llvm::IRBuilder<> &b);
  virtual void async_wait(llvm::IRBuilder<> &b, int groups);

  // Hopper's tensor memory accelerator and transaction barriers (info().tensor_copy; only
  // such targets are asked). A barrier is 8 bytes of shared memory:
  //  - barrier_init: its phase completes once `count` threads have arrived and every byte
  //    announced has landed; barrier_init_fence makes the inits visible to the copy engine.
  //  - barrier_expect: this thread arrives, announcing `bytes` (i32) that copies will land.
  //  - barrier_phase_done: i1, whether the phase of `parity` (i32, 0 or 1) has completed.
  //  - barrier_invalidate: the 8 bytes may hold ordinary data again.
  //  - tensor_copy_2d: the box at element (col, row) of the tensor map at `tensor_map`
  //    (the kernel's parameter) into `shared`, swizzled as the map says, completing on `barrier`;
  //    tensor_copy_3d the same at (col, row, plane) of a rank-3 map (a box one plane deep).
  virtual void barrier_init(llvm::IRBuilder<> &b, llvm::Value *barrier, int count);
  virtual void barrier_init_fence(llvm::IRBuilder<> &b);
  virtual void barrier_expect(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *bytes);
  virtual llvm::Value *barrier_phase_done(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *parity);
  virtual void barrier_invalidate(llvm::IRBuilder<> &b, llvm::Value *barrier);
  virtual void tensor_copy_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row,
                              llvm::Value *barrier);
  virtual void tensor_copy_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row,
                              llvm::Value *plane, llvm::Value *barrier);
  // The other way (TMA stores), one thread issuing them:
  //  - tensor_store_2d: the box at `shared` (unswizzled rows) to element (col, row) of the
  //    tensor map's tensor, elements outside the tensor not written; it reads shared memory
  //    through the async proxy, so the writes that made the tile need async_proxy_fence
  //    and a barrier first. tensor_store_3d: the same at (col, row, plane) of a rank-3 map.
  //  - tensor_store_commit closes this thread's stores since the last commit into a group;
  //    tensor_store_wait_read returns once every group has finished reading shared memory
  //    (so the tile may be written again, or the block end).
  virtual void tensor_store_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row);
  virtual void tensor_store_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *plane);
  virtual void tensor_store_commit(llvm::IRBuilder<> &b);
  virtual void tensor_store_wait_read(llvm::IRBuilder<> &b);

  // This thread's ordinary shared-memory writes so far (stores, and cp.async copies it has
  // waited for) become visible to matrix instructions and copies that read shared memory
  // through another path (NVIDIA's async proxy: wgmma's descriptors, TMA stores) once a
  // barrier follows. Asked only for instructions with descriptor_operands and targets with
  // tensor_copy.
  virtual void async_proxy_fence(llvm::IRBuilder<> &b);

  // Waits for every asynchronous matrix instruction this thread issued (wgmma.wait_group 0),
  // `acc` (the accumulator registers they write) passed through: the last iteration of a loop
  // whose matrix dot kept one group in flight across its iterations (lower_pipeline.cpp).
  virtual std::vector<llvm::Value *> wait_matrix_dots(llvm::IRBuilder<> &b, const std::vector<llvm::Value *> &acc);

 private:
  const TargetInfo &info_;
};

// shuffle_xor for any integer or f32 value: narrower integers widen, 64-bit ones move in halves.
llvm::Value *shuffle_xor_any(GpuTarget &target, llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask);

}  // namespace kdsl::codegen::gpu
