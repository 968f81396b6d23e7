// simt_machine.cpp - the emulated GPU's instructions: ids, barriers, cross-lane exchanges and sm_80's ldmatrix / mma.sync, each run by every thread of the block
#include "tests/support/simt_machine.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include <kdsl/error.h>
#include <kdsl/formats/fp8.h>
#include <kdsl/half.h>

#include "codegen/codegen.h"
#include "codegen/nvptx/mma_fragments.h"

namespace kdsl::simt {

Machine machine;

namespace {

thread_local int32_t this_thread = 0;

// Every thread of the block publishes `v`, then reads the value of thread `from(this
// thread)`. Cross-lane instructions are reached by whole blocks in the lowering's code, so
// the block barrier stands for the warp's (wave's) convergence.
template <class From>
uint32_t exchange(uint32_t v, From from) {
  machine.exchange[size_t(this_thread)] = v;
  machine.sync->arrive_and_wait();
  uint32_t r = machine.exchange[size_t(from(this_thread))];
  machine.sync->arrive_and_wait();
  return r;
}

double fragment_value(DType t, uint32_t reg, int i) {
  switch (t) {
    case DType::F8E4M3: return e4m3_bits_to_f32(uint8_t(reg >> (8 * i)));
    case DType::F16: return f16_bits_to_f32(uint16_t(reg >> (16 * i)));
    case DType::BF16: return bf16_bits_to_f32(uint16_t(reg >> (16 * i)));
    case DType::F32: return std::bit_cast<float>(reg & 0xFFFFE000u);  // tf32: the low 13 mantissa bits ignored
    default: return int8_t(uint8_t(reg >> (8 * i)));
  }
}

}  // namespace

void set_thread(int32_t t) { this_thread = t; }

void record_fault(const std::string &what) {
  static std::mutex first;
  std::lock_guard lock(first);
  if (machine.fault.empty()) machine.fault = what;
}

int32_t thread_id() { return this_thread; }
int32_t block_id(int32_t axis) { return machine.block[axis]; }
int32_t grid_size(int32_t axis) { return machine.grid[axis]; }
void barrier() { machine.sync->arrive_and_wait(); }

int32_t shfl_bfly_i32(int32_t v, int32_t lane_mask) {
  return int32_t(exchange(uint32_t(v), [&](int32_t t) { return t ^ lane_mask; }));
}
float shfl_bfly_f32(float v, int32_t lane_mask) {
  return std::bit_cast<float>(exchange(std::bit_cast<uint32_t>(v), [&](int32_t t) { return t ^ lane_mask; }));
}

// ds_bpermute_b32 reads lane address[7:2] of the wave (address / 4 modulo the wave size).
int32_t ds_bpermute(int32_t address, int32_t v) {
  int32_t wave = machine.warp_size;
  return int32_t(exchange(uint32_t(v), [&](int32_t t) { return t - t % wave + ((address >> 2) & (wave - 1)); }));
}

// ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16, from the PTX ISA's description:
// lanes 8j .. 8j + 7 give the row addresses of matrix j; lane l receives in register j the
// 16-bit pair at row l / 4, columns 2 (l % 4) + {0, 1} (with .trans: rows 2 (l % 4) + {0, 1},
// column l / 4).
void ldmatrix(uint64_t address, int32_t count, int32_t trans, uint32_t *out) {
  machine.addresses[size_t(this_thread)] = address;
  machine.sync->arrive_and_wait();
  int lane = this_thread % 32, warp_base = this_thread - lane;
  for (int j = 0; j < count; ++j) {
    uint16_t pair[2];
    for (int h = 0; h < 2; ++h) {
      int row = trans ? 2 * (lane % 4) + h : lane / 4, col = trans ? lane / 4 : 2 * (lane % 4) + h;
      std::memcpy(&pair[h], reinterpret_cast<const uint8_t *>(machine.addresses[size_t(warp_base + 8 * j + row)]) + 2 * col, 2);
    }
    out[j] = uint32_t(pair[0]) | uint32_t(pair[1]) << 16;
  }
  machine.sync->arrive_and_wait();
}

// mma.sync for kMmaTableTarget's instruction `index`: every lane of the warp contributes its
// a, b and c registers; each lane computes its d elements from the ISA's fragment tables.
void mma_sync(int32_t index, const uint32_t *abc, uint32_t *d) {
  using namespace codegen::nvptx;
  const codegen::MatrixInstruction &mi = codegen::target_info(kMmaTableTarget).matrix_instructions[size_t(index)];
  std::memcpy(machine.fragments[size_t(this_thread)].data(), abc, 40);
  machine.sync->arrive_and_wait();
  int lane = this_thread % 32, warp_base = this_thread - lane;
  int per_reg = 4 / dtype_bytes(mi.a);
  std::vector<double> a(size_t(mi.m * mi.k)), b(size_t(mi.k * mi.n));
  for (int l = 0; l < 32; ++l) {
    const auto &f = machine.fragments[size_t(warp_base + l)];
    for (int i = 0; i < mma_a_elements(mi); ++i) {
      FragmentElement e = mma_a_element(mi, l, i);
      a[size_t(e.row * mi.k + e.col)] = fragment_value(mi.a, f[size_t(i / per_reg)], i % per_reg);
    }
    for (int i = 0; i < mma_b_elements(mi); ++i) {
      FragmentElement e = mma_b_element(mi, l, i);
      b[size_t(e.row * mi.n + e.col)] = fragment_value(mi.b, f[size_t(4 + i / per_reg)], i % per_reg);
    }
  }
  for (int i = 0; i < kMmaCElements; ++i) {
    FragmentElement e = mma_c_element(mi, lane, i);
    double sum = 0;
    for (int k = 0; k < mi.k; ++k) sum += a[size_t(e.row * mi.k + k)] * b[size_t(k * mi.n + e.col)];
    uint32_t c = abc[6 + i];
    if (mi.acc == DType::F32) d[i] = std::bit_cast<uint32_t>(float(double(std::bit_cast<float>(c)) + sum));
    else d[i] = c + uint32_t(int64_t(sum));  // s32 wraps, as the non-saturating instruction does
  }
  machine.sync->arrive_and_wait();
}

namespace {

// An operand element's bytes and one instruction's k, by wgmma type.
int wgmma_element_bytes(int32_t type) { return type == kWgmmaS8 || type == kWgmmaU8 || type == kWgmmaE4M3 ? 1 : type == kWgmmaTF32 ? 4 : 2; }
int wgmma_k(int32_t type) { return 32 / wgmma_element_bytes(type); }

// Element (row, k) of a swizzled K-major operand as its descriptor places it (PTX ISA,
// "Matrix Descriptor Format" and "Shared Memory Matrix Layout"): row r at stride * (r / 8)
// + W * (r % 8) from the start, k at the element's bytes along it, and then the address's
// 16-byte chunk bits (4 and up) XORed with its bits from 7 up (three of them at W = 128,
// two at 64, one at 32): the swizzle is a function of the shared address itself.
// `type`: WgmmaType.
// MN-major (`mn_major`, B with the transpose bit), from the same section's MN-major canonical
// layouts: element (row, k) at k's group of 8 (the stride offset) and k % 8 rows of the swizzle
// width, row's slab of width / bytes elements (the leading offset) and its bytes within it.
double descriptor_element(uint64_t desc, int row, int k, int32_t type, bool mn_major = false) {
  const uint64_t bytes = wgmma_element_bytes(type);
  uint64_t start = (desc & 0x3FFF) << 4, leading = ((desc >> 16) & 0x3FFF) << 4, stride = ((desc >> 32) & 0x3FFF) << 4;
  int mode = int(desc >> 62);
  if (mode == 0 || ((desc >> 49) & 7)) {
    record_fault("wgmma: a descriptor without swizzling or with a base offset, which the lowering does not emit");
    return 0;
  }
  uint64_t width = mode == 1 ? 128 : mode == 2 ? 64 : 32;
  uint64_t linear = mn_major ? start + uint64_t(k / 8) * stride + uint64_t(k % 8) * width + uint64_t(row) * bytes / width * leading + uint64_t(row) * bytes % width
                             : start + uint64_t(row / 8) * stride + uint64_t(row % 8) * width + uint64_t(k) * bytes;
  uint64_t at = linear ^ (((linear >> 7) & (width / 16 - 1)) << 4);
  if (at + bytes > sizeof machine.shared) {
    record_fault("wgmma: a descriptor reads past the end of shared memory");
    return 0;
  }
  if (type == kWgmmaS8) return int8_t(machine.shared[at]);
  if (type == kWgmmaTF32) {
    uint32_t bits;
    std::memcpy(&bits, machine.shared + at, 4);
    return fragment_value(DType::F32, bits, 0);
  }
  if (type == kWgmmaU8) return machine.shared[at];
  if (type == kWgmmaE4M3) return e4m3_bits_to_f32(machine.shared[at]);
  uint16_t bits;
  std::memcpy(&bits, machine.shared + at, 2);
  return type == kWgmmaBF16 ? bf16_bits_to_f32(bits) : f16_bits_to_f32(bits);
}

// d += sum: f32 accumulators (16-bit and fp8 operands) rounded once, s32 ones wrapping (the sums of
// 8-bit products are exact in a double).
void accumulate(uint32_t &d, double sum, int32_t type) {
  if (type == kWgmmaS8 || type == kWgmmaU8) d += uint32_t(int64_t(sum));
  else d = std::bit_cast<uint32_t>(float(double(std::bit_cast<float>(d)) + sum));
}

// What this thread's wgmma instructions read, from issue to completion. The emulator computes
// a wgmma at once, so a write to its operands before the wait_group that lets it complete
// would go unnoticed; instead each issued wgmma keeps a hash of the operand values this thread
// read, and they are read again when a wait_group completes its group: any change is a fault.
struct IssuedWgmma {
  uint64_t desc_a = 0, desc_b = 0;  // desc_a unused with A from registers
  int32_t n = 0, type = 0, b_mn_major = 0;
  bool register_a = false;
  uint64_t hash = 0;
};
struct InFlight {
  std::vector<IssuedWgmma> open;                  // since the last commit_group
  std::deque<std::vector<IssuedWgmma>> groups;    // committed, oldest first
};
thread_local InFlight in_flight;

uint64_t operand_hash(const IssuedWgmma &w) {
  int thread = this_thread % 128, k_extent = wgmma_k(w.type);
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values' bits
  auto mix = [&](double v) { h = (h ^ std::bit_cast<uint64_t>(v)) * 1099511628211ull; };
  for (int i = 0; i < w.n / 2; ++i) {
    codegen::nvptx::FragmentElement e = codegen::nvptx::wgmma_c_element(thread, i);
    for (int k = 0; k < k_extent; ++k) {
      if (!w.register_a) mix(descriptor_element(w.desc_a, e.row, k, w.type));
      mix(descriptor_element(w.desc_b, e.col, k, w.type, w.b_mn_major));
    }
  }
  return h;
}

void issued(IssuedWgmma w) {
  w.hash = operand_hash(w);
  in_flight.open.push_back(w);
}

}  // namespace

void wgmma_commit() { in_flight.groups.push_back(std::move(in_flight.open)), in_flight.open.clear(); }

void wgmma_wait(int32_t groups) {
  while (in_flight.groups.size() > size_t(groups)) {
    for (const IssuedWgmma &w : in_flight.groups.front())
      if (operand_hash(w) != w.hash)
        record_fault("wgmma: shared memory an in-flight wgmma.mma_async reads was written before the wgmma.wait_group that completes it (thread " +
                     std::to_string(this_thread) + ")");
    in_flight.groups.pop_front();
  }
}

void wgmma_program_end() {
  if (!in_flight.open.empty() || !in_flight.groups.empty())
    record_fault("wgmma: the program ended with wgmma.mma_async in flight (no wgmma.wait_group 0 after its last commit_group)");
  in_flight = {};
}

void wgmma(uint64_t desc_a, uint64_t desc_b, int32_t n, int32_t type, int32_t b_mn_major, uint32_t *d) {
  int thread = this_thread % 128, k_extent = wgmma_k(type);
  for (int i = 0; i < n / 2; ++i) {
    codegen::nvptx::FragmentElement e = codegen::nvptx::wgmma_c_element(thread, i);
    double sum = 0;
    for (int k = 0; k < k_extent; ++k) sum += descriptor_element(desc_a, e.row, k, type) * descriptor_element(desc_b, e.col, k, type, b_mn_major);
    accumulate(d[i], sum, type);
  }
  issued({desc_a, desc_b, n, type, b_mn_major, false, 0});
}

// Row r (0..63) of the warpgroup's A is held by warp r / 16, its rows 16 apart split as
// g = r % 8 and the upper half r % 16 >= 8; k (0..15) by lane 4 g + (k % 8) / 2, in word
// (upper) + 2 (k / 8), half k % 2 (mma_fragments.h's A table for m16n8k16).
void wgmma_register_a(const uint32_t *a, uint64_t desc_b, int32_t n, int32_t type, int32_t b_mn_major, uint32_t *d) {
  std::memcpy(machine.fragments[size_t(this_thread)].data(), a, 16);
  machine.sync->arrive_and_wait();
  int thread = this_thread % 128, group_base = this_thread - thread;
  auto a_element = [&](int row, int k) {
    int warp = row / 16, g = row % 8, upper = (row % 16) / 8, lane = 4 * g + (k % 8) / 2;
    uint32_t word = machine.fragments[size_t(group_base + 32 * warp + lane)][size_t(upper + 2 * (k / 8))];
    return fragment_value(type == kWgmmaBF16 ? DType::BF16 : DType::F16, word, k % 2);
  };
  for (int i = 0; i < n / 2; ++i) {
    codegen::nvptx::FragmentElement e = codegen::nvptx::wgmma_c_element(thread, i);
    double sum = 0;
    for (int k = 0; k < 16; ++k) sum += a_element(e.row, k) * descriptor_element(desc_b, e.col, k, type, b_mn_major);
    accumulate(d[i], sum, type);
  }
  issued({0, desc_b, n, type, b_mn_major, true, 0});
  machine.sync->arrive_and_wait();  // every thread has read the fragments before they are written again
}

void cp_async_16(uint64_t dst, uint64_t src, int32_t src_bytes) {
  std::memset(reinterpret_cast<void *>(dst), 0, 16);
  if (src_bytes > 0) std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), size_t(src_bytes));
}

float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

}  // namespace kdsl::simt
