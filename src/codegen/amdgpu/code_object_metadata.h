// code_object_metadata.h - what an AMDGPU code object says of its kernels: the amdhsa metadata note, read back (no LLVM types: tests use it)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kdsl::codegen::amdgpu {

// One kernel of the note's amdhsa.kernels list; -1: the field is absent.
struct KernelMetadata {
  std::string name, symbol;       // .name, .symbol ("k.kd", the kernel descriptor)
  int vgprs = -1, sgprs = -1, agprs = -1;             // .vgpr_count, .sgpr_count, .agpr_count
  int vgpr_spills = -1, sgpr_spills = -1;             // .vgpr_spill_count, .sgpr_spill_count
  int lds_bytes = -1;             // .group_segment_fixed_size: static LDS (dynamic LDS comes at launch)
  int scratch_bytes = -1;         // .private_segment_fixed_size: per work-item scratch (stack, spills)
  int kernarg_bytes = -1;         // .kernarg_segment_size
  int wavefront_size = -1;        // .wavefront_size
  int max_workgroup_size = -1;    // .max_flat_workgroup_size
};

struct CodeObjectMetadata {
  int elf_machine = 0;            // e_machine: 224 (EM_AMDGPU)
  std::string target;             // amdhsa.target: "amdgcn-amd-amdhsa--gfx942"
  std::vector<int> version;       // amdhsa.version: [1, 2] is code object v5
  std::vector<KernelMetadata> kernels;
};

// Reads the NT_AMDGPU_METADATA note (a MessagePack map) of an AMDGPU ELF, relocatable or
// linked. Throws kdsl::Error when `elf` is not a 64-bit AMDGPU ELF or has no such note.
CodeObjectMetadata read_code_object_metadata(const std::vector<uint8_t> &elf);

}  // namespace kdsl::codegen::amdgpu
