// amdgpu_compile_test.cpp - every example and test kernel compiles to an AMDGPU code object for gfx90a and gfx942 (no GPU needed): metadata, ISA (MFMA for dot), errors
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>

#include <kdsl/kdsl.h>

#include "codegen/amdgpu/code_object_metadata.h"
#include "codegen/amdgpu/rocm_tools.h"
#include "codegen/codegen.h"
#include "src/tools/example_kernels.h"
#include "tests/codegen/nvptx_test_kernels.h"
#include "tests/scratch_cache.h"
#include "tests/test_util.h"

using kdsl_test::ScopedEnv;

using namespace kdsl;
namespace amd = kdsl::codegen::amdgpu;

namespace amdgpu_test {

codegen::CompiledObject compile(const tools::NamedKernel &k, const std::string &arch, const std::string &spec = "aligned") {
  codegen::Options options;
  options.num_warps = k.num_warps;
  return codegen::compile(tools::trace_kernel(k.signature, tools::parse_specialization(spec, k.signature)), "kdsl_" + k.name,
                          codegen::Target::named(arch), options);
}

bool contains(const std::string &text, const std::string &what) { return text.find(what) != std::string::npos; }

// Code objects are linked by ld.lld; without it nothing past LLVM IR can be checked.
bool have_lld() {
  if (!amd::find_lld().empty()) return true;
  MESSAGE("skipped: ld.lld from LLVM 19 not found (" << amd::lld_search_text() << ")");
  return false;
}

// Kernels calling ocml (sin, tanh, erf, pow, ...) need ROCm's device libraries.
bool have_device_libs() {
  if (!amd::find_device_libs().empty()) return true;
  MESSAGE("skipped: ROCm's ocml.bc not found (" << amd::device_libs_search_text() << ")");
  return false;
}

template <int BLOCK>
void print_values(Ptr<f32> x, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  device_print("x", load(x + offs, offs < n, 0));
}

template <int BLOCK>
void assert_values(Ptr<f32> x, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  device_assert(load(x + offs, offs < n, 0) < 100.0f, "x must stay below 100");
}

bool calls_device_math(const std::string &name) { return name == "math_ops" || name == "bf16_math"; }

// Configurations sized for an NVIDIA GPU's shared memory (Triton's tutorial flash attention
// takes 123 KiB on sm_80, its matmul tile through descriptors 66 KiB for the f16 epilogue),
// past the 64 KiB of LDS a workgroup has on gfx90a and gfx942; the compile refuses them,
// naming both figures (tested below).
bool sized_for_nvidia(const std::string &name) {
  return name == "flash_attention" || name == "flash_attention_descriptor" || name == "matmul_descriptor" || name == "matmul_persistent";
}

}  // namespace amdgpu_test

using namespace amdgpu_test;

TEST_CASE("amdgpu: every example and test kernel links into a gfx90a and gfx942 code object, wave64, without spills or scratch") {
  if (!have_lld()) return;
  bool libs = have_device_libs();
  for (const char *arch : {"gfx90a", "gfx942"})
    for (const tools::NamedKernel &k : nvptx_test::all_kernels()) {
      if ((!libs && calls_device_math(k.name)) || sized_for_nvidia(k.name)) continue;
      CAPTURE(k.name);
      CAPTURE(arch);
      codegen::CompiledObject obj = compile(k, arch);
      CHECK(obj.format == "hsaco");
      REQUIRE(obj.object.size() > 64);
      CHECK(obj.object[0] == 0x7f);  // ELF
      amd::CodeObjectMetadata md = amd::read_code_object_metadata(obj.object);
      CHECK(md.elf_machine == 224);  // EM_AMDGPU
      CHECK(contains(md.target, std::string("amdgcn-amd-amdhsa--") + arch));
      REQUIRE(md.kernels.size() == 1);
      const amd::KernelMetadata &km = md.kernels[0];
      CHECK(km.name == "kdsl_" + k.name);
      CHECK(km.symbol == "kdsl_" + k.name + ".kd");
      CHECK(km.wavefront_size == 64);
      CHECK(km.max_workgroup_size == k.num_warps * 64);
      CHECK(km.kernarg_bytes >= 8);
      CHECK(km.vgprs > 0);
      CHECK(km.vgprs <= 512);
      CHECK(km.vgpr_spills == 0);
      CHECK(km.sgpr_spills == 0);
      CHECK(km.scratch_bytes == 0);
      CHECK(obj.resources.threads == k.num_warps * 64);
      CHECK(obj.resources.registers == km.vgprs);
      CHECK(obj.resources.scalar_registers == km.sgprs);
      CHECK(obj.resources.wavefront_size == 64);
      CHECK(contains(obj.assembly, std::string(".amdgcn_target \"amdgcn-amd-amdhsa--") + arch));
    }
}

TEST_CASE("amdgpu: the kernarg segment holds the kernel's arguments: three pointers and an i32 for vector add") {
  if (!have_lld()) return;
  codegen::CompiledObject obj = compile(nvptx_test::find("vector_add"), "gfx942");
  amd::KernelMetadata km = amd::read_code_object_metadata(obj.object).kernels.at(0);
  CHECK(km.kernarg_bytes >= 3 * 8 + 4);
  CHECK(obj.resources.kernarg_bytes == km.kernarg_bytes);
  CHECK(contains(obj.assembly, ".amdhsa_kernarg_size " + std::to_string(km.kernarg_bytes)));
  CHECK(km.wavefront_size == 64);
}

TEST_CASE("amdgpu: aligned vector add loads and stores 128 bits per access; unaligned pointers do not") {
  if (!have_lld()) return;
  const auto &add = nvptx_test::find("vector_add");
  std::string aligned = compile(add, "gfx942").assembly;
  CHECK(contains(aligned, "global_load_dwordx4"));
  CHECK(contains(aligned, "global_store_dwordx4"));
  std::string unaligned = compile(add, "gfx942", "none").assembly;
  CHECK_FALSE(contains(unaligned, "global_load_dwordx4"));
  CHECK(contains(unaligned, "global_load_dword "));
}

TEST_CASE("amdgpu: softmax reduces across the wave with ds_bpermute and across waves through LDS between s_barriers") {
  if (!have_lld()) return;
  for (const char *arch : {"gfx90a", "gfx942"}) {
    CAPTURE(arch);
    codegen::CompiledObject obj = compile(nvptx_test::find("softmax"), arch);
    CHECK(contains(obj.assembly, "ds_bpermute_b32"));
    CHECK(contains(obj.assembly, "s_barrier"));
    CHECK(contains(obj.assembly, "ds_write"));
    CHECK(contains(obj.assembly, "ds_read"));
    CHECK(contains(obj.assembly, "global_load"));
    CHECK(contains(obj.assembly, "v_exp_f32"));  // exp lowered by the backend, no library
    CHECK_FALSE(contains(obj.assembly, "__ocml"));
    CHECK(obj.resources.dynamic_shared_bytes > 0);  // the per-wave partial results, passed at launch
  }
}

TEST_CASE("amdgpu: dot on f16, bf16 and i8 tiles runs on MFMA on gfx90a and gfx942, operands read from LDS, without spills or scratch") {
  if (!have_lld()) return;
  struct Case {
    const char *kernel, *gfx90a, *gfx942;
  };
  // The example's 32 x 32 block has one 32 x 32 tile for 4 waves, so it takes 16 x 16 ones.
  const Case cases[] = {
      {"matmul", "v_mfma_f32_16x16x16f16", "v_mfma_f32_16x16x16_f16"},
      {"matmul_f16_128x128", "v_mfma_f32_32x32x8f16", "v_mfma_f32_32x32x8_f16"},
      {"matmul_f16_128x128_w8", "v_mfma_f32_32x32x8f16", "v_mfma_f32_32x32x8_f16"},
      {"matmul_relu_f16", "v_mfma_f32_16x16x16f16", "v_mfma_f32_16x16x16_f16"},
      {"attention_tile", "v_mfma_f32_16x16x16f16", "v_mfma_f32_16x16x16_f16"},
      {"matmul_bf16", "v_mfma_f32_32x32x8bf16_1k", "v_mfma_f32_32x32x8_bf16"},
      {"matmul_i8", "v_mfma_i32_32x32x8i8", "v_mfma_i32_32x32x16_i8"},
      {"int8_dot", "v_mfma_i32_16x16x16i8", "v_mfma_i32_16x16x32_i8"},
  };
  for (const Case &c : cases)
    for (const char *arch : {"gfx90a", "gfx942"}) {
      CAPTURE(c.kernel);
      CAPTURE(arch);
      codegen::CompiledObject obj = compile(nvptx_test::find(c.kernel), arch);
      CHECK(contains(obj.assembly, std::string(arch) == "gfx90a" ? c.gfx90a : c.gfx942));
      CHECK(contains(obj.assembly, "ds_read"));
      amd::KernelMetadata km = amd::read_code_object_metadata(obj.object).kernels.at(0);
      CHECK(km.vgpr_spills == 0);
      CHECK(km.sgpr_spills == 0);
      CHECK(km.scratch_bytes == 0);
    }
}

TEST_CASE("amdgpu: dots MFMA cannot tile stay on FMAs: f32 and u8 operands, k or n off the instruction, too few tiles, and gfx1100") {
  if (!have_lld()) return;
  // matmul_f16_prefill (the library's kernel) multiplies f32: its weights are widened first.
  for (const char *name : {"matmul_f32", "matmul_f16_k8", "matmul_f16_n4", "matmul_f16_one_tile", "matmul_f16_prefill"}) {
    CAPTURE(name);
    codegen::CompiledObject obj = compile(nvptx_test::find(name), "gfx942");
    CHECK_FALSE(contains(obj.assembly, "v_mfma"));
    CHECK((contains(obj.assembly, "v_fmac_f32") || contains(obj.assembly, "v_fma_f32") || contains(obj.assembly, "v_pk_fma_f32")));
    CHECK(contains(obj.assembly, "ds_read"));
    // A dot of types MFMA takes says why it is on FMAs; f32 has no MFMA here to fall back from.
    const bool f16 = std::string(name).starts_with("matmul_f16_") && std::string(name) != "matmul_f16_prefill";
    CHECK(obj.warnings.size() == (f16 ? 1u : 0u));
    if (f16 && !obj.warnings.empty()) CHECK(contains(obj.warnings[0], "runs on FMAs on gfx942"));
  }
  CHECK_FALSE(contains(compile(nvptx_test::find("uint8_dot"), "gfx942").assembly, "v_mfma"));  // MFMA's i8 is signed
  for (const char *name : {"matmul", "matmul_bf16"}) {
    CAPTURE(name);
    codegen::CompiledObject obj = compile(nvptx_test::find(name), "gfx1100");  // RDNA3: no MFMA, WMMA not lowered
    CHECK_FALSE(contains(obj.assembly, "v_mfma"));
    CHECK_FALSE(contains(obj.assembly, "v_wmma"));
    CHECK((contains(obj.assembly, "v_fmac_f32") || contains(obj.assembly, "v_fma_f32") || contains(obj.assembly, "v_pk_fma_f32")));
  }
}

TEST_CASE("amdgpu: gfx1100 is wave32") {
  if (!have_lld()) return;
  codegen::CompiledObject obj = compile(nvptx_test::find("softmax"), "gfx1100");
  amd::KernelMetadata km = amd::read_code_object_metadata(obj.object).kernels.at(0);
  CHECK(km.wavefront_size == 32);
  CHECK(obj.resources.threads == 4 * 32);
  CHECK(contains(obj.assembly, ".amdhsa_wavefront_size32 1"));
}

TEST_CASE("amdgpu: ocml's math is linked in, not left as calls; the kernels without math need no device libraries") {
  if (!have_lld()) return;
  if (have_device_libs()) {
    codegen::CompiledObject obj = compile(nvptx_test::find("math_ops"), "gfx942");
    CHECK_FALSE(contains(obj.assembly, "__ocml_"));
    CHECK_FALSE(contains(obj.assembly, "s_swappc"));  // no calls left: everything inlined
  }
  ScopedEnv nowhere("KDSL_ROCM_DEVICE_LIBS", "/nonexistent/kdsl-device-libs");
  CHECK(compile(nvptx_test::find("softmax"), "gfx942").format == "hsaco");
  try {
    compile(nvptx_test::find("math_ops"), "gfx942");
    FAIL("compiled a kernel calling ocml without the device libraries");
  } catch (const Error &e) {
    std::string msg = e.what();
    CHECK(contains(msg, "kdsl_math_ops"));
    CHECK(contains(msg, "ocml.bc"));
    CHECK(contains(msg, "__ocml_"));
    CHECK(contains(msg, "/nonexistent/kdsl-device-libs"));
    CHECK(contains(msg, "rocm-device-libs"));
  }
}

TEST_CASE("amdgpu: a missing ld.lld is an error naming where kdsl looked and the package") {
  ScopedEnv nowhere("KDSL_LLD", "/nonexistent/ld.lld");
  try {
    compile(nvptx_test::find("vector_add"), "gfx942");
    FAIL("linked a code object without ld.lld");
  } catch (const Error &e) {
    std::string msg = e.what();
    CHECK(contains(msg, "examples::add<1024>"));  // the kernel by its name
    CHECK(contains(msg, "gfx942"));
    CHECK(contains(msg, "ld.lld"));
    CHECK(contains(msg, "/nonexistent/ld.lld"));
    CHECK(contains(msg, "lld-19"));
  }
}

TEST_CASE("amdgpu: unknown gfx targets are user errors naming the known ones") {
  try {
    codegen::Target::named("gfx9999");
    FAIL("accepted gfx9999");
  } catch (const Error &e) {
    std::string msg = e.what();
    CHECK(contains(msg, "gfx9999"));
    CHECK(contains(msg, "gfx90a"));
    CHECK(contains(msg, "gfx942"));
  }
  CHECK(codegen::Target::named("gfx942").kind == codegen::Target::Kind::Amdgpu);
  CHECK(codegen::Target::named("gfx942").gpu->warp_size == 64);
  CHECK(codegen::Target::named("sm_90").kind == codegen::Target::Kind::Nvptx);
}

TEST_CASE("amdgpu: device_print is refused by name on AMD GPUs; device_assert traps") {
  if (!have_lld()) return;
  CHECK(contains(compile(tools::named_kernel<assert_values<256>>("assert_values"), "gfx942").assembly, "s_trap"));
  try {
    compile(tools::named_kernel<print_values<256>>("print_values"), "gfx942");
    FAIL("lowered device_print for AMD");
  } catch (const Error &e) {
    std::string msg = e.what();
    CHECK(contains(msg, "device_print"));
    CHECK(contains(msg, "gfx942"));
  }
}

TEST_CASE("amdgpu: the metadata reader refuses what is not an AMDGPU ELF") {
  CHECK_THROWS_WITH_AS(amd::read_code_object_metadata({1, 2, 3}), doctest::Contains("not a 64-bit little-endian ELF"), Error);
  if (!have_lld()) return;
  const tools::NamedKernel &add = nvptx_test::find("vector_add");
  codegen::CompiledObject host =
      codegen::compile(tools::trace_kernel(add.signature, tools::parse_specialization("none", add.signature)), "host_add", codegen::Target::host());
  CHECK_THROWS_WITH_AS(amd::read_code_object_metadata(host.object), doctest::Contains("expected 224 (EM_AMDGPU)"), Error);
}

TEST_CASE("amdgpu: compile_for gfx942 stores the code object under a key with the toolchain; a second compile hits the cache") {
  if (!have_lld()) return;
  test::ScratchCache cache("amdgpu_compile_for");
  const tools::NamedKernel &add = nvptx_test::find("vector_add");
  Specialization spec = Specialization::parse("aligned");
  CacheFill first = detail::cache_for(add.signature, Target("gfx942"), spec, {});
  CHECK_FALSE(first.already_cached);
  CHECK(first.stored);
  CacheFill second = detail::cache_for(add.signature, Target("gfx942"), spec, {});
  CHECK(second.already_cached);
  CHECK(second.cache_digest == first.cache_digest);
  CacheFill other = detail::cache_for(add.signature, Target("gfx90a"), spec, {});
  CHECK(other.cache_digest != first.cache_digest);
  CompileResult r = detail::compile_for(add.signature, Target("gfx942"), spec, {});
  CHECK(r.format == "hsaco");
  CHECK(r.resources.wavefront_size == 64);
  CHECK(contains(r.resources.report, "vgprs"));
  CHECK(contains(r.assembly, "global_load_dwordx4"));
}

TEST_CASE("amdgpu: a kernel needing more shared memory than a workgroup's LDS is refused, naming the kernel, its bytes and the target's") {
  for (const char *arch : {"gfx90a", "gfx942"}) {
    CAPTURE(arch);
    std::string message;
    try {
      compile(nvptx_test::find("flash_attention"), arch);
    } catch (const Error &e) {
      message = e.what();
    }
    CHECK(contains(message, "kernel 'examples::flash_attention<"));
    CHECK(contains(message, "bytes of shared memory per program"));
    CHECK(contains(message, std::string("; ") + arch + " has 65536"));
  }
}
