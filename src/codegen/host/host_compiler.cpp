// host_compiler.cpp - the host backend's last step: an optimized module to a relocatable object (and its assembly for dumps)
#include "codegen/host/target_machine.h"
#include "codegen/stage_dump.h"

namespace kdsl::codegen {

void emit_host_object(llvm::Module &m, llvm::TargetMachine &tm, CompiledObject &out, StageDump &stages) {
  out.object = emit_machine_code(m, tm, llvm::CodeGenFileType::ObjectFile);
  out.format = "object";
  if (stages.options().asm_text) {
    std::vector<uint8_t> text = emit_machine_code(m, tm, llvm::CodeGenFileType::AssemblyFile);
    stages.write(".s", std::string(text.begin(), text.end()));
  }
}

}  // namespace kdsl::codegen
