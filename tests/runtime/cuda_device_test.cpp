// cuda_device_test.cpp - Device::cuda/best, Buffers, and the host-pointer check of GPU launches, on any machine
// (here: no NVIDIA driver; a fake device of kind Cuda drives the argument checks of the launch path)
#include <doctest/doctest.h>

#include "runtime/cuda/cuda_driver.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <kdsl/kdsl.h>

#include "runtime/backend.h"

using namespace kdsl;

namespace cuda_device_test {

template <int BLOCK>
void add(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
}

// A device that says it is a CUDA GPU. The launch path checks arguments before it compiles
// or touches the device, so argument errors can be tested without a driver. Its memory is host
// memory it counts; it compiles nothing, so a launch that passes the checks reaches compile().
class FakeGpu final : public detail::Backend {
 public:
  Device::Kind kind() const override { return Device::Kind::Cuda; }
  std::string name() const override { return "fake cuda"; }
  int threads() const override { return 1; }
  MemorySpace memory_space() const override { return MemorySpace::Device; }
  bool runs_checked_code() const override { return false; }
  const codegen::TargetDesc &target() const override { return target_; }
  std::string loaded_code_scope() const override { return "@fake"; }
  codegen::CompiledObject compile(const ir::Function &traced, const std::string &, const CompileOptions &, bool, const codegen::DumpOptions &) const override {
    throw Error("fake cuda compiles nothing (asked for " + traced.name + ")");
  }
  std::shared_ptr<detail::LoadedCode> load(const jit_cache::CacheEntry &) override { throw Error("fake cuda loads nothing"); }
  void unload(const detail::LoadedCode &) override {}
  void launch(const detail::LoadedCode &, const detail::LaunchRequest &) override { throw Error("fake cuda launches nothing"); }
  void *allocate(size_t bytes) override {
    ++allocations;
    return std::calloc(bytes ? bytes : 1, 1);
  }
  void release(void *memory) noexcept override {
    ++releases;
    std::free(memory);
  }
  void copy_from_host(void *dst, const void *src, size_t bytes) override {
    ++copies_in;
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void *dst, const void *src, size_t bytes) override {
    ++copies_out;
    std::memcpy(dst, src, bytes);
  }
  void synchronize() override { ++synchronized; }
  size_t free_memory() override { return 12345; }

  int allocations = 0, releases = 0, copies_in = 0, copies_out = 0, synchronized = 0;

 private:
  codegen::TargetDesc target_{"cuda", "sm_90", "", "nvptx64-nvidia-cuda"};
};

std::string error_text(auto &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

bool driver_loads() { return cuda::driver_load_error().empty(); }

}  // namespace cuda_device_test

using namespace cuda_device_test;

TEST_CASE("runtime: Device::best() never throws and picks the GPU exactly when Device::cuda() opens one") {
  Device best = Device::best();
  bool gpu = true;
  std::string why;
  try {
    Device::cuda();
  } catch (const Error &e) {
    gpu = false;
    why = e.what();
  }
  INFO("Device::cuda(): ", why);
  CHECK((best.kind() == Device::Kind::Cuda) == gpu);
  CHECK(!best.name().empty());
  if (!gpu) CHECK(best.name().starts_with("cpu ("));
  CHECK(Device::best().name() == best.name());  // chosen once
  best.synchronize();
}

TEST_CASE("runtime: Device::cuda() names libcuda.so.1 without a driver, CUDA_ERROR_NO_DEVICE without a GPU") {
  if (!driver_loads()) {
    CHECK_THROWS_WITH_AS(Device::cuda(), doctest::Contains("no NVIDIA driver found (libcuda.so.1: "), Error);
    CHECK_THROWS_WITH_AS(Device::cuda(1), doctest::Contains("libcuda.so.1"), Error);
    return;
  }
  try {
    Device d = Device::cuda();
    CHECK(d.kind() == Device::Kind::Cuda);
    CHECK(d.name().starts_with("cuda:0 ("));
    CHECK(Device::cuda().name() == d.name());
    CHECK_THROWS_WITH_AS(Device::cuda(999), doctest::Contains("CUDA device 999 requested"), Error);
  } catch (const Error &e) {
    MESSAGE("driver present, no usable GPU: ", std::string(e.what()));
    CHECK(std::string(e.what()).find("CUDA_ERROR_") != std::string::npos);
  }
}

TEST_CASE("runtime: a Buffer on the CPU device is zeroed host memory with checked copies") {
  Device cpu = Device::cpu(1);
  Buffer<float> b(cpu, 5);
  CHECK(b.size() == 5);
  CHECK(!b.on_device());
  for (size_t i = 0; i < b.size(); ++i) CHECK(b[i] == 0.0f);
  std::vector<float> in = {1, 2, 3};
  b.copy_from_host(in);
  CHECK(b.to_vector() == std::vector<float>{1, 2, 3, 0, 0});
  std::vector<float> out(2);
  b.copy_to_host(out);
  CHECK(out == std::vector<float>{1, 2});
  CHECK_THROWS_WITH_AS(b.copy_from_host(std::vector<float>(6)), "kdsl::Buffer::copy_from_host: 6 elements given, the buffer holds 5", Error);
  std::vector<float> big(9);
  CHECK_THROWS_WITH_AS(b.copy_to_host(big), "kdsl::Buffer::copy_to_host: 9 elements given, the buffer holds 5", Error);
  Buffer<int32_t> from(cpu, std::vector<int32_t>{7, 8});
  CHECK(from.to_vector() == std::vector<int32_t>{7, 8});
  Buffer<float> empty(cpu, 0);
  CHECK(empty.to_vector().empty());
}

TEST_CASE("runtime: CPU kernels take Buffers; a GPU launch with a host pointer is refused naming the argument") {
  const int n = 1000;
  Device cpu = Device::cpu(1);
  Buffer<float> x(cpu, std::vector<float>(n, 1.5f)), y(cpu, std::vector<float>(n, 2.0f)), out(cpu, n);
  compile<add<1024>>(cpu)(grid(1), x, y, out, n);
  CHECK(out.to_vector() == std::vector<float>(n, 3.5f));

  Device gpu(std::make_shared<FakeGpu>());
  auto k = compile<add<1024>>(gpu);
  const std::string name = "kernel '" + decltype(k)::name() + "'";
  std::vector<float> host(n);
  CHECK(error_text([&] { k(grid(1), host.data(), y.data(), out.data(), n); }) ==
        name + ": argument 0 is a host pointer; on a CUDA device pass a kdsl::Buffer allocated on it");
  // A Buffer of the CPU device is host memory too.
  CHECK(error_text([&] { k(grid(1), x, y, out, n); }) == name + ": argument 0 is a host pointer; on a CUDA device pass a kdsl::Buffer allocated on it");
  ArgValue device_memory = make_arg(x.data());
  device_memory.on_device = true;
  CHECK(error_text([&] { k.launch(grid(1), {device_memory, device_memory, make_arg(out.data()), make_arg(n)}); }) ==
        name + ": argument 2 is a host pointer; on a CUDA device pass a kdsl::Buffer allocated on it");
  // Type errors still come first, as on the CPU.
  std::vector<int32_t> ints(n);
  CHECK(error_text([&] { k(grid(1), ints.data(), y.data(), out.data(), n); }).find("expects a pointer to f32, got a pointer to i32") != std::string::npos);
  // Arguments in the device's memory pass the checks, and the launch goes to its backend.
  device_memory = make_arg(out.data());
  device_memory.on_device = true;
  CHECK(error_text([&] { k.launch(grid(1), {device_memory, device_memory, device_memory, make_arg(n)}); }).starts_with("fake cuda compiles nothing"));

  // And GPU memory given to a CPU kernel.
  auto on_cpu = compile<add<1024>>(cpu);
  CHECK(error_text([&] { on_cpu.launch(grid(1), {make_arg(x.data()), device_memory, make_arg(out.data()), make_arg(n)}); }) ==
        name + ": argument 1 is in a GPU's memory; on the CPU pass host memory (a kdsl::Buffer allocated on the CPU, or a host pointer)");
  CHECK(error_text([&] { on_cpu(grid(1), x, y, device_pointer(out.data()), n); }) ==
        name + ": argument 2 is in a GPU's memory; on the CPU pass host memory (a kdsl::Buffer allocated on the CPU, or a host pointer)");
}

#if defined(__x86_64__)
// The CPU's features as the kernels are compiled for them agree with what the kernel reports
// (/proc/cpuinfo's flags spell some of LLVM's names with an underscore).
TEST_CASE("runtime: Device::has_cpu_feature agrees with /proc/cpuinfo's flags on the features kdsl's choices read") {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(cpuinfo, line))
    if (line.starts_with("flags")) {
      flags = line.substr(line.find(':') + 1) + " ";
      break;
    }
  if (flags.empty()) return;  // no /proc here: nothing independent to compare with
  Device cpu = Device::cpu(1);
  const std::pair<const char *, const char *> llvm_and_linux[] = {
      {"avx2", "avx2"}, {"fma", "fma"}, {"avxvnni", "avx_vnni"}, {"avx512vnni", "avx512_vnni"}, {"avx512vl", "avx512vl"}};
  for (auto [llvm_name, linux_name] : llvm_and_linux) {
    INFO(llvm_name);
    CHECK(cpu.has_cpu_feature(llvm_name) == (flags.find(std::string(" ") + linux_name + " ") != std::string::npos));
  }
  CHECK_FALSE(cpu.has_cpu_feature("no-such-feature"));
}
#endif

TEST_CASE("codegen: a target's enabled features are the whole '+' items of its list, and nothing else") {
  const codegen::TargetDesc t{"host", "znver4", "+avx2,-avx512f,+fma,+avx512vl,-x87,+", "x86_64-unknown-linux-gnu"};
  CHECK(t.enabled_features() == std::vector<std::string_view>{"avx2", "fma", "avx512vl"});
  CHECK(t.has_feature("avx2"));
  CHECK(t.has_feature("avx512vl"));
  CHECK_FALSE(t.has_feature("avx512f"));  // listed, but disabled
  CHECK_FALSE(t.has_feature("avx512"));   // a prefix of an item, not an item
  CHECK_FALSE(t.has_feature("vx2"));      // a suffix
  CHECK_FALSE(t.has_feature(""));
  CHECK(codegen::TargetDesc{}.enabled_features().empty());
}

TEST_CASE("runtime: a Buffer on a device with memory of its own is allocated, copied, freed and synchronized through its backend") {
  auto fake = std::make_shared<FakeGpu>();
  Device gpu(fake);
  CHECK(gpu.memory_space() == MemorySpace::Device);
  CHECK(Device::cpu(1).memory_space() == MemorySpace::Host);
  {
    Buffer<int32_t> b(gpu, std::vector<int32_t>{4, 5, 6});
    CHECK(b.on_device());
    CHECK(fake->allocations == 1);
    CHECK(fake->copies_in == 1);
    CHECK(b.to_vector() == std::vector<int32_t>{4, 5, 6});
    CHECK(fake->copies_out == 1);
    Buffer<int32_t> shared = b;  // copies share the memory: one release, with the last
    CHECK(fake->allocations == 1);
  }
  CHECK(fake->releases == 1);
  gpu.synchronize();
  CHECK(fake->synchronized == 1);
  CHECK(gpu.free_memory() == 12345);
}
