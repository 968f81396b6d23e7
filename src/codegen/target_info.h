// target_info.h - what the compiler knows of a GPU target, as data (warp size, limits, matrix shapes)
#pragma once
#include <array>
#include <string>
#include <vector>

#include <kdsl/dtype.h>

namespace kdsl::codegen {

// One warp-level matrix instruction: D[m,n] (acc) += A[m,k] (a) * B[k,n] (b), A row-major
// and B column-major in the fragments (mma.sync's ".row.col").
//
// The accumulator fragment is data so the lowering's distributed layout for it (Layout of
// kind Mma, layout.h) is built from here: a lane holds c_size_per_thread consecutive
// elements (rows, columns), the 32 lanes are arranged c_threads_per_warp (columns
// fastest), and that lane tile repeats to cover the instruction's m x n (mma.sync
// m16n8: lanes cover 8 x 8, twice along rows). A later wgmma entry (m64nNk16) spans the
// four warps of a warpgroup: warps_per_instruction = 4 along m.
struct MatrixInstruction {
  const char *name;  // "mma.sync.m16n8k16"
  int m, n, k;
  DType a, b, acc;
  std::array<int, 2> c_size_per_thread{1, 2};
  std::array<int, 2> c_threads_per_warp{8, 4};
  int warps_per_instruction = 1;
};

// Targets are data (CONVENTIONS point 5): the lowering reads these fields and never tests
// an architecture name. An AMDGPU target adds an entry with warp_size 64 and its MFMA shapes.
struct TargetInfo {
  std::string name;          // "sm_80"
  std::string backend;       // "cuda"
  std::string triple;        // "nvptx64-nvidia-cuda"
  std::string ptx_features;  // LLVM features: the PTX ISA version ("+ptx70")
  int compute_capability = 0;  // 80, 90
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int shared_bytes_static = 48 * 1024;  // without opting in
  int shared_bytes_optin = 0;           // per block, after cuFuncSetAttribute
  int global_vector_bytes = 16;         // widest global load or store per thread
  bool async_copy = false;              // cp.async global -> shared (sm_80+): loads feeding dot are software-pipelined
  int sm_count = 0;                     // filled in from a device query; 0 when compiling offline
  std::vector<MatrixInstruction> matrix_instructions;  // empty: dot multiplies with FMAs
};

// The target named `arch` ("sm_80", "sm_90"); throws kdsl::Error naming the known ones.
const TargetInfo &target_info(const std::string &arch);
// Every named target, for tools and error messages.
std::vector<std::string> target_names();

}  // namespace kdsl::codegen
