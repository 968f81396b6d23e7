// tile_load_test.cpp - the tile_load and tile_store ops in the IR text and their expansion into a masked load and store
#include <doctest/doctest.h>

#include <kdsl/error.h>
#include <kdsl/kdsl.h>

#include "codegen/passes/expand_tile_accesses.h"
#include "codegen/pipeline.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace {
using namespace kdsl;

void tile_copy(Ptr<const f16> x, Ptr<f16> out, Scalar<i32> rows, Scalar<i32> cols, Scalar<i32> row) {
  auto tile = make_tensor_descriptor(x, rows, cols, 64).template load<16, 32>(row, 8);
  store(out + expand_dims<1>(arange<16>()) * 32 + expand_dims<0>(arange<32>()), tile);
}

void tile_store(Ptr<const f16> x, Ptr<f16> out, Scalar<i32> rows, Scalar<i32> cols, Scalar<i32> row) {
  auto tile = load(x + expand_dims<1>(arange<16>()) * 32 + expand_dims<0>(arange<32>()));
  make_tensor_descriptor(out, rows, cols, 64).store(row, 8, tile);
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// What parsing (and verifying) `text` throws.
std::string parse_error(const char *text) {
  std::string error = kdsl_test::error_text([&] { ir::parse(text); });
  INFO(error);
  return error;
}

// K's IR after the pipeline and expand_tile_accesses, once it is checked that keeping every
// tile access leaves it unchanged and that the expansion verifies.
template <auto K>
std::string expanded() {
  ir::Function fn = kdsl_test::traced<K>();
  codegen::run_pipeline(fn);
  const std::string before = ir::print(fn);
  passes::expand_tile_accesses(fn, [](const ir::Op &) { return true; });  // kept
  CHECK(ir::print(fn) == before);
  passes::expand_tile_accesses(fn);
  ir::verify_or_throw(fn);
  return ir::print(fn);
}

constexpr const char *kTileOperandsError = "expects (ptr base, i32 rows, cols, row_stride, row, col";

}  // namespace

TEST_CASE("IR text: tile_load round trips; the pipeline keeps it; ill-typed ones are reported") {
  ir::Function fn = kdsl_test::traced<tile_copy>();
  std::string text = ir::print(fn);
  CHECK(text.find("tile_load %0, %2, %3, ") != std::string::npos);
  CHECK(text.find(": f16[16,32]") != std::string::npos);
  ir::Function parsed = ir::parse(text);
  CHECK(ir::print(parsed) == text);
  codegen::run_pipeline(parsed);
  CHECK(ir::print(parsed).find("tile_load") != std::string::npos);
  CHECK(parse_error("kernel @k(%x: ptr<f16>, %n: i32) {\n  %t = tile_load %x, %n, %n, %n, %n, %n : f32[16, 32]\n}\n").find(kTileOperandsError) !=
        std::string::npos);
  // A 3-D tensor's tile: (planes, plane_stride, plane) after the 2-D operands; other counts are refused.
  const std::string planar = "kernel @k(%x: ptr<f16>, %n: i32) {\n  %t = tile_load %x, %n, %n, %n, %n, %n, %n, %n, %n : f16[16, 32]\n}\n";
  CHECK(ir::print(ir::parse(ir::print(ir::parse(planar)))) == ir::print(ir::parse(planar)));
  CHECK(parse_error("kernel @k(%x: ptr<f16>, %n: i32) {\n  %t = tile_load %x, %n, %n, %n, %n, %n, %n : f16[16, 32]\n}\n")
            .find("expects 6 operands (9 for a 3-D tensor)") != std::string::npos);
}

TEST_CASE("expand_tile_accesses: a tile load becomes one load masked to the tensor's rows and columns, with 0 elsewhere") {
  const std::string text = expanded<tile_copy>();
  INFO(text);
  CHECK(text.find("tile_load") == std::string::npos);
  CHECK(count(text, " = load ") == 1);
  CHECK(count(text, "cmp_lt") == 2);  // row < rows, col < cols
  CHECK(count(text, "cmp_ge") == 2);  // and neither below 0
  CHECK(text.find("ptr_add") != std::string::npos);
}

TEST_CASE("IR text: tile_store round trips; the pipeline keeps it; ill-typed ones are reported") {
  ir::Function fn = kdsl_test::traced<tile_store>();
  std::string text = ir::print(fn);
  INFO(text);
  CHECK(text.find("tile_store %1, %2, %3, ") != std::string::npos);
  ir::Function parsed = ir::parse(text);
  CHECK(ir::print(parsed) == text);
  codegen::run_pipeline(parsed);
  CHECK(ir::print(parsed).find("tile_store") != std::string::npos);  // an effect: never removed
  CHECK(parse_error("kernel @k(%x: ptr<f16>, %n: i32, %v: f32) {\n  %t = broadcast %v : f32[16, 32]\n  tile_store %x, %n, %n, %n, %n, %n, %t\n}\n")
            .find(kTileOperandsError) != std::string::npos);
}

TEST_CASE("expand_tile_accesses: a tile store becomes one store masked to the tensor's rows and columns") {
  const std::string text = expanded<tile_store>();
  INFO(text);
  CHECK(text.find("tile_store %") == std::string::npos);
  CHECK(count(text, "  store %") == 1);
  CHECK(count(text, "cmp_lt") == 2);  // row < rows, col < cols
  CHECK(count(text, "cmp_ge") == 2);  // and neither below 0
}
