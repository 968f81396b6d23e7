// target_info.h - what the compiler knows of a GPU target, as data (warp size, limits, matrix shapes)
#pragma once
#include <array>
#include <string>
#include <vector>

#include <kdsl/dtype.h>

namespace kdsl::codegen {

// One warp-level matrix instruction: D[m,n] (acc) += A[m,k] (a) * B[k,n] (b), A row-major
// and B column-major in the fragments (mma.sync's ".row.col"; an MFMA lane likewise holds
// consecutive k of a row of A and a column of B).
//
// The accumulator fragment is data so the lowering's distributed layout for it (Layout of
// kind Mma, layout.h) is built from here: a lane holds c_size_per_thread consecutive
// elements (rows, columns), the warp's lanes (32, or a wave's 64) are arranged
// c_threads_per_warp (columns fastest), and that lane tile repeats to cover the
// instruction's m x n (mma.sync m16n8: lanes cover 8 x 8, twice along rows; MFMA 32x32:
// 8 x 32, four times). wgmma (m64nNk16) spans the four warps of a warpgroup
// (warps_per_instruction = 4, stacked along m, 16 rows each); its accumulator is mma.sync's
// m16n8 fragment repeated along n, so its entry lists n = 8 and the lowering joins a
// warpgroup's n tiles into one instruction.
struct MatrixInstruction {
  const char *name;  // "mma.sync.m16n8k16", "mfma.f32.32x32x8f16"
  int m, n, k;
  DType a, b, acc;
  std::array<int, 2> c_size_per_thread{1, 2};
  std::array<int, 2> c_threads_per_warp{8, 4};
  int warps_per_instruction = 1;
  // A and B read from shared memory through matrix descriptors (wgmma) rather than from
  // registers: operands are staged as core matrices (gpu/staged_tile.h), and one instruction
  // covers n = any multiple of `n` up to max_n of a warpgroup's columns.
  bool descriptor_operands = false;
  int max_n = 0;
  // A and B read from shared-memory tiles laid out by gpu/staged_tile.h, which the generic
  // lowering may fill itself: cp.async ahead of a loop's iterations (lower_pipeline.cpp), or
  // once before a loop for an operand the loop does not change (attention's Q). NVIDIA's
  // mma.sync and wgmma; AMD's MFMA hook stages its own tiles.
  bool staged_tiles = false;
  // f32 inputs multiplied as TF32: taken only by dots that ask for it (DotPrecision::TF32),
  // never by an IEEE f32 dot.
  bool tf32 = false;
};

// Targets are data (CONVENTIONS point 5): the lowering reads these fields and never tests
// an architecture name. AMD targets (wave64 CDNA, wave32 RDNA) are rows like NVIDIA's.
struct TargetInfo {
  std::string name;          // "sm_80", "gfx942": LLVM's CPU name for the target
  std::string backend;       // "cuda", "hip"
  std::string triple;        // "nvptx64-nvidia-cuda", "amdgcn-amd-amdhsa"
  std::string llvm_features; // LLVM features: the PTX ISA version ("+ptx70"), the wave size ("+wavefrontsize64")
  int compute_capability = 0;  // 80, 90; 0 for AMD
  int isa_version = 0;         // AMD: the ISA version the device libraries test (9010 for gfx90a); 0 for NVIDIA
  int warp_size = 32;          // threads of a warp (NVIDIA) or wave (AMD: 64 on CDNA, 32 on RDNA)
  int max_threads_per_block = 1024;
  int shared_bytes_static = 48 * 1024;  // without opting in
  int shared_bytes_optin = 0;           // per block, after cuFuncSetAttribute (AMD: the LDS a workgroup may use)
  int global_vector_bytes = 16;         // widest global load or store per thread
  bool async_copy = false;              // cp.async global -> shared (sm_80+): loads feeding dot are software-pipelined
  bool tensor_copy = false;             // TMA (cp.async.bulk.tensor) and mbarriers (sm_90a here): tile loads feeding wgmma are copied by descriptor
  bool fp8_conversions = false;         // cvt between f8e4m3 and f32 / f16 pairs (sm_89+): one instruction instead of fp8_conversions.h's integer IR
  int sm_count = 0;                     // filled in from a device query; 0 when compiling offline
  std::vector<MatrixInstruction> matrix_instructions;  // empty: dot multiplies with FMAs
};

// The target named `arch` ("sm_80", "sm_90"); throws kdsl::Error naming the known ones.
const TargetInfo &target_info(const std::string &arch);
// Every named target, for tools and error messages.
std::vector<std::string> target_names();

}  // namespace kdsl::codegen
