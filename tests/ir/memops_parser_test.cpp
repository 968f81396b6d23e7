// memops_parser_test.cpp - scans, gather, the atomics and the debugging ops in the IR text: round trips, message escapes, verifier findings
#include <doctest/doctest.h>

#include <kdsl/error.h>
#include <kdsl/kdsl.h>

#include "codegen/pipeline.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/traced.h"

namespace {
using namespace kdsl;

void memops(Ptr<f32> x, Ptr<i32> counts, Ptr<u32> flags, Scalar<i32> n) {
  auto r = expand_dims<1>(arange<4>());
  auto c = expand_dims<0>(arange<8>());
  auto v = load(x + r * 8 + c);
  auto s = cumsum(v, 1) + cummax(v, 0, true) + cummin(v, -1);
  auto g = gather(s, (r + c) % 4, 0);
  store(x + r * 8 + c, g);
  auto k = arange<8>();
  auto m = k < n;
  atomic_max(counts + k, k, m);
  atomic_min(counts + k, k);
  atomic_xchg(flags + k, cast<u32>(k), m);
  store(counts + k, atomic_cas(counts + 8 + k, 0, k, m));
  device_print("quote \" backslash \\ newline \n tab \t 100%", v, n);
  device_print("");
  device_assert(g >= 0.0f, "g must be >= 0");
}

}  // namespace

TEST_CASE("IR text: scans, gather, every atomic and the debugging ops round trip, messages escaped") {
  ir::Function fn = kdsl_test::traced<memops>();
  std::string text = ir::print(fn);
  CHECK(text.find("scan_sum[1, 0]") != std::string::npos);
  CHECK(text.find("scan_max[0, 1]") != std::string::npos);
  CHECK(text.find("gather[0]") != std::string::npos);
  CHECK(text.find(R"(device_print "quote \" backslash \\ newline \n tab \x09 100%")") != std::string::npos);
  CHECK(text.find(R"(device_assert "g must be >= 0")") != std::string::npos);
  ir::Function parsed = ir::parse(text);
  CHECK(ir::print(parsed) == text);
  ir::Function a = fn, b = parsed;
  codegen::run_pipeline(a);
  codegen::run_pipeline(b);
  CHECK(ir::print(a) == ir::print(b));
  // nothing the pipeline may drop: the prints, the assert and the atomics stay
  std::string optimized = ir::print(a);
  for (const char *op : {"device_print", "device_assert", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas"}) CHECK(optimized.find(op) != std::string::npos);
}

TEST_CASE("IR text: bad strings and ill-typed scans, gathers and atomics are reported") {
  auto error = [](std::string_view text) {
    try {
      ir::parse(text);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("(parsed)");
  };
  CHECK(error("kernel @k() {\n  device_print \"open\n}\n").find("unterminated string") != std::string::npos);
  CHECK(error("kernel @k() {\n  device_print \"\\q\"\n}\n").find("unknown escape '\\q'") != std::string::npos);
  std::string scan_error = error("kernel @k(%x: f32[4, 8]) {\n  %y = scan_sum[2, 0] %x : f32[4, 8]\n}\n");
  INFO(scan_error);
  CHECK(scan_error.find("does not scan f32[4,8]") != std::string::npos);
  CHECK(error("kernel @k(%x: f32[4, 8], %i: i32[4, 4]) {\n  %y = gather[0] %x, %i : f32[4, 4]\n}\n").find("does not gather") != std::string::npos);
  CHECK(error("kernel @k(%x: f32[4, 8], %i: i32[2, 8]) {\n  %y = gather[0] %x, %i : f32[2, 8]\n}\n") == "(parsed)");
  CHECK(error("kernel @k(%p: ptr<i32>[4], %v: i32[4]) {\n  %o = atomic_cas %p, %v : i32[4]\n}\n").find("needs (ptrs, compare, values[, mask])") != std::string::npos);
  CHECK(error("kernel @k(%c: i32[4]) {\n  device_assert \"m\" %c\n}\n").find("condition must be i1") != std::string::npos);
}
