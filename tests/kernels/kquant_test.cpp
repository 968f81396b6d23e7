// kquant_test.cpp - Library::matmul and Library::embedding over k-quant weights read in place, against the reference dequantizer (and the integer-dot reference where the CPU takes that path)
#include "codegen/codegen.h"
#include "codegen/nvptx/ptxas.h"
#include "kernels/matvec_kquant.h"
#include "src/tools/example_kernels.h"
#include "tests/kernels/int8_test_util.h"

namespace {
using namespace kernels_test;
using kdsl::formats::WeightKernels;
using kdsl::kernels::WeightType;

// One super-block per row (K 256) and several (768, 1280); N = 64 is whole 8-row programs and
// 64-column tiles, 37 and 3 are not.
TEST_CASE("kernels: k-quant matmul, one row (decode), aligned and ragged, Q6_K / Q4_K") {
  KDSL_TEST_RNG(rng);
  for (WeightType t : kernel_formats(WeightKernels::Decoded, 256)) {
    for (auto [N, K] : {std::pair{64, 256}, std::pair{37, 768}, std::pair{3, 1280}}) check_library_matmul(rng, t, 1, N, K, false);
    check_library_matmul(rng, t, 1, 37, 512, true);
  }
}

TEST_CASE("kernels: k-quant matmul, a few rows and batched rows (prefill), Q6_K / Q4_K") {
  KDSL_TEST_RNG(rng);
  for (WeightType t : kernel_formats(WeightKernels::Decoded, 256)) {
    for (int rows : {2, 8, 11, 16, 70}) {
      check_library_matmul(rng, t, rows, 64, 256, false);
      check_library_matmul(rng, t, rows, 37, 768, rows == 8);
    }
    check_library_matmul(rng, t, 33, 130, 512, true);
  }
}

TEST_CASE("kernels: k-quant embedding rows equal the reference dequantizer's, Q6_K / Q4_K") {
  KDSL_TEST_RNG(rng);
  const int vocab = 40;
  // 512 columns are one whole 2-block program; 256 and 768 end in a program with a block past the row.
  for (WeightType t : kernel_formats(WeightKernels::Decoded, 256))
    for (int dim : {256, 512, 768}) check_quantized_embedding(rng, t, vocab, dim);
}

TEST_CASE("kernels: k-quant matmul and embedding reject sizes that are not whole super-blocks, naming them") {
  std::vector<float> x(384), out(512);
  std::vector<uint8_t> w(4096);
  std::vector<int32_t> ids(1);
  std::string text = kdsl_test::error_text([&] { library().matmul(x.data(), w.data(), WeightType::Q6_K, nullptr, out.data(), 1, 4, 384); });
  CHECK(kdsl_test::contains(text, "matmul"));
  CHECK(kdsl_test::contains(text, "K 384 is not a multiple of 256"));
  CHECK(kdsl_test::contains(text, "q6_k"));
  text = kdsl_test::error_text([&] { library().embedding(ids.data(), w.data(), WeightType::Q4_K, out.data(), 1, 96); });
  CHECK(kdsl_test::contains(text, "embedding"));
  CHECK(kdsl_test::contains(text, "dim 96 is not a multiple of 256"));
  CHECK(kdsl_test::contains(text, "q4_k"));
}

// No GPU here: the k-quant kernels, as the library launches them, lower to PTX (and assemble,
// where ptxas is installed) for sm_80, with every pointer and size taken as aligned and not.
TEST_CASE("kernels: k-quant kernels lower to PTX for sm_80 (no GPU needed)") {
  using namespace kdsl;
  using namespace kdsl::kernels;
  if (codegen::nvptx::find_libdevice().empty()) return;  // no CUDA toolkit: nothing to check against
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  for (const tools::NamedKernel &k : {tools::named_kernel<matvec_kquant<Q6_KFormat, 8, false, 1024>>("matvec_q6_k"),
                                      tools::named_kernel<matvec_kquant<Q4_KFormat, 8, true, 1024>>("matvec_q4_k"),
                                      tools::named_kernel<matmul_kquant<Q6_KFormat, 32, 32, true>>("matmul_q6_k"),
                                      tools::named_kernel<matmul_kquant<Q4_KFormat, 8, 32, false>>("matmul_q4_k"),
                                      tools::named_kernel<embedding_kquant<Q6_KFormat, 2>>("embedding_q6_k"),
                                      tools::named_kernel<embedding_kquant<Q4_KFormat, 2>>("embedding_q4_k")})
    for (const char *spec : {"aligned", "none"}) {
      CAPTURE(k.name);
      CAPTURE(spec);
      codegen::Options options;
      options.num_warps = k.num_warps;
      codegen::CompiledObject obj = codegen::compile(tools::trace_kernel(k.signature, tools::parse_specialization(spec, k.signature)), "kdsl_" + k.name,
                                                     codegen::Target::named("sm_80"), options);
      CHECK(obj.ptx.find(".entry kdsl_" + k.name) != std::string::npos);
      if (have_ptxas) CHECK(obj.resources.assembled);
    }
}

}  // namespace
