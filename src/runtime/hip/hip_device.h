// hip_device.h - an AMD GPU as a kdsl device through the HIP runtime: memory, code objects, launches, queries
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "codegen/target_info.h"
#include "runtime/backend.h"
#include "runtime/hip/hip_runtime.h"

namespace kdsl::detail {

// One kernel loaded from a code object (HSACO) by the HIP backend.
struct HipCode final : LoadedCode {
  hip::hipModule_t module = nullptr;
  hip::hipFunction_t function = nullptr;
  int shared_bytes = 0;  // dynamic LDS per workgroup
  int threads = 0;       // per workgroup
  std::string name;      // as errors name it: "axpy<1024> (kdsl_3f...)"
};

class HipDevice final : public Backend {
 public:
  // Opens AMD GPU `ordinal`. Throws kdsl::Error when there is no HIP runtime, no such GPU,
  // or its architecture (gcnArchName) is not one kdsl compiles for (target_info.cpp).
  explicit HipDevice(int ordinal) : HipDevice(ordinal, hip::runtime()) {}
  // The same through an explicit runtime, which must outlive the device (tests load a fake one).
  HipDevice(int ordinal, const hip::Runtime &runtime);

  Device::Kind kind() const override { return Device::Kind::Hip; }
  std::string name() const override { return name_; }
  int threads() const override { return info_.sm_count; }
  MemorySpace memory_space() const override { return MemorySpace::Device; }
  bool runs_checked_code() const override { return false; }
  const codegen::TargetDesc &target() const override { return target_; }
  // "@hip:N@<this device object>": what loaded its modules.
  std::string loaded_code_scope() const override;
  const codegen::TargetInfo &info() const { return info_; }

  // compile: a code object for the device's gfx architecture (codegen::compile, AMDGPU).
  codegen::CompiledObject compile(const ir::Function &traced, const std::string &symbol, const CompileOptions &options, bool checked,
                                  const codegen::DumpOptions &dump) const override;
  // A cache entry's code object into the device (hipModuleLoadData), its launch shape from the
  // entry's metadata; errors name the kernel.
  std::shared_ptr<LoadedCode> load(const jit_cache::CacheEntry &entry) override;
  void unload(const LoadedCode &code) override;
  // hipModuleLaunchKernel on the device's stream: num_warps * wave size threads per
  // workgroup, one 8-byte slot per argument, the kernel's dynamic LDS.
  void launch(const LoadedCode &code, const LaunchRequest &request) override;
  // The same for a hand-written kernel (kdsl::hip_source): the caller's workgroup shape,
  // dynamic LDS and parameter pointers, as the kernel declares its parameters.
  void launch_with(const HipCode &code, const unsigned grid[3], const unsigned block[3], int shared_bytes, void **params);
  void *allocate(size_t bytes) override;  // hipMalloc, then zeroed
  void release(void *memory) noexcept override;
  void copy_from_host(void *device_dst, const void *host_src, size_t bytes) override;
  // hipMemcpyDtoH waits for the device's work issued before it.
  void copy_to_host(void *host_dst, const void *device_src, size_t bytes) override;
  void synchronize() override;
  size_t free_memory() override;

  // kdsl::LaunchGraph as a HIP graph where the runtime has the entry points (hip_graph.cpp):
  // the device's stream captured (hipStreamBeginCapture, relaxed mode), instantiated at the
  // end, replayed with one hipGraphLaunch. Without them, the Backend's recording.
  void begin_capture() override;
  bool capturing() const override;
  // Launches on the capturing stream (the runtime records it) and keeps the code loaded.
  void capture_launch(std::shared_ptr<LoadedCode> code, const LaunchRequest &request) override;
  std::unique_ptr<CapturedLaunches> end_capture() override;
  // Launches an instantiated graph on the device's stream.
  void launch_graph(hip::hipGraphExec_t graph);

 private:
  void make_current() const;
  // rt_.check for the capture's calls, naming LaunchGraph::capture and the device.
  void capture_check(hip::hipError_t result, const char *call) const;
  const hip::Runtime &rt_;
  int ordinal_ = 0;
  hip::hipStream_t stream_ = nullptr;
  std::string name_;
  codegen::TargetDesc target_;
  codegen::TargetInfo info_;
  StreamCapture capture_;  // the capture under way (a HIP graph's)
};

}  // namespace kdsl::detail
