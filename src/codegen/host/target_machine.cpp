// target_machine.cpp - host target description, TargetMachine creation and object emission
#include "codegen/host/target_machine.h"

#include <fmt/format.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <kdsl/error.h>

#include "codegen/codegen.h"

namespace kdsl::codegen {
namespace {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

TargetDesc detect_host() {
  initialize_llvm();
  TargetDesc t;
  t.backend = "host";
  t.triple = llvm::sys::getProcessTriple();
  t.arch = llvm::sys::getHostCPUName().str();
  std::vector<std::string> features;
  for (const auto &f : llvm::sys::getHostCPUFeatures()) features.push_back((f.second ? "+" : "-") + f.first().str());
  std::sort(features.begin(), features.end());
  t.features = fmt::format("{}", fmt::join(features, ","));
  return t;
}

}  // namespace

const TargetDesc &host_target() {
  static const TargetDesc target = detect_host();
  return target;
}

std::vector<std::string_view> TargetDesc::enabled_features() const {
  std::vector<std::string_view> names;
  for (std::string_view list = features; !list.empty();) {
    const std::string_view item = list.substr(0, list.find(','));
    if (item.size() > 1 && item[0] == '+') names.push_back(item.substr(1));
    list.remove_prefix(std::min(list.size(), item.size() + 1));
  }
  return names;
}

// Compile time asks this a few times a kernel; the kernel library's per-product questions go
// through Device::has_cpu_feature, which keeps the list as a set.
bool TargetDesc::has_feature(std::string_view name) const {
  const std::vector<std::string_view> names = enabled_features();
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool host_has_feature(const char *feature) { return host_target().has_feature(feature); }

std::string llvm_version() { return LLVM_VERSION_STRING; }

DumpOptions DumpOptions::from_env() {
  DumpOptions d;
  const char *what = std::getenv("KDSL_DUMP");
  if (!what || !*what) return d;
  std::string w = what;
  d.ir = w.find("ir") != std::string::npos;
  d.llvm = w.find("llvm") != std::string::npos;
  d.asm_text = w.find("asm") != std::string::npos;
  const char *dir = std::getenv("KDSL_DUMP_DIR");
  d.dir = dir && *dir ? dir : "kdsl-dump";
  return d;
}

std::unique_ptr<llvm::TargetMachine> make_host_target_machine() {
  const TargetDesc &host = host_target();
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(host.triple, error);
  if (!target) throw Error(fmt::format("LLVM has no backend for this host ({}): {}", host.triple, error));
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(host.triple, host.arch, host.features, options, llvm::Reloc::PIC_,
                                                                      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw Error(fmt::format("LLVM could not create a target machine for {} ({})", host.triple, host.arch));
  return tm;
}

std::vector<uint8_t> emit_machine_code(llvm::Module &m, llvm::TargetMachine &tm, llvm::CodeGenFileType kind) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, stream, nullptr, kind)) internal_error("the host target cannot emit this file type");
  pm.run(m);
  return {buffer.begin(), buffer.end()};
}

}  // namespace kdsl::codegen
