// cuda_device.h - an NVIDIA GPU as a kdsl device: context, memory, modules, launches, queries
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/target_info.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_tensor_maps.h"
#include "runtime/backend.h"

namespace kdsl::detail {

// One kernel loaded into the device's context.
struct CudaFunction {
  cuda::CUmodule module = nullptr;
  cuda::CUfunction function = nullptr;
  int shared_bytes = 0;  // dynamic shared memory per block
  int threads = 0;       // per block
  std::string name;      // as errors name it: "axpy<1024> (kdsl_3f...)"; the symbol where nothing better is known
};

// One kernel loaded by the CUDA backend, as the launch path holds it.
struct CudaCode final : LoadedCode {
  explicit CudaCode(std::vector<codegen::TensorMapSpec> maps = {}) : tensor_maps(std::move(maps)) {}
  CudaFunction function;
  // The TMA tensor maps the kernel takes after its arguments; empty for most kernels.
  CudaTensorMaps tensor_maps;
};

class CudaDevice final : public Backend {
 public:
  // Opens GPU `ordinal` (its primary context). Throws kdsl::Error when there is no driver,
  // no such GPU, or the GPU is older than sm_80.
  // Compute capability 8.x gets sm_80 cubins, 9.0 sm_90a (wgmma); GPUs newer than the newest
  // cubin target kdsl knows (10.x, 12.x) get PTX for sm_90, which their driver compiles at
  // load. KDSL_CUDA_ARCH=<target> picks another target the GPU can run (cuda_device.cpp).
  explicit CudaDevice(int ordinal) : CudaDevice(ordinal, cuda::driver()) {}
  // The same through an explicit driver, which must outlive the device (tests load a fake one).
  CudaDevice(int ordinal, const cuda::Driver &driver);
  Device::Kind kind() const override { return Device::Kind::Cuda; }
  int ordinal() const { return ordinal_; }
  // Loaded modules belong to a context: in-memory cache keys carry this ("cuda:0@0x...").
  std::string context_key() const;
  std::string name() const override { return name_; }
  const codegen::TargetDesc &target() const override { return target_; }
  int threads() const override { return info_.sm_count; }
  MemorySpace memory_space() const override { return MemorySpace::Device; }
  bool runs_checked_code() const override { return false; }
  std::string loaded_code_scope() const override;  // "@" + context_key()

  // The Backend side (cuda_backend.cpp). compile: a cubin where ptxas is found, else PTX that
  // the driver JIT-compiles at load; PTX always on GPUs newer than sm_90 (embeds_ptx).
  codegen::CompiledObject compile(const ir::Function &traced, const std::string &symbol, const CompileOptions &options, bool checked,
                                  const codegen::DumpOptions &dump) const override;
  // A cache entry's cubin or PTX into the context, opting in to dynamic shared memory past
  // 48 KB where the kernel needs it, with the TMA tensor maps its metadata lists
  // (tensor_map_json.h); errors name it "kernel (symbol)".
  std::shared_ptr<LoadedCode> load(const jit_cache::CacheEntry &entry) override;
  void unload(const LoadedCode &code) override;
  // Checks the grid against CUDA's limits (y and z at most 65535) and launches on the
  // device's stream: num_warps * 32 threads per block, one 8-byte slot per argument, then the
  // kernel's tensor maps encoded for these arguments (cuda_tensor_maps.h).
  void launch(const LoadedCode &code, const LaunchRequest &request) override;
  void *allocate(size_t bytes) override;  // cuMemAlloc, then zeroed
  // cuMemFree; a failure is logged, and said nothing of once the driver has shut down (at exit).
  void release(void *memory) noexcept override;
  void copy_from_host(void *device_dst, const void *host_src, size_t bytes) override;
  // cuMemcpyDtoH runs on the legacy default stream, which waits for the device's (blocking)
  // stream, so the launches issued before it have finished when it reads.
  void copy_to_host(void *host_dst, const void *device_src, size_t bytes) override;
  // The compiler's target description with this GPU's queried limits.
  const codegen::TargetInfo &info() const { return info_; }
  // True where kernels go to the driver as PTX rather than as cubins (see above).
  bool embeds_ptx() const { return embeds_ptx_; }

  cuda::CUdeviceptr alloc(size_t bytes);
  void free(cuda::CUdeviceptr p);
  void copy_to_device(cuda::CUdeviceptr dst, const void *src, size_t bytes);
  void copy_to_host(void *dst, cuda::CUdeviceptr src, size_t bytes);
  void copy_on_device(cuda::CUdeviceptr dst, cuda::CUdeviceptr src, size_t bytes);
  void zero(cuda::CUdeviceptr dst, size_t bytes);

  // Loads a cubin or NUL-terminated PTX (the driver JIT-compiles it) and finds `symbol`.
  CudaFunction load(const std::vector<uint8_t> &image, const std::string &symbol, int shared_bytes, int threads);
  void unload(const CudaFunction &f);
  // Lets f use `bytes` of dynamic shared memory per block. Static and dynamic shared memory
  // together past 48 KB need the kernel's opt-in; past the GPU's opt-in limit they are a user
  // error naming the kernel and both amounts.
  void allow_shared(const CudaFunction &f, int bytes);
  // The sizes of f's parameters, in order; nullopt where the driver cannot say (before 12.4,
  // or cuFuncGetParamInfo fails): then argument counts and sizes go unchecked, rather than
  // every launch being refused as "takes 0 arguments".
  std::optional<std::vector<size_t>> parameter_sizes(const CudaFunction &f);
  // Launches over grid[3] with f.threads threads per block and one 8-byte slot per kernel
  // argument (values in the low bytes), then `map_count` tensor maps (grid-constant parameters,
  // which the driver copies at launch).
  void launch(const CudaFunction &f, const int32_t grid[3], const uint64_t *slots, size_t count, const cuda::CUtensorMap *maps = nullptr,
              size_t map_count = 0);
  // Launches with an explicit block shape; params[i] points at argument i's value, as
  // cuLaunchKernel takes them. A refused launch names the kernel, grid, block and dynamic
  // shared memory; a later error from the device (an illegal address, found at the next
  // synchronize or copy) names the last kernel launched, and suggests CUDA_LAUNCH_BLOCKING=1.
  void launch(const CudaFunction &f, const unsigned grid[3], const unsigned block[3], int shared_bytes, void **params);
  void synchronize() override;
  size_t free_memory() override;

  // kdsl::LaunchGraph as a CUDA graph (cuda_graph.cpp): the device's stream captured
  // (cuStreamBeginCapture, relaxed mode), instantiated at the end, replayed with cuGraphLaunch.
  void begin_capture() override;
  bool capturing() const override { return capture_.active(); }
  // Launches on the capturing stream (the driver records it) and keeps the code loaded.
  void capture_launch(std::shared_ptr<LoadedCode> code, const LaunchRequest &request) override;
  std::unique_ptr<CapturedLaunches> end_capture() override;
  // drv_.check for the capture's calls, naming LaunchGraph::capture and the device.
  void capture_check(cuda::CUresult result, const char *call) const;
  // Launches an instantiated graph on the device's stream; KDSL_PROFILE times it as one entry,
  // `name` ("graph of N launches"), which also names it as the last launch.
  void launch_graph(cuda::CUgraphExec graph, const std::string &name);
  // Milliseconds `body` takes on the device's stream, timed with CUDA events.
  template <class F>
  double time_ms(F &&body) {
    begin_timing();
    body();
    return end_timing();
  }

 private:
  void make_current() const;
  void begin_timing();
  double end_timing();
  // drv_.check, adding the last launch to the error: the driver reports a kernel's fault at
  // whichever call comes next.
  void check(cuda::CUresult result, const char *call) const;
  // "; the last kernel launched on ... was ..." or "" before the first launch.
  std::string last_launch_note() const;
  // The stand-ins TMA maps over empty tensors point at (cuda_tensor_maps.h), allocated and
  // zeroed on first use; they live as long as the device's context, as its events do.
  CudaTensorMaps::StandIns tensor_map_stand_ins();
  std::mutex stand_ins_mutex_;
  cuda::CUdeviceptr stand_ins_ = 0;
  cuda::CUevent take_event();
  // KDSL_PROFILE's bracket around work issued on the stream: the event before it (null when
  // not profiling, or while capturing), then the event after it and the table's entry `name`.
  cuda::CUevent profile_begin();
  void profile_end(cuda::CUevent start, const std::string &name);
  // Notes the last work issued on the stream, for last_launch_note.
  void note_last_launch(const std::string &name, const unsigned grid[3], const unsigned block[3], int shared_bytes);
  // Waits for the profiled launches (at a point that waits anyway: a copy back, synchronize, or
  // a full batch), records each one's time and the device's idle time between them.
  void read_profile();

  // The last launch, kept as fields (formatted only for an error: launches are hot).
  struct LastLaunch {
    std::string name;
    unsigned grid[3] = {}, block[3] = {};
    int shared_bytes = -1;  // -1: nothing launched yet
  } last_;
  mutable std::mutex last_mutex_;  // host threads may share a device

  const cuda::Driver &drv_;
  int ordinal_ = 0;
  cuda::CUdevice device_ = 0;
  cuda::CUcontext context_ = nullptr;
  cuda::CUstream stream_ = nullptr;
  cuda::CUevent start_ = nullptr, stop_ = nullptr;
  // KDSL_PROFILE: each launch between two events of its own, read back in batches (read_profile).
  struct ProfiledLaunch {
    std::string name;  // a copy: the function may be unloaded before the batch is read
    cuda::CUevent start, stop;
  };
  std::vector<ProfiledLaunch> profiled_;
  std::vector<cuda::CUevent> spare_events_;
  StreamCapture capture_;  // the capture under way
  std::string name_;
  bool embeds_ptx_ = false;
  codegen::TargetDesc target_;
  codegen::TargetInfo info_;
};

}  // namespace kdsl::detail
