// cuda_nvrtc_test.cpp - NVRTC loaded at run time: CUDA C++ to PTX and cubin, logs in errors, a missing library
// (runs without a GPU: nothing here loads or launches a module)
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <kdsl/kdsl.h>

#include "runtime/cuda/nvrtc.h"

using namespace kdsl;

namespace cuda_nvrtc_test {

const char *kScale = R"(
extern "C" __global__ void kdsl_test_scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
template <class T>
__global__ void scale(T *x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
)";

bool nvrtc_loads() {
  try {
    nvrtc::library();
    return true;
  } catch (const Error &e) {
    MESSAGE("skipped: NVRTC is not installed here: ", std::string(e.what()));
    return false;
  }
}

std::string error_text(auto &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace cuda_nvrtc_test

using namespace cuda_nvrtc_test;

TEST_CASE("nvrtc: the library is looked for in the toolkit, then by soname; a missing one is named") {
  std::vector<std::string> candidates = nvrtc::library_candidates();
  CHECK(std::find(candidates.begin(), candidates.end(), "libnvrtc.so.12") != candidates.end());
  if (std::filesystem::exists("/usr/local/cuda/lib64/libnvrtc.so.13"))
    CHECK(std::find(candidates.begin(), candidates.end(), "/usr/local/cuda/lib64/libnvrtc.so.13") != candidates.end());
  for (const std::string &c : candidates) CHECK(c.find("builtins") == std::string::npos);
  CHECK_THROWS_WITH_AS(nvrtc::load_library("/nonexistent/libnvrtc.so.13"),
                       doctest::Contains("NVRTC not found (/nonexistent/libnvrtc.so.13: "), Error);
}

TEST_CASE("nvrtc: an extern \"C\" kernel and a template instance compile to PTX and cubin for sm_80 and sm_90") {
  if (!nvrtc_loads()) return;
  for (const char *arch : {"sm_80", "sm_90"}) {
    CAPTURE(arch);
    nvrtc::Output out = nvrtc::compile("kdsl_test_scale", kScale, {"-use_fast_math"}, arch);
    CHECK(out.lowered_name == "kdsl_test_scale");
    CHECK(out.ptx.find(".entry kdsl_test_scale(") != std::string::npos);
    CHECK(out.ptx.find(std::string(".target ") + arch) != std::string::npos);
    CHECK(out.cubin.size() > 4);
    if (out.cubin.size() > 4) CHECK(std::string(out.cubin.begin() + 1, out.cubin.begin() + 4) == "ELF");
  }
  nvrtc::Output t = nvrtc::compile("scale<float>", kScale, {}, "sm_90");
  CHECK(t.lowered_name.starts_with("_Z"));
  CHECK(t.ptx.find(".entry " + t.lowered_name + "(") != std::string::npos);
  // A virtual architecture gives PTX only (the driver JIT-compiles it at load).
  nvrtc::Output v = nvrtc::compile("kdsl_test_scale", kScale, {"--gpu-architecture=compute_80"}, "sm_90");
  CHECK(v.cubin.empty());
  CHECK(v.ptx.find(".entry kdsl_test_scale(") != std::string::npos);
}

TEST_CASE("nvrtc: a syntax error is a kdsl::Error with NVRTC's log naming the kernel and the line") {
  if (!nvrtc_loads()) return;
  std::string text = error_text([] {
    nvrtc::compile("broken", "extern \"C\" __global__ void broken(float *x) {\n  int i = threadIdx.x\n  x[i] = 1.0f;\n}\n", {}, "sm_90");
  });
  INFO(text);
  CHECK(text.starts_with("kernel 'broken': NVRTC "));
  CHECK(text.find("failed to compile it for sm_90") != std::string::npos);
  CHECK(text.find("broken.cu(3): error") != std::string::npos);  // the missing ';' is found on line 3
  std::string missing = error_text([] { nvrtc::compile("absent", kScale, {}, "sm_90"); });
  INFO(missing);
  CHECK(missing.starts_with("kernel 'absent': "));
  CHECK(missing.find("the source declares no __global__ function named 'absent'") != std::string::npos);
  std::string option = error_text([] { nvrtc::compile("kdsl_test_scale", kScale, {"--no-such-option"}, "sm_90"); });
  CHECK(option.starts_with("kernel 'kdsl_test_scale': NVRTC "));
}

TEST_CASE("nvrtc: cuda_source arguments keep their C++ size; pointers say where they point") {
  using Kind = detail::SourceArg::Kind;
  float f = 1;
  double d = 2;
  int16_t s = 3;
  std::vector<float> host(4);
  Buffer<float> on_cpu(Device::cpu(1), 4);
  CHECK(detail::source_arg(f).size == 4);
  CHECK(detail::source_arg(d).size == 8);
  CHECK(detail::source_arg(s).size == 2);
  CHECK(detail::source_arg(f).kind == Kind::Value);
  CHECK(detail::source_arg(f).value == &f);
  CHECK(detail::source_arg(host.data()).kind == Kind::HostPointer);
  CHECK(detail::source_arg(on_cpu).kind == Kind::HostPointer);
  auto gpu = detail::source_arg(device_pointer(host.data()));
  CHECK(gpu.kind == Kind::DevicePointer);
  CHECK(gpu.size == 8);
  CHECK(gpu.address == reinterpret_cast<uintptr_t>(host.data()));
}

TEST_CASE("nvrtc: cuda_source needs a CUDA device, and says so") {
  CHECK_THROWS_WITH_AS(cuda_source(Device::cpu(1), "kdsl_test_scale", kScale),
                       doctest::Contains("kdsl::cuda_source('kdsl_test_scale'): cpu ("), Error);
  CHECK_THROWS_WITH_AS(cuda_source(Device::cpu(1), "kdsl_test_scale", kScale), doctest::Contains("is not a CUDA device"), Error);
}
