// llvm_diagnostics_test.cpp - LLVM's warnings and remarks about a kernel stay out of stderr (they go to KDSL_LOG=debug)
#include <doctest/doctest.h>

#include <string>

#include "codegen/codegen.h"
#include "kernels/matmul_quantized.h"
#include "tests/stream_capture.h"
#include "tests/traced.h"

// The Q4_0 prefill tile asks LLVM to vectorize its f16 scale loop at a width it cannot take:
// LLVM reports "loop not vectorized" as a remark and a warning, which its default handler
// printed to stderr, into the output of every tool that compiled the kernel.
TEST_CASE("codegen: LLVM's remarks and warnings about a kernel do not reach stderr") {
  using namespace kdsl;
  ir::Function fn = kdsl_test::traced<kernels::matmul_quantized<kernels::Q4_0Format, 128, 64, 2, false>>();
  kdsl_test::StderrCapture capture;
  codegen::compile(fn, "kdsl_llvm_diagnostics_test", codegen::Target::host(), codegen::Options{});
  const std::string text = capture.text();
  INFO(text);
  CHECK(text.find("loop not vectorized") == std::string::npos);
  CHECK(text.find("remark:") == std::string::npos);
  CHECK(text.find("warning:") == std::string::npos);
}
