// debug_test.cpp - device_print's lines (whole, one per program and call) and device_assert's launch error, on the CPU
#include <fmt/format.h>
#include <unistd.h>

#include <kdsl/kdsl.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "tests/stream_capture.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace debug_test {

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

void print_values(Ptr<f32> x, Ptr<i32> codes) {
  auto r = expand_dims<1>(arange<2>());
  auto c = expand_dims<0>(arange<3>());
  auto tile = load(x + program_id(0) * 6 + r * 3 + c);
  device_print("tile", tile, program_id(0) * 10);
  kdsl::print("mask", load(codes + arange<4>()) > 0);
}

// Many programs each print one long line: no line may be cut by another.
void print_many(Ptr<i32> x) {
  kdsl::print("row", program_id(0) * 1000 + arange<64>());
  store(x + program_id(0), program_id(0));
}

void print_in_loop(Ptr<i32> n) {
  for_range(0, load(n), 1, [&](auto i) { device_print("i", i); });
}

// Programs whose x holds a negative value fail; each program stores 1 after its assert.
void check_positive(Ptr<f32> x, Ptr<i32> done, Scalar<i32> n) {
  auto offs = program_id(0) * 16 + arange<16>();
  auto m = offs < n;
  device_assert(load(x + offs, m, 1.0f) >= 0.0f || !m, "x must not be negative");
  store(done + program_id(0), 1);
}

void check_scalar(Scalar<i32> k) {
  device_assert(k < 10, "k < 10");
}

}  // namespace debug_test

using namespace debug_test;

TEST_CASE("device_print on the CPU: one line per program and call, with the program id and nested brackets") {
  std::vector<float> x{0.5f, 1, 1.5f, 2, 2.5f, 3, -1, -2, -3, -4, -5, -6};
  std::vector<int32_t> codes{0, 3, -1, 7};
  StdoutCapture out;
  compile<print_values>(cpu())(grid(2), x.data(), codes.data());
  std::vector<std::string> lines = lines_of(out.text());
  std::sort(lines.begin(), lines.end());  // the two programs may run in either order
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "pid (0, 0, 0) mask: [false, true, false, true]");
  CHECK(lines[1] == "pid (0, 0, 0) tile: [[0.5, 1, 1.5], [2, 2.5, 3]] 0");
  CHECK(lines[2] == "pid (1, 0, 0) mask: [false, true, false, true]");
  CHECK(lines[3] == "pid (1, 0, 0) tile: [[-1, -2, -3], [-4, -5, -6]] 10");
}

TEST_CASE("device_print on the CPU: lines of programs running at once are never cut by one another") {
  const int programs = 200;
  std::vector<int32_t> x(programs);
  StdoutCapture out;
  compile<print_many>(Device::cpu(4))(grid(programs), x.data());
  std::vector<std::string> lines = lines_of(out.text());
  REQUIRE(lines.size() == size_t(programs));
  std::vector<bool> seen(programs);
  for (const std::string &line : lines) {
    int p = -1;
    REQUIRE(std::sscanf(line.c_str(), "pid (%d, 0, 0) row:", &p) == 1);
    REQUIRE(p >= 0);
    REQUIRE(p < programs);
    std::string want = fmt::format("pid ({}, 0, 0) row: [", p);
    for (int i = 0; i < 64; ++i) want += fmt::format("{}{}", i ? ", " : "", p * 1000 + i);
    CHECK(line == want + "]");
    seen[size_t(p)] = true;
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](bool s) { return s; }));
}

TEST_CASE("device_print inside for_range prints at every iteration") {
  int32_t n = 3;
  StdoutCapture out;
  compile<print_in_loop>(cpu())(grid(1), &n);
  CHECK(out.text() == "pid (0, 0, 0) i: 0\npid (0, 0, 0) i: 1\npid (0, 0, 0) i: 2\n");
}

TEST_CASE("device_assert on the CPU: the launch throws naming kernel, program, element and message; the failing program stops there") {
  const int n = 70;  // 5 programs, the last ragged
  std::vector<float> x(n, 1.0f);
  x[2 * 16 + 5] = -1;  // program 2, element 5
  x[3 * 16 + 9] = -3;  // program 3 fails too: the first program is named
  std::vector<int32_t> done(5, 0);
  auto k = compile<check_positive>(cpu());
  CHECK_THROWS_WITH_AS(k(grid(5), x.data(), done.data(), n),
                       doctest::Contains("kernel 'debug_test::check_positive': device_assert failed in program (2, 0, 0) at element [5]: x must "
                                         "not be negative (2 programs failed; the first is named)"),
                       Error);
  CHECK(done == std::vector<int32_t>{1, 1, 0, 0, 1});  // the other programs ran to their end
  // A launch that passes throws nothing, and an earlier failure is not reported again.
  x[2 * 16 + 5] = x[3 * 16 + 9] = 0;
  CHECK_NOTHROW(k(grid(5), x.data(), done.data(), n));
  CHECK(done == std::vector<int32_t>{1, 1, 1, 1, 1});
}

TEST_CASE("device_assert on a scalar names no element") {
  auto k = compile<check_scalar>(cpu());
  CHECK_NOTHROW(k(grid(3), 9));
  CHECK_THROWS_WITH_AS(k(grid(3), 12), doctest::Contains("device_assert failed in program (0, 0, 0) at the scalar condition: k < 10 (3 programs failed"), Error);
}

TEST_CASE("KDSL_ASSERT=0 compiles device_assert out of kernels traced from then on") {
  std::vector<float> x(16, -1.0f);
  std::vector<int32_t> done(1, 0);
  ::setenv("KDSL_ASSERT", "0", 1);
  auto unchecked = compile<check_positive>(cpu());  // a new kernel object: traced afresh
  CHECK_NOTHROW(unchecked(grid(1), x.data(), done.data(), 16));
  ::unsetenv("KDSL_ASSERT");
  CHECK(done[0] == 1);
  auto checked = compile<check_positive>(cpu());
  CHECK_THROWS_AS(checked(grid(1), x.data(), done.data(), 16), Error);
}
