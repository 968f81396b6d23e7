// target_machine.h - the LLVM TargetMachine for this host CPU, and machine-code emission
#pragma once
#include <memory>
#include <vector>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/codegen.h"

namespace kdsl::codegen {

// A target machine for the host's CPU name and features at -O3 (initializes LLVM's native
// target once).
std::unique_ptr<llvm::TargetMachine> make_host_target_machine();

// Whether the host CPU has `feature`, an LLVM feature name ("avx512vnni", "f16c").
bool host_has_feature(const char *feature);

// Runs the code generator on an optimized module (the module is not changed).
std::vector<uint8_t> emit_machine_code(llvm::Module &m, llvm::TargetMachine &tm, llvm::CodeGenFileType kind);

class StageDump;
// The host's last step in the pipeline: the optimized module as a relocatable object into
// `out` (host_compiler.cpp); with asm_text dumps, its assembly as .s.
void emit_host_object(llvm::Module &m, llvm::TargetMachine &tm, CompiledObject &out, StageDump &stages);

}  // namespace kdsl::codegen
