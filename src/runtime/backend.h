// backend.h - what each kind of device implements for the run time: compile, load, launch, memory, sync, cache identity
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <kdsl/device.h>
#include <kdsl/kernel.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "jit_cache/cache_entry.h"
#include "runtime/launch_capture.h"

namespace kdsl::detail {

// A compiled kernel loaded on a backend: a host entry point, a module in a GPU's context. Each
// backend derives its own and is the only one to look inside.
class LoadedCode {
 public:
  virtual ~LoadedCode() = default;
};

// One launch as a backend runs it. kernel.cpp has checked the arguments and the grid (every
// extent in [1, 2^31)); limits of the backend's own (CUDA's 65535 along y and z) are its to check.
struct LaunchRequest {
  const KernelSignature &kernel;  // name and parameters, for errors
  const ArgValue *args;           // as the caller gave them: checked mode's messages name them
  uint64_t *slots;                // one 8-byte slot per argument; checked code's slots follow (codegen.h)
  size_t count;                   // arguments
  Grid grid;
  bool checked;                   // the code was compiled with bounds checks
};

// A device kind's side of the run time. kernel.cpp, device.cpp and buffer.cpp reach a device
// only through this, so adding a device kind (HIP) means one more Backend, not branches there.
// Device handles share one Backend per device (Device::impl()).
class Backend {
 public:
  virtual ~Backend() = default;

  // What the device is: Device::kind(), name() and threads() report these.
  virtual Device::Kind kind() const = 0;
  virtual std::string name() const = 0;
  virtual int threads() const = 0;
  // Where the memory its kernels' pointer arguments must address lives.
  virtual MemorySpace memory_space() const = 0;
  // Whether it runs checked mode's bounds-checked code; where not, checked kernels run
  // unchecked (kernel.cpp says so once).
  virtual bool runs_checked_code() const = 0;

  // The device part of every kernel cache key: backend, arch, features, triple.
  virtual const codegen::TargetDesc &target() const = 0;
  // Loaded code belongs to more than its key where the device holds it: "" where one load
  // serves the whole process (the host JIT), the context for a GPU ("@cuda:0@0x..."). The
  // in-memory table keys loaded code by digest + this.
  virtual std::string loaded_code_scope() const = 0;

  // Compiles traced block IR for this device under `symbol`, with the kernel's options
  // (`checked`: bounds checks, where runs_checked_code()).
  virtual codegen::CompiledObject compile(const ir::Function &traced, const std::string &symbol, const CompileOptions &options, bool checked,
                                          const codegen::DumpOptions &dump) const = 0;
  // Loads a cache entry's code (as kernel_cache_entry made it). Throws kdsl::Error when the
  // code does not load here; the caller then discards the entry and compiles afresh.
  virtual std::shared_ptr<LoadedCode> load(const jit_cache::CacheEntry &entry) = 0;
  // Lets go of code loaded only to time a compile (compile_cold).
  virtual void unload(const LoadedCode &code) = 0;
  // Runs `code` over the grid; returns when the device has it (a GPU's launch is asynchronous).
  virtual void launch(const LoadedCode &code, const LaunchRequest &request) = 0;

  // `bytes` zeroed bytes of the device's memory (at least one byte is reserved for 0); the
  // address is the device's, for kernels and the copies below.
  virtual void *allocate(size_t bytes) = 0;
  // Frees allocate()'s memory. Never throws: Buffers free in destructors, some at exit.
  virtual void release(void *memory) noexcept = 0;
  virtual void copy_from_host(void *device_dst, const void *host_src, size_t bytes) = 0;
  // Waits for the launches issued before it, then copies.
  virtual void copy_to_host(void *host_dst, const void *device_src, size_t bytes) = 0;
  // Waits for every launch and copy issued to the device.
  virtual void synchronize() = 0;
  // Bytes free for buffers now (0 where it cannot be told).
  virtual size_t free_memory() = 0;

  // kdsl::LaunchGraph. From begin_capture to end_capture kernel.cpp hands each launch to
  // capture_launch instead of launch(), and buffer.cpp and device.cpp refuse copies,
  // allocations and synchronize() on a GPU. end_capture also ends a capture that failed (the
  // caller then drops what it returns). By default the launches are recorded and replayed
  // through launch(); a backend with a graph API of its own (CUDA) captures into it.
  virtual void begin_capture() { recording_.begin(name()); }
  virtual bool capturing() const { return recording_.active(); }
  virtual void capture_launch(std::shared_ptr<LoadedCode> code, const LaunchRequest &request) { recording_.add(std::move(code), request); }
  virtual std::unique_ptr<CapturedLaunches> end_capture() { return recording_.end(*this); }

 private:
  LaunchRecording recording_;
};

}  // namespace kdsl::detail
