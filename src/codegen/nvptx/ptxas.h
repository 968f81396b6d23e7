// ptxas.h - PTX to cubin with the CUDA toolkit's ptxas, and its resource report (no LLVM types: tests use it)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace kdsl::codegen::nvptx {

// The ptxas binary: $KDSL_PTXAS, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, PATH.
// Empty when there is none.
std::string find_ptxas();

// The toolkit's libdevice.10.bc: $KDSL_LIBDEVICE, then nvvm/libdevice under $CUDA_HOME,
// $CUDA_PATH, /usr/local/cuda. Empty when there is none.
std::string find_libdevice();

// Assembles PTX into a cubin for `arch` with `ptxas -v` and parses its resource report.
// Throws kdsl::Error with ptxas's messages when it fails.
std::vector<uint8_t> assemble_ptx(const std::string &ptxas, const std::string &ptx, const std::string &arch, ResourceReport &report);

// Reads "Used N registers, ... N bytes smem", "N bytes stack frame, N bytes spill stores, N
// bytes spill loads" from ptxas -v output.
void parse_ptxas_report(const std::string &log, ResourceReport &report);

}  // namespace kdsl::codegen::nvptx
