// host_assembly.h - the host CPU's assembly (or another KDSL_DUMP stage) for a traced kernel, through the dump path codegen::compile offers
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "codegen/codegen.h"

namespace kdsl_test {

// The text of the KDSL_DUMP stages `dump` asks for in a host compile of `fn`, from the files
// whose names end in `suffix` (".s": the assembly; ".opt.ll": the LLVM IR after the passes).
// `compiled`, where given, receives what the compile made (the object the listing is of).
inline std::string host_dump_text(const kdsl::ir::Function &fn, const std::string &symbol, kdsl::codegen::DumpOptions dump, const std::string &suffix,
                                  const kdsl::codegen::Options &options = {}, kdsl::codegen::CompiledObject *compiled = nullptr) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kdsl-" + symbol + "-" + std::to_string(getpid()));
  dump.dir = dir.string();
  kdsl::codegen::CompiledObject made = kdsl::codegen::compile(fn, symbol, kdsl::codegen::Target::host(), options, dump);
  if (compiled) *compiled = std::move(made);
  std::ostringstream s;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    if (e.path().string().ends_with(suffix)) s << std::ifstream(e.path()).rdbuf();
  std::filesystem::remove_all(dir);
  return s.str();
}

// The host CPU's assembly for `fn`.
inline std::string host_assembly(const kdsl::ir::Function &fn, const std::string &symbol, const kdsl::codegen::Options &options = {},
                                 kdsl::codegen::CompiledObject *compiled = nullptr) {
  kdsl::codegen::DumpOptions dump;
  dump.asm_text = true;
  return host_dump_text(fn, symbol, dump, ".s", options, compiled);
}

}  // namespace kdsl_test
