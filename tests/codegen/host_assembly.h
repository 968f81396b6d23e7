// host_assembly.h - the host CPU's assembly for a traced kernel, through the KDSL_DUMP path codegen::compile offers
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "codegen/codegen.h"

namespace kdsl_test {

// `compiled`, where given, receives what the compile made (the object the listing is of).
inline std::string host_assembly(const kdsl::ir::Function &fn, const std::string &symbol, const kdsl::codegen::Options &options = {},
                                 kdsl::codegen::CompiledObject *compiled = nullptr) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kdsl-" + symbol + "-" + std::to_string(getpid()));
  kdsl::codegen::DumpOptions dump;
  dump.dir = dir.string();
  dump.asm_text = true;
  kdsl::codegen::CompiledObject made = kdsl::codegen::compile(fn, symbol, kdsl::codegen::Target::host(), options, dump);
  if (compiled) *compiled = std::move(made);
  std::ostringstream s;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".s") s << std::ifstream(e.path()).rdbuf();
  std::filesystem::remove_all(dir);
  return s.str();
}

}  // namespace kdsl_test
