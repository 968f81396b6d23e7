// cuda_runtime_test.cpp - the public GPU API on an NVIDIA GPU: Buffers, kdsl::compile launches, kdsl::cuda_source
// (skipped, saying "skipped:", where no driver or GPU is present; tests/gpu/run.sh runs them on one). On the fake
// driver Buffers round-trip for real; kernels are compiled and launched, their outputs not compared.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

#include <kdsl/kdsl.h>

#include "tests/gpu/gpu_test.h"

using namespace kdsl;

namespace cuda_runtime_gpu_test {

using kdsl_test::open_gpu;
using kdsl_test::skip_comparison_on_fake;

template <int BLOCK>
void axpy(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<f32> a, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(out + offs, a * load(x + offs, mask) + load(y + offs, mask), mask);
}

const char *kSaxpy = R"(
extern "C" __global__ void kdsl_gpu_saxpy(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
// Reverses each block of 16384 floats through 64 KB of dynamic shared memory (past the 48 KB default).
extern "C" __global__ void kdsl_gpu_reverse(const float *x, float *y) {
  extern __shared__ float tile[];
  const int n = 16384;
  const float *in = x + blockIdx.x * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[blockIdx.x * n + i] = tile[n - 1 - i];
}
)";

}  // namespace cuda_runtime_gpu_test

using namespace cuda_runtime_gpu_test;

TEST_CASE("gpu runtime: Buffers round-trip through GPU memory, zeroed at allocation") {
  auto gpu = open_gpu();
  if (!gpu) return;
  Buffer<float> b(*gpu, 1000);
  CHECK(b.on_device());
  CHECK(b.to_vector() == std::vector<float>(1000, 0.0f));
  std::vector<float> v(1000);
  std::iota(v.begin(), v.end(), 0.0f);
  b.copy_from_host(v);
  CHECK(b.to_vector() == v);
  CHECK_THROWS_AS(b.copy_from_host(std::vector<float>(1001)), Error);
}

TEST_CASE("gpu runtime: kdsl::compile on a CUDA device launches with Buffers, refuses host pointers, hits its cache") {
  auto gpu = open_gpu();
  if (!gpu) return;
  const int n = 1000003;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = float(i % 97) * 0.5f, y[i] = float(i % 13);
  Buffer<float> dx(*gpu, x), dy(*gpu, y), out(*gpu, size_t(n));
  auto k = compile<axpy<1024>>(*gpu);
  CacheStats before = cache_stats();
  k(grid(cdiv(n, 1024)), dx, dy, out, 2.0f, n);
  k(grid(cdiv(n, 1024)), dx, dy, out, 2.0f, n);
  CHECK(cache_stats().launches - before.launches == 2);
  if (skip_comparison_on_fake(*gpu)) return;
  std::vector<float> got = out.to_vector();
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += got[i] != 2.0f * x[i] + y[i];
  CHECK(wrong == 0);
  std::string error;
  try {
    k(grid(cdiv(n, 1024)), x.data(), dy, out, 2.0f, n);
  } catch (const Error &e) {
    error = e.what();
  }
  CHECK(error == "kernel '" + decltype(k)::name() + "': argument 0 is a host pointer; on a CUDA device pass a kdsl::Buffer allocated on it");
  CHECK_THROWS_WITH_AS(k(grid(1, 70000), dx, dy, out, 2.0f, n), doctest::Contains("at most 65535 programs along y and z"), Error);
  // The same kernel on the CPU shares nothing with the GPU's cache entries.
  Device cpu = Device::cpu(1);
  Buffer<float> hx(cpu, x), hy(cpu, y), hout(cpu, size_t(n));
  compile<axpy<1024>>(cpu)(grid(cdiv(n, 1024)), hx, hy, hout, 2.0f, n);
  CHECK(hout.to_vector() == got);
}

// The increment read from memory at run time, so a replay sees what was copied in before it.
template <int BLOCK>
void add_from_memory(Ptr<f32> x, Ptr<const f32> step, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(x + offs, load(x + offs, mask) + load(step), mask);
}

TEST_CASE("gpu runtime: a LaunchGraph is one CUDA graph: the capture runs nothing, each replay runs its launches in order") {
  auto gpu = open_gpu();
  if (!gpu) return;
  const int n = 100003;
  Buffer<float> x(*gpu, std::vector<float>(size_t(n), 1.0f)), step(*gpu, std::vector<float>{1.0f});
  auto add = compile<add_from_memory<1024>>(*gpu);
  auto scale = compile<axpy<1024>>(*gpu);
  add(grid(cdiv(n, 1024)), x, step, n);  // compiled and loaded before the capture
  scale(grid(cdiv(n, 1024)), x, x, x, 0.0f, n);
  x.copy_from_host(std::vector<float>(size_t(n), 1.0f));
  LaunchGraph graph = LaunchGraph::capture(*gpu, [&] {
    add(grid(cdiv(n, 1024)), x, step, n);
    scale(grid(cdiv(n, 1024)), x, x, x, 0.5f, n);  // x = 0.5 x + x
  });
  CHECK(graph.launches() == 2);
  if (skip_comparison_on_fake(*gpu)) return;
  CHECK(x.to_vector() == std::vector<float>(size_t(n), 1.0f));
  graph.replay();
  step.copy_from_host(std::vector<float>{2.0f});
  graph.replay();
  // ((1 + 1) * 1.5 + 2) * 1.5 = 7.5
  CHECK(x.to_vector() == std::vector<float>(size_t(n), 7.5f));
}

TEST_CASE("gpu runtime: cuda_source compiles with NVRTC, launches with Buffers and scalars, checks argument sizes") {
  auto gpu = open_gpu();
  if (!gpu) return;
  const int n = 100000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = float(i % 31), y[i] = 1.0f;
  Buffer<float> dx(*gpu, x), dy(*gpu, y);
  auto saxpy = cuda_source(*gpu, "kdsl_gpu_saxpy", kSaxpy, {.flags = {"-use_fast_math"}});
  CHECK(saxpy.name() == "kdsl_gpu_saxpy");
  saxpy(grid(cdiv(n, 256)), threads(256), dx, dy, 3.0f, n);
  if (skip_comparison_on_fake(*gpu)) return;
  std::vector<float> got = dy.to_vector();
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += got[i] != 3.0f * x[i] + 1.0f;
  CHECK(wrong == 0);
  CHECK_THROWS_WITH_AS(saxpy(grid(1), threads(256), x.data(), dy, 3.0f, n), doctest::Contains("argument 0 is a host pointer"), Error);
  CHECK_THROWS_WITH_AS(saxpy(grid(1), threads(2048), dx, dy, 3.0f, n), doctest::Contains("threads(2048, 1, 1) per block"), Error);
  // Where the driver reports parameter sizes (12.4+): a double for a float parameter, a missing argument.
  try {
    saxpy(grid(1), threads(256), dx, dy, 3.0, n);
    MESSAGE("this driver does not report parameter sizes (cuFuncGetParamInfo): the size check is off");
  } catch (const Error &e) {
    CHECK(std::string(e.what()).find("argument 2 is a floating-point value of 8 bytes; the kernel's parameter 2 takes 4 bytes") != std::string::npos);
    CHECK_THROWS_WITH_AS(saxpy(grid(1), threads(256), dx, dy, 3.0f), doctest::Contains("takes 4 arguments, 3 were given"), Error);
  }
  // A second cuda_source of the same text finds it in the cache.
  CacheStats before = cache_stats();
  cuda_source(*gpu, "kdsl_gpu_saxpy", kSaxpy, {.flags = {"-use_fast_math"}});
  CHECK(cache_stats().memory_hits == before.memory_hits + 1);

  // Dynamic shared memory beyond 48 KB, opted in for the kernel.
  const int blocks = 3, per = 16384;
  std::vector<float> in(size_t(blocks) * per);
  std::iota(in.begin(), in.end(), 0.0f);
  Buffer<float> din(*gpu, in), dout(*gpu, in.size());
  auto reverse = cuda_source(*gpu, "kdsl_gpu_reverse", kSaxpy, {.flags = {}, .shared_bytes = per * 4});
  reverse(grid(blocks), threads(512), din, dout);
  std::vector<float> r = dout.to_vector();
  wrong = 0;
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < per; ++i) wrong += r[size_t(b) * per + i] != in[size_t(b) * per + per - 1 - i];
  CHECK(wrong == 0);
}
