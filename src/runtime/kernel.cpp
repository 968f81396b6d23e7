// kernel.cpp - launching kernels: argument checks, specialization, the cache lookup chain, the grid
#include <fmt/format.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <limits>
#include <shared_mutex>
#include <unordered_map>

#include <kdsl/error.h>
#include <kdsl/kernel.h>
#include <kdsl_version.h>

#include "codegen/codegen.h"
#include "codegen/host/device_debug.h"
#include "frontend/tracer.h"
#include "ir/printer.h"
#include "jit_cache/cache_key.h"
#include "jit_cache/disk_cache.h"
#include "jit_cache/memory_cache.h"
#include "runtime/cache_stats.h"
#include "runtime/cuda/cuda_launch.h"
#include "runtime/device_impl.h"
#include "runtime/launch_profile.h"
#include "support/log.h"

namespace kdsl {
namespace detail {
using jit_cache::CacheEntry;
using jit_cache::CacheKey;
using jit_cache::DiskCache;
using jit_cache::MemoryCache;
using jit_cache::hash_text_hex;

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

std::string type_text(const TypeDesc &t) {
  return t.is_ptr ? fmt::format("Ptr<{}>", dtype_name(t.elem)) : fmt::format("Scalar<{}>", dtype_name(t.elem));
}

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
      : device_(device), sig_(std::move(signature)), options_(options), on_gpu_(device.kind() == Device::Kind::Cuda) {}

  // Checks arguments against the signature and packs them into 8-byte slots; returns the
  // specialization bits (2 per argument).
  uint64_t pack(const ArgValue *args, size_t count, uint64_t *slots) const {
    if (count != sig_.params.size())
      throw Error(fmt::format("kernel '{}' takes {} arguments, {} were given", sig_.name, sig_.params.size(), count));
    uint64_t spec = 0;
    for (size_t i = 0; i < count; ++i) {
      const TypeDesc &p = sig_.params[i];
      const ArgValue &a = args[i];
      auto fail = [&](const char *expected) {
        throw Error(fmt::format("kernel '{}': argument {} ({}) expects {}, got {}", sig_.name, i, type_text(p), expected, arg_text(a)));
      };
      ir::ArgClass c = ir::ArgClass::None;
      if (p.is_ptr) {
        if (!a.is_ptr) fail(fmt::format("a pointer to {}", dtype_name(p.elem)).c_str());
        if (!a.untyped_ptr && a.dtype != p.elem) fail(fmt::format("a pointer to {}", dtype_name(p.elem)).c_str());
        if (a.on_device != on_gpu_) pointer_memory_error(sig_.name, i, on_gpu_);
        slots[i] = a.bits;
        if (a.bits % 16 == 0) c = ir::ArgClass::Divisible16;
      } else if (is_float(p.elem)) {
        if (a.is_ptr) fail("a number");
        double v = a.dtype == DType::F32 ? std::bit_cast<double>(a.bits) : a.dtype == DType::U32 ? double(a.bits) : double(int64_t(a.bits));
        float f = float(v);
        slots[i] = p.elem == DType::F32 ? std::bit_cast<uint32_t>(f) : p.elem == DType::F16 ? f32_to_f16_bits(f) : f32_to_bf16_bits(f);
      } else {
        if (a.is_ptr || a.dtype == DType::F32) fail(fmt::format("an integer ({})", dtype_name(p.elem)).c_str());
        if (!fits(p.elem, a)) fail(fmt::format("an integer in the range of {}", dtype_name(p.elem)).c_str());
        slots[i] = a.bits;
        int64_t v = int64_t(a.bits);
        if (v == 1) c = ir::ArgClass::EqualToOne;
        else if (v % 16 == 0) c = ir::ArgClass::Divisible16;
      }
      spec |= uint64_t(c) << (2 * (i % 32));
      if (i >= 32) spec ^= uint64_t(c) * 0x9e3779b97f4a7c15ull * i;  // rare: fold the rest in
    }
    return spec;
  }

  std::shared_ptr<LoadedKernel> find(uint64_t spec, const ArgValue *args, size_t count) {
    {
      std::shared_lock lock(mutex_);
      if (auto it = by_spec_.find(spec); it != by_spec_.end()) return it->second;
    }
    auto loaded = load_specialization(args, count);
    std::unique_lock lock(mutex_);
    return by_spec_.emplace(spec, loaded).first->second;
  }

  void run(const LoadedKernel &k, const Grid &g, const uint64_t *slots, size_t count) {
    for (int64_t extent : {g.x, g.y, g.z})
      if (extent < 0 || extent > std::numeric_limits<int32_t>::max())
        throw Error(fmt::format("kernel '{}': grid ({}, {}, {}) has an extent outside [0, 2^31)", sig_.name, g.x, g.y, g.z));
    int32_t grid[3] = {int32_t(g.x), int32_t(g.y), int32_t(g.z)};
    stats().launches.fetch_add(1, std::memory_order_relaxed);
    if (on_gpu_) return launch_cuda(cuda_device(), k.cuda, sig_.name, g, slots, count);
    if (!launch_profile_enabled()) {
      static_cast<CpuDevice &>(device_.impl()).run(k.entry, slots, grid);
    } else {
      auto start = std::chrono::steady_clock::now();
      static_cast<CpuDevice &>(device_.impl()).run(k.entry, slots, grid);
      record_launch(sig_.name, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    // A device_assert that failed in a program is reported once every program has run.
    if (auto failure = codegen::take_device_assert_failure(slots, sig_.name)) throw Error(*failure);
  }

  std::vector<ir::ArgClass> classes(const ArgValue *args, size_t count) const {
    std::vector<uint64_t> slots(count);
    std::vector<ir::ArgClass> out;
    uint64_t spec = pack(args, count, slots.data());
    for (size_t i = 0; i < count; ++i) out.push_back(i < 32 ? ir::ArgClass((spec >> (2 * i)) & 3) : ir::ArgClass::None);
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

  codegen::CompiledObject compile(const ir::Function &fn, const std::string &symbol, const codegen::DumpOptions &dump) const {
    if (on_gpu_) return compile_cuda(cuda_device(), fn, symbol, options_, dump);
    return codegen::compile_for_host(fn, symbol, dump);
  }

  void load(LoadedKernel &k, const CacheEntry &entry) const {
    k.symbol = entry.symbol;
    if (on_gpu_) k.cuda = load_cuda_entry(cuda_device(), entry);
    else k.entry = codegen::load_host_object(entry.code, entry.symbol);
  }

  ir::Function trace(const std::vector<ir::ArgClass> &arg_classes) const {
    frontend::Tracer tracer(sig_.name, sig_.params, arg_classes);
    sig_.trace(tracer.argument_values());
    return tracer.finish();
  }

  std::shared_ptr<LoadedKernel> load_specialization(const ArgValue *args, size_t count) {
    auto start = std::chrono::steady_clock::now();
    std::vector<ir::ArgClass> arg_classes = classes(args, count);
    ir::Function fn = trace(arg_classes);
    const codegen::TargetDesc &target = device_.impl().target();
    CacheKey key;
    key.kernel_name = sig_.name;
    key.ir_hash = hash_text_hex(ir::print(fn));
    for (size_t i = 0; i < arg_classes.size(); ++i)
      key.specialization += fmt::format("{}{}", i ? "," : "", arg_classes[i] == ir::ArgClass::EqualToOne ? "1" : arg_classes[i] == ir::ArgClass::Divisible16 ? "16" : "_");
    key.options = fmt::format("num_warps={},num_stages={}", options_.num_warps, options_.num_stages);
    key.backend = target.backend;
    key.arch = target.arch;
    key.features = target.features;
    key.kdsl_version = KDSL_VERSION_STRING;
    key.llvm_version = codegen::llvm_version();
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
    std::string symbol = "kdsl_" + digest;
    bool from_disk = false;
    jit_cache::EntryFile file;
    if (auto entry = disk.load(key, &file)) {
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
      codegen::CompiledObject obj = compile(fn, symbol, codegen::DumpOptions::from_env());
      CacheEntry fresh;
      fresh.symbol = symbol;
      fresh.code = obj.object;
      fresh.metadata = {{"kernel", sig_.name}, {"compile_ms", elapsed_ms(start)}};
      if (on_gpu_) add_cuda_metadata(fresh.metadata, obj);
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
  std::shared_mutex mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<LoadedKernel>> by_spec_;
};

std::shared_ptr<KernelImpl> make_kernel(const Device &device, KernelSignature signature, CompileOptions options) {
  return std::make_shared<KernelImpl>(device, std::move(signature), options);
}

void launch(KernelImpl &kernel, const Grid &grid, const ArgValue *args, size_t count) {
  uint64_t stack_slots[16];
  std::vector<uint64_t> heap_slots;
  uint64_t *slots = stack_slots;
  if (count > 16) {
    heap_slots.resize(count);
    slots = heap_slots.data();
  }
  uint64_t spec = kernel.pack(args, count, slots);
  auto loaded = kernel.find(spec, args, count);
  kernel.run(*loaded, grid, slots, count);
}

void warm(KernelImpl &kernel, const ArgValue *args, size_t count) {
  std::vector<uint64_t> slots(count);
  kernel.find(kernel.pack(args, count, slots.data()), args, count);
}

double compile_cold(KernelImpl &kernel, const ArgValue *args, size_t count) { return kernel.compile_cold(args, count); }

}  // namespace detail

CacheStats cache_stats() {
  auto &s = detail::stats();
  return {s.compiled.load(), s.memory_hits.load(), s.disk_hits.load(), s.launches.load(), double(s.compile_us.load()) / 1000.0};
}

}  // namespace kdsl
