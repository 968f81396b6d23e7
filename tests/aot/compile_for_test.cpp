// compile_for_test.cpp - compile_for: every stage for the host and sm_90 without a device, stored under the key a later launch finds
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <kdsl/kdsl.h>

#include "codegen/nvptx/ptxas.h"
#include "examples/matmul_descriptor.h"
#include "runtime/cuda/cuda_device.h"
#include "tests/aot/aot_test_util.h"
#include "tests/aot/libraries/user_kernels.h"
#include "tests/test_util.h"

using namespace kdsl;
using kdsl::aot_test::ScratchCache;

namespace {

ArgSpec pointer_class(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0 ? ArgSpec::Divisible16 : ArgSpec::None; }
ArgSpec integer_class(int64_t v) { return v == 1 ? ArgSpec::EqualToOne : v % 16 == 0 ? ArgSpec::Divisible16 : ArgSpec::None; }

}  // namespace

TEST_CASE("compile_for: a host compile's object is stored where a CPU launch finds it, and runs there") {
  ScratchCache cache("aot_compile_for_host");
  KDSL_TEST_RNG(rng);
  std::uniform_real_distribution<float> value(-2, 2);
  const Device &cpu = kdsl_test::cpu();
  // The ragged size is odd: another class than 768's, so its launch must come from the disk
  // (a multiple of 16 would repeat the first specialization and hit in memory).
  for (int n : {256 * 3, 1001 + 2 * int(rng() % 250)}) {
    CAPTURE(n);
    std::vector<float> xs(n), ys(n);
    for (int i = 0; i < n; ++i) xs[i] = value(rng), ys[i] = value(rng);
    Buffer<float> x(cpu, xs), y(cpu, ys), out(cpu, n);
    const float a = value(rng);
    // The classes this launch will get, spelled as a user would.
    Specialization spec{pointer_class(x.data()), pointer_class(y.data()), pointer_class(out.data()), ArgSpec::None, integer_class(n)};

    CompileResult r = compile_for<user_kernels::scale_add<256>>(Target::host(), spec);
    CHECK(r.kernel == "user_kernels::scale_add<256>");
    CHECK(r.target == "host");
    CHECK(r.specialization == spec.str());
    CHECK(r.traced_ir.find("store") != std::string::npos);
    CHECK_FALSE(r.optimized_ir.empty());
    CHECK(r.llvm_ir.find("define") != std::string::npos);
    CHECK(r.optimized_llvm_ir.find(r.symbol) != std::string::npos);
    CHECK(r.assembly.find(r.symbol) != std::string::npos);
    REQUIRE(r.object.size() > 4);
    CHECK(std::string(r.object.begin(), r.object.begin() + 4) == "\x7f" "ELF");
    CHECK(r.format == "object");
    CHECK(r.ptx.empty());
    CHECK(r.symbol == "kdsl_" + r.cache_digest);
    REQUIRE_FALSE(r.cache_file.empty());
    CHECK(std::filesystem::exists(r.cache_file));

    // A launch of the same kernel, options and arguments' classes: loaded from the disk, not compiled.
    CacheStats before = cache_stats();
    auto k = compile<user_kernels::scale_add<256>>(cpu);
    k(grid(cdiv(n, 256)), x, y, out, a, n);
    CacheStats after = cache_stats();
    CHECK(after.compiled == before.compiled);
    CHECK(after.disk_hits == before.disk_hits + 1);
    std::vector<float> got = out.to_vector();
    for (int i = 0; i < n; ++i) REQUIRE(got[i] == doctest::Approx(a * xs[i] + ys[i]).epsilon(1e-6));
  }
}

TEST_CASE("compile_for: sm_90 without a device, by name with the registered options, the PTX and resources reported") {
  ScratchCache cache("aot_compile_for_sm90");
  load_kernel_library(aot_test::user_kernels_library);
  CompileResult r = compile_for("user_row_sums", Target("sm_90"), "16,16,16");
  CHECK(r.kernel == "user_kernels::row_sums");
  CHECK(r.target == "sm_90");
  CHECK(r.ptx.find(".target sm_90") != std::string::npos);
  CHECK(r.ptx.find(".entry " + r.symbol) != std::string::npos);
  CHECK(r.resources.threads == 8 * 32);  // registered with num_warps = 8
  CHECK(r.resources.dynamic_shared_bytes > 0);  // the sum's cross-warp step
  CHECK(r.assembly.empty());
  CHECK(cache.entries() == 1);
  if (codegen::nvptx::find_ptxas().empty()) {
    MESSAGE("skipped the cubin checks: no ptxas ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
    CHECK_FALSE(r.resources.assembled);
    CHECK(r.format == "ptx");
  } else {
    CHECK(r.resources.assembled);
    CHECK(r.format == "cubin");
    CHECK(r.resources.registers > 0);
    CHECK(r.resources.spill_store_bytes == 0);
    CHECK(r.resources.report.find("registers") != std::string::npos);
    CHECK(std::string(r.object.begin(), r.object.begin() + 4) == "\x7f" "ELF");
  }
  // Options given override the registered ones: another key, another entry.
  CompileResult four = compile_for("user_row_sums", Target("sm_90"), "16,16,16", CompileOptions{.num_warps = 4});
  CHECK(four.resources.threads == 128);
  CHECK(four.cache_digest != r.cache_digest);
  CHECK(cache.entries() == 2);
  // sm_80 is another target: another key.
  CHECK(compile_for("user_row_sums", Target("sm_80"), "16,16,16").cache_digest != r.cache_digest);
}

TEST_CASE("compile_for: an sm_90a compile is what a launch on a Hopper GPU (the fake driver's, 9.0) loads: no compile, a disk hit") {
  ScratchCache cache("aot_compile_for_fake_gpu");
  cuda::Driver driver = cuda::load_driver(aot_test::fake_libcuda);
  void *fake = dlopen(aot_test::fake_libcuda.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  REQUIRE(fake);
  auto set_compute_capability = reinterpret_cast<void (*)(int, int)>(dlsym(fake, "fake_cuda_set_compute_capability"));
  auto loads = reinterpret_cast<int (*)()>(dlsym(fake, "fake_cuda_loads"));
  REQUIRE(bool(set_compute_capability));
  REQUIRE(bool(loads));
  set_compute_capability(9, 0);
  Device gpu(std::make_shared<detail::CudaDevice>(0, driver));
  const int n = 4096 + 7;
  Buffer<float> x(gpu, n), y(gpu, n), out(gpu, n);
  Specialization spec{pointer_class(x.data()), pointer_class(y.data()), pointer_class(out.data()), ArgSpec::None, integer_class(n)};
  CompileResult r = compile_for<user_kernels::scale_add<256>>(Target("sm_90a"), spec, {.num_warps = 8});
  REQUIRE_FALSE(r.cache_file.empty());

  CacheStats before = cache_stats();
  int loads_before = loads();
  auto k = compile<user_kernels::scale_add<256>>(gpu, {.num_warps = 8});
  k(grid(cdiv(n, 256)), x, y, out, 2.0f, n);
  CHECK(cache_stats().compiled == before.compiled);
  CHECK(cache_stats().disk_hits == before.disk_hits + 1);
  CHECK(loads() == loads_before + 1);
  // Other options are another kernel: compiled at the launch.
  auto k4 = compile<user_kernels::scale_add<256>>(gpu, {.num_warps = 4});
  k4(grid(cdiv(n, 256)), x, y, out, 2.0f, n);
  CHECK(cache_stats().compiled == before.compiled + 1);
}

TEST_CASE("compile_for: an unknown target names the known ones; a bad specialization names the kernel") {
  CHECK_THROWS_WITH_AS(Target("sm_70"), doctest::Contains("unknown target 'sm_70': kdsl compiles for host, "), Error);
  CHECK_THROWS_WITH_AS(Target("cuda"), doctest::Contains("sm_80, sm_89, sm_90"), Error);
  CHECK(Target::names().front() == "host");
  CHECK_THROWS_WITH_AS(compile_for<user_kernels::scale_add<256>>(Target::host(), "16,16"),
                       doctest::Contains("specialization '16,16' has 2 entries; kernel 'user_kernels::scale_add<256>' has 5 arguments"), Error);
}

// A kernel whose tiles TMA copies on sm_90a says which tensor maps a launcher outside kdsl must
// pass after its arguments; on sm_90 (no TMA) it takes none.
TEST_CASE("compile_for: an sm_90a compile reports the tensor maps its kernel takes after its arguments") {
  ScratchCache cache("aot_compile_for_tensor_maps");
  CompileResult r = compile_for<examples::matmul_descriptor<f16, f16, 128, 128, 64>>(Target("sm_90a"), "16,16,16,16,16,16", {.num_warps = 8, .num_stages = 3});
  INFO(r.tensor_maps);
  CHECK(r.tensor_maps.find("\"base\":0") != std::string::npos);
  CHECK(r.tensor_maps.find("\"base\":1") != std::string::npos);
  CHECK(r.tensor_maps.find("\"swizzle\":128") != std::string::npos);
  CHECK(r.tensor_maps.find("\"base\":2") != std::string::npos);  // C, written by TMA stores
  CHECK(r.ptx.find("cp.async.bulk.tensor.2d") != std::string::npos);
  CHECK(compile_for<examples::matmul_descriptor<f16, f16, 128, 128, 64>>(Target("sm_90"), "16,16,16,16,16,16", {.num_warps = 8, .num_stages = 3})
            .tensor_maps.empty());
}
