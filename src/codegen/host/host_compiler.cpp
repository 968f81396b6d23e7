// host_compiler.cpp - the host backend's last step: an optimized module to a relocatable object (and its assembly for dumps)
#include <llvm/Transforms/Utils/Cloning.h>

#include "codegen/host/target_machine.h"
#include "codegen/stage_dump.h"

namespace kdsl::codegen {

// Code generation changes the module it runs on (loop strength reduction, CodeGenPrepare), and
// what it makes depends on the order of each value's uses, which CloneModule does not keep: the
// assembly printed from the module after the object's run showed other code than the object's
// (a prefill tile kernel's rows' address multiplies; bench/RESULTS.md, 2026-12-07, "x's rows
// unclamped"), and printed from a copy it still differed in a loop's start. So the object and
// the dumped assembly each come from a copy made the same way, dumped or not: the assembly is
// the code that runs (tests/codegen/dump_assembly_test.cpp).
void emit_host_object(llvm::Module &m, llvm::TargetMachine &tm, CompiledObject &out, StageDump &stages) {
  out.object = emit_machine_code(*llvm::CloneModule(m), tm, llvm::CodeGenFileType::ObjectFile);
  out.format = "object";
  if (stages.options().asm_text) {
    std::vector<uint8_t> text = emit_machine_code(*llvm::CloneModule(m), tm, llvm::CodeGenFileType::AssemblyFile);
    stages.write(".s", std::string(text.begin(), text.end()));
  }
}

}  // namespace kdsl::codegen
