// dump_assembly_test.cpp - KDSL_DUMP=asm shows the code that runs: the dumped assembly's instructions are the host object's, as llvm-objdump reads them
#include <doctest/doctest.h>
#include <kdsl/kdsl.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

#include "codegen/codegen.h"
#include "tests/codegen/host_assembly.h"
#include "examples/softmax.h"
#include "kernels/block32_int_tiles.h"
#include "kernels/matmul_int_tiles.h"
#include "tests/traced.h"

namespace dump_assembly_test {
namespace fs = std::filesystem;
using Mnemonics = std::map<std::string, int>;

// Instructions by mnemonic in assembly text (AT&T, one instruction a tab-indented line;
// directives and comments are not counted).
Mnemonics of_assembly(const std::string &text) {
  Mnemonics counts;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() < 2 || line[0] != '\t' || line[1] == '.' || line[1] == '#') continue;
    std::istringstream words(line);
    std::string mnemonic;
    words >> mnemonic;
    ++counts[mnemonic];
  }
  return counts;
}

// LLVM 19's llvm-objdump (Debian's llvm-19, which llvm-19-dev depends on).
std::string objdump() {
  for (const char *path : {"/usr/lib/llvm-19/bin/llvm-objdump", "/usr/bin/llvm-objdump-19"})
    if (fs::exists(path)) return path;
  return {};
}

// Instructions by mnemonic in the object as llvm-objdump disassembles it; the alignment padding
// (nops, which the assembly writes as .p2align) is not counted.
Mnemonics of_object(const std::vector<uint8_t> &object, const std::string &tool) {
  const fs::path file = fs::temp_directory_path() / ("kdsl-dump-assembly-" + std::to_string(getpid()) + ".o");
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char *>(object.data()), std::streamsize(object.size()));
  Mnemonics counts;
  const std::string command = tool + " -d --no-show-raw-insn '" + file.string() + "'";
  if (FILE *pipe = popen(command.c_str(), "r")) {
    char buffer[512];
    while (fgets(buffer, sizeof buffer, pipe)) {
      std::istringstream words(buffer);
      std::string address, mnemonic;
      if (!(words >> address >> mnemonic) || address.size() < 2 || address.back() != ':' ||
          address.find_first_not_of("0123456789abcdef") != address.size() - 1)
        continue;  // the file's and the symbol's headers
      if (mnemonic.find("nop") != std::string::npos || mnemonic == "data16" || mnemonic == "cs") continue;
      ++counts[mnemonic];
    }
    pclose(pipe);
  }
  fs::remove(file);
  return counts;
}

void check_dump_matches_object(const kdsl::ir::Function &fn, const std::string &symbol, const std::string &tool) {
  CAPTURE(symbol);
  kdsl::codegen::CompiledObject compiled;
  const std::string text = kdsl_test::host_assembly(fn, symbol, {}, &compiled);
  const Mnemonics dumped = of_assembly(text), ran = of_object(compiled.object, tool);
  REQUIRE(!ran.empty());
  int differing = 0;
  for (const auto &[mnemonic, n] : ran)
    if (dumped.count(mnemonic) ? dumped.at(mnemonic) != n : true) {
      if (differing++ < 5) FAIL_CHECK(mnemonic, ": ", n, " in the object, ", dumped.count(mnemonic) ? dumped.at(mnemonic) : 0, " in the dump");
    }
  for (const auto &[mnemonic, n] : dumped)
    if (!ran.count(mnemonic) && differing++ < 5) FAIL_CHECK(mnemonic, ": ", n, " in the dump, none in the object");
  CHECK(differing == 0);
}

}  // namespace dump_assembly_test

// Code generation changes the module it runs on (loop strength reduction, CodeGenPrepare): the
// assembly printed from the module after the object had been made showed other code than the
// object's (a prefill tile kernel's rows' address multiplies; bench/RESULTS.md, 2026-12-07).
TEST_CASE("dump: KDSL_DUMP=asm's assembly is the host object's code, instruction for instruction") {
  const std::string tool = dump_assembly_test::objdump();
  REQUIRE_MESSAGE(!tool.empty(), "llvm-objdump from LLVM 19 (Debian's llvm-19) was not found");
  dump_assembly_test::check_dump_matches_object(kdsl_test::traced<examples::softmax<256>>(), "softmax", tool);
  dump_assembly_test::check_dump_matches_object(kdsl_test::traced<kdsl::kernels::matmul_int_tiles<kdsl::kernels::Q4_0Tiles, 32, 32, false>>(),
                                                "q4_0_tiles", tool);
}
