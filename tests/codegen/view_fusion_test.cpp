// view_fusion_test.cpp - the host storage plan reads a load and its cast where their one reader is: through a one-to-one view (the decode attention's keys), as a one-row dot's B (its values), and only there
#include <doctest/doctest.h>
#include <kdsl/kdsl.h>

#include <cmath>
#include <random>
#include <vector>

#include "codegen/host/storage_plan.h"
#include "kernels/common.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace view_fusion_test {
using namespace kdsl;
using kdsl::kernels::col;
using kdsl::kernels::row;
using kdsl_test::storage_t;

// The decode attention's scores in miniature: R rows of D f16 values, each row's dot product
// with one query row, the rows read through expand_dims (a view that copies nothing). G > 1
// reads every row for G queries: the view then broadcasts, and the rows are kept in an array
// rather than loaded and converted G times.
template <int G, int R, int D>
void scores(Ptr<const f32> q, Ptr<const f16> rows, Ptr<f32> out) {
  auto r = arange<R>();
  auto d = arange<D>();
  auto qv = load(q + (col(arange<G>() * D) + row(d)));                // [G, D]
  auto kt = cast<f32>(load(rows + (col(r * D) + row(d))));           // [R, D]
  auto s = sum<2>(expand_dims<1>(qv) * expand_dims<0>(kt));          // [G, R]
  store(out + (col(arange<G>() * R) + row(r)), s);
}

// A load read through a view after a store to the same memory: fused past the store, it would
// read what the store wrote.
template <int N>
void load_then_overwrite(Ptr<f32> x, Ptr<f32> out) {
  auto i = arange<N>();
  auto kept = reshape<N / 4, 4>(load(x + i) * 2.0f);
  store(x + i, zeros<f32, N>());
  store(out + reshape<N / 4, 4>(i), kept + 1.0f);
}

// The decode attention's values in miniature: out[M, N] = p[M, K] . V, V's K rows of N values
// of type E read through a table of rows (as the paged cache's slots are), widened to f32.
template <int M, int K, int N, class E>
void weighted_rows(Ptr<const f32> p, Ptr<const E> values, Ptr<const i32> rows_at, Ptr<f32> out) {
  auto k = arange<K>();
  auto n = arange<N>();
  auto vt = cast<f32>(load(values + (col(kernels::wide(load(rows_at + k)) * N) + row(kernels::wide(n)))));  // [K, N]
  auto pv = load(p + (col(arange<M>() * K) + row(k)));                                                     // [M, K]
  store(out + (col(arange<M>() * N) + row(n)), dot(pv, vt));
}

// The storage of the value the kernel's one op of `kind` with a 2-D `elem` result gives.
codegen::Storage storage_of(const ir::Function &fn, const codegen::StoragePlan &plan, ir::OpKind kind, DType elem) {
  std::vector<codegen::Storage> found;
  ir::walk(fn.body, [&](const ir::Op &op) {
    if (op.kind == kind && op.results.size() == 1 && fn.type(op.results[0]).elem == elem && fn.type(op.results[0]).shape.rank == 2)
      found.push_back(plan.storage[size_t(op.results[0])]);
  });
  REQUIRE(found.size() == 1);
  return found[0];
}

template <int G, int R, int D>
void check_scores(std::mt19937 &rng) {
  CAPTURE(G);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> q(size_t(G * D));
  std::vector<half> rows(size_t(R * D));
  for (float &v : q) v = value(rng);
  for (half &v : rows) v = half(value(rng));
  std::vector<float> out(size_t(G * R), -7.0f);
  compile<scores<G, R, D>>(kdsl_test::cpu())(grid(1), q.data(), rows.data(), out.data());
  for (int g = 0; g < G; ++g)
    for (int r = 0; r < R; ++r) {
      double want = 0, magnitude = 0;
      for (int d = 0; d < D; ++d) {
        const double term = double(q[size_t(g * D + d)]) * double(float(rows[size_t(r * D + d)]));
        want += term, magnitude += std::fabs(term);
      }
      CAPTURE(g);
      CAPTURE(r);
      CHECK(std::fabs(out[size_t(g * R + r)] - want) <= 1e-6 * magnitude + 1e-30);
    }
}

template <int M, int K, int N, class E>
void check_weighted_rows(std::mt19937 &rng) {
  INFO(M, " x ", K, " by ", K, " x ", N, " ", detail::element_traits<E>::name);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> p(size_t(M * K));
  for (float &v : p) v = value(rng);
  const int stored_rows = K + 3;
  std::vector<storage_t<E>> values(size_t(stored_rows * N));
  for (auto &v : values) v = kdsl_test::to_storage<E>(value(rng));
  std::vector<int32_t> rows_at(static_cast<size_t>(K));
  for (int32_t &r : rows_at) r = int32_t(rng() % uint32_t(stored_rows));
  std::vector<float> out(size_t(M * N), -7.0f);
  compile<weighted_rows<M, K, N, E>>(kdsl_test::cpu())(grid(1), p.data(), values.data(), rows_at.data(), out.data());
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double want = 0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        const double term = double(p[size_t(m * K + k)]) * kdsl_test::as_double(values[size_t(rows_at[size_t(k)] * N + n)]);
        want += term, magnitude += std::fabs(term);
      }
      CAPTURE(m);
      CAPTURE(n);
      CHECK(std::fabs(out[size_t(m * N + n)] - want) <= 1e-6 * magnitude + 1e-30);
    }
}

}  // namespace view_fusion_test

using namespace view_fusion_test;

TEST_CASE("view fusion: a load and its cast read through expand_dims are fused into the scores' reduction, not stored; a broadcasting view keeps them") {
  {
    ir::Function fn = kdsl_test::traced<scores<1, 32, 64>>();
    const codegen::StoragePlan plan = codegen::plan_storage(fn);
    CHECK(storage_of(fn, plan, ir::OpKind::Load, DType::F16) == codegen::Storage::Fused);
    CHECK(storage_of(fn, plan, ir::OpKind::Cast, DType::F32) == codegen::Storage::Fused);
  }
  {
    ir::Function fn = kdsl_test::traced<scores<4, 32, 64>>();
    const codegen::StoragePlan plan = codegen::plan_storage(fn);
    CHECK(storage_of(fn, plan, ir::OpKind::Cast, DType::F32) == codegen::Storage::Array);
  }
  KDSL_TEST_RNG(rng);
  check_scores<1, 32, 64>(rng);
  check_scores<1, 7, 24>(rng);
  check_scores<4, 32, 64>(rng);
}

TEST_CASE("view fusion: a load read through a reshape is not moved past a store to its memory") {
  std::vector<float> x(16), out(16, -7.0f);
  for (int i = 0; i < 16; ++i) x[size_t(i)] = float(i) - 3.5f;
  const std::vector<float> before = x;
  compile<load_then_overwrite<16>>(kdsl_test::cpu())(grid(1), x.data(), out.data());
  for (int i = 0; i < 16; ++i) {
    CAPTURE(i);
    CHECK(out[size_t(i)] == before[size_t(i)] * 2.0f + 1.0f);
    CHECK(x[size_t(i)] == 0.0f);
  }
}

TEST_CASE("view fusion: a one-row dot reads its B's rows where it multiplies them (f32, f16, bf16 loads through a table of rows), ragged; more rows keep B in an array") {
  {
    ir::Function fn = kdsl_test::traced<weighted_rows<1, 32, 64, f16>>();
    const codegen::StoragePlan plan = codegen::plan_storage(fn);
    CHECK(storage_of(fn, plan, ir::OpKind::Load, DType::F16) == codegen::Storage::Fused);
    CHECK(storage_of(fn, plan, ir::OpKind::Cast, DType::F32) == codegen::Storage::Fused);
  }
  {
    ir::Function fn = kdsl_test::traced<weighted_rows<3, 32, 64, f16>>();
    const codegen::StoragePlan plan = codegen::plan_storage(fn);
    CHECK(storage_of(fn, plan, ir::OpKind::Cast, DType::F32) == codegen::Storage::Array);
  }
  KDSL_TEST_RNG(rng);
  check_weighted_rows<1, 32, 64, f16>(rng);
  check_weighted_rows<1, 7, 37, f16>(rng);  // a last vector of 5 columns
  check_weighted_rows<1, 9, 20, bf16>(rng);
  check_weighted_rows<1, 5, 12, f32>(rng);
  check_weighted_rows<3, 7, 37, f16>(rng);
}
