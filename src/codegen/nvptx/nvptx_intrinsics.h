// nvptx_intrinsics.h - the thin NVIDIA-specific part of the GPU lowering: special registers,
// barriers, warp shuffles, fast math and libdevice names, kernel marking
#pragma once
#include <llvm/IR/IRBuilder.h>

#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::nvptx {

constexpr unsigned kGlobalAddressSpace = 1;
constexpr unsigned kSharedAddressSpace = 3;

llvm::Value *thread_id(llvm::IRBuilder<> &b);              // %tid.x
llvm::Value *block_id(llvm::IRBuilder<> &b, int axis);     // %ctaid
llvm::Value *grid_size(llvm::IRBuilder<> &b, int axis);    // %nctaid
void barrier(llvm::IRBuilder<> &b);                        // bar.sync 0
// The value of `v` (f32 or i32) in the lane whose id is this lane's xor `lane_mask`.
llvm::Value *shuffle_xor(llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask);

// ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16 (count 2 or 4): each lane gives the
// shared address of one 8 x 8 matrix row and gets `count` i32 registers (mma_fragments.h).
std::vector<llvm::Value *> ldmatrix(llvm::IRBuilder<> &b, llvm::Value *row_address, int count, bool trans);

// cp.async.cg.shared.global 16 bytes from `global` to `shared`, of which `src_bytes` (16 or 0)
// are read and the rest zero-filled; commit_group closes this thread's copies issued since
// the last one into a group; wait_group(n) waits until at most n groups are in flight.
void cp_async_16(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *global, llvm::Value *src_bytes);
void cp_async_commit_group(llvm::IRBuilder<> &b);
void cp_async_wait_group(llvm::IRBuilder<> &b, int n);

// mma.sync.aligned for `instruction` (m16n8k16 f16 or bf16 into f32, m16n8k32 s8 into s32 and
// fp8 e4m3 into f32, m16n8k8 tf32 into f32): returns d = a * b + c for this lane's 4
// accumulators; a: 4 i32, b: 2 i32 (packed elements; tf32: one f32's bits each). The e4m3 form
// (sm_89+, PTX 8.4) has no NVVM intrinsic in LLVM 19: it is inline PTX, kMmaE4m3Text.
inline constexpr const char *kMmaE4m3Text =
    "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};";
std::vector<llvm::Value *> mma_sync(llvm::IRBuilder<> &b, const MatrixInstruction &instruction, const std::vector<llvm::Value *> &a,
                                    const std::vector<llvm::Value *> &bv, const std::vector<llvm::Value *> &c);

// Hopper's warpgroup MMA (sm_90a) as inline PTX: LLVM 19 has no intrinsic for
// wgmma.mma_async, and the rest are written the same way so that the SIMT emulator
// (tests/support/nvvm_on_host.cpp) recognizes one family of texts.
//
// A shared-memory matrix descriptor of a swizzled operand (gpu/staged_tile.h): the start
// address, the stride byte offset (between 8-row groups: along m or n K-major, along k
// MN-major) and the swizzle mode (1: 128 bytes, 2: 64, 3: 32). The leading byte offset steps
// between the slabs of an MN-major operand's n; K-major operands whose k step fits one swizzled
// row do not use it, and take 16 (a field of 1, as CUTLASS gives).
llvm::Value *wgmma_descriptor(llvm::IRBuilder<> &b, llvm::Value *shared_address, int64_t stride_bytes, int swizzle_mode, int64_t leading_bytes = 16);
// fence.proxy.async.shared::cta: this thread's ordinary shared-memory writes (stores,
// cp.async) become visible to wgmma's operand reads, which go through the async proxy, once
// a barrier follows.
void fence_proxy_async(llvm::IRBuilder<> &b);
// wgmma.fence and wgmma.wait_group N, with every accumulator register (and, for the fence,
// every A register) passed through: a read or write of one cannot move across them (they
// are written asynchronously between the two; A must be written before the fence).
std::vector<llvm::Value *> wgmma_fence(llvm::IRBuilder<> &b, const std::vector<llvm::Value *> &acc);
std::vector<llvm::Value *> wgmma_wait_group(llvm::IRBuilder<> &b, int groups, const std::vector<llvm::Value *> &acc);
void wgmma_commit_group(llvm::IRBuilder<> &b);
// wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16|bf16}, .m64n{n}k32.s32.{s8|u8} or
// .m64n{n}k8.f32.tf32 (instruction's a type): d = A B + d for this thread's n / 2 accumulators (f32 or i32;
// mma_fragments.h: wgmma_c_element), A K-major, B K-major or, with `b_mn_major` (16-bit types
// only: the instruction's transpose bit), MN-major.
std::vector<llvm::Value *> wgmma_mma_async(llvm::IRBuilder<> &b, const MatrixInstruction &instruction, int n, llvm::Value *desc_a, llvm::Value *desc_b,
                                           const std::vector<llvm::Value *> &acc, bool b_mn_major = false);
// The same with A from registers: this thread's 4 words of the A fragment (per warp,
// mma.sync's m16n8k16 A fragment: mma_fragments.h), B through its descriptor.
std::vector<llvm::Value *> wgmma_mma_async_register_a(llvm::IRBuilder<> &b, const MatrixInstruction &instruction, int n, const std::vector<llvm::Value *> &a,
                                                      llvm::Value *desc_b, const std::vector<llvm::Value *> &acc, bool b_mn_major = false);
// The inline PTX of wgmma_mma_async (and _register_a, 16-bit only) for m64n{n} with operands
// of `type` ("f16", "bf16", "s8", "u8", "tf32").
std::string wgmma_text(int n, const char *type, bool b_mn_major = false);
std::string wgmma_text_register_a(int n, const char *type, bool b_mn_major = false);

// Hopper's tensor memory accelerator (TMA) and transaction barriers (sm_90), as inline PTX
// (LLVM 19 has no intrinsics for them): the texts are constants so that the SIMT emulator
// (tests/support/nvvm_on_host.cpp) recognizes exactly what is emitted. Shared-memory operands
// are 64-bit shared-window addresses ("l"); a barrier is 8 bytes, 8-byte aligned.
//   init: the barrier's phase completes once `count` threads have arrived and every byte
//   announced with expect_tx has landed; its init fence makes it visible to the async proxy
//   (TMA's complete_tx). arrive.expect_tx: this thread arrives, announcing `bytes` more.
//   try_wait.parity: 1 when the phase of parity `parity` has completed (the barrier's
//   current phase has the other parity), else 0 (the caller loops). inval: the 8 bytes may
//   become ordinary memory again.
//   The 2-D tile copy: the box at element coordinates (col, row) of the tensor map at
//   `tensor_map` (a generic address of the kernel's grid-constant parameter) into shared
//   memory at `shared` (swizzled as the map says), its bytes completing on `barrier`.
inline constexpr const char *kMbarrierInitText = "mbarrier.init.shared::cta.b64 [$0], $1;";
inline constexpr const char *kMbarrierInitFenceText = "fence.mbarrier_init.release.cluster;";
inline constexpr const char *kMbarrierExpectTxText = "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;";
inline constexpr const char *kMbarrierTryWaitText = "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\nselp.u32 $0, 1, 0, p;\n}";
inline constexpr const char *kMbarrierInvalText = "mbarrier.inval.shared::cta.b64 [$0];";
inline constexpr const char *kTmaLoad2dText =
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];";
// TMA stores: the box at `shared` (unswizzled) to element (col, row) of the tensor map's
// tensor, in a bulk group; commit_group closes this thread's group, wait_group.read 0 returns
// once every group has read its shared memory (the writes to global memory may still be on
// their way; the kernel's end or a later launch sees them).
inline constexpr const char *kTmaStore2dText = "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [$0, {$1, $2}], [$3];";
// The same for a rank-3 map: coordinates (col, row, plane).
inline constexpr const char *kTmaLoad3dText =
    "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3, $4}], [$5];";
inline constexpr const char *kTmaStore3dText = "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [$0, {$1, $2, $3}], [$4];";
inline constexpr const char *kBulkCommitGroupText = "cp.async.bulk.commit_group;";
inline constexpr const char *kBulkWaitGroupReadText = "cp.async.bulk.wait_group.read 0;";
void mbarrier_init(llvm::IRBuilder<> &b, llvm::Value *barrier, int count);
void mbarrier_init_fence(llvm::IRBuilder<> &b);
void mbarrier_arrive_expect_tx(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *bytes);
llvm::Value *mbarrier_try_wait_parity(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *parity);  // i1
void mbarrier_inval(llvm::IRBuilder<> &b, llvm::Value *barrier);
void tma_load_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *barrier);
void tma_store_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row);
void tma_load_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *plane,
                 llvm::Value *barrier);
void tma_store_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *plane);
void bulk_commit_group(llvm::IRBuilder<> &b);
void bulk_wait_group_read(llvm::IRBuilder<> &b);

// f32 math for one elementwise op (Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Sin, Cos, Tanh,
// Sigmoid, Erf, Rem, Pow): fast PTX instructions where their precision is enough (ex2.approx for exp
// and exp2), libdevice's __nv_* functions otherwise (linked in by the PTX compiler).
llvm::Value *emit_math(llvm::IRBuilder<> &b, llvm::Module &m, OpKind kind, llvm::Value *x, llvm::Value *y = nullptr);

// Marks `f` a kernel entry (calling convention and nvvm.annotations) launched with at most
// `threads` threads per block.
void mark_kernel(llvm::Function *f, int threads);

// div.full.f32: x / y within 2 ulp over the whole range (LLVM 19 has no intrinsic for it;
// its fdiv is div.rn, IEEE, several times the instructions).
llvm::Value *div_full(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y);

// dp4a.{s32|u32}.{s32|u32} (sm_61 and newer): acc + the sum of the four byte products of a
// and b, each byte signed or not. LLVM 19's NVPTX backend has no intrinsic for it, so it is
// inline PTX; the SIMT emulator recognizes the same text (tests/support/nvvm_on_host.cpp).
llvm::Value *dp4a(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *bw, llvm::Value *acc, bool a_signed, bool b_signed);

// fp8 conversions (sm_89+, PTX 7.8), each on a pair; kdsl uses the low half of each pair.
// cvt.rn.f16x2.e4m3x2 d, a: a's two E4M3 bytes (b16) to two f16 (b32), exactly; the high byte
// to the high half. cvt.rn.satfinite.e4m3x2.f32 d, a, b: a to d's high byte, b to its low byte,
// nearest even, magnitudes past 448 (infinities too) saturated to 448, NaN to NaN.
inline constexpr const char *kE4m3x2ToF16x2Text = "cvt.rn.f16x2.e4m3x2 $0, $1;";
inline constexpr const char *kF32x2ToE4m3x2Text = "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;";
// An E4M3 byte (i8) to f32: cvt.rn.f16x2.e4m3x2, then the low f16 widened (cvt.f32.f16).
llvm::Value *e4m3_to_f32(llvm::IRBuilder<> &b, llvm::Value *byte);
// An f32 to the nearest E4M3 (i8), by cvt.rn.satfinite.e4m3x2.f32 of the value paired with itself.
llvm::Value *f32_to_e4m3(llvm::IRBuilder<> &b, llvm::Value *x);
// The byte e4m3_to_f32 widened to `v`; null when v is not its result.
llvm::Value *e4m3_byte_of_cvt(llvm::Value *v);

}  // namespace kdsl::codegen::nvptx
