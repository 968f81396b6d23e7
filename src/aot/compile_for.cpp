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
  out.dynamic_shared_bytes = r.dynamic_shared_bytes;
  out.assembled = r.assembled;
  out.report = stage(obj, ".resources.txt");
  return out;
}

}  // namespace

Target::Target(std::string name) : name_(std::move(name)) { codegen::Target::named(name_); }

std::vector<std::string> Target::names() { return codegen::Target::names(); }

namespace detail {

CompileResult compile_for(const KernelSignature &signature, const Target &target, const Specialization &spec, const CompileOptions &requested) {
  const codegen::Target to = codegen::Target::named(target.name());
  // Checked code exists on the host only; a GPU launch runs unchecked and looks up that key.
  CompileOptions options = requested;
  if (!to.is_host()) options.checked = false;
  auto start = std::chrono::steady_clock::now();
  std::vector<ir::ArgClass> classes = to_arg_classes(spec.classes_for(signature.params, signature.name));
  ir::Function traced = frontend::trace_kernel(signature, classes);
  // The identity a device of this target reports, so the key is the one its launches look up.
  jit_cache::CacheKey key = kernel_cache_key(signature.name, traced, classes, options, cache_identity(to));

  codegen::DumpOptions dump;
  dump.ir = dump.llvm = dump.asm_text = dump.keep_text = true;
  std::string symbol = kernel_symbol(key);
  codegen::CompiledObject obj = codegen::compile(traced, symbol, to, codegen_options(options, options.checked), dump);
  double ms = elapsed_ms(start);
  stats().compiled.fetch_add(1);
  stats().compile_us.fetch_add(int64_t(ms * 1000));

  jit_cache::DiskCache disk(jit_cache::DiskCache::default_dir());
  disk.store(key, kernel_cache_entry(signature.name, obj, ms));
  std::error_code ec;
  std::filesystem::path file = disk.entry_path(key);

  CompileResult out;
  out.kernel = signature.name;
  out.target = target.name();
  out.specialization = key.specialization;
  out.symbol = symbol;
  out.format = obj.format;
  out.traced_ir = stage(obj, ".traced.kir");
  out.optimized_ir = stage(obj, ".kir");
  out.llvm_ir = stage(obj, ".ll");
  out.optimized_llvm_ir = stage(obj, ".opt.ll");
  out.ptx = obj.ptx;
  out.assembly = stage(obj, ".s");
  out.object = std::move(obj.object);
  out.resources = resources_of(obj);
  out.cache_digest = key.digest();
  out.cache_file = std::filesystem::is_regular_file(file, ec) ? file.string() : std::string();
  out.compile_ms = ms;
  log_info("{} [{}]: compiled for {} ahead of time in {:.2f} ms; cache entry {}", signature.name, key.specialization, target.name(), ms,
           out.cache_file.empty() ? "not stored" : out.cache_file);
  return out;
}

}  // namespace detail

CompileResult compile_for(const std::string &name, const Target &target, const Specialization &spec, const std::optional<CompileOptions> &options) {
  RegisteredKernel kernel = registered_kernel(name);
  return detail::compile_for(kernel.signature, target, spec, options.value_or(kernel.options));
}

}  // namespace kdsl
