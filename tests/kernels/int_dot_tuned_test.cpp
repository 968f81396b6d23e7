// int_dot_tuned_test.cpp - the integer-dot products' tuned points (decode: weight rows per program; a few rows: rows of x by weight rows): tuned once and recorded, and every candidate a record can pick within the quantize-then-integer-dot reference
#include <kdsl/autotune.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "jit_cache/disk_cache.h"
#include "jit_cache/tuning_record.h"
#include "tests/kernels/int8_test_util.h"

namespace {
using namespace kernels_test;
namespace fs = std::filesystem;

// Tunes the point `kernel` of a product of `rows` rows (one launch: its record's key is `key`),
// then makes the record name each of its 3 candidates in turn and checks the product each picks.
void check_tuned_point(std::mt19937 &rng, WeightType t, int rows, int N, int K, const std::string &kernel, const std::string &key) {
  const fs::path dir = kdsl::jit_cache::DiskCache::default_dir();
  const fs::path path = kdsl::jit_cache::tuning_record_path(dir, kernel, key, kdsl_test::cpu().name());
  fs::remove(path);
  kdsl::detail::forget_tuning_choices();
  const int64_t timed = kdsl::tune_stats().timed;
  {
    kdsl::kernels::Library lib(kdsl_test::cpu());
    check_int8_matmul(rng, t, rows, N, K, false, lib);
  }
  CHECK(kdsl::tune_stats().timed == timed + 1);
  std::string problem;
  std::optional<kdsl::jit_cache::TuningRecord> record = kdsl::jit_cache::read_tuning_record(path, problem);
  CAPTURE(problem);
  REQUIRE(record);
  REQUIRE(record->candidates.size() == 3);
  for (const std::string &pick : record->candidates) {
    CAPTURE(pick);
    record->winner = pick;
    REQUIRE(kdsl::jit_cache::write_tuning_record(dir, *record));
    kdsl::detail::forget_tuning_choices();
    const kdsl::TuneStats was = kdsl::tune_stats();
    kdsl::kernels::Library lib(kdsl_test::cpu());  // a new Library asks for the choice afresh
    check_int8_matmul(rng, t, rows, N, K, false, lib);
    CHECK(kdsl::tune_stats().timed == was.timed);  // the record's pick, nothing timed
    CHECK(kdsl::tune_stats().recorded == was.recorded + 1);
  }
  fs::remove(path);
}

std::string shape_key(int N, int K) { return "N=" + std::to_string(kdsl::tune_bucket(N)) + ",K=" + std::to_string(kdsl::tune_bucket(K)); }

}  // namespace

TEST_CASE("kernels: integer-dot decode, tuned once and recorded; every candidate a record can pick within the reference, ragged N") {
  kdsl_test::ScopedEnv on("KDSL_AUTOTUNE", "1");  // the suites run with it off
  KDSL_TEST_RNG(rng);
  // A 32-value format without sums, one with (Q4_1), and a k-quant with super-block sums.
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_1, WeightType::Q4_K}) {
    const int K = 2 * kdsl::kernels::weight_type_info(t).block_elements, N = 37;
    const std::string name(kdsl::kernels::weight_type_info(t).name);
    CAPTURE(name);
    check_tuned_point(rng, t, 1, N, K, "matmul.int_dot_decode<" + name + ">", shape_key(N, K));
  }
}

TEST_CASE("kernels: integer-dot few rows, tuned once and recorded; every candidate a record can pick within the reference, ragged rows and N") {
  kdsl_test::ScopedEnv on("KDSL_AUTOTUNE", "1");
  KDSL_TEST_RNG(rng);
  // One launch each (row_chunks.h): 7 rows of Q8_0 or Q4_0 (at most 16 a launch), no multiple
  // of the candidates' 4 rows of x; 4 rows of Q4_K (at most 4 a launch).
  struct Case {
    WeightType t;
    int rows, launch;
  };
  for (Case c : {Case{WeightType::Q8_0, 7, 7}, Case{WeightType::Q4_0, 7, 7}, Case{WeightType::Q4_K, 4, 4}}) {
    const int K = 2 * kdsl::kernels::weight_type_info(c.t).block_elements, N = 37;
    const std::string name(kdsl::kernels::weight_type_info(c.t).name);
    CAPTURE(name);
    check_tuned_point(rng, c.t, c.rows, N, K, "matmul.int_dot_rows<" + name + ">",
                      "rows=" + std::to_string(kdsl::tune_bucket(c.launch)) + "," + shape_key(N, K));
  }
}
