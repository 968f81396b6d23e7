// kernel_cache_key.cpp - the cache key and entry of one compiled specialization
#include "runtime/kernel_cache_key.h"

#include <fmt/format.h>

#include <kdsl_version.h>

#include "ir/printer.h"
#include "runtime/cuda/tensor_map_json.h"
#include "runtime/specialization_ir.h"

namespace kdsl::detail {

jit_cache::CacheKey cache_key(const std::string &name, const std::string &code_text, const std::string &specialization, const std::string &options,
                              const codegen::TargetDesc &target) {
  jit_cache::CacheKey key;
  key.kernel_name = name;
  key.ir_hash = jit_cache::hash_text_hex(code_text);
  key.specialization = specialization;
  key.options = options;
  key.backend = target.backend;
  key.arch = target.arch;
  key.features = target.features;
  key.kdsl_version = KDSL_VERSION_STRING;
  key.llvm_version = codegen::llvm_version();
  return key;
}

jit_cache::CacheKey kernel_cache_key(const std::string &kernel_name, const ir::Function &traced, const std::vector<ir::ArgClass> &classes,
                                     const CompileOptions &options, const codegen::TargetDesc &target) {
  return cache_key(kernel_name, ir::print(traced), specialization_text(classes),
                   fmt::format("num_warps={},num_stages={}{}", options.num_warps, options.num_stages, options.checked ? ",checked" : ""), target);
}

std::string kernel_symbol(const jit_cache::CacheKey &key) { return "kdsl_" + key.digest(); }

jit_cache::CacheEntry kernel_cache_entry(const std::string &kernel_name, const codegen::CompiledObject &compiled, double compile_ms) {
  jit_cache::CacheEntry entry;
  entry.symbol = compiled.symbol;
  entry.code = compiled.object;
  entry.metadata = {{"kernel", kernel_name}, {"compile_ms", compile_ms}};
  // GPU code is launched in blocks of threads, whose shape the module does not say; a host
  // object needs its symbol only.
  if (compiled.resources.threads == 0) return entry;
  const codegen::ResourceReport &r = compiled.resources;
  entry.metadata["format"] = compiled.format;
  entry.metadata["threads"] = r.threads;
  entry.metadata["dynamic_shared_bytes"] = r.dynamic_shared_bytes;
  // A kernel that copies tiles with TMA takes tensor maps after its arguments, which the loader
  // encodes from the argument values at launch. Left out where there are none, so every other
  // kernel's entry stays as it was.
  if (!compiled.tensor_maps.empty()) entry.metadata["tensor_maps"] = tensor_maps_to_json(compiled.tensor_maps);
  if (r.assembled) {
    entry.metadata["registers"] = r.registers;
    entry.metadata["spill_store_bytes"] = r.spill_store_bytes;
    entry.metadata["static_shared_bytes"] = r.static_shared_bytes;
  }
  // AMD code objects report their spills and scratch (kdsl-cache shows them; prewarm's tests
  // check a plan compiles without any).
  if (r.vector_spills >= 0) {
    entry.metadata["vgpr_spills"] = r.vector_spills;
    entry.metadata["sgpr_spills"] = r.scalar_spills;
    entry.metadata["scratch_bytes"] = r.stack_frame_bytes;
  }
  return entry;
}

}  // namespace kdsl::detail
