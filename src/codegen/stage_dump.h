// stage_dump.h - KDSL_DUMP's writer: each stage of one compile to a file of the dump folder, and into CompiledObject::stages
#pragma once
#include <string>

#include "codegen/codegen.h"

namespace kdsl::codegen {

// Writes the stages DumpOptions asks for: "<dir>/<symbol><extension>" where a folder is given,
// and CompiledObject::stages[extension] with keep_text.
class StageDump {
 public:
  StageDump(const DumpOptions &options, CompiledObject &out) : options_(options), out_(out) {}
  const DumpOptions &options() const { return options_; }
  void write(const char *extension, const std::string &text);

 private:
  const DumpOptions &options_;
  CompiledObject &out_;
};

}  // namespace kdsl::codegen
