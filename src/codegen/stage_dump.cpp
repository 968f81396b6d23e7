// stage_dump.cpp - dump files named by symbol and stage, and the stages kept for compile_for
#include "codegen/stage_dump.h"

#include <filesystem>
#include <fstream>

namespace kdsl::codegen {

void StageDump::write(const char *extension, const std::string &text) {
  if (options_.keep_text) out_.stages[extension] = text;
  if (options_.dir.empty()) return;
  std::filesystem::create_directories(options_.dir);
  std::ofstream(std::filesystem::path(options_.dir) / (out_.symbol + extension), std::ios::binary) << text;
}

}  // namespace kdsl::codegen
