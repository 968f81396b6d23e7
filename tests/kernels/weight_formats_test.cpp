// weight_formats_test.cpp - every block format the formats table gives kernels (Q4_1, Q5_0, Q5_1, Q5_K among them) through Library::matmul and Library::embedding, against the reference dequantizer
#include "codegen/codegen.h"
#include "codegen/nvptx/ptxas.h"
#include "kernels/decoded_formats.h"
#include "kernels/matvec_kquant.h"
#include "src/tools/example_kernels.h"
#include "tests/kernels/int8_test_util.h"
#include "tests/kernels/quantized_test_util.h"

namespace {
using namespace kernels_test;
using kdsl::formats::WeightKernels;
using kdsl::kernels::WeightType;

// Every quantized row of weight_types.def whose kernels column is not None: a format added
// there is checked here without a new list.
std::vector<WeightType> quantized_kernel_types() {
  std::vector<WeightType> out;
  for (const kdsl::formats::WeightTypeInfo &t : kdsl::formats::kWeightTypes)
    if (t.runs_in_kernels() && t.quantized()) out.push_back(t.type);
  return out;
}

TEST_CASE("kernels: the formats table gives kernels to Q4_1, Q5_0, Q5_1 and Q5_K") {
  for (WeightType t : {WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1, WeightType::Q5_K})
    CHECK(kdsl::formats::weight_type_info(t).runs_in_kernels());
  CHECK(quantized_kernel_types().size() >= 8);
}

// K of 1, 3 and 5 blocks (with 32-element blocks: 32, 96, 160; k-quants: 256, 768, 1280), N 37
// (not a multiple of the 8-row, 32- or 64-column programs) and 64; decode, few rows, tiles.
TEST_CASE("kernels: every table format's matmul, decode / few rows / prefill, ragged N, several K") {
  KDSL_TEST_RNG(rng);
  for (WeightType t : quantized_kernel_types()) {
    const int block = kdsl::kernels::weight_type_info(t).block_elements;
    for (int blocks : {1, 3, 5}) {
      check_library_matmul(rng, t, 1, 37, blocks * block, blocks == 3);
      check_library_matmul(rng, t, 1, 64, blocks * block, false);
    }
    for (int rows : {2, 13, 40}) check_library_matmul(rng, t, rows, 37, 3 * block, rows == 13);
  }
}

TEST_CASE("kernels: every table format's embedding rows equal the reference dequantizer's") {
  KDSL_TEST_RNG(rng);
  for (WeightType t : quantized_kernel_types()) {
    const int block = kdsl::kernels::weight_type_info(t).block_elements;
    for (int blocks : {1, 3, 9}) check_quantized_embedding(rng, t, 30, blocks * block);
  }
}

TEST_CASE("kernels: a type with no kernel is refused, naming it and the types that run") {
  std::vector<float> x(32), out(4);
  std::vector<uint8_t> w(4096);
  std::string text = kdsl_test::error_text([&] { library().matmul(x.data(), w.data(), WeightType::Q8_1, nullptr, out.data(), 1, 4, 32); });
  CHECK(kdsl_test::contains(text, "weight type q8_1 has no kernel"));
  CHECK(kdsl_test::contains(text, "q5_1"));
}

// No GPU here: the new formats' kernels, as the library launches them, lower to PTX (and
// assemble, where ptxas is installed) for sm_80.
TEST_CASE("kernels: Q4_1 / Q5_0 / Q5_1 / Q5_K kernels lower to PTX for sm_80 (no GPU needed)") {
  using namespace kdsl;
  using namespace kdsl::kernels;
  if (codegen::nvptx::find_libdevice().empty()) return;  // no CUDA toolkit: nothing to check against
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  for (const tools::NamedKernel &k : {tools::named_kernel<matvec_kquant<Q5_0Format, 8, false, 1024>>("matvec_q5_0"),
                                      tools::named_kernel<matvec_kquant<Q5_KFormat, 8, true, 1024>>("matvec_q5_k"),
                                      tools::named_kernel<matmul_kquant<Q5_1Format, 32, 32, true>>("matmul_q5_1"),
                                      tools::named_kernel<matmul_kquant<Q5_KFormat, 16, 32, false>>("matmul_q5_k"),
                                      tools::named_kernel<embedding_kquant<Q4_1Format, 2>>("embedding_q4_1")}) {
    CAPTURE(k.name);
    codegen::Options options;
    options.num_warps = k.num_warps;
    codegen::CompiledObject obj = codegen::compile(tools::trace_kernel(k.signature, tools::parse_specialization("aligned", k.signature)), "kdsl_" + k.name,
                                                   codegen::Target::named("sm_80"), options);
    CHECK(obj.ptx.find(".entry kdsl_" + k.name) != std::string::npos);
    if (have_ptxas) CHECK(obj.resources.assembled);
  }
}

}  // namespace
