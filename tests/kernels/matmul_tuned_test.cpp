// matmul_tuned_test.cpp - Library::matmul's tuned points (decode, few rows, prefill tiles): tuned once and recorded, and every candidate a record can pick equal to the reference at aligned and ragged sizes
#include <kdsl/autotune.h>

#include <cstdlib>
#include <optional>

#include "jit_cache/disk_cache.h"
#include "jit_cache/tuning_record.h"
#include "kernels/library_dense.h"
#include "tests/kernels/library_test_util.h"

namespace {
using namespace kernels_test;
namespace fs = std::filesystem;
using kdsl::DType;

struct Case {
  int rows, N, K;
  bool bias;
};

// The record a product of these sizes reads and writes (library_dense.h names and keys them).
template <class T>
fs::path record_path(const Case &c) {
  using namespace kdsl::kernels::detail;
  const int64_t nb = kdsl::tune_bucket(c.N), kb = kdsl::tune_bucket(c.K);
  std::string kernel, key;
  if (c.rows == 1) {
    kernel = dense_point_name<T>(DensePoint::Decode, c.bias);
    key = "N=" + std::to_string(nb) + ",K=" + std::to_string(kb);
  } else {
    const bool few = c.rows <= kMaxFewRowsCpu;
    kernel = dense_point_name<T>(few ? DensePoint::FewRows : DensePoint::Prefill, c.bias);
    key = "rows=" + std::to_string(kdsl::tune_bucket(c.rows)) + ",N=" + std::to_string(nb) + ",K=" + std::to_string(kb);
  }
  return kdsl::jit_cache::tuning_record_path(kdsl::jit_cache::DiskCache::default_dir(), kernel, key, kdsl_test::cpu().name());
}

template <class T>
struct Product {
  std::vector<float> x, bias;
  std::vector<typename T::storage> w;
  ReferenceProduct ref;

  Product(std::mt19937 &rng, const Case &c) : x(random_floats(rng, size_t(c.rows) * c.K)), bias(random_floats(rng, size_t(c.N))) {
    auto wf = random_floats(rng, size_t(c.N) * c.K);
    w.resize(wf.size());
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] = typename T::storage(wf[i]);
      wf[i] = float(w[i]);
    }
    ref = reference_matmul(x, wf, c.bias ? bias.data() : nullptr, c.rows, c.N, c.K);
  }

  // A Library of its own, as a new process has: it asks for the choice afresh.
  void check(const Case &c, const std::string &what) const {
    kdsl::kernels::Library lib(kdsl_test::cpu());
    GuardedOutput out(ref.values.size(), -7.0f);
    lib.matmul(x.data(), w.data(), T::dtype, c.bias ? bias.data() : nullptr, out.data(), c.rows, c.N, c.K);
    expect_close_scaled(what, out.values(), ref.values, ref.scale, 1e-5);
    CHECK_MESSAGE(out.intact(), what, " wrote past its rows x N outputs");
  }
};

// Tunes the product's point (timing its candidates, recording the winner), then makes the
// record name each candidate in turn and checks the product each picks.
template <class T>
void check_tuned(std::mt19937 &rng, const Case &c) {
  CAPTURE(std::string(T::text));
  CAPTURE(c.rows);
  CAPTURE(c.N);
  CAPTURE(c.K);
  CAPTURE(c.bias);
  const fs::path path = record_path<T>(c);
  fs::remove(path);
  kdsl::detail::forget_tuning_choices();
  Product<T> p(rng, c);
  const kdsl::TuneStats before = kdsl::tune_stats();
  p.check(c, "matmul, tuned now");
  CHECK(kdsl::tune_stats().timed == before.timed + 1);
  std::string problem;
  std::optional<kdsl::jit_cache::TuningRecord> record = kdsl::jit_cache::read_tuning_record(path, problem);
  CAPTURE(problem);
  REQUIRE(record);
  REQUIRE(record->candidates.size() >= 2);
  CHECK(record->microseconds.size() == record->candidates.size());
  for (const std::string &pick : record->candidates) {
    CAPTURE(pick);
    record->winner = pick;
    REQUIRE(kdsl::jit_cache::write_tuning_record(kdsl::jit_cache::DiskCache::default_dir(), *record));
    kdsl::detail::forget_tuning_choices();
    const kdsl::TuneStats was = kdsl::tune_stats();
    p.check(c, "matmul, candidate " + pick);
    CHECK(kdsl::tune_stats().timed == was.timed);  // the record's pick, nothing timed
    CHECK(kdsl::tune_stats().recorded == was.recorded + 1);
  }
  fs::remove(path);
}

}  // namespace

TEST_CASE("kernels: tuned matmul, every candidate of decode, few rows and prefill equal to the reference, aligned and ragged") {
  kdsl_test::ScopedEnv on("KDSL_AUTOTUNE", "1");
  KDSL_TEST_RNG(rng);
  // Decode: aligned, ragged N and K (the masked last step), with a bias.
  check_tuned<kdsl::f16>(rng, {1, 256, 512, false});
  check_tuned<kdsl::f16>(rng, {1, 37, 300, false});
  check_tuned<kdsl::f32>(rng, {1, 130, 17, true});
  check_tuned<kdsl::bf16>(rng, {1, 64, 96, false});
  // More rows than one row group (matvec_lanes, one launch): rows that are no multiple of either
  // candidate's row block, ragged N and K, every weight type, with and without a bias.
  check_tuned<kdsl::f16>(rng, {7, 37, 300, false});
  check_tuned<kdsl::f16>(rng, {16, 64, 256, true});
  check_tuned<kdsl::f32>(rng, {9, 33, 20, false});
  check_tuned<kdsl::bf16>(rng, {31, 70, 100, true});
  // Prefill tiles: ragged rows, N and K.
  check_tuned<kdsl::f16>(rng, {40, 37, 300, false});
  check_tuned<kdsl::f32>(rng, {70, 130, 96, true});
  check_tuned<kdsl::bf16>(rng, {128, 128, 64, false});
}

TEST_CASE("kernels: tuned matmul with KDSL_AUTOTUNE=0 takes the defaults and records nothing") {
  kdsl_test::ScopedEnv off("KDSL_AUTOTUNE", "0");
  KDSL_TEST_RNG(rng);
  const Case c{1, 64, 96, false};
  fs::remove(record_path<kdsl::f16>(c));
  kdsl::detail::forget_tuning_choices();
  Product<kdsl::f16> p(rng, c);
  const kdsl::TuneStats before = kdsl::tune_stats();
  p.check(c, "matmul, tuning off");
  CHECK(kdsl::tune_stats().timed == before.timed);
  CHECK(kdsl::tune_stats().defaults > before.defaults);
  CHECK(!fs::exists(record_path<kdsl::f16>(c)));
}

TEST_CASE("kernels: matmul of 2-6 rows on the CPU, one row group chosen by the row count, untimed, equal to the reference") {
  kdsl_test::ScopedEnv on("KDSL_AUTOTUNE", "1");
  KDSL_TEST_RNG(rng);
  static_assert(kdsl::kernels::detail::kOneGroupRowsCpu == 6);
  // Every row count of both shapes (4 x 3: 2-4 rows, 6 x 2: 5-6), N ragged against their 3 and
  // 2 weight rows, K ragged against the 8 lanes and the prefetch distance, each weight type.
  for (int rows = 2; rows <= 6; ++rows) {
    CAPTURE(rows);
    const kdsl::TuneStats before = kdsl::tune_stats();
    Product<kdsl::f32>(rng, {rows, 37, 300, rows % 2 == 0}).check({rows, 37, 300, rows % 2 == 0}, "f32, one row group");
    Product<kdsl::f16>(rng, {rows, 70, 17, true}).check({rows, 70, 17, true}, "f16, one row group");
    Product<kdsl::bf16>(rng, {rows, 3, 520, false}).check({rows, 3, 520, false}, "bf16, one row group");
    CHECK(kdsl::tune_stats().timed == before.timed);
  }
}
