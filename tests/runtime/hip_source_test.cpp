// hip_source_test.cpp - kdsl::hip_source through a fake libhiprtc (fake_libhiprtc.c) and the fake HIP runtime: options, the cache chain, launch shape and argument bytes, errors
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <bit>
#include <cstdlib>
#include <string>

#include <kdsl/hip_source.h>
#include <kdsl/kdsl.h>

#include "runtime/hip/hip_device.h"
#include "runtime/hip/hip_runtime.h"
#include "runtime/hip/hiprtc.h"
#include "tests/fake_libraries.h"
#include "tests/scratch_cache.h"

using namespace kdsl;

namespace hip_source_test {

const char *kScale = R"(
extern "C" __global__ void kdsl_scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
)";

template <class F>
F symbol(void *h, const char *name) {
  void *p = dlsym(h, name);
  REQUIRE_MESSAGE(p, "a fake library lacks ", name);
  return reinterpret_cast<F>(p);
}

std::string fake_libamdhip64() { return test::fake_library("KDSL_TEST_FAKE_LIBAMDHIP64", KDSL_FAKE_LIBAMDHIP64); }
std::string fake_libhiprtc() { return test::fake_library("KDSL_TEST_FAKE_LIBHIPRTC", KDSL_FAKE_LIBHIPRTC); }

struct Fakes {
  hip::Runtime runtime;
  int (*compiles)() = nullptr;
  const char *(*last_options)() = nullptr;
  int (*loads)() = nullptr;
  const char *(*last_function)() = nullptr;
  void (*last_shape)(unsigned *, unsigned *, unsigned *) = nullptr;
  void (*record_params)(int) = nullptr;
  void (*param_sizes)(const int *, int) = nullptr;
  void (*last_params)(uint64_t *) = nullptr;
};

// The fake runtime and compiler; hipRTC is loaded once per process, so $KDSL_LIBHIPRTC is set
// before the first hip_source.
Fakes &fakes() {
  static Fakes f = [] {
    ::setenv("KDSL_LIBHIPRTC", fake_libhiprtc().c_str(), 1);
    Fakes f;
    f.runtime = hip::load_runtime(fake_libamdhip64());
    void *hip = dlopen(fake_libamdhip64().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    REQUIRE(hip);
    f.loads = symbol<int (*)()>(hip, "fake_hip_loads");
    f.last_function = symbol<const char *(*)()>(hip, "fake_hip_last_function");
    f.last_shape = symbol<void (*)(unsigned *, unsigned *, unsigned *)>(hip, "fake_hip_last_shape");
    f.record_params = symbol<void (*)(int)>(hip, "fake_hip_record_params");
    f.param_sizes = symbol<void (*)(const int *, int)>(hip, "fake_hip_param_sizes");
    f.last_params = symbol<void (*)(uint64_t *)>(hip, "fake_hip_last_params");
    void *rtc = dlopen(hiprtc::library().path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    REQUIRE(rtc);
    f.compiles = symbol<int (*)()>(rtc, "fake_hiprtc_compiles");
    f.last_options = symbol<const char *(*)()>(rtc, "fake_hiprtc_last_options");
    return f;
  }();
  return f;
}

// A fresh fake GPU: a new device object, so its in-memory kernel table is empty.
Device fake_gpu() { return Device(std::make_shared<detail::HipDevice>(0, fakes().runtime)); }

bool contains(const std::string &text, const std::string &what) { return text.find(what) != std::string::npos; }

std::string error_text(auto &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace hip_source_test

using namespace hip_source_test;

TEST_CASE("hip_source: hipRTC compiles for the device's gfx arch through the kernel cache; a launch passes the workgroup shape, LDS and argument bytes") {
  test::ScratchCache cache("hip_source_cache");
  Fakes &f = fakes();
  Device gpu = fake_gpu();
  int compiles = f.compiles(), loads = f.loads();
  HipSourceKernel k = hip_source(gpu, "kdsl_scale", kScale, {.flags = {"-DTILE=64"}, .shared_bytes = 1024});
  CHECK(k.name() == "kdsl_scale");
  CHECK(f.compiles() == compiles + 1);
  CHECK(contains(f.last_options(), "-DTILE=64\n"));
  CHECK(contains(f.last_options(), "--offload-arch=gfx942\n"));
  CHECK(f.loads() == loads + 1);
  CHECK(cache.entries() == 1);

  Buffer<float> x(gpu, 1000);
  f.record_params(3);
  const int sizes[3] = {8, 4, 4};  // a pointer, a float, an int
  f.param_sizes(sizes, 3);
  k(grid(4, 2), threads(128, 2), x, 2.5f, 1000);
  CHECK(std::string(f.last_function()) == "kdsl_scale");
  unsigned g[3], block[3], shared = 0;
  f.last_shape(g, block, &shared);
  CHECK((g[0] == 4 && g[1] == 2 && g[2] == 1));
  CHECK((block[0] == 128 && block[1] == 2 && block[2] == 1));
  CHECK(shared == 1024);
  uint64_t params[3];
  f.last_params(params);
  CHECK(params[0] == reinterpret_cast<uintptr_t>(x.data()));
  CHECK(uint32_t(params[1]) == std::bit_cast<uint32_t>(2.5f));
  CHECK(uint32_t(params[2]) == 1000u);

  // Again on this device: the memory cache; on a new device object: the disk cache, loaded again.
  hip_source(gpu, "kdsl_scale", kScale, {.flags = {"-DTILE=64"}});
  CHECK(f.compiles() == compiles + 1);
  CHECK(f.loads() == loads + 1);
  hip_source(fake_gpu(), "kdsl_scale", kScale, {.flags = {"-DTILE=64"}});
  CHECK(f.compiles() == compiles + 1);
  CHECK(f.loads() == loads + 2);
  // Other flags are another key.
  hip_source(gpu, "kdsl_scale", kScale, {.flags = {"-DTILE=32"}});
  CHECK(f.compiles() == compiles + 2);
  CHECK(cache.entries() == 2);
}

TEST_CASE("hip_source: errors name the kernel: hipRTC's log, an undeclared kernel, a host pointer, too many threads, not a HIP device") {
  test::ScratchCache cache("hip_source_errors");
  Device gpu = fake_gpu();
  std::string failed = error_text([&] { hip_source(gpu, "bad", "extern \"C\" __global__ void bad() {}\n\n#error nope\n"); });
  CHECK(contains(failed, "kernel 'bad': hipRTC 6.2 failed to compile it for gfx942"));
  CHECK(contains(failed, "kernel.hip:3:2: error"));
  CHECK(contains(error_text([&] { hip_source(gpu, "missing", kScale); }), "declares no __global__ function named 'missing'"));
  HipSourceKernel k = hip_source(gpu, "kdsl_scale", kScale);
  float storage[4] = {};
  float *host = storage;
  CHECK(contains(error_text([&] { k(grid(1), threads(64), host, 1.0f, 4); }), "kernel 'kdsl_scale': argument 0 is a host pointer"));
  Buffer<float> x(gpu, 4);
  CHECK(contains(error_text([&] { k(grid(1), threads(2048), x, 1.0f, 4); }), "threads(2048, 1, 1) per workgroup"));
  CHECK(contains(error_text([&] { hip_source(gpu, "kdsl_scale", kScale, {.flags = {}, .shared_bytes = 1 << 20}); }), "shared_bytes 1048576 is outside [0, 65536]"));
  CHECK(contains(error_text([&] { hip_source(Device::cpu(), "kdsl_scale", kScale); }), "is not a HIP device"));
}

TEST_CASE("hip_source: a missing hipRTC is an error naming the path and how to point kdsl at one") {
  std::string missing = error_text([] { hiprtc::load_library("/nonexistent/libhiprtc.so"); });
  CHECK(contains(missing, "/nonexistent/libhiprtc.so"));
  CHECK(contains(missing, "KDSL_LIBHIPRTC"));
  ::setenv("KDSL_LIBHIPRTC", "/somewhere/libhiprtc.so", 1);
  CHECK(hiprtc::library_candidates().front() == "/somewhere/libhiprtc.so");
  ::setenv("KDSL_LIBHIPRTC", fake_libhiprtc().c_str(), 1);
}
