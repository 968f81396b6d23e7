// parser_test.cpp - the IR text parser: round trips of traced kernels, hand-written IR, error messages
#include "ir/parser.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>

#include <kdsl/error.h>
#include <kdsl/kdsl.h>

#include "codegen/pipeline.h"
#include "examples/layer_norm.h"
#include "examples/matmul.h"
#include "examples/softmax.h"
#include "examples/vector_add.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/traced.h"

namespace {
using namespace kdsl;
using ir::ArgClass;

// The message of the kdsl::Error that parsing `text` throws, or "(parsed)".
std::string parse_error(std::string_view text) {
  try {
    ir::parse(text);
  } catch (const Error &e) {
    return e.what();
  }
  return "(parsed)";
}

// print(parse(print(f))) == print(f), and the parsed function compiles to the same IR.
void check_round_trip(const ir::Function &fn) {
  std::string text = ir::print(fn);
  ir::Function parsed = ir::parse(text);
  CHECK(ir::print(parsed) == text);
  CHECK(parsed.args.size() == fn.args.size());
  ir::Function a = fn, b = parsed;
  codegen::run_pipeline(a);
  codegen::run_pipeline(b);
  CHECK(ir::print(a) == ir::print(b));
}

// --- kernels to trace ------------------------------------------------------------------

// Run-time loop with two carried values and a conditional that yields.
template <int BLOCK>
void loop_and_branch(Ptr<f32> x, Ptr<f32> out, Scalar<i32> n, Scalar<i32> steps) {
  auto offs = arange<BLOCK>();
  auto [acc, count] = for_range(0, steps, 1, zeros<f32, BLOCK>(), full<i32>(0), [&](auto i, auto acc, auto count) {
    auto mask = offs + i * BLOCK < n;
    auto v = load(x + i * BLOCK + offs, mask, 0);
    return std::tuple(acc + v, count + 1);
  });
  auto scale = if_(count > 0, [&] { return full<f32>(1.0f) / cast<f32>(count); }, [&] { return full<f32>(0.0f); });
  if_(n > 0, [&] { store(out + offs, acc * scale, offs < n); });
}

// Half-precision constants, NaN and infinities, bit operations, views, reductions, atomics.
void odds_and_ends(Ptr<f16> h, Ptr<bf16> b, Ptr<u8> q, Ptr<i32> counts, Ptr<f32> out) {
  auto r = arange<4, 20>();
  auto x = load(h + r) * 0.1f + full<f16>(-INFINITY);
  auto y = load(b + r) - NAN;
  auto bits = load(q + r);
  auto lo = cast<i32>(bits & 15) - 8;
  auto hi = cast<i32>(bits >> 4) ^ 3;
  auto m = reshape<4, 4>(cast<f32>(x) + cast<f32>(y));
  auto t = trans(m);
  store(out + arange<4>(), sum<1>(t) + cast<f32>(argmax<0>(m)));
  atomic_add(counts + r, lo * hi, lo != hi);
  store(out + 4 + arange<4>(), max<0>(expand_dims<0>(min<1>(m)) * 1.5e-7f));
}

// A compile-time loop unrolls; values repeat, which the pipeline's cse removes.
void unrolled(Ptr<f32> x, Scalar<i32> stride) {
  auto offs = arange<8>();
  for (int i = 0; i < 3; ++i) {
    auto p = x + offs * stride + i;
    store(p, sqrt(abs(load(p))) + exp2(full<f32, 8>(0.5f)));
  }
}

}  // namespace

TEST_CASE("parser: round trips of traced example kernels") {
  check_round_trip(kdsl_test::traced<examples::add<128>>());
  check_round_trip(kdsl_test::traced<examples::add<64>>({ArgClass::Divisible16, ArgClass::Divisible16, ArgClass::None, ArgClass::EqualToOne}));
  check_round_trip(kdsl_test::traced<examples::softmax<256>>({ArgClass::Divisible16, ArgClass::Divisible16, ArgClass::None, ArgClass::EqualToOne}));
  check_round_trip(kdsl_test::traced<examples::layer_norm<64>>());
  check_round_trip(kdsl_test::traced<examples::matmul<16, 32, 8>>());
}

TEST_CASE("parser: round trips of loops, branches, half floats, NaN and infinities") {
  check_round_trip(kdsl_test::traced<loop_and_branch<32>>());
  check_round_trip(kdsl_test::traced<odds_and_ends>());
  check_round_trip(kdsl_test::traced<unrolled>({ArgClass::Divisible16, ArgClass::EqualToOne}));
}

TEST_CASE("parser: round trips after the pass pipeline") {
  ir::Function fn = kdsl_test::traced<examples::matmul<16, 16, 16>>({ArgClass::Divisible16, ArgClass::Divisible16, ArgClass::Divisible16,
                                                         ArgClass::None, ArgClass::EqualToOne, ArgClass::Divisible16});
  codegen::run_pipeline(fn);
  std::string text = ir::print(fn);
  CHECK(ir::print(ir::parse(text)) == text);
}

TEST_CASE("parser: the kernel name keeps template arguments, spaces and namespaces") {
  ir::Function fn = ir::parse(ir::print(kdsl_test::traced<examples::matmul<16, 32, 8>>()));
  CHECK(fn.name == "examples::matmul<16, 32, 8>");
}

TEST_CASE("parser: hand-written IR with names, comments and every printed form") {
  const char *text = R"(// a hand-written kernel
kernel @hand(%x: ptr<f16> {div16}, %n: i32 {one}, %flag: i1, %s: f32) {
  %pid = program_id[0] : i32
  %r = arange[0, 128] : i32[128]   // offsets
  %x1 = expand_dims[0] %x : ptr<f16>[1]
  %xb = broadcast %x1 : ptr<f16>[128]
  %p = ptr_add %xb, %r : ptr<f16>[128]
  %big = constant[65504] : f16[128]
  %neg_inf = constant[-inf] : f32
  %nan = constant[nan] : bf16
  %half = constant[1.5] : f32[64,32]
  %tiny = constant[1e-30] : f32
  %minus = constant[-7] : i8

  %acc, %k = for %pid, %n, %n, %half, %n : f32[64, 32], i32 {
  ^(%iv: i32, %a: f32[64,32], %c: i32):
    %inner = add %a, %half : f32[64,32]
    %c2 = add %c, %iv : i32
    yield %inner, %c2
  }
  for %pid, %n, %n {
  ^(%j: i32):
    yield
  }
  %sel = if %flag : i32 {
    yield %k
  } else {
    yield %pid
  }
  if %flag {
    yield
  } else {
    yield
  }
  %m = cmp_lt %r, %r : i1[128]
  store %p, %big, %m
}
)";
  ir::Function fn = ir::parse(text);
  const std::string printed = ir::print(fn);
  CHECK(printed == R"(kernel @hand(%0: ptr<f16> {div16}, %1: i32 {one}, %2: i1, %3: f32) {
  %4 = program_id[0] : i32
  %5 = arange[0, 128] : i32[128]
  %6 = expand_dims[0] %0 : ptr<f16>[1]
  %7 = broadcast %6 : ptr<f16>[128]
  %8 = ptr_add %7, %5 : ptr<f16>[128]
  %9 = constant[65504] : f16[128]
  %10 = constant[-inf] : f32
  %11 = constant[nan] : bf16
  %12 = constant[1.5] : f32[64,32]
  %13 = constant[1e-30] : f32
  %14 = constant[-7] : i8
  %15, %16 = for %4, %1, %1, %12, %1 : f32[64,32], i32 {
  ^(%17: i32, %18: f32[64,32], %19: i32):
    %20 = add %18, %12 : f32[64,32]
    %21 = add %19, %17 : i32
    yield %20, %21
  }
  for %4, %1, %1 {
  ^(%22: i32):
    yield
  }
  %23 = if %2 : i32 {
    yield %16
  } else {
    yield %4
  }
  if %2 {
    yield
  } else {
    yield
  }
  %24 = cmp_lt %5, %5 : i1[128]
  store %8, %9, %24
}
)");
  CHECK(ir::print(ir::parse(printed)) == printed);
  CHECK(fn.args[0].spec == ArgClass::Divisible16);
  CHECK(fn.args[1].spec == ArgClass::EqualToOne);
  CHECK(fn.args[2].spec == ArgClass::None);
  CHECK(fn.type(fn.args[0].value).str() == "ptr<f16>");
  // Constants keep their exact values.
  const auto &ops = fn.body.ops;
  CHECK(ops[1].ints == std::vector<int64_t>{0, 128});
  CHECK(ops[5].fval == 65504.0);
  CHECK(std::isinf(ops[6].fval));
  CHECK(ops[6].fval < 0);
  CHECK(std::isnan(ops[7].fval));
  CHECK(ops[9].fval == 1e-30);
  CHECK(ops[10].ints == std::vector<int64_t>{-7});
  // The loop: results, region arguments (iv first), the yield.
  const ir::Op &loop = ops[11];
  CHECK(loop.kind == OpKind::For);
  CHECK(loop.results.size() == 2);
  REQUIRE(loop.regions.size() == 1);
  CHECK(loop.regions[0].args.size() == 3);
  CHECK(fn.type(loop.regions[0].args[1]).str() == "f32[64,32]");
  CHECK(loop.regions[0].ops.back().kind == OpKind::Yield);
  CHECK(ops[13].kind == OpKind::If);
  CHECK(ops[13].regions.size() == 2);
  CHECK(ops[14].results.empty());
}

TEST_CASE("parser: printed text of a hand-written kernel") {
  const char *text = R"(kernel @k(%a: i32, %b: f32[4]) {
  %c = constant[2] : i32
  %d = mul %a, %c : i32
  %e = if %t_is_bad : i32 {
    yield %d
  } else {
    yield %c
  }
}
)";
  CHECK(parse_error(text) == "line 4, column 11: undefined value %t_is_bad");
  const char *good = R"(kernel @k(%a: i32, %b: f32[4]) {
  %c = constant[2] : i32
  %d = mul %a, %c : i32
  %t = cmp_gt %d, %c : i1
  %e = if %t : i32 {
    %f = add %d, %a : i32
    yield %f
  } else {
    yield %c
  }
}
)";
  CHECK(ir::print(ir::parse(good)) == R"(kernel @k(%0: i32, %1: f32[4]) {
  %2 = constant[2] : i32
  %3 = mul %0, %2 : i32
  %4 = cmp_gt %3, %2 : i1
  %5 = if %4 : i32 {
    %6 = add %3, %0 : i32
    yield %6
  } else {
    yield %2
  }
}
)");
}

TEST_CASE("parser: syntax errors say where, what was expected and what was found") {
  // Line 3 column 21 is 'foo'.
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = constant[1] : i32\n  %2 = add %1, %1 : foo\n}\n") ==
        "line 3, column 21: expected a type such as f32[16], found 'foo'");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = frobnicate %0 : i32\n}\n") == "line 2, column 8: unknown op 'frobnicate'");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = neg %7 : i32\n}\n") == "line 2, column 12: undefined value %7");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = add %0 : i32\n}\n") == "line 2, column 8: 'add' takes 2 operands, found 1");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = add %0, %0\n}\n") == "line 2, column 18: expected ':' and the result types, found end of line");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = add %0, %0 %0 : i32\n}\n") == "line 2, column 19: expected ':' and the result types, found '%0'");
  CHECK(parse_error("kernel @k(%0: ptr<i32>, %1: i32) {\n  store %0 %1\n}\n") == "line 2, column 12: expected ',' or end of line, found '%1'");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1, %2 = add %0, %0 : i32\n}\n") == "line 2, column 12: 'add' has 2 results but 1 type");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = constant[1.5] : i32\n}\n") ==
        "line 2, column 17: expected an integer constant for i32, found '1.5'");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = constant[pi] : f32\n}\n") ==
        "line 2, column 17: expected a number such as 1.5, -inf or nan, found 'pi'");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = constant : f32\n}\n") ==
        "line 2, column 8: 'constant' needs one value in brackets, such as constant[1.5] or constant[-inf]");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = program_id[x] : i32\n}\n") ==
        "line 2, column 19: expected an integer attribute of 'program_id', found 'x'");
  CHECK(parse_error("kernel @k(%0: i32 {div8}) {\n}\n") == "line 1, column 20: expected an argument class {div16} or {one}, found 'div8'");
  CHECK(parse_error("kernel @k(%0: i32 %1: i32) {\n}\n") == "line 1, column 19: expected ',' or ')' after an argument, found '%1'");
  CHECK(parse_error("kernel @k(%0: ptr<foo>) {\n}\n") == "line 1, column 19: expected an element type such as f16, found 'foo'");
  CHECK(parse_error("kernel @k(%0: f32[0]) {\n}\n") == "line 1, column 19: block extents must be positive, found 0");
  CHECK(parse_error("kernel @k(%0: f32[2,2,2,2,2]) {\n}\n") == "line 1, column 27: block rank above the maximum of 4");
  CHECK(parse_error("kernel @k(%0: f32[4 4]) {\n}\n") == "line 1, column 21: expected ',' or ']' in the block shape, found '4'");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = neg %0 : i32\n") == "line 3, column 1: expected '}' closing kernel @k (line 1), found end of input");
  CHECK(parse_error("kernel @k(%0: i32) {\n}\n}\n") == "line 3, column 1: expected end of input after the kernel's closing '}', found '}'");
  CHECK(parse_error("func @k() {\n}\n") == "line 1, column 1: expected 'kernel' to start the function, found 'func'");
  CHECK(parse_error("kernel k() {\n}\n") == "line 1, column 8: expected '@' and the kernel name, found 'k'");
  CHECK(parse_error("kernel @k {\n}\n") == "line 1, column 9: expected the kernel name and its '(' after '@'");
  CHECK(parse_error("kernel @(%0: i32) {\n}\n") == "line 1, column 9: expected the kernel name after '@', found '('");
  CHECK(parse_error("kernel @k() {\n  %1 = neg $0 : i32\n}\n") == "line 2, column 12: unexpected character '$'");
  CHECK(parse_error("kernel @k() {\n  %1 = neg % : i32\n}\n") == "line 2, column 12: expected a value name such as %3 after '%'");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = neg %0 : i32 {\n  }\n}\n") == "line 2, column 21: 'neg' has no regions, found '{'");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = neg %0 : i32 %0\n}\n") ==
        "line 2, column 21: expected ',' or end of line after the result types, found '%0'");
}

TEST_CASE("parser: scoping of values in regions") {
  // Defined twice.
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1 = neg %0 : i32\n  %1 = neg %0 : i32\n}\n") ==
        "line 3, column 3: value %1 is already defined at line 2, column 3");
  CHECK(parse_error("kernel @k(%0: i32) {\n  %1, %1 = neg %0 : i32, i32\n}\n") == "line 2, column 7: value %1 is named twice among the results");
  // A value of a loop body used after the loop.
  const char *escaped = R"(kernel @k(%lo: i32) {
  for %lo, %lo, %lo {
  ^(%iv: i32):
    %inner = neg %iv : i32
    yield
  }
  %out = neg %inner : i32
}
)";
  CHECK(parse_error(escaped) == "line 7, column 14: value %inner (defined at line 4) is not visible here: its region has ended");
  // A loop result used inside the loop.
  const char *own = R"(kernel @k(%lo: i32) {
  %r = for %lo, %lo, %lo, %lo : i32 {
  ^(%iv: i32, %c: i32):
    %x = add %c, %r : i32
    yield %x
  }
}
)";
  CHECK(parse_error(own) == "line 4, column 18: value %r is used by 'for' at line 2, which defines it");
  // A loop result's name reused inside the loop.
  const char *shadow = R"(kernel @k(%lo: i32) {
  %r = for %lo, %lo, %lo, %lo : i32 {
  ^(%iv: i32, %c: i32):
    %r = add %c, %c : i32
    yield %r
  }
}
)";
  CHECK(parse_error(shadow) == "line 4, column 5: value %r is already a result of 'for' at line 2");
  // Outer values are visible inside, and a name freed by a closed region is still reserved.
  const char *reuse = R"(kernel @k(%lo: i32) {
  for %lo, %lo, %lo {
  ^(%iv: i32):
    %inner = add %iv, %lo : i32
    yield
  }
  %inner = neg %lo : i32
}
)";
  CHECK(parse_error(reuse) == "line 7, column 3: value %inner is already defined at line 4, column 5");
}

TEST_CASE("parser: regions must be well formed") {
  CHECK(parse_error("kernel @k(%c: i1) {\n  if %c {\n    yield\n  }\n}\n") ==
        "line 2, column 3: 'if' needs a then and an else region ('} else {'), found 1");
  CHECK(parse_error("kernel @k(%c: i1) {\n  if %c {\n    yield\n") == "line 4, column 1: expected '}' closing the region of 'if' at line 2, found end of input");
  CHECK(parse_error("kernel @k(%c: i32) {\n  for %c, %c, %c {\n  ^(%i i32):\n    yield\n  }\n}\n") ==
        "line 3, column 8: expected ':' and the region argument's type, found 'i32'");
  CHECK(parse_error("kernel @k(%c: i32) {\n  for %c, %c, %c\n}\n") == "line 2, column 17: expected '{' opening the region of 'for', found end of line");
}

TEST_CASE("parser: IR that parses but does not verify is reported with the verifier's findings") {
  std::string message = parse_error("kernel @k(%0: i32, %1: f32) {\n  %2 = add %0, %1 : i32\n}\n");
  CHECK(message.rfind("kernel @k: the text parses but is not valid IR:\n  add: operands i32 and f32 must both be i32", 0) == 0);
  // Without the verifier it parses.
  ir::Function fn = ir::parse_unverified("kernel @k(%0: i32, %1: f32) {\n  %2 = add %0, %1 : i32\n}\n");
  CHECK(!ir::verify(fn).empty());
  // A loop body without a yield.
  CHECK(parse_error("kernel @k(%c: i32) {\n  for %c, %c, %c {\n  ^(%i: i32):\n  }\n}\n") ==
        "kernel @k: the text parses but is not valid IR:\n  for: region does not end with yield");
}

TEST_CASE("parser: mangled text is a kdsl::Error or a valid function, never a crash") {
  const std::string original = ir::print(kdsl_test::traced<loop_and_branch<16>>({ArgClass::Divisible16, ArgClass::None, ArgClass::EqualToOne}));
  const std::string alphabet = "%:,[]{}()<>=^@ \n-+.0123456789aefinpt";
  std::mt19937 rng(20240607);
  int errors = 0, parsed = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = original;
    for (int edits = 1 + int(rng() % 3); edits > 0; --edits) {
      size_t at = rng() % text.size();
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: text.erase(at, 1); break;
        case 1: text.insert(at, 1, c); break;
        default: text[at] = c; break;
      }
    }
    try {
      ir::Function fn = ir::parse(text);
      CHECK(ir::verify(fn).empty());
      std::string printed = ir::print(fn);
      CHECK(ir::print(ir::parse(printed)) == printed);
      ++parsed;
    } catch (const Error &) {
      ++errors;
    } catch (const std::exception &e) {
      FAIL_CHECK("not a kdsl::Error: ", std::string(e.what()), "\n", text);
    }
  }
  CHECK(errors > 0);
  CHECK(parsed > 0);  // some edits (a digit in a constant, a space) leave valid IR
}
