// code_object.cpp - AMDGPU target machine, ocml linking, object emission, ld.lld linking and the resource report
#include "codegen/amdgpu/code_object.h"

#include <fmt/format.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/IPO/Internalize.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <filesystem>
#include <mutex>

#include <kdsl/error.h>

#include "codegen/amdgpu/amdgpu_target.h"
#include "codegen/amdgpu/code_object_metadata.h"
#include "codegen/amdgpu/rocm_tools.h"
#include "codegen/stage_dump.h"

namespace kdsl::codegen::amdgpu {
namespace fs = std::filesystem;
namespace {

void initialize_amdgpu() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
  });
}

// ocml's configuration, read as constants (ROCm's oclc_*.bc hold one each): defined where
// the linked functions declare them.
void define_control_constant(llvm::Module &m, const char *name, llvm::Type *type, uint64_t value) {
  llvm::GlobalVariable *g = m.getNamedGlobal(name);
  if (!g || !g->isDeclaration()) return;
  g->setInitializer(llvm::ConstantInt::get(type, value));
  g->setConstant(true);
  g->setLinkage(llvm::GlobalValue::InternalLinkage);
}

std::string emit(llvm::Module &m, llvm::TargetMachine &tm, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, stream, nullptr, type)) internal_error("the AMDGPU target cannot emit this file type");
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

std::string resources_text(const CompiledObject &out, const TargetInfo &target) {
  const ResourceReport &r = out.resources;
  return fmt::format(
      "arch {}\nthreads {}\nwavefront_size {}\ndynamic_shared_bytes {}\nvgprs {}\nagprs {}\nsgprs {}\nvgpr_spills {}\nsgpr_spills {}\n"
      "static_shared_bytes {}\nscratch_bytes {}\nkernarg_bytes {}\n",
      target.name, r.threads, r.wavefront_size, r.dynamic_shared_bytes, r.registers, r.accumulation_registers, r.scalar_registers, r.vector_spills,
      r.scalar_spills, r.static_shared_bytes, r.stack_frame_bytes, r.kernarg_bytes);
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> make_amdgpu_target_machine(const TargetInfo &target) {
  initialize_amdgpu();
  std::string error;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!t) throw Error(fmt::format("this LLVM has no AMDGPU backend ({}): {}", target.triple, error));
  llvm::TargetOptions options;
  // A multiply feeding an add becomes one fused multiply-add (one rounding instead of two), as
  // Triton and hipcc (-ffp-contract=fast) do by default; kernels compared with the CPU backend allow for it.
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(target.triple, target.name, target.llvm_features, options, llvm::Reloc::PIC_,
                                                                 std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw Error(fmt::format("LLVM could not create an AMDGPU target machine for {}", target.name));
  return tm;
}

void link_device_libs(llvm::Module &m, const TargetInfo &target, const std::string &keep) {
  std::vector<std::string> calls;
  for (llvm::Function &f : m)
    if (f.isDeclaration() && f.getName().starts_with("__ocml_")) calls.push_back(f.getName().str());
  if (!calls.empty()) {
    std::string dir = find_device_libs();
    if (dir.empty())
      throw Error(fmt::format("kernel '{}' calls ROCm device math ({}), and ocml.bc was not found in {}", keep, fmt::join(calls, ", "),
                              device_libs_search_text()));
    std::string path = (fs::path(dir) / "ocml.bc").string();
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> lib = llvm::parseIRFile(path, diag, m.getContext());
    if (!lib) throw Error(fmt::format("could not read ROCm's ocml {}: {}", path, diag.getMessage().str()));
    lib->setTargetTriple(m.getTargetTriple());
    lib->setDataLayout(m.getDataLayout());
    if (llvm::Linker::linkModules(m, std::move(lib), llvm::Linker::Flags::LinkOnlyNeeded))
      internal_error(fmt::format("linking ocml into '{}' failed", keep));
    llvm::LLVMContext &ctx = m.getContext();
    llvm::Type *i8 = llvm::Type::getInt8Ty(ctx), *i32 = llvm::Type::getInt32Ty(ctx);
    define_control_constant(m, "__oclc_finite_only_opt", i8, 0);
    define_control_constant(m, "__oclc_unsafe_math_opt", i8, 0);
    define_control_constant(m, "__oclc_daz_opt", i8, 0);
    define_control_constant(m, "__oclc_correctly_rounded_sqrt32", i8, 1);
    define_control_constant(m, "__oclc_wavefrontsize64", i8, target.warp_size == 64 ? 1 : 0);
    define_control_constant(m, "__oclc_ISA_version", i32, uint64_t(target.isa_version));
    define_control_constant(m, "__oclc_ABI_version", i32, 500);
    // ocml's functions carry the target-cpu and features they were built for (none, or an
    // older ISA's); the kernel's own decide, so inlining them is allowed.
    for (llvm::Function &f : m) {
      if (f.isDeclaration() || f.getName() == keep) continue;
      f.removeFnAttr("target-cpu");
      f.removeFnAttr("target-features");
    }
  }
  llvm::internalizeModule(m, [&](const llvm::GlobalValue &g) { return g.getName() == keep; });
}

void emit_code_object(llvm::Module &m, llvm::TargetMachine &tm, const TargetInfo &target, const gpu::LoweringResult &lowered, const std::string &kernel,
                      CompiledObject &out, StageDump &stages) {
  // Code generation changes the module (LDS and kernel-argument lowering), so the assembly
  // is printed from a copy.
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
  out.assembly = emit(*copy, tm, llvm::CodeGenFileType::AssemblyFile);
  std::string object = emit(m, tm, llvm::CodeGenFileType::ObjectFile);
  std::string lld = find_lld();
  if (lld.empty())
    throw Error(fmt::format("kernel '{}' for {}: linking its AMDGPU code object needs ld.lld from LLVM 19, and none was found at {}", kernel, target.name,
                            lld_search_text()));
  out.object = link_code_object(lld, std::vector<uint8_t>(object.begin(), object.end()), kernel);
  out.format = "hsaco";
  CodeObjectMetadata metadata = read_code_object_metadata(out.object);
  const KernelMetadata *k = nullptr;
  for (const KernelMetadata &candidate : metadata.kernels)
    if (candidate.name == out.symbol) k = &candidate;
  if (!k) internal_error(fmt::format("amdgpu: the code object of '{}' has no metadata for kernel '{}'", kernel, out.symbol));
  ResourceReport &r = out.resources;
  r.threads = lowered.threads;
  r.dynamic_shared_bytes = lowered.shared_bytes;
  r.registers = k->vgprs;
  r.accumulation_registers = k->agprs;
  r.scalar_registers = k->sgprs;
  r.vector_spills = k->vgpr_spills;
  r.scalar_spills = k->sgpr_spills;
  r.static_shared_bytes = k->lds_bytes;
  r.stack_frame_bytes = k->scratch_bytes;
  r.kernarg_bytes = k->kernarg_bytes;
  r.wavefront_size = k->wavefront_size;
  r.assembled = true;
  if (stages.options().asm_text) {
    stages.write(".amdgcn", out.assembly);
    stages.write(".hsaco", std::string(out.object.begin(), out.object.end()));
    stages.write(".resources.txt", resources_text(out, target));
  }
}

}  // namespace kdsl::codegen::amdgpu
