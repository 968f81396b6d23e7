// target_info.cpp - the table of GPU targets the compiler knows
#include "codegen/target_info.h"

#include <fmt/format.h>

#include <kdsl/error.h>

#include "codegen/codegen.h"

namespace kdsl::codegen {
namespace {

std::vector<MatrixInstruction> ampere_mma() {
  MatrixInstruction tf32{"mma.sync.m16n8k8.tf32", 16, 8, 8, DType::F32, DType::F32, DType::F32};
  tf32.tf32 = true;
  std::vector<MatrixInstruction> list = {
      {"mma.sync.m16n8k16", 16, 8, 16, DType::F16, DType::F16, DType::F32},
      {"mma.sync.m16n8k16", 16, 8, 16, DType::BF16, DType::BF16, DType::F32},
      {"mma.sync.m16n8k32", 16, 8, 32, DType::I8, DType::I8, DType::I32},
      tf32,
  };
  for (MatrixInstruction &mi : list) mi.staged_tiles = true;
  return list;
}

// Ada's mma.sync adds fp8: m16n8k32 of e4m3 into f32 (PTX 8.4), with s8's fragments (8-bit
// elements, 4 to a register). Hopper accepts the instruction but has no fp8 in its mma.sync
// datapath: ptxas converts the fragments to f16 (CUTLASS's maintainers say so, and ptxas's
// register counts agree: bench/RESULTS.md), so sm_90 and sm_90a widen fp8 dots to f16
// themselves, once a staged element, and keep wgmma for fp8.
std::vector<MatrixInstruction> ada_mma() {
  std::vector<MatrixInstruction> list = ampere_mma();
  MatrixInstruction e4m3{"mma.sync.m16n8k32.e4m3", 16, 8, 32, DType::F8E4M3, DType::F8E4M3, DType::F32};
  e4m3.staged_tiles = true;
  list.push_back(e4m3);
  return list;
}

// Hopper's warpgroup MMA (wgmma.mma_async m64nNk16 of f16/bf16 into f32, m64nNk32 of s8/u8
// into s32 and of fp8 e4m3 into f32, m64nNk8 of tf32 for TF32 dots): A and B from shared memory through descriptors,
// the four warps of a warpgroup stacked along m, one instruction over up to 256 columns. Dots
// too small for warpgroups fall back to mma.sync.
std::vector<MatrixInstruction> hopper_wgmma() {
  auto warpgroup = [](const char *name, int k, DType in, DType acc, bool tf32) {
    MatrixInstruction w{name, 64, 8, k, in, in, acc};
    w.warps_per_instruction = 4;
    w.descriptor_operands = true;
    w.staged_tiles = true;
    w.max_n = 256;
    w.tf32 = tf32;
    return w;
  };
  std::vector<MatrixInstruction> list = {
      warpgroup("wgmma.mma_async.m64nNk16", 16, DType::F16, DType::F32, false),
      warpgroup("wgmma.mma_async.m64nNk16", 16, DType::BF16, DType::F32, false),
      warpgroup("wgmma.mma_async.m64nNk32", 32, DType::I8, DType::I32, false),
      warpgroup("wgmma.mma_async.m64nNk32", 32, DType::U8, DType::I32, false),
      warpgroup("wgmma.mma_async.m64nNk32.e4m3", 32, DType::F8E4M3, DType::F32, false),
      warpgroup("wgmma.mma_async.m64nNk8.tf32", 8, DType::F32, DType::F32, true),
  };
  for (const MatrixInstruction &mma : ampere_mma()) list.push_back(mma);
  return list;
}

// CDNA's MFMA instructions (amdgpu/mfma_fragments.h has their lane layouts). For each
// operand type the 32 x 32 one comes first (half the LDS reads per multiply-add of the
// 16 x 16 one); the 16 x 16 one serves blocks with too few 32 x 32 tiles for every wave.
// The accumulator: lane l holds column l % n, 4 consecutive rows per VGPR quadruple.
std::vector<MatrixInstruction> cdna_mfma(bool gfx942) {
  std::array<int, 2> spt{4, 1}, tpw32{2, 32}, tpw16{4, 16};
  std::vector<MatrixInstruction> list = {
      {"mfma.f32.32x32x8f16", 32, 32, 8, DType::F16, DType::F16, DType::F32, spt, tpw32},
      {"mfma.f32.16x16x16f16", 16, 16, 16, DType::F16, DType::F16, DType::F32, spt, tpw16},
      {"mfma.f32.32x32x8bf16.1k", 32, 32, 8, DType::BF16, DType::BF16, DType::F32, spt, tpw32},
      {"mfma.f32.16x16x16bf16.1k", 16, 16, 16, DType::BF16, DType::BF16, DType::F32, spt, tpw16},
  };
  // gfx940+ replaced the i8 instructions with ones of twice the k (8 bytes per lane).
  if (gfx942) {
    list.push_back({"mfma.i32.32x32x16.i8", 32, 32, 16, DType::I8, DType::I8, DType::I32, spt, tpw32});
    list.push_back({"mfma.i32.16x16x32.i8", 16, 16, 32, DType::I8, DType::I8, DType::I32, spt, tpw16});
  } else {
    list.push_back({"mfma.i32.32x32x8i8", 32, 32, 8, DType::I8, DType::I8, DType::I32, spt, tpw32});
    list.push_back({"mfma.i32.16x16x16i8", 16, 16, 16, DType::I8, DType::I8, DType::I32, spt, tpw16});
  }
  return list;
}

std::vector<TargetInfo> make_targets() {
  // Turing: ldmatrix and mma.sync m16n8k8 exist, m16n8k16 and m16n8k32 do not; the
  // lowering does not use m16n8k8, so dot runs on FMAs here.
  TargetInfo sm75;
  sm75.name = "sm_75";
  sm75.backend = "cuda";
  sm75.triple = "nvptx64-nvidia-cuda";
  sm75.llvm_features = "+ptx70";
  sm75.compute_capability = 75;
  sm75.shared_bytes_optin = 64 * 1024;

  TargetInfo sm80;
  sm80.name = "sm_80";
  sm80.backend = "cuda";
  sm80.triple = "nvptx64-nvidia-cuda";
  sm80.llvm_features = "+ptx70";
  sm80.compute_capability = 80;
  sm80.shared_bytes_optin = 163 * 1024;
  sm80.matrix_instructions = ampere_mma();
  sm80.async_copy = true;

  // Ada (L4, L40S, RTX 40): sm_80's instructions, mma.sync of fp8, and cvt between fp8 and
  // f32 / f16x2. PTX 8.4 for the fp8 mma.sync.
  TargetInfo sm89 = sm80;
  sm89.name = "sm_89";
  sm89.llvm_features = "+ptx84";
  sm89.matrix_instructions = ada_mma();
  sm89.compute_capability = 89;
  sm89.shared_bytes_optin = 99 * 1024;
  sm89.fp8_conversions = true;

  // sm_90: code any Hopper-class or later GPU runs (newer ones through its PTX); no wgmma,
  // which exists only in the architecture-specific sm_90a. fp8 conversions as on sm_89;
  // sm_80's mma.sync (see ada_mma).
  TargetInfo sm90 = sm89;
  sm90.name = "sm_90";
  sm90.llvm_features = "+ptx78";
  sm90.matrix_instructions = ampere_mma();
  sm90.compute_capability = 90;
  sm90.shared_bytes_optin = 227 * 1024;

  // sm_90a: H100 / H200 themselves, with warpgroup MMA.
  TargetInfo sm90a = sm90;
  sm90a.name = "sm_90a";
  sm90a.llvm_features = "+ptx80";
  sm90a.matrix_instructions = hopper_wgmma();
  sm90a.tensor_copy = true;  // TMA writes the swizzled tiles wgmma reads; sm_90 keeps ldmatrix's padded rows

  // AMD CDNA (MI200: gfx90a, MI300: gfx942): waves of 64, 64 KiB of LDS per workgroup,
  // dot on MFMA (amdgpu/lower_mfma.cpp).
  TargetInfo gfx90a;
  gfx90a.name = "gfx90a";
  gfx90a.backend = "hip";
  gfx90a.triple = "amdgcn-amd-amdhsa";
  gfx90a.llvm_features = "+wavefrontsize64";
  gfx90a.isa_version = 9010;
  gfx90a.warp_size = 64;
  gfx90a.shared_bytes_static = 64 * 1024;
  gfx90a.shared_bytes_optin = 64 * 1024;
  gfx90a.matrix_instructions = cdna_mfma(false);

  TargetInfo gfx942 = gfx90a;
  gfx942.name = "gfx942";
  gfx942.isa_version = 9402;
  gfx942.matrix_instructions = cdna_mfma(true);

  // AMD RDNA3 (Radeon RX 7900): waves of 32 (its wave64 mode is not used), 64 KiB of LDS.
  // No MFMA; its WMMA instructions are not lowered, so dot runs on FMAs.
  TargetInfo gfx1100 = gfx90a;
  gfx1100.matrix_instructions.clear();
  gfx1100.name = "gfx1100";
  gfx1100.llvm_features = "+wavefrontsize32";
  gfx1100.isa_version = 11000;
  gfx1100.warp_size = 32;
  return {sm75, sm80, sm89, sm90, sm90a, gfx90a, gfx942, gfx1100};
}

const std::vector<TargetInfo> &targets() {
  static const std::vector<TargetInfo> all = make_targets();
  return all;
}

}  // namespace

const TargetInfo &target_info(const std::string &arch) {
  for (const TargetInfo &t : targets())
    if (t.name == arch) return t;
  throw Error(fmt::format("unknown GPU target '{}': kdsl knows {}", arch, fmt::join(target_names(), ", ")));
}

Target Target::named(const std::string &name) {
  if (name == "host") return host();
  for (const TargetInfo &t : targets())
    if (t.name == name) return Target{t.backend == "hip" ? Kind::Amdgpu : Kind::Nvptx, &t};
  throw Error(fmt::format("unknown target '{}': kdsl compiles for {}", name, fmt::join(names(), ", ")));
}

std::vector<std::string> Target::names() {
  std::vector<std::string> names = {"host"};
  for (const TargetInfo &t : targets()) names.push_back(t.name);
  return names;
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const TargetInfo &t : targets()) names.push_back(t.name);
  return names;
}

}  // namespace kdsl::codegen
