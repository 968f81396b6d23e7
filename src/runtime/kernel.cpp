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
#include "frontend/trace_kernel.h"
#include "jit_cache/cache_key.h"
#include "jit_cache/memory_cache.h"
#include "runtime/backend.h"
#include "runtime/cache_stats.h"
#include "runtime/checked_mode.h"
#include "runtime/code_cache.h"
#include "runtime/extent_requirements.h"
#include "runtime/kernel_cache_key.h"
#include "runtime/pointer_placement.h"
#include "support/env.h"
#include "support/log.h"

namespace kdsl {
namespace detail {
using jit_cache::CacheEntry;
using jit_cache::CacheKey;
using jit_cache::MemoryCache;

Stats &stats() {
  static Stats s;
  return s;
}

namespace {

MemoryCache<LoadedCode> &memory_cache() {
  static MemoryCache<LoadedCode> cache;
  return cache;
}

std::string type_text(const TypeDesc &t) { return param_type_text(t); }

// A specialization as the launch finds it: its code, and the expect_extent declarations of the
// trace it came from (checked at every launch).
struct Specialization {
  std::shared_ptr<LoadedCode> code;
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
        backend_(device.impl()),
        sig_(std::move(signature)),
        options_(options),
        memory_space_(device.memory_space()),
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
        if (a.on_device != (memory_space_ == MemorySpace::Device)) pointer_memory_error(sig_.name, i, memory_space_);
        slots[i] = a.bits;
      } else if (is_float(p.elem)) {
        if (a.is_ptr) fail("a number");
        double v = a.dtype == DType::F32 ? std::bit_cast<double>(a.bits) : a.dtype == DType::U32 ? double(a.bits) : double(int64_t(a.bits));
        float f = float(v);
        switch (p.elem) {
          case DType::F32: slots[i] = std::bit_cast<uint32_t>(f); break;
          case DType::F16: slots[i] = f32_to_f16_bits(f); break;
          case DType::BF16: slots[i] = f32_to_bf16_bits(f); break;
          default: slots[i] = f32_to_e4m3_bits(f); break;  // F8E4M3
        }
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

  void run(const std::shared_ptr<LoadedCode> &code, const Grid &g, uint64_t *slots, size_t count, const ArgValue *args) {
    for (int64_t extent : {g.x, g.y, g.z})
      if (extent < 0 || extent > std::numeric_limits<int32_t>::max())
        throw Error(fmt::format("kernel '{}': grid ({}, {}, {}) has an extent outside [0, 2^31)", sig_.name, g.x, g.y, g.z));
    if (g.x == 0 || g.y == 0 || g.z == 0)
      throw Error(fmt::format("kernel '{}': grid ({}, {}, {}) has no programs; every extent must be at least 1 (skip the launch when there is "
                              "no work)",
                              sig_.name, g.x, g.y, g.z));
    const LaunchRequest request{sig_, args, slots, count, g, checked_};
    if (backend_.capturing()) return backend_.capture_launch(code, request);  // counted when replayed
    stats().launches.fetch_add(1, std::memory_order_relaxed);
    backend_.launch(*code, request);
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
    codegen::CompiledObject obj = backend_.compile(fn, symbol, options_, checked_, codegen::DumpOptions{});
    backend_.unload(*backend_.load(kernel_cache_entry(sig_.name, obj, 0)));
    return elapsed_ms(start);
  }

 private:
  // Checked mode asks for on the host; GPU code runs unchecked, as one warning says.
  static bool checked_mode(const Device &device, const KernelSignature &sig, const CompileOptions &options) {
    bool asked = options.checked || env_checked_mode();
    if (asked && !device.impl().runs_checked_code()) {
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

  std::shared_ptr<LoadedCode> load_code(const std::vector<ir::ArgClass> &arg_classes, std::vector<ExtentRequirement> &extents) {
    auto start = std::chrono::steady_clock::now();
    ir::Function fn = trace(arg_classes, &extents);
    CompileOptions keyed = options_;
    keyed.checked = checked_;  // checked code is a specialization of its own
    CacheKey key = kernel_cache_key(sig_.name, fn, arg_classes, keyed, backend_.target());
    // KDSL_DUMP writes the stages of what is compiled: a kernel asked to be dumped is compiled
    // again rather than loaded, so the dump never silently misses it.
    const codegen::DumpOptions dump = codegen::DumpOptions::from_env();
    CodeSource<LoadedCode> source;
    source.what = fmt::format("{} [{}]", sig_.name, key.specialization);
    source.use_disk = !(dump.ir || dump.llvm || dump.asm_text);
    source.load = [&](const CacheEntry &entry) { return backend_.load(entry); };
    source.compile = [&](bool retry) {
      std::string symbol = kernel_symbol(key);
      // A failed object may have left its symbols in the JIT: recompile under a name of its own.
      static std::atomic<int64_t> reloads{0};
      if (retry) symbol += fmt::format("_r{}", reloads.fetch_add(1) + 1);
      codegen::CompiledObject obj = backend_.compile(fn, symbol, options_, checked_, dump);
      return FreshCode{kernel_cache_entry(sig_.name, obj, elapsed_ms(start)),
                       fmt::format(" (passes {:.2f}, lowering {:.2f}, LLVM {:.2f})", obj.passes_ms, obj.lower_ms, obj.llvm_ms)};
    };
    // A GPU's modules live in its context: the in-memory table holds one per device.
    return find_or_compile(memory_cache(), key, key.digest() + backend_.loaded_code_scope(), source, start);
  }

  Device device_;     // keeps the backend alive
  Backend &backend_;  // the device's: compiles, loads and launches
  KernelSignature sig_;
  CompileOptions options_;
  MemorySpace memory_space_;  // where pointer arguments must point
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
  kernel.run(s.code, grid, slots, count, args);
}

void warm(KernelImpl &kernel, const ArgValue *args, size_t count) {
  std::vector<uint64_t> slots(std::max(count, kernel.slot_count()));
  std::vector<ir::ArgClass> classes(count);
  kernel.pack(args, count, slots.data(), classes.data());
  kernel.find(classes.data(), args, count);
}

double compile_cold(KernelImpl &kernel, const ArgValue *args, size_t count) { return kernel.compile_cold(args, count); }

void count_replayed_launches(size_t launches) { stats().launches.fetch_add(int64_t(launches), std::memory_order_relaxed); }

}  // namespace detail

CacheStats cache_stats() {
  auto &s = detail::stats();
  return {s.compiled.load(), s.memory_hits.load(), s.disk_hits.load(), s.launches.load(), double(s.compile_us.load()) / 1000.0};
}

}  // namespace kdsl
