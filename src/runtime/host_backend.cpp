// host_backend.cpp - the CPU backend: host compile, JIT load, the grid on the thread pool, checked mode's reports, host memory
#include "runtime/host_backend.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <optional>

#include <kdsl/error.h>

#include "codegen/host/device_debug.h"
#include "runtime/checked_mode.h"
#include "runtime/compile_target.h"
#include "runtime/host_memory.h"
#include "runtime/launch_profile.h"
#include "support/log.h"

namespace kdsl::detail {
namespace {

struct HostCode final : LoadedCode {
  codegen::HostEntry entry = nullptr;
};

}  // namespace

CpuDevice::CpuDevice(int threads) : pool_(threads) { codegen::start_host_jit(); }

std::string CpuDevice::name() const { return fmt::format("cpu ({}, {} threads)", codegen::host_target().arch, pool_.size()); }

codegen::CompiledObject CpuDevice::compile(const ir::Function &traced, const std::string &symbol, const CompileOptions &options, bool checked,
                                           const codegen::DumpOptions &dump) const {
  return codegen::compile(traced, symbol, codegen::Target::host(), codegen_options(options, checked), dump);
}

std::shared_ptr<LoadedCode> CpuDevice::load(const jit_cache::CacheEntry &entry) {
  auto code = std::make_shared<HostCode>();
  code->entry = codegen::load_host_object(entry.code, entry.symbol);
  return code;
}

void CpuDevice::launch(const LoadedCode &loaded, const LaunchRequest &r) {
  codegen::HostEntry entry = static_cast<const HostCode &>(loaded).entry;
  const int32_t grid[3] = {int32_t(r.grid.x), int32_t(r.grid.y), int32_t(r.grid.z)};
  codegen::BoundsViolation violation;
  if (r.checked) r.slots[3 * r.count] = reinterpret_cast<uintptr_t>(&violation);
  if (!launch_profile_enabled()) {
    run(entry, r.slots, grid);
  } else {
    auto start = std::chrono::steady_clock::now();
    run(entry, r.slots, grid);
    record_launch(r.kernel.name, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  // A device_assert that failed in a program is reported once every program has run; its
  // record is taken first, so a bounds violation reported instead never leaves it behind.
  std::optional<std::string> assert_failure = codegen::take_device_assert_failure(r.slots, r.kernel.name);
  if (violation.failed) throw Error(violation_message(r.kernel.name, r.kernel.params, r.args, violation));
  if (assert_failure) throw Error(*assert_failure);
}

void CpuDevice::run(codegen::HostEntry entry, const uint64_t *args, const int32_t grid[3]) {
  int64_t programs = int64_t(grid[0]) * grid[1] * grid[2];
  if (programs <= 0) return;
  // One pointer of capture fits std::function's inline storage, so a launch allocates nothing.
  struct Launch {
    codegen::HostEntry entry;
    const uint64_t *args;
    const int32_t *grid;
  } launch{entry, args, grid};
  pool_.parallel_for(programs, [l = &launch](int64_t begin, int64_t end) { l->entry(l->args, begin, end, l->grid); });
}

void *CpuDevice::allocate(size_t bytes) { return runtime::allocate_host_buffer(bytes); }

void CpuDevice::release(void *memory) noexcept { runtime::release_host_buffer(memory); }

void CpuDevice::copy_from_host(void *dst, const void *src, size_t bytes) { std::memcpy(dst, src, bytes); }

void CpuDevice::copy_to_host(void *dst, const void *src, size_t bytes) { std::memcpy(dst, src, bytes); }

size_t CpuDevice::free_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  size_t kb = 0;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

}  // namespace kdsl::detail
