// host_backend.h - the host CPU as a backend: kernels JIT-compiled for it, programs run on a thread pool
#pragma once
#include <string>

#include "runtime/backend.h"
#include "runtime/thread_pool.h"

namespace kdsl::detail {

class CpuDevice final : public Backend {
 public:
  explicit CpuDevice(int threads);

  Device::Kind kind() const override { return Device::Kind::Cpu; }
  std::string name() const override;
  int threads() const override { return pool_.size(); }
  MemorySpace memory_space() const override { return MemorySpace::Host; }
  bool runs_checked_code() const override { return true; }

  const codegen::TargetDesc &target() const override { return codegen::host_target(); }
  // One ORC JIT serves the process: code loaded once serves every CPU device.
  std::string loaded_code_scope() const override { return ""; }

  codegen::CompiledObject compile(const ir::Function &traced, const std::string &symbol, const CompileOptions &options, bool checked,
                                  const codegen::DumpOptions &dump) const override;
  std::shared_ptr<LoadedCode> load(const jit_cache::CacheEntry &entry) override;
  // The JIT keeps what it linked (a cold compile's symbol is its own, so nothing collides).
  void unload(const LoadedCode &) override {}
  // Runs every program, then reports a failed device_assert or checked mode's bounds violation.
  void launch(const LoadedCode &code, const LaunchRequest &request) override;

  void *allocate(size_t bytes) override;
  void release(void *memory) noexcept override;
  void copy_from_host(void *dst, const void *src, size_t bytes) override;
  void copy_to_host(void *dst, const void *src, size_t bytes) override;
  // Launches return when their last program has run: nothing is left to wait for.
  void synchronize() override {}
  // MemAvailable from /proc/meminfo.
  size_t free_memory() override;

  // Runs entry over every program of the grid, split across the pool.
  void run(codegen::HostEntry entry, const uint64_t *args, const int32_t grid[3]);

 private:
  runtime::ThreadPool pool_;
};

}  // namespace kdsl::detail
