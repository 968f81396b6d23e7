// cuda_fake_driver_test.cpp - the CUDA launch path end to end through a fake libcuda (fake_libcuda.c): codegen::compile for sm_XX,
// cubins in the disk cache, module loads, the launch shape (grid, num_warps * 32 threads, shared memory) and the
// argument bytes, Buffers in "device" memory, and cuda_source with its argument checks. Nothing executes.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <bit>
#include <cstdio>
#include <fstream>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <vector>

#include <kdsl/kdsl.h>

#include "codegen/nvptx/ptxas.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_toolchain.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/launch_profile.h"
#include "tests/fake_libraries.h"
#include "tests/scratch_cache.h"
#include "tests/test_util.h"

using kdsl_test::ScopedEnv;

using namespace kdsl;

namespace fake_driver_test {

// The fake driver and the tools: where this build put them, or where a GPU bundle (tests/gpu/make-bundle.sh)
// unpacked them ($KDSL_TEST_FAKE_LIBCUDA, $KDSL_TEST_TOOLS_DIR).
std::string fake_libcuda() { return test::fake_library("KDSL_TEST_FAKE_LIBCUDA", KDSL_FAKE_LIBCUDA); }
std::string tools_dir() {
  const char *v = std::getenv("KDSL_TEST_TOOLS_DIR");
  return v && *v ? v : KDSL_TOOLS_DIR;
}

struct FakeLaunch {  // as fake_libcuda.c lays it out
  char function[256];
  unsigned grid[3], block[3], shared;
  int params;
  uint64_t values[32];
};

struct Fake {
  cuda::Driver driver;
  int (*launches)() = nullptr;
  int (*loads)() = nullptr;
  const FakeLaunch *(*last_launch)() = nullptr;
  int (*last_image_is_elf)() = nullptr;
  int (*max_dynamic_shared)() = nullptr;
  void (*set_params)(int, const size_t *) = nullptr;
  void (*set_compute_capability)(int, int) = nullptr;
  void (*set_static_shared)(int) = nullptr;
  void (*set_param_info_error)(int) = nullptr;
  void (*fail_next_launch)(int) = nullptr;
  void (*fail_next_sync)(int) = nullptr;
};

template <class F>
F symbol(void *h, const char *name) {
  return test::fake_symbol<F>(h, "fake_libcuda.c", name);
}

Fake &fake() {
  static Fake f = [] {
    Fake f;
    f.driver = cuda::load_driver(fake_libcuda());
    void *h = dlopen(fake_libcuda().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    REQUIRE(h);
    f.launches = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_launches"));
    f.loads = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_loads"));
    f.last_launch = reinterpret_cast<const FakeLaunch *(*)()>(dlsym(h, "fake_cuda_last_launch"));
    f.last_image_is_elf = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_last_image_is_elf"));
    f.max_dynamic_shared = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_max_dynamic_shared"));
    f.set_params = reinterpret_cast<void (*)(int, const size_t *)>(dlsym(h, "fake_cuda_set_params"));
    f.set_compute_capability = symbol<void (*)(int, int)>(h, "fake_cuda_set_compute_capability");
    f.set_static_shared = symbol<void (*)(int)>(h, "fake_cuda_set_static_shared");
    f.set_param_info_error = symbol<void (*)(int)>(h, "fake_cuda_set_param_info_error");
    f.fail_next_launch = symbol<void (*)(int)>(h, "fake_cuda_fail_next_launch");
    f.fail_next_sync = symbol<void (*)(int)>(h, "fake_cuda_fail_next_sync");
    return f;
  }();
  return f;
}

// A fresh fake GPU: a new context, so its in-memory kernel table is empty (a new process, as it were).
Device fake_gpu() { return Device(std::make_shared<detail::CudaDevice>(0, fake().driver)); }

void declare_params(std::vector<size_t> sizes) { fake().set_params(int(sizes.size()), sizes.data()); }

using kdsl::test::ScratchCache;  // KDSL_CACHE_DIR set to a fresh directory for one test case

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

const char *kSaxpy = R"(
extern "C" __global__ void kdsl_fake_saxpy(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

}  // namespace fake_driver_test

using namespace fake_driver_test;

TEST_CASE("fake driver: a CUDA device's queries, and Buffers in its memory") {
  Device gpu = fake_gpu();
  CHECK(gpu.kind() == Device::Kind::Cuda);
  CHECK(gpu.name() == "cuda:0 (Fake GPU, sm_90, 132 SMs)");
  CHECK(gpu.threads() == 132);
  CHECK_FALSE(gpu.has_cpu_feature("avx2"));  // a GPU has no CPU features, whatever its target string holds
  Buffer<float> b(gpu, 100);
  CHECK(b.on_device());
  CHECK(b.to_vector() == std::vector<float>(100, 0.0f));
  std::vector<float> v(100, 2.5f);
  b.copy_from_host(v);
  CHECK(b.to_vector() == v);
  gpu.synchronize();
}

TEST_CASE("fake driver: kdsl::compile on a CUDA device loads a cubin, caches it on disk per architecture, launches num_warps * 32 threads") {
  ScratchCache cache("fake_cuda_cache");
  Device gpu = fake_gpu();
  const int n = 5000;
  Buffer<float> x(gpu, std::vector<float>(n, 1.0f)), y(gpu, n), out(gpu, n);
  declare_params({8, 8, 8, 8, 8});
  CacheStats before = cache_stats();
  int loads = fake().loads(), launches = fake().launches();

  auto k = compile<axpy<1024>>(gpu, {.num_warps = 8});
  k(grid(cdiv(n, 1024), 2, 3), x, y, out, 2.5f, n);
  CHECK(cache_stats().compiled == before.compiled + 1);
  CHECK(fake().loads() == loads + 1);
  if (!codegen::nvptx::find_ptxas().empty()) CHECK(fake().last_image_is_elf());
  REQUIRE(fake().launches() == launches + 1);
  const FakeLaunch &l = *fake().last_launch();
  CHECK(std::string(l.function).starts_with("kdsl_"));
  CHECK(l.grid[0] == 5);
  CHECK(l.grid[1] == 2);
  CHECK(l.grid[2] == 3);
  CHECK(l.block[0] == 256);
  CHECK(l.block[1] == 1);
  CHECK(l.block[2] == 1);
  CHECK(l.values[0] == address(x));
  CHECK(l.values[1] == address(y));
  CHECK(l.values[2] == address(out));
  CHECK(uint32_t(l.values[3]) == std::bit_cast<uint32_t>(2.5f));
  CHECK(l.values[4] == uint64_t(n));

  // Launched again: found in the kernel's table, nothing compiled or loaded.
  k(grid(1), x, y, out, 2.5f, n);
  CHECK(fake().loads() == loads + 1);
  CHECK(cache_stats().compiled == before.compiled + 1);
  // An empty grid is refused (as on the host); CUDA's grid limits are user errors.
  CHECK_THROWS_WITH_AS(k(grid(0), x, y, out, 2.5f, n), doctest::Contains("grid (0, 1, 1) has no programs"), Error);
  CHECK(fake().launches() == launches + 2);
  CHECK_THROWS_WITH_AS(k(grid(1, 65536), x, y, out, 2.5f, n), doctest::Contains("at most 65535 programs along y and z"), Error);
  std::vector<float> host(n);
  CHECK_THROWS_WITH_AS(k(grid(1), x, host.data(), out, 2.5f, n), doctest::Contains("argument 1 is a host pointer"), Error);
  // GPU memory allocated elsewhere, said so.
  k(grid(1), x, device_pointer(y.data()), out, 2.5f, n);
  CHECK(fake().last_launch()->values[1] == address(y));

  // num_warps 4: another compile, 128 threads per block.
  compile<axpy<1024>>(gpu, {.num_warps = 4})(grid(1), x, y, out, 2.5f, n);
  CHECK(fake().last_launch()->block[0] == 128);
  CHECK(cache_stats().compiled == before.compiled + 2);

  // A new context (another process, as it were) finds both cubins in the disk cache.
  Device again = fake_gpu();
  Buffer<float> x2(again, n), y2(again, n), out2(again, n);
  compile<axpy<1024>>(again, {.num_warps = 8})(grid(1), x2, y2, out2, 2.5f, n);
  compile<axpy<1024>>(again, {.num_warps = 4})(grid(1), x2, y2, out2, 2.5f, n);
  CHECK(cache_stats().compiled == before.compiled + 2);
  CHECK(cache_stats().disk_hits == before.disk_hits + 2);
  CHECK(fake().last_launch()->block[0] == 128);
  if (!codegen::nvptx::find_ptxas().empty()) CHECK(fake().last_image_is_elf());

  // The same kernel on the CPU has its own entry (backend "host"), and reads host memory.
  Device cpu = Device::cpu(1);
  Buffer<float> hx(cpu, std::vector<float>(n, 1.0f)), hy(cpu, std::vector<float>(n, 1.0f)), hout(cpu, n);
  compile<axpy<1024>>(cpu, {.num_warps = 8})(grid(cdiv(n, 1024)), hx, hy, hout, 2.5f, n);
  CHECK(hout.to_vector() == std::vector<float>(n, 3.5f));
  CHECK(cache_stats().compiled == before.compiled + 3);
}

TEST_CASE("fake driver: a reduction passes its dynamic shared memory at launch") {
  ScratchCache cache("fake_cuda_cache");
  Device gpu = fake_gpu();
  Buffer<float> x(gpu, 64 * 1024), out(gpu, 64);
  declare_params({8, 8, 8});
  compile<row_sum<1024>>(gpu, {.num_warps = 4})(grid(64), x, out, 1000);
  const FakeLaunch &l = *fake().last_launch();
  CHECK(l.block[0] == 128);
  CHECK(l.grid[0] == 64);
  CHECK(l.shared > 0);  // the cross-warp step of the reduction
  CHECK(l.shared <= 48 * 1024);
  CHECK(l.values[2] == 1000);
}

TEST_CASE("fake driver: cuda_source compiles with NVRTC, launches with its block shape and shared memory, checks argument sizes") {
  try {
    nvrtc::library();
  } catch (const Error &e) {
    MESSAGE("skipped: NVRTC is not installed here: ", std::string(e.what()));
    return;
  }
  ScratchCache cache("fake_cuda_cache");
  Device gpu = fake_gpu();
  Buffer<float> x(gpu, 100), y(gpu, 100);
  declare_params({8, 8, 4, 4});
  CacheStats before = cache_stats();
  auto saxpy = cuda_source(gpu, "kdsl_fake_saxpy", kSaxpy, {.flags = {"-use_fast_math"}, .shared_bytes = 64 * 1024});
  CHECK(fake().last_image_is_elf());
  CHECK(fake().max_dynamic_shared() == 64 * 1024);
  CHECK(cache_stats().compiled == before.compiled + 1);
  saxpy(grid(3, 2), threads(128, 2), x, y, 1.5f, 100);
  const FakeLaunch &l = *fake().last_launch();
  CHECK(std::string(l.function) == "kdsl_fake_saxpy");
  CHECK(l.grid[0] == 3);
  CHECK(l.grid[1] == 2);
  CHECK(l.block[0] == 128);
  CHECK(l.block[1] == 2);
  CHECK(l.shared == 64 * 1024);
  CHECK(l.values[0] == address(x));
  CHECK(l.values[1] == address(y));
  CHECK(uint32_t(l.values[2]) == std::bit_cast<uint32_t>(1.5f));
  CHECK(l.values[3] == 100);

  const std::string name = "kernel 'kdsl_fake_saxpy'";
  CHECK_THROWS_WITH_AS(saxpy(grid(1), threads(32), x, y, 1.5, 100),
                       (name + ": argument 2 is a floating-point value of 8 bytes; the kernel's parameter 2 takes 4 bytes (pass the type it declares)").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(saxpy(grid(1), threads(32), x, y, 1.5f), (name + " takes 4 arguments, 3 were given").c_str(), Error);
  std::vector<float> host(100);
  CHECK_THROWS_WITH_AS(saxpy(grid(1), threads(32), x, host.data(), 1.5f, 100),
                       (name + ": argument 1 is a host pointer; on a CUDA device pass a kdsl::Buffer allocated on it").c_str(), Error);
  CHECK_THROWS_WITH_AS(saxpy(grid(1), threads(32, 32, 2), x, y, 1.5f, 100), doctest::Contains("threads(32, 32, 2) per block"), Error);
  CHECK_THROWS_WITH_AS(saxpy(grid(1, 1, 70000), threads(32), x, y, 1.5f, 100), doctest::Contains("y and z at most 65535"), Error);
  CHECK_THROWS_WITH_AS(cuda_source(gpu, "kdsl_fake_saxpy", kSaxpy, {.flags = {}, .shared_bytes = 1 << 20}), doctest::Contains("shared_bytes 1048576 is outside"), Error);

  // The same text again: the in-memory table; on a new context: the disk cache.
  cuda_source(gpu, "kdsl_fake_saxpy", kSaxpy, {.flags = {"-use_fast_math"}});
  CHECK(cache_stats().memory_hits == before.memory_hits + 1);
  cuda_source(fake_gpu(), "kdsl_fake_saxpy", kSaxpy, {.flags = {"-use_fast_math"}});
  CHECK(cache_stats().disk_hits == before.disk_hits + 1);
  // Other flags are another kernel.
  cuda_source(gpu, "kdsl_fake_saxpy", kSaxpy);
  CHECK(cache_stats().compiled == before.compiled + 2);
  // A compile error names the kernel and the line.
  CHECK_THROWS_WITH_AS(cuda_source(gpu, "oops", "extern \"C\" __global__ void oops() { undefined_thing(); }"),
                       doctest::Contains("oops.cu(1): error"), Error);
}

namespace fake_driver_test {

std::string thrown(auto &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace fake_driver_test

TEST_CASE("fake driver: KDSL_LIBCUDA is the driver every caller opens (a fresh process opens the fake GPU through Device::cuda)") {
  if (const char *v = std::getenv("KDSL_LIBCUDA"); v && std::string(v) == fake_libcuda()) {
    // The child (or a run.sh run against the fake driver): the process's one driver is the fake.
    CHECK(cuda::driver_load_error() == "");
    CHECK(cuda::driver().library == fake_libcuda());
    CHECK(Device::cuda(0).name().starts_with("cuda:0 (Fake GPU"));
    return;
  }
  {
    ScopedEnv env("KDSL_LIBCUDA", "/nonexistent/libcuda-for-kdsl.so");
    CHECK(cuda::driver_library() == "/nonexistent/libcuda-for-kdsl.so");
  }
  {
    ScopedEnv env("KDSL_LIBCUDA", "");
    CHECK(cuda::driver_library() == "libcuda.so.1");
  }
  char self[4096] = {};
  REQUIRE(::readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  std::string command = fmt::format("KDSL_LIBCUDA='{}' '{}' --no-intro --no-version --test-case='fake driver: KDSL_LIBCUDA is the driver*' 2>&1",
                                    fake_libcuda(), self);
  FILE *child = ::popen(command.c_str(), "r");
  REQUIRE(child);
  std::string output;
  char buffer[4096];
  while (size_t got = std::fread(buffer, 1, sizeof buffer, child)) output.append(buffer, got);
  INFO("the child said:\n", output);
  CHECK(::pclose(child) == 0);
  CHECK(output.find("test cases: 1 | 1 passed") != std::string::npos);
}

TEST_CASE("fake driver: an unanswered cuFuncGetParamInfo leaves argument checks off; an answered one gives every size") {
  Device gpu = fake_gpu();
  auto &dev = static_cast<detail::CudaDevice &>(gpu.impl());
  const std::vector<uint8_t> image = {'/', '/', ' ', 'p', 't', 'x', 0};
  detail::CudaFunction f = dev.load(image, "kdsl_fake_params", 0, 128);
  declare_params({8, 8, 4, 4});
  CHECK(dev.parameter_sizes(f) == std::vector<size_t>{8, 8, 4, 4});
  fake().set_param_info_error(1);  // CUDA_ERROR_INVALID_VALUE at index 0: not "takes 0 arguments"
  CHECK(dev.parameter_sizes(f) == std::nullopt);
  fake().set_param_info_error(801);  // CUDA_ERROR_NOT_SUPPORTED
  CHECK(dev.parameter_sizes(f) == std::nullopt);
  fake().set_param_info_error(0);
  dev.unload(f);
}

TEST_CASE("fake driver: static shared memory counts toward the 48 KB that needs no opt-in, and toward the opt-in limit") {
  Device gpu = fake_gpu();
  auto &dev = static_cast<detail::CudaDevice &>(gpu.impl());
  const std::vector<uint8_t> image = {'/', '/', ' ', 0};  // 4 bytes: the fake compares the first 4 with ELF's magic
  detail::CudaFunction f = dev.load(image, "kdsl_fake_shared", 0, 128);
  fake().set_static_shared(0);
  dev.allow_shared(f, 40 * 1024);
  CHECK(fake().max_dynamic_shared() == 0);  // 40 KB in all: no opt-in
  fake().set_static_shared(16 * 1024);
  dev.allow_shared(f, 40 * 1024);
  CHECK(fake().max_dynamic_shared() == 40 * 1024);  // 56 KB in all: opted in
  fake().set_static_shared(200 * 1024);
  CHECK(thrown([&] { dev.allow_shared(f, 40 * 1024); }) ==
        "kernel 'kdsl_fake_shared' needs 204800 bytes of static and 40960 bytes of dynamic shared memory per block; cuda:0 (Fake GPU, sm_90, 132 SMs) "
        "allows 232448 in all");
  fake().set_static_shared(0);
  dev.unload(f);
}

// axpy over n floats compiled for the fake GPU at 8 warps, with its buffers: the launches the
// error and profile tests below watch.
struct FakeAxpy {
  static constexpr int n = 5000;
  ScratchCache cache{"fake_cuda_cache"};
  Device gpu = fake_gpu();
  Buffer<float> x{gpu, n}, y{gpu, n}, out{gpu, n};
  Kernel<axpy<1024>> k = (declare_params({8, 8, 8, 8, 8}), compile<axpy<1024>>(gpu, {.num_warps = 8}));
  void launch(int grid_y = 1) { k(grid(cdiv(n, 1024), grid_y), x, y, out, 2.5f, n); }
};

TEST_CASE("fake driver: a refused launch names kernel, grid, block and shared memory; a later device fault names the last launch") {
  FakeAxpy a;
  a.launch();
  const std::string symbol = fake().last_launch()->function;
  const std::string kernel = "'" + decltype(a.k)::name() + " (" + symbol + ")'";
  fake().fail_next_launch(701);
  std::string refused = thrown([&] { a.launch(2); });
  CHECK(refused.starts_with("kernel " + kernel + " did not launch on cuda:0 (Fake GPU, sm_90, 132 SMs) (grid (5, 2, 1), block (256, 1, 1), 0 bytes of " +
                            "dynamic shared memory): CUDA driver call cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)"));
  fake().fail_next_sync(700);
  std::string fault = thrown([&] { a.gpu.synchronize(); });
  CHECK(fault.starts_with("CUDA driver call cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)"));
  CHECK(fault.find("the last kernel launched on cuda:0 (Fake GPU, sm_90, 132 SMs) was " + kernel +
                   " (grid (5, 1, 1), block (256, 1, 1), 0 bytes of dynamic shared memory)") != std::string::npos);
  CHECK(fault.find("rerun with CUDA_LAUNCH_BLOCKING=1") != std::string::npos);
  a.gpu.synchronize();  // the fake's fault was once
}

TEST_CASE("fake driver: LaunchGraph captures the device's stream into one CUDA graph, replayed with one cuGraphLaunch; copies inside are refused") {
  ScratchCache cache("fake_cuda_graph");
  (void)fake();  // loads the fake driver, which the RTLD_NOLOAD below only finds
  void *h = dlopen(fake_libcuda().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  REQUIRE(h);
  auto graph_launches = symbol<int (*)()>(h, "fake_cuda_graph_launches");
  auto graphs_live = symbol<int (*)()>(h, "fake_cuda_graphs_live");
  auto capturing = symbol<int (*)()>(h, "fake_cuda_capturing");
  Device gpu = fake_gpu();
  const int n = 5000;
  Buffer<float> x(gpu, n), y(gpu, n), out(gpu, n);
  declare_params({8, 8, 8, 8, 8});
  auto k = compile<axpy<1024>>(gpu, {.num_warps = 4});
  const int live = graphs_live(), loads = fake().loads();
  int launches = fake().launches();
  {
    // Compiled and loaded inside the capture (relaxed mode allows a module load there).
    LaunchGraph graph = LaunchGraph::capture(gpu, [&] {
      k(grid(5), x, y, out, 2.0f, n);
      k(grid(3), out, y, x, 0.5f, n);
      k(grid(1), x, x, out, 1.0f, n);
    });
    CHECK(fake().loads() == loads + 1);
    CHECK(fake().launches() == launches);  // recorded by the driver, not run
    CHECK(fake().last_launch()->grid[0] == 1);
    CHECK(graph.launches() == 3);
    CHECK(graphs_live() == live + 2);  // the graph and its instantiation
    const int replays = graph_launches();
    graph.replay();
    graph.replay();
    CHECK(graph_launches() == replays + 2);
    CHECK(fake().launches() == launches + 6);
    launches = fake().launches();
  }
  CHECK(graphs_live() == live);  // both destroyed with the LaunchGraph

  // What a capture cannot hold is refused by name, and the capture ends: the stream is free.
  std::vector<float> host(n, 1.0f);
  for (auto [what, body] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"Buffer::copy_from_host", [&] { x.copy_from_host(host); }},
           {"Buffer::copy_to_host", [&] { x.copy_to_host(host); }},
           {"allocating a Buffer", [&] { Buffer<float> more(gpu, 16); }},
           {"Device::synchronize", [&] { gpu.synchronize(); }}}) {
    CAPTURE(what);
    std::string text = kdsl_test::error_text([&] { LaunchGraph::capture(gpu, [&] { k(grid(1), x, y, out, 2.0f, n); body(); }); });
    CHECK(kdsl_test::contains(text, what + " is not allowed inside a LaunchGraph capture on cuda:0"));
    CHECK_FALSE(capturing());
    CHECK(graphs_live() == live);
  }
  // After them a launch runs at once.
  k(grid(1), x, y, out, 2.0f, n);
  CHECK(fake().launches() == launches + 1);
}

TEST_CASE("fake driver: KDSL_PROFILE times GPU launches without waiting for each, read at the next wait with the idle time between them") {
  FakeAxpy a;
  (void)detail::take_launch_profile();
  detail::set_launch_profile_enabled(true);
  for (int i = 0; i < 3; ++i) a.launch();
  CHECK(detail::take_launch_profile().empty());  // nothing read before a wait
  std::vector<float> host(FakeAxpy::n);
  a.out.copy_to_host(host);
  detail::set_launch_profile_enabled(false);
  const std::string table = detail::take_launch_profile();
  CHECK(table.find(fmt::format("{:>10}", 3) + " ") != std::string::npos);
  CHECK(table.find(decltype(a.k)::name()) != std::string::npos);
  CHECK(table.find(fmt::format("{:>10}", 2) + " ") != std::string::npos);  // two gaps between three launches
  CHECK(table.find(detail::kIdleBetweenLaunches) != std::string::npos);
}

TEST_CASE("fake driver: a GPU newer than sm_90 (compute capability 10.0) gets PTX, cached apart from sm_90's cubins") {
  ScratchCache cache("fake_cuda_cache");
  fake().set_compute_capability(10, 0);
  Device gpu = fake_gpu();
  fake().set_compute_capability(9, 0);
  auto &dev = static_cast<detail::CudaDevice &>(gpu.impl());
  CHECK(dev.embeds_ptx());
  CHECK(gpu.name() == "cuda:0 (Fake GPU, sm_100, 132 SMs)");
  CHECK(gpu.impl().target().arch == "sm_100 (sm_90 PTX)");
  const int n = 5000;
  Buffer<float> x(gpu, n), y(gpu, n), out(gpu, n);
  declare_params({8, 8, 8, 8, 8});
  CacheStats before = cache_stats();
  compile<axpy<1024>>(gpu, {.num_warps = 8})(grid(5), x, y, out, 2.5f, n);
  CHECK(!fake().last_image_is_elf());  // PTX, even where ptxas is installed
  CHECK(cache_stats().compiled == before.compiled + 1);
  // A Hopper GPU (9.0) compiles its own sm_90a code (a cubin where ptxas is found), not the sm_100 entry.
  Device hopper = fake_gpu();
  CHECK(!static_cast<detail::CudaDevice &>(hopper.impl()).embeds_ptx());
  CHECK(hopper.impl().target().arch == "sm_90a");
  Buffer<float> x9(hopper, n), y9(hopper, n), out9(hopper, n);
  compile<axpy<1024>>(hopper, {.num_warps = 8})(grid(5), x9, y9, out9, 2.5f, n);
  CHECK(cache_stats().compiled == before.compiled + 2);
  if (!codegen::nvptx::find_ptxas().empty()) CHECK(fake().last_image_is_elf());
  try {
    nvrtc::library();
  } catch (const Error &e) {
    MESSAGE("skipped (cuda_source part): NVRTC is not installed here: ", std::string(e.what()));
    return;
  }
  declare_params({8, 8, 4, 4});
  auto saxpy = cuda_source(gpu, "kdsl_fake_saxpy", kSaxpy);
  CHECK(!fake().last_image_is_elf());  // compute_90: PTX for the driver
  saxpy(grid(1), threads(128), x, y, 1.5f, 100);
  CHECK(std::string(fake().last_launch()->function) == "kdsl_fake_saxpy");
}

TEST_CASE("fake driver: KDSL_CUDA_ARCH picks another target the GPU runs (sm_90 or sm_80 PTX on a 9.0 GPU), and refuses what it cannot run") {
  struct Arch {
    explicit Arch(const char *v) { setenv("KDSL_CUDA_ARCH", v, 1); }
    ~Arch() { unsetenv("KDSL_CUDA_ARCH"); }
  };
  auto target_of = [](Device &gpu) { return gpu.impl().target().arch; };
  {
    Device hopper = fake_gpu();
    CHECK(target_of(hopper) == "sm_90a");
  }
  {
    Arch a("sm_90");
    Device gpu = fake_gpu();
    CHECK(target_of(gpu) == "sm_90");
    CHECK_FALSE(static_cast<detail::CudaDevice &>(gpu.impl()).embeds_ptx());
  }
  {
    Arch a("sm_80");  // another major: its PTX, compiled by the driver
    Device gpu = fake_gpu();
    CHECK(target_of(gpu) == "sm_90 (sm_80 PTX)");
    CHECK(static_cast<detail::CudaDevice &>(gpu.impl()).embeds_ptx());
  }
  {
    Arch a("sm_99");
    CHECK_THROWS_WITH_AS(fake_gpu(), doctest::Contains("KDSL_CUDA_ARCH=sm_99: not an NVIDIA target kdsl knows (sm_75, sm_80, sm_89, sm_90, sm_90a)"), Error);
  }
  {
    fake().set_compute_capability(8, 9);  // Ada: its own target, for the fp8 conversions
    Device ada = fake_gpu();
    CHECK(target_of(ada) == "sm_89");
    fake().set_compute_capability(8, 6);  // Ampere's consumer parts run sm_80's cubins
    Device ampere = fake_gpu();
    CHECK(target_of(ampere) == "sm_80");
    fake().set_compute_capability(9, 0);
  }
  {
    Arch a("gfx942");
    CHECK_THROWS_WITH_AS(fake_gpu(), doctest::Contains("not an NVIDIA target"), Error);
  }
  {
    Arch a("sm_90a");
    fake().set_compute_capability(10, 0);
    CHECK_THROWS_WITH_AS(fake_gpu(), doctest::Contains("KDSL_CUDA_ARCH=sm_90a: CUDA device 0 (Fake GPU) (compute capability 10.0) cannot run it (its code runs on compute capability 9.0 alone)"),
                         Error);
    fake().set_compute_capability(8, 0);
    CHECK_THROWS_WITH_AS(fake_gpu(), doctest::Contains("cannot run it"), Error);
    fake().set_compute_capability(9, 0);
  }
}

TEST_CASE("fake driver: the ptxas and libdevice versions are in the cache key; another ptxas compiles afresh") {
  std::string ptxas = codegen::nvptx::find_ptxas();
  const std::string features = fake_gpu().impl().target().features;
  if (ptxas.empty()) {
    CHECK(features.starts_with("ptxas none; libdevice "));
    MESSAGE("skipped (second ptxas): no ptxas here");
    return;
  }
  CHECK(features.starts_with("ptxas " + cuda::ptxas_version(ptxas) + "; libdevice "));
  CHECK(cuda::ptxas_version(ptxas).find('.') != std::string::npos);
  ScratchCache cache("fake_cuda_cache");
  const int n = 5000;
  declare_params({8, 8, 8, 8, 8});
  CacheStats before = cache_stats();
  {
    Device gpu = fake_gpu();
    Buffer<float> x(gpu, n), y(gpu, n), out(gpu, n);
    compile<axpy<1024>>(gpu, {.num_warps = 2})(grid(5), x, y, out, 2.5f, n);
  }
  // The same ptxas in a new context: the disk cache. A ptxas that says it is another version: a new compile.
  std::filesystem::path script = cache.dir / "ptxas";
  {
    Device gpu = fake_gpu();
    Buffer<float> x(gpu, n), y(gpu, n), out(gpu, n);
    compile<axpy<1024>>(gpu, {.num_warps = 2})(grid(5), x, y, out, 2.5f, n);
    CHECK(cache_stats().disk_hits == before.disk_hits + 1);
    std::ofstream(script) << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 99.1, V99.1.7'; exit 0; fi\nexec '"
                          << ptxas << "' \"$@\"\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  }
  ScopedEnv env("KDSL_PTXAS", script.string());
  Device gpu = fake_gpu();
  CHECK(gpu.impl().target().features.starts_with("ptxas 99.1.7; libdevice "));
  Buffer<float> x(gpu, n), y(gpu, n), out(gpu, n);
  compile<axpy<1024>>(gpu, {.num_warps = 2})(grid(5), x, y, out, 2.5f, n);
  CHECK(cache_stats().compiled == before.compiled + 2);
  CHECK(cache_stats().disk_hits == before.disk_hits + 1);
}

TEST_CASE("fake driver: kdsl-bench-cuda keeps every row when one row's launch fails") {
  std::string tool = tools_dir() + "/kdsl-bench-cuda";
  if (!std::filesystem::exists(tool)) {
    FAIL_CHECK(tool, " is not built (cmake --build build builds it with the tests)");
    return;
  }
  ScratchCache cache("fake_cuda_cache");
  // The first launch is vector add's warm-up (the copy row launches nothing).
  std::string command = fmt::format("KDSL_LIBCUDA='{}' KDSL_FAKE_CUDA_FAIL_LAUNCH=1 '{}' --quick 2>&1", fake_libcuda(), tool);
  FILE *pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string output;
  char buffer[4096];
  while (size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, got);
  int status = ::pclose(pipe);
  INFO("kdsl-bench-cuda said:\n", output);
  CHECK(WEXITSTATUS(status) == 1);  // a failed row fails the run
  CHECK(output.find("\nvector add (f32)               FAILED: kernel 'examples::add<1024> (kdsl_") != std::string::npos);
  CHECK(output.find("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES") != std::string::npos);
  for (const char *later : {"\nvector add (CUDA C++, NVRTC)   ", "\nsoftmax (f32, 1024 cols)       ", "\nRMSNorm (f32, 1024 cols)       ", "\n512^3 64x64x32 w4 s2   "}) {
    CAPTURE(later);
    CHECK(output.find(later) != std::string::npos);
  }
}
