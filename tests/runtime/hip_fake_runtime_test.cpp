// hip_fake_runtime_test.cpp - the HIP launch path end to end through a fake libamdhip64 (fake_libamdhip64.c): codegen::compile for gfx942,
// code objects in the disk cache, module loads, the launch shape (grid, num_warps * 64 threads, dynamic LDS), the argument bytes,
// Buffers in "device" memory, errors by name. Nothing executes: the code objects are checked by tests/codegen/amdgpu_compile_test.cpp.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <bit>
#include <cstdlib>
#include <string>
#include <vector>

#include <kdsl/kdsl.h>

#include "codegen/amdgpu/rocm_tools.h"
#include "runtime/hip/hip_device.h"
#include "runtime/hip/hip_runtime.h"
#include "tests/fake_libraries.h"
#include "tests/scratch_cache.h"
#include "tests/test_util.h"

using namespace kdsl;

namespace fake_hip_test {

std::string fake_libamdhip64() { return test::fake_library("KDSL_TEST_FAKE_LIBAMDHIP64", KDSL_FAKE_LIBAMDHIP64); }

struct Fake {
  hip::Runtime runtime;
  int (*launches)() = nullptr;
  int (*loads)() = nullptr;
  int (*last_image_is_amdgpu_elf)() = nullptr;
  const char *(*last_function)() = nullptr;
  void (*last_shape)(unsigned *, unsigned *, unsigned *) = nullptr;
  void (*record_params)(int) = nullptr;
  void (*last_params)(uint64_t *) = nullptr;
  void (*fail_next_launch)(int) = nullptr;
  void (*set_arch)(const char *) = nullptr;
};

template <class F>
F symbol(void *h, const char *name) {
  return test::fake_symbol<F>(h, "fake_libamdhip64.c", name);
}

Fake &fake() {
  static Fake f = [] {
    Fake f;
    f.runtime = hip::load_runtime(fake_libamdhip64());
    void *h = dlopen(fake_libamdhip64().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    REQUIRE(h);
    f.launches = symbol<int (*)()>(h, "fake_hip_launches");
    f.loads = symbol<int (*)()>(h, "fake_hip_loads");
    f.last_image_is_amdgpu_elf = symbol<int (*)()>(h, "fake_hip_last_image_is_amdgpu_elf");
    f.last_function = symbol<const char *(*)()>(h, "fake_hip_last_function");
    f.last_shape = symbol<void (*)(unsigned *, unsigned *, unsigned *)>(h, "fake_hip_last_shape");
    f.record_params = symbol<void (*)(int)>(h, "fake_hip_record_params");
    f.last_params = symbol<void (*)(uint64_t *)>(h, "fake_hip_last_params");
    f.fail_next_launch = symbol<void (*)(int)>(h, "fake_hip_fail_next_launch");
    f.set_arch = symbol<void (*)(const char *)>(h, "fake_hip_set_arch");
    return f;
  }();
  return f;
}

// A fresh fake GPU: a new device object, so its in-memory kernel table is empty.
Device fake_gpu() { return Device(std::make_shared<detail::HipDevice>(0, fake().runtime)); }

bool have_lld() {
  if (!codegen::amdgpu::find_lld().empty()) return true;
  MESSAGE("skipped: ld.lld from LLVM 19 not found (" << codegen::amdgpu::lld_search_text() << "): no code object to load");
  return false;
}

template <int BLOCK>
void axpy(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<f32> a, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(out + offs, a * load(x + offs, mask) + load(y + offs, mask), mask);
}

template <int BLOCK>
void row_sum(Ptr<f32> x, Ptr<f32> out, Scalar<i32> cols) {
  auto c = arange<BLOCK>();
  auto v = load(x + program_id(0) * cols + c, c < cols, 0.0f);
  store(out + program_id(0), sum(v));
}

uint64_t address(const auto &buffer) { return reinterpret_cast<uintptr_t>(buffer.data()); }

}  // namespace fake_hip_test

using namespace fake_hip_test;

TEST_CASE("fake HIP runtime: a HIP device's queries, and Buffers in its memory") {
  Device gpu = fake_gpu();
  CHECK(gpu.kind() == Device::Kind::Hip);
  CHECK(gpu.name() == "hip:0 (Fake AMD Instinct MI300X, gfx942, 304 CUs)");
  CHECK(gpu.threads() == 304);
  CHECK(gpu.impl().target().backend == "hip");
  CHECK(gpu.impl().target().arch == "gfx942");
  CHECK(gpu.impl().target().features.find("ld.lld") != std::string::npos);
  Buffer<float> b(gpu, 100);
  CHECK(b.on_device());
  CHECK(b.to_vector() == std::vector<float>(100, 0.0f));
  std::vector<float> v(100, 2.5f);
  b.copy_from_host(v);
  CHECK(b.to_vector() == v);
  gpu.synchronize();
  CHECK(gpu.free_memory() > 0);
}

TEST_CASE("fake HIP runtime: kdsl::compile on a HIP device loads a gfx942 code object, caches it on disk, launches num_warps * 64 threads") {
  if (!have_lld()) return;
  test::ScratchCache cache("fake_hip_cache");
  Device gpu = fake_gpu();
  const int n = 5000;
  Buffer<float> x(gpu, std::vector<float>(n, 1.0f)), y(gpu, n), out(gpu, n);
  fake().record_params(5);
  CacheStats before = cache_stats();
  int loads = fake().loads(), launches = fake().launches();

  auto k = compile<axpy<1024>>(gpu, {.num_warps = 8});
  k(grid(cdiv(n, 1024), 2, 3), x, y, out, 2.5f, n);
  CHECK(cache_stats().compiled == before.compiled + 1);
  CHECK(fake().loads() == loads + 1);
  CHECK(fake().last_image_is_amdgpu_elf());
  REQUIRE(fake().launches() == launches + 1);
  unsigned g[3], block[3], shared = 0;
  fake().last_shape(g, block, &shared);
  CHECK(std::string(fake().last_function()).starts_with("kdsl_"));
  CHECK(g[0] == 5);
  CHECK(g[1] == 2);
  CHECK(g[2] == 3);
  CHECK(block[0] == 8 * 64);
  CHECK(block[1] == 1);
  CHECK(block[2] == 1);
  uint64_t values[5] = {};
  fake().last_params(values);
  CHECK(values[0] == address(x));
  CHECK(values[1] == address(y));
  CHECK(values[2] == address(out));
  CHECK(uint32_t(values[3]) == std::bit_cast<uint32_t>(2.5f));
  CHECK(uint32_t(values[4]) == uint32_t(n));

  // Launched again: found in the kernel's table, nothing compiled or loaded.
  k(grid(1), x, y, out, 2.5f, n);
  CHECK(fake().loads() == loads + 1);
  CHECK(cache_stats().compiled == before.compiled + 1);

  // A new device object (another process, as it were) finds the code object on disk.
  Device again = fake_gpu();
  Buffer<float> x2(again, n), y2(again, n), out2(again, n);
  compile<axpy<1024>>(again, {.num_warps = 8})(grid(1), x2, y2, out2, 2.5f, n);
  CHECK(cache_stats().compiled == before.compiled + 1);
  CHECK(cache_stats().disk_hits == before.disk_hits + 1);
  CHECK(fake().loads() == loads + 2);
}

TEST_CASE("fake HIP runtime: a reduction launches with its dynamic LDS") {
  if (!have_lld()) return;
  test::ScratchCache cache("fake_hip_lds");
  Device gpu = fake_gpu();
  Buffer<float> x(gpu, 4 * 1000), out(gpu, 4);
  fake().record_params(3);
  compile<row_sum<1024>>(gpu, {.num_warps = 4})(grid(4), x, out, 1000);
  unsigned g[3], block[3], shared = 0;
  fake().last_shape(g, block, &shared);
  CHECK(g[0] == 4);
  CHECK(block[0] == 256);
  CHECK(shared > 0);  // the partial sums of the 4 waves
}

TEST_CASE("fake HIP runtime: a refused launch names the kernel, the shape and the runtime's error name") {
  if (!have_lld()) return;
  test::ScratchCache cache("fake_hip_refused");
  Device gpu = fake_gpu();
  Buffer<float> x(gpu, 64), y(gpu, 64), out(gpu, 64);
  fake().record_params(0);
  auto k = compile<axpy<1024>>(gpu, {.num_warps = 4});
  fake().fail_next_launch(719);
  CHECK_THROWS_WITH_AS(k(grid(1), x, y, out, 1.0f, 64), doctest::Contains("hipErrorLaunchFailure (719)"), Error);
  fake().fail_next_launch(719);
  CHECK_THROWS_WITH_AS(k(grid(1), x, y, out, 1.0f, 64), doctest::Contains("did not launch on hip:0"), Error);
}

TEST_CASE("fake HIP runtime: a GPU of an architecture kdsl does not compile for is refused by name") {
  fake().set_arch("gfx906:sramecc+:xnack-");
  CHECK_THROWS_WITH_AS(fake_gpu(), doctest::Contains("is gfx906; kdsl's AMDGPU backend compiles for gfx90a, gfx942"), Error);
  fake().set_arch("gfx942:sramecc+:xnack-");
  CHECK(fake_gpu().name().find("gfx942") != std::string::npos);
}

TEST_CASE("HIP runtime: a missing library is an error naming it and what is lost") {
  try {
    hip::load_runtime("/nonexistent/libamdhip64.so");
    FAIL("loaded a runtime that does not exist");
  } catch (const Error &e) {
    std::string msg = e.what();
    CHECK(msg.find("no HIP runtime found") != std::string::npos);
    CHECK(msg.find("/nonexistent/libamdhip64.so") != std::string::npos);
    CHECK(msg.find("CPU device still works") != std::string::npos);
  }
  CHECK(hip::error_name(100) == "hipErrorNoDevice");
  CHECK(hip::error_name(12345) == "hipError12345");
}

TEST_CASE("fake HIP runtime: LaunchGraph captures the stream into one HIP graph, replayed with one hipGraphLaunch; a runtime without graphs replays recorded launches") {
  if (!have_lld()) return;
  test::ScratchCache cache("fake_hip_graph");
  REQUIRE(fake().runtime.has_graphs());  // loads the fake
  void *h = dlopen(fake_libamdhip64().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  REQUIRE(h);
  auto graph_launches = symbol<int (*)()>(h, "fake_hip_graph_launches");
  auto graphs_live = symbol<int (*)()>(h, "fake_hip_graphs_live");
  auto capturing = symbol<int (*)()>(h, "fake_hip_capturing");
  Device gpu = fake_gpu();
  const int n = 5000;
  Buffer<float> x(gpu, n), y(gpu, n), out(gpu, n);
  fake().record_params(5);
  auto k = compile<axpy<1024>>(gpu, {.num_warps = 4});
  const int live = graphs_live();
  int launches = fake().launches();
  {
    LaunchGraph graph = LaunchGraph::capture(gpu, [&] {
      k(grid(5), x, y, out, 2.0f, n);
      k(grid(3), out, y, x, 0.5f, n);
    });
    CHECK(fake().launches() == launches);  // nodes of the graph, not launches
    CHECK(graph.launches() == 2);
    CHECK(graphs_live() == live + 2);  // the graph and its instantiation
    const int replays = graph_launches();
    graph.replay();
    graph.replay();
    CHECK(graph_launches() == replays + 2);
    CHECK(fake().launches() == launches + 4);
    launches = fake().launches();
  }
  CHECK(graphs_live() == live);  // both destroyed with the LaunchGraph
  // A copy inside a capture is refused by name, and the capture ends: the stream is free.
  std::vector<float> host(n, 1.0f);
  std::string text = kdsl_test::error_text([&] { LaunchGraph::capture(gpu, [&] { x.copy_from_host(host); }); });
  CHECK(kdsl_test::contains(text, "Buffer::copy_from_host is not allowed inside a LaunchGraph capture on hip:0"));
  CHECK_FALSE(capturing());
  CHECK(graphs_live() == live);
  k(grid(1), x, y, out, 2.0f, n);
  CHECK(fake().launches() == launches + 1);

  // A runtime without the graph entry points (before ROCm 5.3): the launches are recorded by
  // kdsl and replayed one hipModuleLaunchKernel each.
  static hip::Runtime old_runtime = [] {
    hip::Runtime r = fake().runtime;
    r.hipGraphInstantiateWithFlags = nullptr;
    return r;
  }();
  Device old_gpu(std::make_shared<detail::HipDevice>(0, old_runtime));
  Buffer<float> x2(old_gpu, n), y2(old_gpu, n), out2(old_gpu, n);
  auto k2 = compile<axpy<1024>>(old_gpu, {.num_warps = 4});
  launches = fake().launches();
  const int graphs_before = graph_launches();
  LaunchGraph recorded = LaunchGraph::capture(old_gpu, [&] { k2(grid(5), x2, y2, out2, 2.0f, n); });
  CHECK(fake().launches() == launches);
  recorded.replay();
  CHECK(fake().launches() == launches + 1);
  CHECK(graph_launches() == graphs_before);
  uint64_t values[5] = {};
  fake().last_params(values);
  CHECK(values[0] == address(x2));
  CHECK(uint32_t(values[4]) == uint32_t(n));
}
