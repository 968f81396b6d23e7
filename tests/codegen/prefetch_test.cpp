// prefetch_test.cpp - prefetch: a hint that changes no result, never faults, reaches the host's
// machine code, and is checked and printed like any op
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "codegen/codegen.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace {
using namespace kdsl;

// Sums each row of x [rows, n], prefetching DIST elements past every tile: on the last rows the
// hints point past the end of the buffer, which a prefetch must survive.
template <int BK, int DIST>
void row_sums_prefetched(Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
  auto row_start = x + cast<i64>(program_id(0)) * cast<i64>(n);
  auto rk = arange<BK>();
  auto acc = for_range(0, n, BK, zeros<f32, BK>(), [&](auto k, auto acc) {
    auto kk = k + rk;
    prefetch(row_start + kk + DIST);
    return acc + load(row_start + kk, kk < n, 0);
  });
  store(out + program_id(0), sum<0>(acc));
}

TEST_CASE("prefetch: results equal the plain sums at aligned and ragged sizes, hints past the buffer's end included") {
  std::mt19937 rng(kdsl_test::fresh_seed());
  std::uniform_real_distribution<float> dist(-1, 1);
  auto kernel = compile<row_sums_prefetched<64, 4096>>(kdsl_test::cpu());
  for (int n : {64, 256, 1000, 37}) {
    const int rows = 13;
    std::vector<float> x(size_t(rows) * size_t(n)), out(rows);
    for (float &v : x) v = dist(rng);
    kernel(grid(rows), x.data(), out.data(), n);
    for (int r = 0; r < rows; ++r) {
      double ref = 0;
      for (int i = 0; i < n; ++i) ref += x[size_t(r) * size_t(n) + size_t(i)];
      INFO("n ", n, " row ", r);
      CHECK(out[size_t(r)] == doctest::Approx(ref).epsilon(1e-5));
    }
  }
}

TEST_CASE("prefetch: survives the passes (it is an effect) and becomes one prefetch instruction per cache line on the host") {
  ir::Function fn = kdsl_test::traced<row_sums_prefetched<64, 4096>>();
  CHECK(kdsl_test::contains(ir::print(fn), "prefetch %"));
  std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("kdsl-prefetch-test-{}", getpid());
  codegen::DumpOptions dump;
  dump.dir = dir.string();
  dump.ir = dump.asm_text = true;
  codegen::compile(fn, "prefetch_probe", codegen::Target::host(), {}, dump);
  std::ostringstream kir, s;
  for (const auto &e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path());
    (e.path().extension() == ".s" ? s : kir) << in.rdbuf();
  }
  std::filesystem::remove_all(dir);
  CHECK(kdsl_test::contains(kir.str(), "prefetch %"));  // not removed as dead code
#if defined(__x86_64__)
  // 64 f32 pointers per tile are 4 lines: 4 prefetches, unrolled or in a loop, never 64.
  int count = 0;
  for (size_t at = s.str().find("prefetcht0"); at != std::string::npos; at = s.str().find("prefetcht0", at + 1)) ++count;
  CHECK(count >= 1);
  CHECK(count <= 4);
#endif
}

TEST_CASE("prefetch: round trips through the IR text, and the verifier wants pointers") {
  ir::Function fn = kdsl_test::traced<row_sums_prefetched<64, 4096>>();
  std::string text = ir::print(fn);
  CHECK(ir::print(ir::parse(text)) == text);

  const char *bad = R"(kernel @bad(%0: ptr<f32>) {
  %1 = constant[1] : f32[16]
  prefetch %1
}
)";
  std::vector<std::string> problems;
  try {
    problems = ir::verify(ir::parse(bad));
  } catch (const Error &e) {
    problems.push_back(e.what());
  }
  REQUIRE(!problems.empty());
  INFO(problems.front());
  CHECK(kdsl_test::contains(problems.front(), "prefetch"));
  CHECK(kdsl_test::contains(problems.front(), "pointers"));
}

}  // namespace
