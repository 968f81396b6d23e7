// kernel_cache_key.h - the cache key and entry of one compiled specialization: one recipe for launches and compile_for
#pragma once
#include <string>
#include <vector>

#include <kdsl/kernel.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "jit_cache/cache_entry.h"
#include "jit_cache/cache_key.h"

namespace kdsl::detail {

// The key a launch on `target` looks up for this traced specialization: kernel name, the traced
// IR's hash, the argument classes ("16,_,1"), the options, the target and the versions.
jit_cache::CacheKey kernel_cache_key(const std::string &kernel_name, const ir::Function &traced, const std::vector<ir::ArgClass> &classes,
                                     const CompileOptions &options, const codegen::TargetDesc &target);

// The symbol a compiled specialization exports: named by its key, so one entry file's code
// never collides with another's in the host JIT.
std::string kernel_symbol(const jit_cache::CacheKey &key);

// What the cache stores for compiled code: its symbol and object, and the metadata a load
// needs (GPU code: its format, launch shape and the assembler's report).
jit_cache::CacheEntry kernel_cache_entry(const std::string &kernel_name, const codegen::CompiledObject &compiled, double compile_ms);

}  // namespace kdsl::detail
