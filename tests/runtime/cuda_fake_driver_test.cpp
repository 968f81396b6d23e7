// cuda_fake_driver_test.cpp - the CUDA launch path end to end through a fake libcuda (fake_libcuda.c): compile_for_cuda,
// cubins in the disk cache, module loads, the launch shape (grid, num_warps * 32 threads, shared memory) and the
// argument bytes, Buffers in "device" memory, and cuda_source with its argument checks. Nothing executes.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <bit>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <kdsl/kdsl.h>

#include "codegen/nvptx/ptxas.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/nvrtc.h"

using namespace kdsl;

namespace fake_driver_test {

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
};

Fake &fake() {
  static Fake f = [] {
    Fake f;
    f.driver = cuda::load_driver(KDSL_FAKE_LIBCUDA);
    void *h = dlopen(KDSL_FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    REQUIRE(h);
    f.launches = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_launches"));
    f.loads = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_loads"));
    f.last_launch = reinterpret_cast<const FakeLaunch *(*)()>(dlsym(h, "fake_cuda_last_launch"));
    f.last_image_is_elf = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_last_image_is_elf"));
    f.max_dynamic_shared = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_max_dynamic_shared"));
    f.set_params = reinterpret_cast<void (*)(int, const size_t *)>(dlsym(h, "fake_cuda_set_params"));
    return f;
  }();
  return f;
}

// A fresh fake GPU: a new context, so its in-memory kernel table is empty (a new process, as it were).
Device fake_gpu() { return Device(std::make_shared<detail::CudaDevice>(0, fake().driver)); }

void declare_params(std::vector<size_t> sizes) { fake().set_params(int(sizes.size()), sizes.data()); }

// KDSL_CACHE_DIR set to a fresh directory for one test case.
struct ScratchCache {
  std::filesystem::path dir;
  std::optional<std::string> saved;
  ScratchCache() {
    dir = std::filesystem::temp_directory_path() / ("kdsl-fake-cuda-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    if (const char *v = std::getenv("KDSL_CACHE_DIR")) saved = v;
    ::setenv("KDSL_CACHE_DIR", dir.c_str(), 1);
  }
  ~ScratchCache() {
    if (saved) ::setenv("KDSL_CACHE_DIR", saved->c_str(), 1);
    else ::unsetenv("KDSL_CACHE_DIR");
    std::filesystem::remove_all(dir);
  }
};

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
  Buffer<float> b(gpu, 100);
  CHECK(b.on_device());
  CHECK(b.to_vector() == std::vector<float>(100, 0.0f));
  std::vector<float> v(100, 2.5f);
  b.copy_from_host(v);
  CHECK(b.to_vector() == v);
  gpu.synchronize();
}

TEST_CASE("fake driver: kdsl::compile on a CUDA device loads a cubin, caches it on disk per architecture, launches num_warps * 32 threads") {
  ScratchCache cache;
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
  // An empty grid launches nothing; CUDA's grid limits are user errors.
  k(grid(0), x, y, out, 2.5f, n);
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
  ScratchCache cache;
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
    MESSAGE("NVRTC is not installed here: ", e.what());
    return;
  }
  ScratchCache cache;
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
