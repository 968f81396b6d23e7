// ptx_compiler.cpp - NVPTX target machine, libdevice linking, PTX emission, ptxas as a subprocess
#include "codegen/nvptx/ptx_compiler.h"

#include <fmt/format.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>

#include <kdsl/error.h>

namespace kdsl::codegen::nvptx {
namespace fs = std::filesystem;
namespace {

void initialize_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::vector<std::string> cuda_roots() {
  std::vector<std::string> roots;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v) roots.push_back(v);
  roots.push_back("/usr/local/cuda");
  return roots;
}


std::string read_file(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string find_libdevice() {
  if (const char *v = std::getenv("KDSL_LIBDEVICE"); v && *v) return v;
  for (const std::string &root : cuda_roots()) {
    fs::path p = fs::path(root) / "nvvm" / "libdevice" / "libdevice.10.bc";
    if (fs::exists(p)) return p.string();
  }
  return {};
}

std::unique_ptr<llvm::TargetMachine> make_nvptx_target_machine(const TargetInfo &target) {
  initialize_nvptx();
  std::string error;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!t) throw Error(fmt::format("this LLVM has no NVPTX backend ({}): {}", target.triple, error));
  llvm::TargetOptions options;
  // A multiply feeding an add becomes one fused multiply-add (one rounding instead of two), as
  // Triton and nvcc (-fmad=true) do by default; kernels compared with the CPU backend allow for it.
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> tm(
      t->createTargetMachine(target.triple, target.name, target.llvm_features, options, std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw Error(fmt::format("LLVM could not create an NVPTX target machine for {}", target.name));
  return tm;
}

void link_libdevice(llvm::Module &m, const std::string &keep) {
  bool needs_libdevice = false;
  for (llvm::Function &f : m)
    if (f.isDeclaration() && f.getName().starts_with("__nv_")) needs_libdevice = true;
  if (needs_libdevice) {
    std::string path = find_libdevice();
    if (path.empty())
      throw Error("kernel '" + keep + "' calls libdevice math (__nv_*), and libdevice.10.bc was not found under $CUDA_HOME/nvvm/libdevice, "
                  "$CUDA_PATH/nvvm/libdevice or /usr/local/cuda/nvvm/libdevice (set CUDA_HOME or KDSL_LIBDEVICE)");
    llvm::SMDiagnostic diag;
    std::unique_ptr<llvm::Module> lib = llvm::parseIRFile(path, diag, m.getContext());
    if (!lib) throw Error(fmt::format("could not read libdevice {}: {}", path, diag.getMessage().str()));
    lib->setTargetTriple(m.getTargetTriple());
    lib->setDataLayout(m.getDataLayout());
    if (llvm::Linker::linkModules(m, std::move(lib), llvm::Linker::Flags::LinkOnlyNeeded))
      internal_error(fmt::format("linking libdevice into '{}' failed", keep));
  }
  // libdevice asks __nvvm_reflect("__CUDA_FTZ"): keep denormals (ex2.approx.ftz is chosen explicitly).
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  llvm::internalizeModule(m, [&](const llvm::GlobalValue &g) { return g.getName() == keep; });
}

std::string emit_ptx(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, stream, nullptr, llvm::CodeGenFileType::AssemblyFile)) internal_error("the NVPTX target cannot emit PTX");
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

std::string find_ptxas() {
  if (const char *v = std::getenv("KDSL_PTXAS")) return *v && fs::exists(v) ? v : "";  // KDSL_PTXAS= (empty): none
  for (const std::string &root : cuda_roots()) {
    fs::path p = fs::path(root) / "bin" / "ptxas";
    if (fs::exists(p)) return p.string();
  }
  if (const char *path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty() && fs::exists(fs::path(dir) / "ptxas")) return (fs::path(dir) / "ptxas").string();
  }
  return {};
}

void parse_ptxas_report(const std::string &log, ResourceReport &report) {
  std::smatch m;
  if (std::regex_search(log, m, std::regex(R"(Used (\d+) registers)"))) report.registers = std::stoi(m[1]);
  if (std::regex_search(log, m, std::regex(R"((\d+) bytes stack frame)"))) report.stack_frame_bytes = std::stoi(m[1]);
  if (std::regex_search(log, m, std::regex(R"((\d+) bytes spill stores)"))) report.spill_store_bytes = std::stoi(m[1]);
  if (std::regex_search(log, m, std::regex(R"((\d+) bytes spill loads)"))) report.spill_load_bytes = std::stoi(m[1]);
  report.static_shared_bytes = std::regex_search(log, m, std::regex(R"((\d+) bytes smem)")) ? std::stoi(m[1]) : 0;
}

std::vector<uint8_t> assemble_ptx(const std::string &ptxas, const std::string &ptx, const std::string &arch, ResourceReport &report) {
  std::string pattern = (fs::temp_directory_path() / "kdsl-ptxas-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw Error(fmt::format("could not create a temporary folder for ptxas: {}", std::strerror(errno)));
  fs::path dir = pattern;
  std::ofstream(dir / "kernel.ptx") << ptx;
  std::string command = fmt::format("'{}' -arch={} -v -o '{}' '{}' > '{}' 2>&1", ptxas, arch, (dir / "kernel.cubin").string(),
                                    (dir / "kernel.ptx").string(), (dir / "ptxas.log").string());
  int status = std::system(command.c_str());
  report.ptxas_log = read_file(dir / "ptxas.log");
  std::string cubin = read_file(dir / "kernel.cubin");
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  if (status != 0 || cubin.empty())
    throw Error(fmt::format("ptxas ({}) failed to assemble the PTX for {} (exit status {}):\n{}", ptxas, arch, WEXITSTATUS(status), report.ptxas_log));
  parse_ptxas_report(report.ptxas_log, report);
  report.assembled = true;
  return {cubin.begin(), cubin.end()};
}

}  // namespace kdsl::codegen::nvptx
