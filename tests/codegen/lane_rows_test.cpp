// lane_rows_test.cpp - blocks of a few rows of lanes ([R, 2..16] f32 and i32, [R, 8..32] bytes) on the host: per-row and per-lane broadcasts, loop-carried updates, the sum of each row, and the storage plan's integer lanes
#include <doctest/doctest.h>
#include <kdsl/kdsl.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "codegen/host/storage_plan.h"
#include "tests/codegen/host_assembly.h"
#include "tests/test_util.h"
#include "tests/traced.h"

namespace lane_rows_test {
using namespace kdsl;

// The int-dot decode's arithmetic in miniature. Each step has two sub-steps of integer lanes q
// [R, L] times a scale per row s [R, 1] (broadcast along the lanes, as a k-quant sub-block's
// scale per weight row), summed in i32; the sum goes to f32 times a scale per lane d [1, L]
// (broadcast along the rows) into the f32 accumulator, and into an i32 one as it is. Outputs:
// both accumulators [R, L] and the f32 one's row sums [R] (the lanes summed once after the loop).
template <int R, int L>
void lanes_kernel(Ptr<const i32> q, Ptr<const i32> s, Ptr<const f32> d, Ptr<f32> acc_out, Ptr<i32> int_out, Ptr<f32> row_sums, Scalar<i32> steps) {
  auto rows = expand_dims<1>(arange<R>());                 // [R, 1]
  auto lanes = expand_dims<0>(arange<L>());                // [1, L]
  auto at = rows * L + lanes;                              // [R, L]
  auto [acc, int_acc] = for_range(0, steps, 1, zeros<f32, R, L>(), zeros<i32, R, L>(), [&](auto k, auto acc, auto int_acc) {
    auto scaled = zeros<i32, R, L>();
    for (int sub = 0; sub < 2; ++sub) {
      auto step = k * 2 + sub;
      scaled = scaled + load(q + (step * (R * L) + at)) * load(s + (step * R + rows));
    }
    return std::tuple(acc + cast<f32>(scaled) * load(d + (k * L + lanes)), int_acc + scaled);
  });
  store(acc_out + at, acc);
  store(int_out + at, int_acc);
  store(row_sums + arange<R>(), sum<1>(acc));
}

template <int R, int L>
void check_lanes(std::mt19937 &rng, int steps) {
  CAPTURE(R);
  CAPTURE(L);
  CAPTURE(steps);
  std::uniform_int_distribution<int32_t> quant(-100, 100), scale(-60, 60);
  std::uniform_real_distribution<float> lane_scale(-1.0f, 1.0f);
  std::vector<int32_t> q(size_t(2 * steps * R * L)), s(size_t(2 * steps * R));
  std::vector<float> d(size_t(steps * L));
  for (int32_t &v : q) v = quant(rng);
  for (int32_t &v : s) v = scale(rng);
  for (float &v : d) v = lane_scale(rng);
  std::vector<float> acc(static_cast<size_t>(R * L), -1.0f), sums(static_cast<size_t>(R), -1.0f);
  std::vector<int32_t> ints(size_t(R * L), -1);
  compile<lanes_kernel<R, L>>(kdsl_test::cpu())(grid(1), q.data(), s.data(), d.data(), acc.data(), ints.data(), sums.data(), steps);
  for (int r = 0; r < R; ++r) {
    double row_total = 0, row_magnitude = 0;
    for (int l = 0; l < L; ++l) {
      int64_t exact = 0;
      double total = 0, magnitude = 0;
      for (int k = 0; k < steps; ++k) {
        int64_t scaled = 0;
        for (int sub = 0; sub < 2; ++sub) {
          const int step = 2 * k + sub;
          scaled += int64_t(q[size_t((step * R + r) * L + l)]) * s[size_t(step * R + r)];
        }
        exact += scaled;
        total += double(scaled) * d[size_t(k * L + l)];
        magnitude += std::fabs(double(scaled) * d[size_t(k * L + l)]);
      }
      CAPTURE(r);
      CAPTURE(l);
      CHECK(ints[size_t(r * L + l)] == exact);
      // Each step's product rounds once in f32 (the integers are exact), then the sum.
      CHECK(std::fabs(acc[size_t(r * L + l)] - total) <= 1e-6 * magnitude + 1e-30);
      row_total += total, row_magnitude += magnitude;
    }
    CHECK(std::fabs(sums[size_t(r)] - row_total) <= 2e-6 * row_magnitude + 1e-30);
  }
}

TEST_CASE("lane rows: per-row and per-lane scales, loop-carried lanes and their row sums, against exact and float64 references") {
  KDSL_TEST_RNG(rng);
  for (int steps : {1, 3, 17}) {
    check_lanes<1, 4>(rng, steps);   // one row: a vector of 4
    check_lanes<8, 4>(rng, steps);   // rows two to a vector
    check_lanes<3, 4>(rng, steps);   // an odd row count: one row a vector
    check_lanes<6, 2>(rng, steps);   // 2 lanes: rows two to a vector (6 is not a multiple of 4)
    check_lanes<4, 2>(rng, steps);   // rows four to a vector
    check_lanes<2, 8>(rng, steps);   // one row fills a vector
    check_lanes<2, 16>(rng, steps);  // a row wider than a vector of 8
    check_lanes<5, 3>(rng, steps);   // 3 lanes: element by element, as before
  }
}

// The storage plan computes integer lanes that are data (what dot4 and loads give, times
// scales) where the program computes them, and keeps fusing integer index arithmetic and f32
// chains with one use.
TEST_CASE("lane rows: the storage plan stores integer data lanes and fuses index arithmetic") {
  ir::Function fn = kdsl_test::traced<lanes_kernel<8, 4>>();
  codegen::StoragePlan plan = codegen::plan_storage(fn);
  // Data: what a load gives, a loop's carried values, and arithmetic on either (in program order).
  std::vector<bool> data(fn.values.size(), false);
  int int_data = 0, int_data_stored = 0, f32_products = 0, f32_products_fused = 0, int_index = 0, int_index_fused = 0;
  auto walk = [&](auto &self, const ir::Region &r, bool in_loop) -> void {
    for (const ir::Op &op : r.ops) {
      for (const ir::Region &inner : op.regions) {
        for (size_t a = 1; a < inner.args.size(); ++a) data[size_t(inner.args[a])] = true;
        self(self, inner, true);
      }
      if (op.results.size() != 1) continue;
      const ir::ValueId v = op.results[0];
      bool from_data = op.kind == ir::OpKind::Load;
      for (ir::ValueId operand : op.operands) from_data = from_data || data[size_t(operand)];
      data[size_t(v)] = from_data;
      const ir::Type &t = fn.type(v);
      if (t.shape.rank != 2 || t.shape[0] != 8 || t.shape[1] != 4 || t.is_ptr || (op.kind != ir::OpKind::Mul && op.kind != ir::OpKind::Add)) continue;
      const codegen::Storage storage = plan.storage[size_t(v)];
      if (t.elem == DType::I32 && from_data) ++int_data, int_data_stored += storage == codegen::Storage::Array;
      if (t.elem == DType::I32 && !from_data) ++int_index, int_index_fused += storage == codegen::Storage::Fused;
      if (in_loop && t.elem == DType::F32 && op.kind == ir::OpKind::Mul) ++f32_products, f32_products_fused += storage == codegen::Storage::Fused;
    }
  };
  walk(walk, fn.body, false);
  CHECK(int_data == 5);  // two products by the row scales, two sums of them, the i32 accumulator's update
  CHECK(int_data_stored == int_data);
  CHECK(int_index >= 3);  // rows * L + lanes, and each sub-step's offsets
  CHECK(int_index_fused == int_index);
  CHECK(f32_products == 1);
  CHECK(f32_products_fused == 1);
}

}  // namespace lane_rows_test

namespace lane_rows_test {

// Bit work on integer lanes, as Q5_0's f32 decode spreads the fifth bits (kernels/
// decoded_formats.h): a word per row [R, 1] shifted right by each lane's own amount [1, L]
// (0..L-1), masked, shifted left and or-ed with the lanes' nibbles; xor and a left shift by
// lane too; summed over steps in a loop (so the lanes are data computed as rows of vectors).
template <int R, int L>
void bit_lanes_kernel(Ptr<const i32> words, Ptr<const i32> q, Ptr<i32> out, Scalar<i32> steps) {
  auto rows = expand_dims<1>(arange<R>());   // [R, 1]
  auto lanes = expand_dims<0>(arange<L>());  // [1, L]
  auto at = rows * L + lanes;
  auto total = for_range(0, steps, 1, zeros<i32, R, L>(), [&](auto k, auto total) {
    auto word = load(words + (k * R + rows));  // [R, 1]
    auto quants = load(q + (k * (R * L) + at));
    auto fifth = ((word >> lanes) & 1) << 4;
    return total + ((quants & 15) | fifth) + ((quants ^ word) << (lanes & 3));
  });
  store(out + at, total);
}

template <int R, int L>
void check_bit_lanes(std::mt19937 &rng, int steps) {
  CAPTURE(R);
  CAPTURE(L);
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::vector<int32_t> words(size_t(steps * R)), q(size_t(steps * R * L)), out(size_t(R * L), -1);
  for (int32_t &v : words) v = any(rng);
  for (int32_t &v : q) v = any(rng);
  compile<bit_lanes_kernel<R, L>>(kdsl_test::cpu())(grid(1), words.data(), q.data(), out.data(), steps);
  int bad = 0;
  for (int r = 0; r < R; ++r)
    for (int l = 0; l < L; ++l) {
      uint32_t want = 0;
      for (int k = 0; k < steps; ++k) {
        const int32_t w = words[size_t(k * R + r)], x = q[size_t((k * R + r) * L + l)];
        const uint32_t fifth = uint32_t((w >> l) & 1) << 4;  // i32 >> is arithmetic, as the kernel's
        want += (uint32_t(x & 15) | fifth) + (uint32_t(x ^ w) << (l & 3));
      }
      if (out[size_t(r * L + l)] != int32_t(want) && bad++ < 5) FAIL_CHECK("out[", r, ", ", l, "]: got ", out[size_t(r * L + l)], ", want ", int32_t(want));
    }
  CHECK(bad == 0);
}

}  // namespace lane_rows_test

TEST_CASE("lane rows: shifts by each lane's own amount, masks, xor and or on integer lanes, against a scalar reference") {
  KDSL_TEST_RNG(rng);
  lane_rows_test::check_bit_lanes<8, 8>(rng, 3);
  lane_rows_test::check_bit_lanes<3, 16>(rng, 2);  // one row a vector group, a ragged row count
  lane_rows_test::check_bit_lanes<4, 4>(rng, 5);
}

namespace lane_rows_test {

// Byte lanes, as Q5_0's integer dot builds its quants (kernels/decoded_int_dot.h): a row of
// 16 nibbles [N, 16] from qs, each with a fifth bit from qh's two bytes for its half [N, 2, 1],
// spread on i32 lanes [N, 2, 8], narrowed to bytes and reshaped to the row of 16; the high
// nibbles with qh's next two bytes. Signed bytes too: i32 narrowed to i8 (wrapping), shifted
// arithmetically, xor-ed with the unsigned quants, widened back with their sign.
template <int N>
void byte_lanes_kernel(Ptr<const u8> qs, Ptr<const u8> qh, Ptr<const i32> words, Ptr<u8> low_out, Ptr<u8> high_out, Ptr<i32> signed_out) {
  auto rows = expand_dims<1>(arange<N>());      // [N, 1]
  auto sixteen = expand_dims<0>(arange<16>());  // [1, 16]
  auto at = rows * 16 + sixteen;
  auto q = load(qs + at);  // [N, 16]
  auto lane = reshape<1, 1, 8>(arange<8>());
  auto pair = reshape<1, 2, 1>(arange<2>());
  auto row_bytes = reshape<N, 1, 1>(arange<N>()) * 4;
  auto fifth = [&](int half) {  // [N, 16] bytes: bit i of the half's qh bytes as 16 or 0
    auto h = load(qh + (row_bytes + (2 * half) + pair));  // [N, 2, 1]
    return reshape<N, 16>(cast<u8>(((cast<i32>(h) >> lane) & 1) << 4));
  };
  store(low_out + at, (q & 15) | fifth(0));
  store(high_out + at, (q >> 4) | fifth(1));
  auto narrowed = cast<i8>(load(words + at));
  auto mixed = (narrowed >> 2) ^ cast<i8>(q);
  store(signed_out + at, cast<i32>(mixed) + cast<i32>(narrowed));
}

template <int N>
void check_byte_lanes(std::mt19937 &rng) {
  CAPTURE(N);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::vector<uint8_t> qs(size_t(N * 16)), qh(size_t(N * 4)), low(size_t(N * 16), 0xee), high(size_t(N * 16), 0xee);
  std::vector<int32_t> words(size_t(N * 16)), mixed(size_t(N * 16), -1);
  for (uint8_t &v : qs) v = uint8_t(byte(rng));
  for (uint8_t &v : qh) v = uint8_t(byte(rng));
  for (int32_t &v : words) v = any(rng);
  compile<byte_lanes_kernel<N>>(kdsl_test::cpu())(grid(1), qs.data(), qh.data(), words.data(), low.data(), high.data(), mixed.data());
  int bad = 0;
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < 16; ++i) {
      const size_t at = size_t(n * 16 + i);
      auto fifth = [&](int half) { return ((qh[size_t(n * 4 + 2 * half + i / 8)] >> (i % 8)) & 1) << 4; };
      const int want_low = (qs[at] & 15) | fifth(0), want_high = (qs[at] >> 4) | fifth(1);
      const int8_t narrowed = int8_t(uint8_t(uint32_t(words[at])));
      const int want_mixed = int8_t(int8_t(narrowed >> 2) ^ int8_t(qs[at])) + narrowed;
      if ((low[at] != want_low || high[at] != want_high || mixed[at] != want_mixed) && bad++ < 5)
        FAIL_CHECK("[", n, ", ", i, "]: got ", int(low[at]), " ", int(high[at]), " ", mixed[at], ", want ", want_low, " ", want_high, " ", want_mixed);
    }
  CHECK(bad == 0);
}

}  // namespace lane_rows_test

TEST_CASE("lane rows: byte lanes (a quant block's nibbles and fifth bits, signed bytes) as vectors, against a scalar reference") {
  KDSL_TEST_RNG(rng);
  lane_rows_test::check_byte_lanes<8>(rng);  // groups of two rows of 16, each from four rows of the [N, 2, 8] fifth bits
  lane_rows_test::check_byte_lanes<3>(rng);  // a ragged row count: one row a group
  lane_rows_test::check_byte_lanes<1>(rng);
  // Vectors, not bytes inserted one at a time: element by element, LLVM rebuilt each row from
  // scalar shifts and byte inserts.
  const std::string assembly = kdsl_test::host_assembly(kdsl_test::traced<lane_rows_test::byte_lanes_kernel<8>>(), "byte_lanes");
  CHECK(assembly.find("pinsrb") == std::string::npos);
  CHECK(assembly.find("pextrb") == std::string::npos);
}

namespace lane_rows_test {

// The prefill's byte dot of Q5_0-style quants (kernels/decoded_int_dot.h, tile_dot): x [M, 16]
// i8 by trans(W), W the nibbles of qs or-ed with the fifth bits of qh's pair of bytes for the
// half, spread along the lanes ([N, 2, 8]) and reshaped to rows of 16, read as i8 by the dot.
// W is computed into the dot's operand array in byte lanes; element by element LLVM gathered
// it a byte insert at a time (1112 vpinsrb in the Q5_0 prefill kernel).
template <int M, int N>
void fifth_bit_dot_kernel(Ptr<const i8> x, Ptr<const u8> qs, Ptr<const u8> qh, Ptr<i32> out) {
  auto sixteen = expand_dims<0>(arange<16>());  // [1, 16]
  auto q = load(qs + (expand_dims<1>(arange<N>()) * 16 + sixteen));  // [N, 16]
  auto pair_bytes = load(qh + (reshape<N, 1, 1>(arange<N>()) * 2 + reshape<1, 2, 1>(arange<2>())));  // [N, 2, 1]
  auto lane_bit = reshape<1, 1, 16>(cast<u8>(full<i32, 16>(1) << (arange<16>() & 7)));
  auto fifth = reshape<N, 16>(minimum(reshape<1, N, 16>(broadcast_to<N, 2, 8>(pair_bytes)) & lane_bit, 1) << 4);
  auto w = cast<i8>((q & 15) | fifth);
  auto rows = expand_dims<1>(arange<M>());
  store(out + (rows * N + expand_dims<0>(arange<N>())), dot(load(x + (rows * 16 + sixteen)), trans(w)));
}

void check_fifth_bit_dot(std::mt19937 &rng) {
  constexpr int M = 4, N = 32;
  std::uniform_int_distribution<int> byte(0, 255), signed_byte(-128, 127);
  std::vector<int8_t> x(size_t(M * 16));
  std::vector<uint8_t> qs(size_t(N * 16)), qh(size_t(N * 2));
  for (int8_t &v : x) v = int8_t(signed_byte(rng));
  for (uint8_t &v : qs) v = uint8_t(byte(rng));
  for (uint8_t &v : qh) v = uint8_t(byte(rng));
  std::vector<int32_t> out(size_t(M * N), -1);
  compile<lane_rows_test::fifth_bit_dot_kernel<M, N>>(kdsl_test::cpu())(grid(1), x.data(), qs.data(), qh.data(), out.data());
  int bad = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int32_t want = 0;
      for (int i = 0; i < 16; ++i) want += x[size_t(m * 16 + i)] * ((qs[size_t(n * 16 + i)] & 15) | (((qh[size_t(n * 2 + i / 8)] >> (i % 8)) & 1) << 4));
      if (out[size_t(m * N + n)] != want && bad++ < 5) FAIL_CHECK("[", m, ", ", n, "]: got ", out[size_t(m * N + n)], ", want ", want);
    }
  CHECK(bad == 0);
  const std::string assembly = kdsl_test::host_assembly(kdsl_test::traced<lane_rows_test::fifth_bit_dot_kernel<M, N>>(), "fifth_bit_dot");
  size_t inserts = 0;
  for (size_t at = assembly.find("pinsrb"); at != std::string::npos; at = assembly.find("pinsrb", at + 1)) ++inserts;
  CHECK(inserts <= size_t(2 * N));  // at most qh's pair a row; the 16 bytes of each row come as vectors
}

}  // namespace lane_rows_test

TEST_CASE("lane rows: a byte dot's transposed operand built from fifth bits in byte lanes, against a scalar reference") {
  KDSL_TEST_RNG(rng);
  lane_rows_test::check_fifth_bit_dot(rng);
}
