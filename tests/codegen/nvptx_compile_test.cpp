// nvptx_compile_test.cpp - every example and test kernel lowers to PTX that ptxas assembles for sm_80, sm_89, sm_90 and sm_90a (no GPU needed)
#include <doctest/doctest.h>

#include <cstdlib>

#include <kdsl/kdsl.h>

#include "codegen/codegen.h"
#include "codegen/nvptx/ptxas.h"
#include "codegen/target_info.h"
#include "kernels/attention_prefill.h"
#include "kernels/matmul_narrow.h"
#include "src/tools/example_kernels.h"
#include "tests/codegen/nvptx_test_kernels.h"
#include "tests/test_util.h"

using namespace kdsl;

namespace nvptx_test {

codegen::CompiledObject compile(const tools::NamedKernel &k, const std::string &arch, const std::string &spec = "aligned", int num_stages = 2) {
  codegen::Options options;
  options.num_warps = k.num_warps;
  options.num_stages = num_stages;
  return codegen::compile(tools::trace_kernel(k.signature, tools::parse_specialization(spec, k.signature)), "kdsl_" + k.name,
                          codegen::Target::named(arch), options);
}

bool contains(const std::string &text, const char *what) { return text.find(what) != std::string::npos; }

}  // namespace nvptx_test

using namespace nvptx_test;

// Kernels with math functions link the toolkit's libdevice; without a toolkit there is
// nothing to check them against.
bool have_libdevice() {
  if (!codegen::nvptx::find_libdevice().empty()) return true;
  MESSAGE("skipped: libdevice.10.bc not found (no CUDA toolkit under CUDA_HOME or /usr/local/cuda)");
  return false;
}

// sm_89 (Ada) has 99 KiB of shared memory a block where sm_80 has 163 and Hopper 227: a kernel
// sized for those (flash attention at Triton's Hopper configuration, either form) is refused there, by name.
TEST_CASE("nvptx: every example and test kernel assembles for sm_80, sm_89, sm_90 and sm_90a without spills") {
  if (!have_libdevice()) return;
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  if (!have_ptxas) MESSAGE("ptxas not found (CUDA_HOME, /usr/local/cuda/bin, PATH): checking PTX emission only");
  std::vector<std::string> too_big_for_ada;
  for (const std::string arch : {"sm_80", "sm_89", "sm_90", "sm_90a"})
    for (const tools::NamedKernel &k : all_kernels()) {
      CAPTURE(k.name);
      CAPTURE(arch);
      codegen::CompiledObject obj;
      if (std::string refused = kdsl_test::error_text([&] { obj = compile(k, arch); }); !refused.empty()) {
        CHECK_MESSAGE(arch == "sm_89", refused);
        CHECK(contains(refused, "bytes of shared memory per program; sm_89 has 101376"));
        too_big_for_ada.push_back(k.name);
        continue;
      }
      CHECK(contains(obj.ptx, (std::string(".target ") + arch + "\n").c_str()));
      CHECK(contains(obj.ptx, (".entry kdsl_" + k.name).c_str()));
      CHECK(obj.resources.threads == k.num_warps * 32);
      if (!have_ptxas) continue;
      REQUIRE(obj.resources.assembled);
      CHECK(obj.resources.registers > 0);
      CHECK(obj.resources.registers <= 255);
      CHECK(obj.resources.spill_store_bytes == 0);
      for (const std::string &w : obj.warnings) CHECK_FALSE(contains(w, "spilled"));
      CHECK(obj.resources.spill_load_bytes == 0);
      CHECK(obj.object.size() > 4);
      CHECK(obj.object[0] == 0x7f);  // a cubin is an ELF file
    }
  std::string refused_on_ada;
  for (const std::string &name : too_big_for_ada) refused_on_ada += name + " ";
  const std::vector<std::string> hopper_sized = {"flash_attention", "flash_attention_descriptor"};
  CHECK_MESSAGE(too_big_for_ada == hopper_sized, refused_on_ada);
}

TEST_CASE("nvptx: aligned vector add moves 128 bits per access; unaligned sizes fall back to scalar accesses") {
  const auto &add = find("vector_add");
  std::string aligned = compile(add, "sm_80").ptx;
  CHECK(contains(aligned, "ld.global.v4.f32"));
  CHECK(contains(aligned, "st.global.v4.f32"));
  // n not known to be a multiple of 16: the mask may change inside a group of four.
  std::string ragged = compile(add, "sm_80", "16,16,16,_").ptx;
  CHECK_FALSE(contains(ragged, "ld.global.v4"));
  CHECK(contains(ragged, "ld.global.f32"));
  // Pointers not known to be aligned: no vector access either.
  std::string unaligned = compile(add, "sm_80", "none").ptx;
  CHECK_FALSE(contains(unaligned, "ld.global.v4"));
}

TEST_CASE("nvptx: a dot's B given as trans(W[N][K]) is copied as stored ([n][k], cp.async) and read by ldmatrix without .trans") {
  auto k = tools::named_kernel<kernels::matmul_narrow<bf16, 64, 64, 32, false>>("matmul_narrow", 4);
  std::string ptx = compile(k, "sm_90", "aligned", 3).ptx;
  CHECK(contains(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  CHECK(contains(ptx, "cp.async.cg.shared.global"));  // W's tile, pipelined
  CHECK(contains(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
  CHECK_FALSE(contains(ptx, ".trans"));  // neither a transposing fragment load nor a transposed copy of W
}

// The GPU prefill's tile over x its producer wrote in bf16 (Library::product_input_type): x's
// tiles are copied ahead as W's are, where f32 rows are loaded in the loop, rounded and stored
// to shared memory by the threads, and on sm_90a the next k-step's wgmma overlaps this one's.
TEST_CASE("nvptx: the GPU prefill over bf16 x copies x's tiles ahead (cp.async) and on sm_90a overlaps wgmma k-steps; f32 x loads them in the loop") {
  if (!have_libdevice()) return;
  auto narrow_x = tools::named_kernel<kernels::matmul_narrow<bf16, 64, 128, 64, false, bf16>>("matmul_narrow_bf16_x", 4);
  auto f32_x = tools::named_kernel<kernels::matmul_narrow<bf16, 64, 128, 64, false>>("matmul_narrow_f32_x", 4);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    codegen::CompiledObject narrow = compile(narrow_x, arch, "aligned", 3), wide = compile(f32_x, arch, "aligned", 3);
    CHECK_FALSE(contains(narrow.ptx, "ld.global.v4.f32"));
    CHECK(contains(wide.ptx, "ld.global.v4.f32"));  // x's f32 tile, every step
    CHECK(narrow.resources.spill_store_bytes == 0);
    MESSAGE(std::string(arch), " bf16 x: ", narrow.resources.registers, " registers, ", narrow.resources.dynamic_shared_bytes, " bytes of shared memory; f32 x: ",
            wide.resources.registers, " registers, ", wide.resources.dynamic_shared_bytes, " bytes");
  }
  const std::string hopper = compile(narrow_x, "sm_90a", "aligned", 3).ptx;
  CHECK(contains(hopper, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"));
  CHECK(contains(hopper, "wgmma.wait_group.sync.aligned 1;"));
  CHECK_FALSE(contains(compile(f32_x, "sm_90a", "aligned", 3).ptx, "wgmma.wait_group.sync.aligned 1;"));
}

// The engine's prefill attention over a GPU's f16 cache: both dots on tensor cores, the scores'
// B the keys' tile transposed, P fed to the second from registers; no spills.
TEST_CASE("nvptx: prefill attention over an f16 KV cache takes both dots on mma.sync, without spills") {
  if (!have_libdevice()) return;
  auto k = tools::named_kernel<kernels::attention_prefill<16, 32, 128, true, true, kernels::KvPlain<f16>, kernels::KvPlain<f16>, kernels::ScoreForm::kTensorCores>>(
      "attention_prefill_tc", 4);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    codegen::CompiledObject obj = compile(k, arch);
    CHECK(contains(obj.ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    CHECK(obj.resources.spill_store_bytes == 0);
    MESSAGE(std::string(arch), " tensor-core form: ", obj.resources.registers, " registers, ", obj.resources.dynamic_shared_bytes, " bytes of shared memory");
  }
  // The f32 form (a GPU's f32 and q8_0 caches) multiplies on FMAs: its dots are f32.
  auto plain = tools::named_kernel<kernels::attention_prefill<16, 32, 128, true, true, kernels::KvPlain<f16>, kernels::KvPlain<f16>, kernels::ScoreForm::kRowsReduced>>(
      "attention_prefill_f32", 4);
  codegen::CompiledObject f32_form = compile(plain, "sm_80");
  CHECK_FALSE(contains(f32_form.ptx, "mma.sync"));
  MESSAGE("sm_80 f32 form: ", f32_form.resources.registers, " registers, ", f32_form.resources.dynamic_shared_bytes, " bytes of shared memory, ",
          f32_form.resources.spill_store_bytes, " bytes spilled");
}

// Triton's tutorial configuration with an f16 output: three stages of A [128 x 64] and B
// [64 x 128] tiles (107,520 bytes, rows padded for ldmatrix), then the accumulator converted to
// a blocked layout for the narrow store (66,048 bytes). The conversion reuses the pipeline's
// space once the loop is done: 107,520 bytes, where two live-forever allocations took 173,568.
TEST_CASE("nvptx: shared memory is released when its loop ends: the f16-output matmul at 128 x 128 x 64, 8 warps, 3 stages takes the larger of its pipeline and its epilogue, not the sum") {
  auto k = tools::named_kernel<tiled_matmul<f16, f32, 128, 128, 64, f16>>("matmul_f16_out", 8);
  codegen::CompiledObject obj = compile(k, "sm_90", "aligned", 3);
  CHECK(contains(obj.ptx, "cp.async.cg.shared.global"));
  CHECK(obj.resources.dynamic_shared_bytes == 107520);
  CHECK(obj.resources.spill_store_bytes == 0);
}

// The same configuration on sm_90a, as Triton runs it on Hopper: A and B (given [k][n], read
// MN-major) copied ahead in three stages of 128-byte-swizzled tiles, 16 KiB each, which is
// Triton's 98,304 bytes, plus 1008 bytes of slack so the tiles start on a 1024-byte boundary
// whatever alignment the driver gives dynamic shared memory; the f16 epilogue reuses them.
TEST_CASE("nvptx: Triton's tutorial matmul on sm_90a: both operands copied ahead, wgmma reading B MN-major, Triton's shared bytes, no spills") {
  auto k = tools::named_kernel<tiled_matmul<f16, f32, 128, 128, 64, f16>>("matmul_f16_out", 8);
  codegen::CompiledObject obj = compile(k, "sm_90a", "aligned", 3);
  CHECK(contains(obj.ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"));
  CHECK(contains(obj.ptx, ", 1, 1, 1, 0, 1;"));  // B's transpose bit: MN-major
  CHECK(obj.resources.dynamic_shared_bytes == 3 * (16384 + 16384) + 1008);
  if (codegen::nvptx::find_ptxas().empty()) return;
  REQUIRE(obj.resources.assembled);
  CHECK(obj.resources.spill_store_bytes == 0);
  CHECK(obj.resources.registers <= 168);  // 128 with ptxas 13.0; at most the same kernel's mma.sync figure (sm_80: 168)
}

TEST_CASE("nvptx: a multiply feeding an add is contracted to fma.rn.f32, as Triton and nvcc do") {
  std::string ptx = compile(find("layer_norm"), "sm_90").ptx;
  CHECK(contains(ptx, "fma.rn.f32"));
  CHECK_FALSE(contains(ptx, "mul.rn.f32"));  // the separately rounded product of an uncontracted lowering
}

TEST_CASE("nvptx: f32 division is div.full.f32 (2 ulp, as Triton divides), not IEEE div.rn.f32") {
  for (const char *name : {"softmax", "layer_norm"}) {
    CAPTURE(name);
    std::string ptx = compile(find(name), "sm_90a").ptx;
    CHECK(contains(ptx, "div.full.f32"));
    CHECK_FALSE(contains(ptx, "div.rn.f32"));
  }
}

TEST_CASE("nvptx: softmax reduces across lanes with shfl.sync and across warps through shared memory; exp is ex2.approx") {
  codegen::CompiledObject obj = compile(find("softmax"), "sm_90");
  CHECK(contains(obj.ptx, "shfl.sync.bfly.b32"));
  CHECK(contains(obj.ptx, "bar.sync"));
  CHECK(contains(obj.ptx, "ex2.approx"));
  CHECK(contains(obj.ptx, "ld.global.v4.f32"));
  CHECK(obj.resources.dynamic_shared_bytes > 0);
}

TEST_CASE("nvptx: the f16 matmul example multiplies on tensor cores: ldmatrix operands, mma.sync, accumulator stored from its fragments") {
  for (const char *arch : {"sm_80", "sm_90"}) {
    CAPTURE(arch);
    std::string ptx = compile(find("matmul"), arch).ptx;
    CHECK(contains(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    CHECK(contains(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
    CHECK(contains(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
    CHECK(contains(ptx, "st.global.v2.f32"));  // f32 accumulator stored straight from its fragments
    CHECK_FALSE(contains(ptx, "fma.rn.f32"));
    // num_stages = 2 (the default): both tiles copied global -> shared one iteration ahead.
    CHECK(contains(ptx, "cp.async.cg.shared.global"));
    CHECK(contains(ptx, "cp.async.commit_group"));
    CHECK(contains(ptx, "cp.async.wait_group 0"));
    CHECK_FALSE(contains(ptx, "ld.global"));
    // num_stages = 1: loaded into registers (16 bytes at a time), then staged.
    std::string unpipelined = compile(find("matmul"), arch, "aligned", 1).ptx;
    CHECK_FALSE(contains(unpipelined, "cp.async"));
    CHECK(contains(unpipelined, "ld.global.v4.b32"));
    CHECK(contains(unpipelined, "st.shared.v4.b32"));
    CHECK(contains(unpipelined, "mma.sync.aligned.m16n8k16"));
  }
}

TEST_CASE("nvptx: a dot its matrix instruction cannot tile is a warning naming the kernel, its operands and why; dots on tensor cores and f32 dots warn of nothing") {
  auto warnings = [](const char *name) { return compile(find(name), "sm_80").warnings; };
  std::vector<std::string> k8 = warnings("matmul_f16_k8");
  REQUIRE(k8.size() == 1);
  CHECK(contains(k8[0], "tiled_matmul"));  // the kernel's name
  CHECK(contains(k8[0], "f16[32,8] by f16[8,32]"));
  CHECK(contains(k8[0], "runs on FMAs on sm_80"));
  CHECK(contains(k8[0], "m, n, k = 32, 32, 8 are not multiples of its tile"));
  std::vector<std::string> one_tile = warnings("matmul_f16_one_tile");
  REQUIRE(one_tile.size() == 1);
  CHECK(contains(one_tile[0], "too few tiles for 4 warps"));
  CHECK(warnings("matmul").empty());       // f16 on mma.sync
  CHECK(warnings("matmul_f32").empty());   // no f32 matrix instruction: FMAs are the plan, not a fallback
  CHECK(warnings("softmax").empty());
}

TEST_CASE("codegen: spilled registers are a warning naming the kernel, the target and the figures; nothing spilled or nothing known is none") {
  codegen::ResourceReport r;
  CHECK_FALSE(codegen::spill_warning(r, "k", "sm_90"));  // no ptxas: -1 everywhere
  r.spill_store_bytes = r.spill_load_bytes = 0;
  r.registers = 40;
  CHECK_FALSE(codegen::spill_warning(r, "k", "sm_90"));
  r.spill_store_bytes = 4;
  r.spill_load_bytes = 8;
  r.stack_frame_bytes = 16;
  std::optional<std::string> w = codegen::spill_warning(r, "kdsl_flash", "sm_90");
  REQUIRE(w);
  CHECK(contains(*w, "kernel 'kdsl_flash' on sm_90"));
  CHECK(contains(*w, "4 bytes stored, 8 bytes loaded, a 16-byte stack frame, 40 registers"));
  codegen::ResourceReport amd;
  amd.vector_spills = 3;
  amd.scalar_spills = 0;
  amd.registers = 256;
  w = codegen::spill_warning(amd, "k", "gfx942");
  REQUIRE(w);
  CHECK(contains(*w, "3 VGPRs and 0 SGPRs"));
}

TEST_CASE("nvptx: libdevice math is linked in, not left as calls") {
  if (!have_libdevice()) return;
  std::string ptx = compile(find("bf16_math"), "sm_80").ptx;
  CHECK_FALSE(contains(ptx, "__nv_"));
  CHECK_FALSE(contains(ptx, ".extern .func"));
}

TEST_CASE("nvptx: floor and ceil are cvt.rmi / cvt.rpi; erf and pow come from libdevice, linked in") {
  if (!have_libdevice()) return;
  std::string ptx = compile(find("math_ops"), "sm_80").ptx;
  CHECK(contains(ptx, "cvt.rmi.f32.f32"));
  CHECK(contains(ptx, "cvt.rpi.f32.f32"));
  CHECK_FALSE(contains(ptx, "__nv_"));
  CHECK_FALSE(contains(ptx, ".extern .func"));
}

TEST_CASE("nvptx: atomics use global atomic instructions") {
  std::string ptx = compile(find("loops_and_atomics"), "sm_80").ptx;
  CHECK((contains(ptx, "atom.global.add.f32") || contains(ptx, "red.global.add.f32")));
  CHECK((contains(ptx, "atom.global.add.u32") || contains(ptx, "red.global.add.u32") || contains(ptx, "atom.global.add.s32")));
}

TEST_CASE("nvptx: unknown targets and too many warps are user errors naming what is known") {
  CHECK_THROWS_WITH_AS(codegen::target_info("sm_70"), doctest::Contains("unknown GPU target 'sm_70': kdsl knows sm_75, sm_80, sm_89, sm_90, sm_90a"), Error);
  CHECK_THROWS_WITH_AS(codegen::Target::named("sm_70"), "unknown target 'sm_70': kdsl compiles for host, sm_75, sm_80, sm_89, sm_90, sm_90a, gfx90a, gfx942, gfx1100",
                       Error);
  CHECK(codegen::Target::named("host").is_host());
  CHECK(codegen::Target::named("sm_90").gpu == &codegen::target_info("sm_90"));
  codegen::Options options;
  options.num_warps = 64;
  const auto &add = find("vector_add");
  CHECK_THROWS_WITH_AS(codegen::compile(tools::trace_kernel(add.signature, tools::parse_specialization("none", add.signature)), "k",
                                        codegen::Target::named("sm_80"), options),
                       doctest::Contains("num_warps = 64"), Error);
  CHECK(codegen::target_info("sm_80").matrix_instructions.size() == 4);   // mma.sync f16, bf16, i8, tf32
  CHECK(codegen::target_info("sm_89").matrix_instructions.size() == 5);   // and e4m3
  CHECK(codegen::target_info("sm_90").matrix_instructions.size() == 4);   // sm_80's: Hopper's mma.sync has no fp8
  CHECK(codegen::target_info("sm_90a").matrix_instructions.size() == 10);  // wgmma f16, bf16, s8, u8, e4m3, tf32, then sm_80's mma.sync
  CHECK(codegen::target_info("sm_75").matrix_instructions.empty());
  CHECK(codegen::target_info("sm_80").warp_size == 32);
}

TEST_CASE("nvptx: ptxas resource reports are parsed") {
  codegen::ResourceReport r;
  codegen::nvptx::parse_ptxas_report(
      "ptxas info    : Function properties for k\n    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 256 bytes smem, 380 bytes cmem[0]\n",
      r);
  CHECK(r.registers == 40);
  CHECK(r.stack_frame_bytes == 8);
  CHECK(r.spill_store_bytes == 4);
  CHECK(r.spill_load_bytes == 12);
  CHECK(r.static_shared_bytes == 256);
}

TEST_CASE("nvptx: without ptxas the object is NUL-terminated PTX for the driver's JIT") {
  const char *old = std::getenv("KDSL_PTXAS");
  std::string saved = old ? old : "";
  setenv("KDSL_PTXAS", "", 1);
  codegen::CompiledObject obj = compile(find("vector_add"), "sm_80");
  if (old) setenv("KDSL_PTXAS", saved.c_str(), 1);
  else unsetenv("KDSL_PTXAS");
  CHECK_FALSE(obj.resources.assembled);
  REQUIRE(!obj.object.empty());
  CHECK(obj.object.back() == 0);
  CHECK(std::string(reinterpret_cast<const char *>(obj.object.data())) == obj.ptx);
}
