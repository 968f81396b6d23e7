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

// The recipe every kernel cache key follows (launches, compile_for, cuda_source): the code's name
// and a hash of its text (traced IR, CUDA source), its specialization and options, the device
// part (target: backend, arch, features) and the kdsl and LLVM versions.
jit_cache::CacheKey cache_key(const std::string &name, const std::string &code_text, const std::string &specialization, const std::string &options,
                              const codegen::TargetDesc &target);

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
