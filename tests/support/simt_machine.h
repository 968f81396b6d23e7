// simt_machine.h - the emulated GPU: one block of CPU threads at a time, and the functions the rewritten kernel calls for each vendor's instructions
#pragma once
#include <array>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace kdsl::simt {

// What one block sees while it runs. Blocks run one after another, so one machine serves
// every launch (emulate_launch holds a lock).
struct Machine {
  std::barrier<> *sync = nullptr;
  int warp_size = 32;
  std::vector<uint32_t> exchange;                   // shuffles: each thread's value
  std::vector<uint64_t> addresses;                  // ldmatrix: each thread's row address
  std::vector<std::array<uint32_t, 10>> fragments;  // mma.sync: each thread's a, b, c registers
  int32_t block[3] = {}, grid[3] = {};
  // hsa_kernel_dispatch_packet_t as the AMD lowering reads it: workgroup_size_{x,y,z} (u16)
  // at byte 4, grid_size_{x,y,z} (u32, in work-items) at byte 12; 64 bytes in all.
  alignas(64) uint8_t dispatch_packet[64] = {};
  // Aligned to the 256 KiB window wgmma's descriptors address (14 bits of 16-byte units), so
  // the low 18 bits of a pointer into it are the GPU's shared address.
  alignas(1 << 18) uint8_t shared[228 * 1024];
  // The first fault an emulated instruction found (a descriptor outside shared memory),
  // thrown by emulate_launch once the block is done.
  std::string fault;
  // How long a thread may spin on mbarrier.try_wait for one phase before the emulator calls
  // it a hang (a fault) and lets the thread go on, so that the launch ends.
  std::chrono::milliseconds mbarrier_timeout{20000};
};
extern Machine machine;

// The calling CPU thread is GPU thread `t` of the block (set once per thread by emulate_launch).
void set_thread(int32_t t);

// Block and thread coordinates, and the block-wide barrier.
int32_t thread_id();
int32_t block_id(int32_t axis);
int32_t grid_size(int32_t axis);
void barrier();
// Records `what` as the block's fault unless one is recorded already (threads run at once).
void record_fault(const std::string &what);

// NVIDIA: shfl.sync.bfly (the lane `lane_mask` away by xor, in this warp).
int32_t shfl_bfly_i32(int32_t v, int32_t lane_mask);
float shfl_bfly_f32(float v, int32_t lane_mask);
// AMD: ds_bpermute_b32 (the value of the lane at byte address `address`, in this wave).
int32_t ds_bpermute(int32_t address, int32_t v);

// NVIDIA's mma.sync tensor cores: ldmatrix.m8n8.x{count}[.trans] into `out`, and mma.sync for
// target_info(kMmaTableTarget).matrix_instructions[index] over the warp's a, b, c registers
// (`abc`, 10 words) into `d` (4 words). sm_89's list is sm_80's and the fp8 one.
inline constexpr const char *kMmaTableTarget = "sm_89";
void ldmatrix(uint64_t address, int32_t count, int32_t trans, uint32_t *out);
void mma_sync(int32_t index, const uint32_t *abc, uint32_t *d);
// wgmma.mma_async.m64n{n}k16 of f16 or bf16 into f32, m64n{n}k32 of s8 or u8 into s32 or of
// e4m3 into f32, or
// m64n{n}k8 of tf32 (f32 with the low 13 mantissa bits dropped) into f32 (`type`): this thread's n / 2 accumulators `d` (in and out, f32 or s32 bits) from A and B
// read through their shared-memory descriptors (swizzled, K-major: gpu/staged_tile.h),
// completing at once.
enum WgmmaType : int32_t { kWgmmaF16, kWgmmaBF16, kWgmmaS8, kWgmmaU8, kWgmmaTF32, kWgmmaE4M3 };
// With `b_mn_major` (16-bit types: the transpose bit), B's descriptor reads it MN-major: each
// row of k holds a slab of n (the swizzle's width) contiguous, 8 rows of k apart by the stride
// offset, the slabs of n apart by the leading offset.
void wgmma(uint64_t desc_a, uint64_t desc_b, int32_t n, int32_t type, int32_t b_mn_major, uint32_t *d);
// The same with A from registers (16-bit types): every thread of the warpgroup gives its 4
// words of the A fragment (per warp, mma.sync's m16n8k16 A fragment).
void wgmma_register_a(const uint32_t *a, uint64_t desc_b, int32_t n, int32_t type, int32_t b_mn_major, uint32_t *d);
// wgmma.commit_group and wgmma.wait_group N: the emulator computes each wgmma when issued;
// when wait_group lets a group complete, the operands its wgmmas read are read again, and a
// change (shared memory written while they were in flight) is the block's fault. At the end
// of each program, a wgmma still in flight is one too.
void wgmma_commit();
void wgmma_wait(int32_t groups);
void wgmma_program_end();
// cp.async.cg 16 bytes, `src_bytes` read and the rest zero-filled, completing at once.
void cp_async_16(uint64_t dst, uint64_t src, int32_t src_bytes);

// Hopper's transaction barriers (mbarrier, sm_90), emulated in simt_tma.cpp, their state kept
// there rather than in the barrier's 8 bytes. `barrier` is the host address of those 8 bytes in
// machine.shared. Misuse the hardware leaves undefined is the block's fault: init of a barrier
// that is valid, any other use of one that is not, more arrivals in a phase than its count, a
// transaction count below zero. try_wait returns 0 after yielding the CPU (the kernel loops on
// it), or 1 once the phase of `parity` has completed; a thread that spins past
// machine.mbarrier_timeout records a fault and gets 1, and so do all later waits of the launch.
void mbarrier_init(uint64_t barrier, int32_t count);
void mbarrier_arrive_expect_tx(uint64_t barrier, int32_t bytes);
int32_t mbarrier_try_wait_parity(uint64_t barrier, int32_t parity);
void mbarrier_inval(uint64_t barrier);
// Every barrier forgotten (each launch starts so); and, once a program's threads are all done,
// a fault for each barrier still valid (the lowering invalidates them), then forgotten.
void mbarrier_reset();
void mbarrier_program_end();

// The emulator's tensor map: the real CUtensorMap is opaque, so emulate_launch encodes each of
// a kernel's maps (codegen::TensorMapSpec) in this 128-byte, 64-byte aligned form instead.
struct alignas(64) EmulatedTensorMap {
  static constexpr uint64_t kMagic = 0x6B64736C746D6170ull;  // "kdsltmap": a pointer to anything else is a fault
  uint64_t magic = kMagic;
  uint64_t base = 0;                             // the tensor's element (0, 0)
  int64_t rows = 0, cols = 0, row_stride = 0;    // in elements, cols contiguous
  int64_t planes = 1, plane_stride = 0;          // rank 3: planes of rows x cols; a box is one plane deep
  int32_t elem_bytes = 0, box_rows = 0, box_cols = 0, swizzle_bytes = 0, rank = 2;
  uint8_t unused[52] = {};
};
static_assert(sizeof(EmulatedTensorMap) == 128, "a tensor map parameter is 128 bytes (CUtensorMap)");

// cp.async.bulk.tensor.2d tile copy: the map's box whose element (0, 0) is the tensor's (row,
// col) (either may be negative or past the end: elements outside the tensor are zeros) into
// shared memory at `dst`, laid out as TMA's swizzle does (rows of swizzle_bytes, each 16-byte
// chunk's index XORed with the address bits above 128 bytes), then complete_tx of its bytes on
// `barrier`. The copy completes at once, so a read of the tile before the wait that sees its
// phase complete goes unnoticed (a write to a tile an in-flight wgmma reads does not: wgmma_wait).
void tma_load_2d(uint64_t dst, uint64_t tensor_map, int32_t col, int32_t row, uint64_t barrier);
// cp.async.bulk.tensor.2d TMA store: the map's box at `src` in shared memory (swizzled as the
// map says, as tma_load_2d's; or unswizzled rows, 128-byte aligned) to the tensor at (row,
// col), elements outside the tensor not written. The
// global writes happen at once; the box is read at once too, and kept: when
// cp.async.bulk.wait_group.read lets the store's group go (tma_store_wait_read), a box whose
// shared memory has changed since is the block's fault (written before the read was waited
// for), and so is a store not waited for when the program ends (tma_store_program_end).
void tma_store_2d(uint64_t tensor_map, int32_t col, int32_t row, uint64_t src);
// cp.async.bulk.tensor.3d: the same through a rank-3 map, the box in plane `plane` (outside
// [0, planes): all zeros read, nothing written). A copy of the other rank than its map's is
// the block's fault.
void tma_load_3d(uint64_t dst, uint64_t tensor_map, int32_t col, int32_t row, int32_t plane, uint64_t barrier);
void tma_store_3d(uint64_t tensor_map, int32_t col, int32_t row, int32_t plane, uint64_t src);
void tma_store_commit();
void tma_store_wait_read();
void tma_store_program_end();

float rsqrtf(float x);

}  // namespace kdsl::simt
