// compile_for.cpp - ahead-of-time compile: trace for a specialization, compile for a named target, store under a launch's key
#include <kdsl/compile_for.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include <kdsl/error.h>
#include <kdsl/registry.h>

#include "codegen/codegen.h"
#include "frontend/trace_kernel.h"
#include "jit_cache/disk_cache.h"
#include "runtime/cache_stats.h"
#include "runtime/compile_target.h"
#include "runtime/cuda/tensor_map_json.h"
#include "runtime/kernel_cache_key.h"
#include "runtime/specialization_ir.h"
#include "support/log.h"

namespace kdsl {
namespace {

std::string stage(const codegen::CompiledObject &obj, const char *extension) {
  auto it = obj.stages.find(extension);
  return it == obj.stages.end() ? std::string() : it->second;
}

KernelResources resources_of(const codegen::CompiledObject &obj) {
  const codegen::ResourceReport &r = obj.resources;
  KernelResources out;
  out.threads = r.threads;
  out.registers = r.registers;
  out.spill_store_bytes = r.spill_store_bytes;
  out.spill_load_bytes = r.spill_load_bytes;
  out.stack_frame_bytes = r.stack_frame_bytes;
  out.static_shared_bytes = r.static_shared_bytes;
  out.scalar_registers = r.scalar_registers;
  out.accumulation_registers = r.accumulation_registers;
  out.vector_spills = r.vector_spills;
  out.scalar_spills = r.scalar_spills;
  out.kernarg_bytes = r.kernarg_bytes;
  out.wavefront_size = r.wavefront_size;
  out.dynamic_shared_bytes = r.dynamic_shared_bytes;
  out.assembled = r.assembled;
  out.report = stage(obj, ".resources.txt");
  return out;
}

}  // namespace

Target::Target(std::string name) : name_(std::move(name)) { codegen::Target::named(name_); }

std::vector<std::string> Target::names() { return codegen::Target::names(); }

namespace detail {
namespace {

// One specialization traced for a target, with the key its launches there look up.
struct TracedSpecialization {
  CompileOptions options;
  std::vector<ir::ArgClass> classes;
  ir::Function function;
  codegen::Target to;
  jit_cache::CacheKey key;
};

TracedSpecialization trace_for(const KernelSignature &signature, const Target &target, const Specialization &spec, const CompileOptions &requested) {
  TracedSpecialization t;
  // Checked code exists on the host only; a GPU launch runs unchecked and looks up that key.
  t.to = codegen::Target::named(target.name());
  t.options = requested;
  if (!t.to.is_host()) t.options.checked = false;
  t.classes = to_arg_classes(spec.classes_for(signature.params, signature.name));
  t.function = frontend::trace_kernel(signature, t.classes);
  // The identity a device of this target reports, so the key is the one its launches look up.
  t.key = kernel_cache_key(signature.name, t.function, t.classes, t.options, cache_identity(t.to));
  return t;
}

// Compiles a traced specialization and stores it in the disk cache; the time counts as a compile.
codegen::CompiledObject compile_and_store(const KernelSignature &signature, const TracedSpecialization &t, const codegen::DumpOptions &dump,
                                          std::chrono::steady_clock::time_point start, double &ms) {
  std::string symbol = kernel_symbol(t.key);
  codegen::CompiledObject obj = codegen::compile(t.function, symbol, t.to, codegen_options(t.options, t.options.checked), dump);
  ms = elapsed_ms(start);
  stats().compiled.fetch_add(1);
  stats().compile_us.fetch_add(int64_t(ms * 1000));
  jit_cache::DiskCache disk(jit_cache::DiskCache::default_dir());
  disk.store(t.key, kernel_cache_entry(signature.name, obj, ms));
  return obj;
}

}  // namespace

CompileResult compile_for(const KernelSignature &signature, const Target &target, const Specialization &spec, const CompileOptions &requested) {
  auto start = std::chrono::steady_clock::now();
  TracedSpecialization t = trace_for(signature, target, spec, requested);
  codegen::DumpOptions dump;
  dump.ir = dump.llvm = dump.asm_text = dump.keep_text = true;
  double ms = 0;
  codegen::CompiledObject obj = compile_and_store(signature, t, dump, start, ms);
  std::error_code ec;
  std::filesystem::path file = jit_cache::DiskCache(jit_cache::DiskCache::default_dir()).entry_path(t.key);

  CompileResult out;
  out.kernel = signature.name;
  out.target = target.name();
  out.specialization = t.key.specialization;
  out.symbol = obj.symbol;
  out.format = obj.format;
  if (!obj.tensor_maps.empty()) out.tensor_maps = tensor_maps_to_json(obj.tensor_maps).dump();
  out.traced_ir = stage(obj, ".traced.kir");
  out.optimized_ir = stage(obj, ".kir");
  out.llvm_ir = stage(obj, ".ll");
  out.optimized_llvm_ir = stage(obj, ".opt.ll");
  out.ptx = obj.ptx;
  out.assembly = obj.format == "hsaco" ? obj.assembly : stage(obj, ".s");
  out.object = std::move(obj.object);
  out.resources = resources_of(obj);
  out.cache_digest = t.key.digest();
  out.cache_file = std::filesystem::is_regular_file(file, ec) ? file.string() : std::string();
  out.compile_ms = ms;
  log_info("{} [{}]: compiled for {} ahead of time in {:.2f} ms; cache entry {}", signature.name, t.key.specialization, target.name(), ms,
           out.cache_file.empty() ? "not stored" : out.cache_file);
  return out;
}

CacheFill cache_for(const KernelSignature &signature, const Target &target, const Specialization &spec, const CompileOptions &requested) {
  auto start = std::chrono::steady_clock::now();
  TracedSpecialization t = trace_for(signature, target, spec, requested);
  CacheFill out;
  out.kernel = signature.name;
  out.target = target.name();
  out.specialization = t.key.specialization;
  out.cache_digest = t.key.digest();
  jit_cache::DiskCache disk(jit_cache::DiskCache::default_dir());
  // A valid entry (its checksum and key checked, as a launch's load checks them) is kept.
  if (disk.load(t.key)) {
    out.already_cached = out.stored = true;
    out.ms = elapsed_ms(start);
    log_info("{} [{}]: already in the cache for {}", signature.name, t.key.specialization, target.name());
    return out;
  }
  compile_and_store(signature, t, codegen::DumpOptions{}, start, out.ms);
  std::error_code ec;
  out.stored = std::filesystem::is_regular_file(disk.entry_path(t.key), ec);
  log_info("{} [{}]: compiled for {} ahead of time in {:.2f} ms; cache entry {}", signature.name, t.key.specialization, target.name(), out.ms,
           out.stored ? disk.entry_path(t.key).string() : std::string("not stored"));
  return out;
}

}  // namespace detail

CompileResult compile_for(const std::string &name, const Target &target, const Specialization &spec, const std::optional<CompileOptions> &options) {
  RegisteredKernel kernel = registered_kernel(name);
  return detail::compile_for(kernel.signature, target, spec, options.value_or(kernel.options));
}

}  // namespace kdsl
