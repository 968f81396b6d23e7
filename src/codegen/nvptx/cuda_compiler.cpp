// cuda_compiler.cpp - the NVIDIA backend's last steps: an optimized module to PTX, ptxas to a cubin, the resource report
#include <fmt/format.h>

#include "codegen/nvptx/ptx_compiler.h"
#include "codegen/stage_dump.h"
#include "support/log.h"

namespace kdsl::codegen::nvptx {
namespace {

std::string resources_text(const CompiledObject &out, const TargetInfo &target) {
  const ResourceReport &r = out.resources;
  std::string text = fmt::format("arch {}\nthreads {}\ndynamic_shared_bytes {}\n", target.name, r.threads, r.dynamic_shared_bytes);
  if (!r.assembled) return text + "ptxas not run: the PTX is left to the driver's JIT\n";
  text += fmt::format("registers {}\nspill_store_bytes {}\nspill_load_bytes {}\nstack_frame_bytes {}\nstatic_shared_bytes {}\n", r.registers,
                      r.spill_store_bytes, r.spill_load_bytes, r.stack_frame_bytes, r.static_shared_bytes);
  return text + "--- ptxas -v\n" + r.ptxas_log;
}

}  // namespace

void emit_gpu_code(llvm::Module &m, llvm::TargetMachine &tm, const TargetInfo &target, const gpu::LoweringResult &lowered, bool assemble,
                   const std::string &kernel, CompiledObject &out, StageDump &stages) {
  out.ptx = emit_ptx(m, tm);
  out.resources.threads = lowered.threads;
  out.resources.dynamic_shared_bytes = lowered.shared_bytes;
  std::string ptxas = assemble ? find_ptxas() : "";
  if (!ptxas.empty()) {
    out.object = assemble_ptx(ptxas, out.ptx, target.name, out.resources);
  } else {
    out.object.assign(out.ptx.begin(), out.ptx.end());
    out.object.push_back(0);
    if (assemble) log_info("{}: no ptxas found ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH): the driver will JIT the PTX", kernel);
  }
  out.format = out.resources.assembled ? "cubin" : "ptx";
  if (stages.options().asm_text) {
    stages.write(".ptx", out.ptx);
    if (out.resources.assembled) stages.write(".cubin", std::string(out.object.begin(), out.object.end()));
    stages.write(".resources.txt", resources_text(out, target));
  }
}

}  // namespace kdsl::codegen::nvptx
