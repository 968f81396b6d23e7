// hip_target.cpp - an AMD GPU target's cache identity, ld.lld's version and ocml's hash included
#include "runtime/hip/hip_target.h"

#include <fmt/format.h>

#include <filesystem>

#include "codegen/amdgpu/rocm_tools.h"
#include "runtime/tool_identity.h"

namespace kdsl::detail {

std::string hip_toolchain_features() {
  std::string lld = codegen::amdgpu::find_lld(), libs = codegen::amdgpu::find_device_libs();
  std::string ocml = libs.empty() ? "" : (std::filesystem::path(libs) / "ocml.bc").string();
  std::string lld_part = lld.empty() ? "none" : remembered_for_file("ld.lld", lld, [&] { return codegen::amdgpu::lld_version(lld); });
  std::string ocml_part = ocml.empty() ? "none" : remembered_for_file("ocml", ocml, [&] { return file_hash_hex(ocml); });
  return fmt::format("ld.lld {}; ocml {}", lld_part, ocml_part);
}

codegen::TargetDesc hip_target(const codegen::TargetInfo &info) {
  codegen::TargetDesc target;
  target.backend = "hip";
  target.arch = info.name;
  target.triple = info.triple;
  target.features = hip_toolchain_features();
  return target;
}

}  // namespace kdsl::detail
