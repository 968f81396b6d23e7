// row_chunks_test.cpp - the few-row products' cut of rows into launches: every row once, in order, power-of-two chunks (but near the next power) within a format's largest launch, on the CPU only
#include <doctest/doctest.h>

#include <bit>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <kdsl/half.h>

#include "kernels/launch_recorder.h"
#include "kernels/library.h"
#include "kernels/row_chunks.h"
#include "tests/test_util.h"

namespace {

std::vector<std::pair<int, int>> chunks_of(int rows, int largest = 1 << 30) {
  std::vector<std::pair<int, int>> out;
  kdsl::kernels::detail::for_row_chunks(rows, [&](int first, int count) { out.emplace_back(first, count); }, largest);
  return out;
}

using Chunks = std::vector<std::pair<int, int>>;

}  // namespace

TEST_CASE("kernels: few-row products cut rows into power-of-two launches, all but a count near the next power") {
  CHECK(chunks_of(1) == Chunks{{0, 1}});
  CHECK(chunks_of(2) == Chunks{{0, 2}});
  CHECK(chunks_of(3) == Chunks{{0, 2}, {2, 1}});
  CHECK(chunks_of(5) == Chunks{{0, 4}, {4, 1}});
  CHECK(chunks_of(7) == Chunks{{0, 7}});  // 7 of 8: one 8-row launch, one clamped row
  CHECK(chunks_of(9) == Chunks{{0, 8}, {8, 1}});
  CHECK(chunks_of(11) == Chunks{{0, 8}, {8, 2}, {10, 1}});
  CHECK(chunks_of(12) == Chunks{{0, 8}, {8, 4}});
  CHECK(chunks_of(13) == Chunks{{0, 13}});
  CHECK(chunks_of(16) == Chunks{{0, 16}});
  // At most `largest` rows a launch (a format's few_rows_launch), rounding up only within it.
  CHECK(chunks_of(9, 2) == Chunks{{0, 2}, {2, 2}, {4, 2}, {6, 2}, {8, 1}});
  CHECK(chunks_of(7, 4) == Chunks{{0, 4}, {4, 2}, {6, 1}});
  CHECK(chunks_of(7, 8) == Chunks{{0, 7}});
  CHECK(chunks_of(3, 1) == Chunks{{0, 1}, {1, 1}, {2, 1}});
  CHECK(chunks_of(13, 4) == Chunks{{0, 4}, {4, 4}, {8, 4}, {12, 1}});
  // Every count: the chunks tile [0, rows) in order, each at most 1.5x below its rounding.
  for (int largest : {1, 2, 4, 8, 16})
    for (int rows = 1; rows <= 16; ++rows) {
      CAPTURE(largest);
      CAPTURE(rows);
      int next = 0;
      for (auto [first, count] : chunks_of(rows, largest)) {
        CHECK(first == next);
        CHECK(count >= 1);
        CHECK(int(std::bit_ceil(unsigned(count))) <= largest);  // the launch's block of rows
        next = first + count;
      }
      CHECK(next == rows);
    }
}

namespace {

// The few-row kernels one Library::matmul of `rows` f16 rows records, as "name xL" per launch
// count L, for the CPU or a stand-in GPU. Recorded instead of launched: nothing runs.
std::multiset<std::string> recorded_matmul(int rows, bool gpu) {
  kdsl::kernels::LaunchRecorder recorder(kdsl::kernels::LaunchRecorder::Mode::InsteadOfLaunching, {gpu, gpu ? 132 : 0});
  kdsl::kernels::Library lib(kdsl_test::cpu(), &recorder);
  const int N = 64, K = 96;
  std::vector<float> x(size_t(rows) * K), out(size_t(rows) * N);
  std::vector<kdsl::half> w(size_t(N) * K);
  lib.matmul(x.data(), w.data(), kdsl::DType::F16, nullptr, out.data(), rows, N, K);
  std::multiset<std::string> names;
  for (const kdsl::kernels::RecordedKernel &k : recorder.kernels())
    for (int64_t i = 0; i < k.launches; ++i) names.insert(k.signature.name);
  return names;
}

bool has_kernel(const std::multiset<std::string> &names, const std::string &part) {
  for (const std::string &n : names)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("kernels: 9 dense rows are one register-blocked launch on the CPU, one 16-row launch on a GPU") {
  std::multiset<std::string> cpu = recorded_matmul(9, false);
  CAPTURE(cpu);
  // (A plan of an untuned point records every candidate, so with KDSL_AUTOTUNE=1 the CPU
  // records each matvec_lanes shape; none of them is a second launch for the ninth row.)
  CHECK(has_kernel(cpu, "matvec_lanes<kdsl::F16_tag,"));
  CHECK_FALSE(has_kernel(cpu, "matvec<kdsl::F16_tag,"));
  CHECK_FALSE(has_kernel(cpu, "matvec_rows<"));
  std::multiset<std::string> gpu = recorded_matmul(9, true);
  CAPTURE(gpu);
  CHECK(gpu.size() == 1);
  CHECK(has_kernel(gpu, "matvec_rows<kdsl::F16_tag, 16,"));
}
