// kernel.cpp - launching kernels: argument checks, specialization, the cache lookup chain, the grid
#include <fmt/format.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

#include <kdsl/error.h>
#include <kdsl/kernel.h>
#include <kdsl/specialization.h>

#include "codegen/codegen.h"
#include "codegen/host/device_debug.h"
#include "frontend/trace_kernel.h"
#include "jit_cache/cache_key.h"
#include "jit_cache/disk_cache.h"
#include "jit_cache/memory_cache.h"
#include "runtime/cache_stats.h"
#include "runtime/checked_mode.h"
#include "runtime/cuda/cuda_launch.h"
#include "runtime/device_impl.h"
#include "runtime/kernel_cache_key.h"
#include "runtime/extent_requirements.h"
#include "runtime/launch_profile.h"
#include "support/env.h"
#include "support/log.h"

namespace kdsl {
namespace detail {
using jit_cache::CacheEntry;
using jit_cache::CacheKey;
using jit_cache::DiskCache;
using jit_cache::MemoryCache;

Stats &stats() {
  static Stats s;
  return s;
}

namespace {

struct LoadedKernel {
  codegen::HostEntry entry = nullptr;  // CPU
  CudaFunction cuda;                   // CUDA: the module loaded in the device's context
  std::string symbol;
};

MemoryCache<LoadedKernel> &memory_cache() {
  static MemoryCache<LoadedKernel> cache;
  return cache;
}

std::string type_text(const TypeDesc &t) { return param_type_text(t); }

// A specialization as the launch finds it: its code, and the expect_extent declarations of the
// trace it came from (checked at every launch).
struct Specialization {
  std::shared_ptr<LoadedKernel> code;
  std::vector<ExtentRequirement> extents;
};

std::string arg_text(const ArgValue &a) {
  if (a.is_ptr) return a.untyped_ptr ? "an untyped pointer (void*)" : fmt::format("a pointer to {}", dtype_name(a.dtype));
  if (a.dtype == DType::F32) return fmt::format("the floating-point value {}", std::bit_cast<double>(a.bits));
  return fmt::format("the integer {}", a.dtype == DType::U32 ? fmt::format("{}", a.bits) : fmt::format("{}", int64_t(a.bits)));
}

// Range of the integer dtypes a Scalar<T> parameter accepts.
bool fits(DType t, const ArgValue &a) {
  bool unsigned_big = a.dtype == DType::U32 && a.bits > uint64_t(std::numeric_limits<int64_t>::max());
  int64_t v = int64_t(a.bits);
  switch (t) {
    case DType::Bool: return !unsigned_big && (v == 0 || v == 1);
    case DType::I8: return !unsigned_big && v >= INT8_MIN && v <= INT8_MAX;
    case DType::U8: return !unsigned_big && v >= 0 && v <= UINT8_MAX;
    case DType::I16: return !unsigned_big && v >= INT16_MIN && v <= INT16_MAX;
    case DType::I32: return !unsigned_big && v >= INT32_MIN && v <= INT32_MAX;
    case DType::U32: return !unsigned_big && v >= 0 && v <= int64_t(UINT32_MAX);
    case DType::I64: return !unsigned_big;
    default: return false;
  }
}

}  // namespace

class KernelImpl {
 public:
  KernelImpl(const Device &device, KernelSignature signature, CompileOptions options)
      : device_(device),
        sig_(std::move(signature)),
        options_(options),
        on_gpu_(device.kind() == Device::Kind::Cuda),
        checked_(checked_mode(device, sig_, options)) {}

  // Slots a launch fills: one per argument, and checked code's extents and violation record.
  size_t slot_count() const { return checked_ ? codegen::checked_slot_count(sig_.params.size()) : sig_.params.size(); }

  // Checks arguments against the signature and packs them into 8-byte slots (checked code's
  // extents too), writing each argument's specialization class into `classes`.
  void pack(const ArgValue *args, size_t count, uint64_t *slots, ir::ArgClass *classes) const {
    if (count != sig_.params.size())
      throw Error(fmt::format("kernel '{}' takes {} arguments, {} were given", sig_.name, sig_.params.size(), count));
    for (size_t i = 0; i < count; ++i) {
      const TypeDesc &p = sig_.params[i];
      const ArgValue &a = args[i];
      auto fail = [&](const char *expected) {
        throw Error(fmt::format("kernel '{}': argument {} ({}) expects {}, got {}", sig_.name, i, type_text(p), expected, arg_text(a)));
      };
      if (p.is_ptr) {
        if (!a.is_ptr) fail(fmt::format("a pointer to {}", dtype_name(p.elem)).c_str());
        if (!a.untyped_ptr && a.dtype != p.elem) fail(fmt::format("a pointer to {}", dtype_name(p.elem)).c_str());
        if (a.bits == 0) throw Error(fmt::format("kernel '{}': argument {} ({}) is a null pointer", sig_.name, i, type_text(p)));
        if (a.read_only && !p.read_only)
          throw Error(fmt::format("kernel '{}': argument {} ({}) is given a pointer to const data, but the kernel may write through it: declare "
                                  "the parameter Ptr<const {}> if the kernel only reads it",
                                  sig_.name, i, type_text(p), dtype_name(p.elem)));
        if (a.on_device != on_gpu_) pointer_memory_error(sig_.name, i, on_gpu_);
        slots[i] = a.bits;
      } else if (is_float(p.elem)) {
        if (a.is_ptr) fail("a number");
        double v = a.dtype == DType::F32 ? std::bit_cast<double>(a.bits) : a.dtype == DType::U32 ? double(a.bits) : double(int64_t(a.bits));
        float f = float(v);
        slots[i] = p.elem == DType::F32 ? std::bit_cast<uint32_t>(f) : p.elem == DType::F16 ? f32_to_f16_bits(f) : f32_to_bf16_bits(f);
      } else {
        if (a.is_ptr || a.dtype == DType::F32) fail(fmt::format("an integer ({})", dtype_name(p.elem)).c_str());
        if (!fits(p.elem, a)) fail(fmt::format("an integer in the range of {}", dtype_name(p.elem)).c_str());
        slots[i] = a.bits;
      }
      classes[i] = ir::ArgClass(uint8_t(launch_arg_spec(p, a)));  // the rule kernel plans record by
    }
    if (checked_) {
      fill_check_slots(sig_.params, args, slots);
      warn_unsized(args);
    }
  }

  // The specialization for these classes: found in this kernel's table, else traced, compiled
  // or loaded from the caches. Up to 32 arguments the classes key the table as 2 bits each;
  // past that as one byte each (a packed key would let argument 32's class land on argument 0).
  const Specialization &find(const ir::ArgClass *classes, const ArgValue *args, size_t count) {
    if (count <= 32) {
      uint64_t key = 0;
      for (size_t i = 0; i < count; ++i) key |= uint64_t(classes[i]) << (2 * i);
      {
        std::shared_lock lock(mutex_);
        if (auto it = by_spec_.find(key); it != by_spec_.end()) return it->second;
      }
      Specialization made = load_specialization({classes, classes + count});
      std::unique_lock lock(mutex_);
      return by_spec_.emplace(key, std::move(made)).first->second;
    }
    std::vector<ir::ArgClass> key(classes, classes + count);
    {
      std::shared_lock lock(mutex_);
      if (auto it = by_wide_spec_.find(key); it != by_wide_spec_.end()) return it->second;
    }
    Specialization made = load_specialization(key);
    std::unique_lock lock(mutex_);
    return by_wide_spec_.emplace(key, std::move(made)).first->second;
  }

  // expect_extent declarations against the extents the caller passed (raw pointers: none).
  void check_extents(const Specialization &s, const ArgValue *args, const uint64_t *slots) const {
    for (const ExtentRequirement &r : s.extents) {
      const ArgValue &a = args[r.arg];
      if (a.extent < 0) continue;
      int64_t expected = evaluate(r, slots, sig_.name);
      if (a.extent < expected)
        throw Error(fmt::format("kernel '{}': argument {} ({}) holds {} elements, but the kernel expects at least {} (expect_extent: {} = {})",
                                sig_.name, r.arg, type_text(sig_.params[size_t(r.arg)]), a.extent, expected, r.text, expected));
    }
  }

  void run(const LoadedKernel &k, const Grid &g, uint64_t *slots, size_t count, const ArgValue *args) {
    for (int64_t extent : {g.x, g.y, g.z})
      if (extent < 0 || extent > std::numeric_limits<int32_t>::max())
        throw Error(fmt::format("kernel '{}': grid ({}, {}, {}) has an extent outside [0, 2^31)", sig_.name, g.x, g.y, g.z));
    if (g.x == 0 || g.y == 0 || g.z == 0)
      throw Error(fmt::format("kernel '{}': grid ({}, {}, {}) has no programs; every extent must be at least 1 (skip the launch when there is "
                              "no work)",
                              sig_.name, g.x, g.y, g.z));
    int32_t grid[3] = {int32_t(g.x), int32_t(g.y), int32_t(g.z)};
    stats().launches.fetch_add(1, std::memory_order_relaxed);
    if (on_gpu_) return launch_cuda(cuda_device(), k.cuda, sig_.name, g, slots, count);
    codegen::BoundsViolation violation;
    if (checked_) slots[3 * count] = reinterpret_cast<uintptr_t>(&violation);
    if (!launch_profile_enabled()) {
      static_cast<CpuDevice &>(device_.impl()).run(k.entry, slots, grid);
    } else {
      auto start = std::chrono::steady_clock::now();
      static_cast<CpuDevice &>(device_.impl()).run(k.entry, slots, grid);
      record_launch(sig_.name, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    // A device_assert that failed in a program is reported once every program has run; its
    // record is taken first, so a bounds violation reported instead never leaves it behind.
    std::optional<std::string> assert_failure = codegen::take_device_assert_failure(slots, sig_.name);
    if (violation.failed) throw Error(violation_message(sig_.name, sig_.params, args, violation));
    if (assert_failure) throw Error(*assert_failure);
  }

  std::vector<ir::ArgClass> classes(const ArgValue *args, size_t count) const {
    std::vector<uint64_t> slots(std::max(count, slot_count()));
    std::vector<ir::ArgClass> out(count);
    pack(args, count, slots.data(), out.data());
    return out;
  }

  // Every cold compile gets a fresh symbol, so repeated benchmark compiles link side by side.
  double compile_cold(const ArgValue *args, size_t count) {
    static std::atomic<int64_t> serial{0};
    auto start = std::chrono::steady_clock::now();
    ir::Function fn = trace(classes(args, count));
    std::string symbol = fmt::format("kdsl_cold_{}", serial.fetch_add(1));
    codegen::CompiledObject obj = compile(fn, symbol, codegen::DumpOptions{});
    if (on_gpu_) cuda_device().unload(cuda_device().load(obj.object, symbol, obj.resources.dynamic_shared_bytes, obj.resources.threads));
    else codegen::load_host_object(obj.object, symbol);
    return elapsed_ms(start);
  }

 private:
  // on_gpu_: a CUDA device, the only GPU backend so far.
  CudaDevice &cuda_device() const { return static_cast<CudaDevice &>(device_.impl()); }

  // Checked mode asks for on the host; GPU code runs unchecked, as one warning says.
  static bool checked_mode(const Device &device, const KernelSignature &sig, const CompileOptions &options) {
    bool asked = options.checked || env_checked_mode();
    if (asked && device.kind() != Device::Kind::Cpu) {
      log_warn("kernel '{}': checked mode covers the host backend only; on {} it runs unchecked", sig.name, device.name());
      return false;
    }
    return asked;
  }

  // Checked mode cannot check a raw pointer passed without a size: said once per argument.
  void warn_unsized(const ArgValue *args) const {
    for (size_t i = 0; i < sig_.params.size(); ++i) {
      if (!sig_.params[i].is_ptr || args[i].extent >= 0) continue;
      std::lock_guard lock(warned_mutex_);
      if (warned_unsized_.size() < sig_.params.size()) warned_unsized_.resize(sig_.params.size());
      if (warned_unsized_[i]) continue;
      warned_unsized_[i] = true;
      log_warn("kernel '{}': argument {} ({}) is a raw pointer without a size, so checked mode does not check its accesses (pass a Buffer, a "
               "std::span or kdsl::sized(pointer, count))",
               sig_.name, i, type_text(sig_.params[i]));
    }
  }

  codegen::CompiledObject compile(const ir::Function &fn, const std::string &symbol, const codegen::DumpOptions &dump) const {
    if (on_gpu_) return compile_cuda(cuda_device(), fn, symbol, options_, dump);
    return codegen::compile_for_host(fn, symbol, dump, {.bounds_checks = checked_});
  }

  void load(LoadedKernel &k, const CacheEntry &entry) const {
    k.symbol = entry.symbol;
    if (on_gpu_) k.cuda = load_cuda_entry(cuda_device(), entry);
    else k.entry = codegen::load_host_object(entry.code, entry.symbol);
  }

  ir::Function trace(const std::vector<ir::ArgClass> &arg_classes, std::vector<ExtentRequirement> *extents = nullptr) const {
    std::vector<std::pair<int32_t, int32_t>> declared;
    ir::Function fn = frontend::trace_kernel(sig_, arg_classes, &declared);
    if (extents) *extents = build_extent_requirements(fn, declared);
    return fn;
  }

  Specialization load_specialization(const std::vector<ir::ArgClass> &arg_classes) {
    Specialization s;
    s.code = load_code(arg_classes, s.extents);
    return s;
  }

  std::shared_ptr<LoadedKernel> load_code(const std::vector<ir::ArgClass> &arg_classes, std::vector<ExtentRequirement> &extents) {
    auto start = std::chrono::steady_clock::now();
    ir::Function fn = trace(arg_classes, &extents);
    CompileOptions keyed = options_;
    keyed.checked = checked_;  // checked code is a specialization of its own
    CacheKey key = kernel_cache_key(sig_.name, fn, arg_classes, keyed, device_.impl().target());
    std::string digest = key.digest();
    // A GPU's modules live in its context: the in-memory table holds one per device.
    std::string memory_key = on_gpu_ ? digest + "@" + cuda_device().context_key() : digest;

    if (auto hit = memory_cache().find(memory_key)) {
      stats().memory_hits.fetch_add(1);
      log_info("{} [{}]: memory cache hit ({:.3f} ms with tracing)", sig_.name, key.specialization, elapsed_ms(start));
      return hit;
    }
    DiskCache disk(DiskCache::default_dir());
    auto loaded = std::make_shared<LoadedKernel>();
    std::string symbol = kernel_symbol(key);
    bool from_disk = false;
    jit_cache::EntryFile file;
    // KDSL_DUMP writes the stages of what is compiled: a kernel asked to be dumped is compiled
    // again rather than loaded, so the dump never silently misses it.
    const codegen::DumpOptions dump = codegen::DumpOptions::from_env();
    const bool dumping = dump.ir || dump.llvm || dump.asm_text;
    if (auto entry = dumping ? std::nullopt : disk.load(key, &file)) {
      // The checksum says the file is as it was written, not that its code links or loads here:
      // an entry that does not is removed and recompiled, never fatal on every run.
      try {
        load(*loaded, *entry);
        from_disk = true;
      } catch (const std::exception &e) {
        disk.discard(key, file, fmt::format("its code does not load ({})", e.what()));
        *loaded = LoadedKernel{};
        // The failed object may have left its symbols in the JIT: recompile under a name of its own.
        static std::atomic<int64_t> reloads{0};
        symbol += fmt::format("_r{}", reloads.fetch_add(1) + 1);
      }
    }
    if (from_disk) {
      stats().disk_hits.fetch_add(1);
      log_info("{} [{}]: disk cache hit {} ({:.3f} ms)", sig_.name, key.specialization, disk.entry_path(key).string(), elapsed_ms(start));
    } else {
      codegen::CompiledObject obj = compile(fn, symbol, dump);
      CacheEntry fresh = kernel_cache_entry(sig_.name, obj, elapsed_ms(start), on_gpu_);
      disk.store(key, fresh);
      load(*loaded, fresh);
      double ms = elapsed_ms(start);
      stats().compiled.fetch_add(1);
      stats().compile_us.fetch_add(int64_t(ms * 1000));
      log_info("{} [{}]: compiled in {:.2f} ms (passes {:.2f}, lowering {:.2f}, LLVM {:.2f})", sig_.name, key.specialization, ms, obj.passes_ms,
               obj.lower_ms, obj.llvm_ms);
    }
    return memory_cache().insert(memory_key, loaded);
  }

  Device device_;
  KernelSignature sig_;
  CompileOptions options_;
  bool on_gpu_;
  bool checked_;
  std::shared_mutex mutex_;
  std::unordered_map<uint64_t, Specialization> by_spec_;           // up to 32 arguments
  std::map<std::vector<ir::ArgClass>, Specialization> by_wide_spec_;  // more
  mutable std::mutex warned_mutex_;
  mutable std::vector<bool> warned_unsized_;
};

std::shared_ptr<KernelImpl> make_kernel(const Device &device, KernelSignature signature, CompileOptions options) {
  return std::make_shared<KernelImpl>(device, std::move(signature), options);
}

void launch(KernelImpl &kernel, const Grid &grid, const ArgValue *args, size_t count) {
  constexpr size_t kOnStack = 32;
  uint64_t stack_slots[kOnStack];
  ir::ArgClass stack_classes[kOnStack];
  std::vector<uint64_t> heap_slots;
  std::vector<ir::ArgClass> heap_classes;
  uint64_t *slots = stack_slots;
  ir::ArgClass *classes = stack_classes;
  const size_t slot_count = std::max(count, kernel.slot_count());
  if (slot_count > kOnStack) {
    heap_slots.resize(slot_count);
    slots = heap_slots.data();
  }
  if (count > kOnStack) {
    heap_classes.resize(count);
    classes = heap_classes.data();
  }
  kernel.pack(args, count, slots, classes);
  const Specialization &s = kernel.find(classes, args, count);
  kernel.check_extents(s, args, slots);
  kernel.run(*s.code, grid, slots, count, args);
}

void warm(KernelImpl &kernel, const ArgValue *args, size_t count) {
  std::vector<uint64_t> slots(std::max(count, kernel.slot_count()));
  std::vector<ir::ArgClass> classes(count);
  kernel.pack(args, count, slots.data(), classes.data());
  kernel.find(classes.data(), args, count);
}

double compile_cold(KernelImpl &kernel, const ArgValue *args, size_t count) { return kernel.compile_cold(args, count); }

}  // namespace detail

CacheStats cache_stats() {
  auto &s = detail::stats();
  return {s.compiled.load(), s.memory_hits.load(), s.disk_hits.load(), s.launches.load(), double(s.compile_us.load()) / 1000.0};
}

}  // namespace kdsl
