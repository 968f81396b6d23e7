// rocm_tools.h - what the AMDGPU backend needs outside LLVM, found at run time: ld.lld and ROCm's device libraries (no LLVM types: tests and the runtime use it)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kdsl::codegen::amdgpu {

// The linker that turns a relocatable amdgcn object into a code object: $KDSL_LLD when set
// (empty: none), else LLVM 19's (/usr/lib/llvm-19/bin/ld.lld, then ld.lld-19 on PATH; an
// older ld.lld may not know LLVM 19's targets and code-object version). Empty when none.
std::string find_lld();

// Where find_lld looked, for error messages.
std::string lld_search_text();

// The folder holding ROCm's device libraries (ocml.bc): $KDSL_ROCM_DEVICE_LIBS when set
// (empty: none), else amdgcn/bitcode under $ROCM_PATH, /opt/rocm, then Debian's
// /usr/lib/x86_64-linux-gnu/amdgcn/bitcode (package rocm-device-libs). Empty when none.
std::string find_device_libs();

// Where find_device_libs looked, for error messages.
std::string device_libs_search_text();

// Links `object` (a relocatable amdgcn ELF) into a code object (HSACO: a shared ELF the HIP
// runtime loads) with `lld -shared`. Throws kdsl::Error with lld's output when it fails.
std::vector<uint8_t> link_code_object(const std::string &lld, const std::vector<uint8_t> &object, const std::string &kernel);

// "19.1.7" from ld.lld --version's "LLD 19.1.7"; its first line where that is missing;
// "unknown" where it does not run.
std::string lld_version(const std::string &lld);

}  // namespace kdsl::codegen::amdgpu
