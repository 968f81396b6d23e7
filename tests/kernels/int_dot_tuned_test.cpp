// int_dot_tuned_test.cpp - the integer-dot decode's tuned point (weight rows per program): tuned once and recorded, and every candidate a record can pick within the quantize-then-integer-dot reference
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

}  // namespace

TEST_CASE("kernels: integer-dot decode, tuned once and recorded; every candidate a record can pick within the reference, ragged N") {
  kdsl_test::ScopedEnv on("KDSL_AUTOTUNE", "1");  // the suites run with it off
  KDSL_TEST_RNG(rng);
  const fs::path dir = kdsl::jit_cache::DiskCache::default_dir();
  // A 32-value format without sums, one with (Q4_1), and a k-quant with super-block sums.
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_1, WeightType::Q4_K}) {
    const int K = 2 * kdsl::kernels::weight_type_info(t).block_elements, N = 37;
    const std::string name(kdsl::kernels::weight_type_info(t).name);
    CAPTURE(name);
    const fs::path path = kdsl::jit_cache::tuning_record_path(dir, "matmul.int_dot_decode<" + name + ">",
                                                              "N=" + std::to_string(kdsl::tune_bucket(N)) + ",K=" + std::to_string(kdsl::tune_bucket(K)),
                                                              kdsl_test::cpu().name());
    fs::remove(path);
    kdsl::detail::forget_tuning_choices();
    const int64_t timed = kdsl::tune_stats().timed;
    {
      kdsl::kernels::Library lib(kdsl_test::cpu());
      check_int8_matmul(rng, t, 1, N, K, false, lib);
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
      check_int8_matmul(rng, t, 1, N, K, false, lib);
      CHECK(kdsl::tune_stats().timed == was.timed);  // the record's pick, nothing timed
      CHECK(kdsl::tune_stats().recorded == was.recorded + 1);
    }
    fs::remove(path);
  }
}
