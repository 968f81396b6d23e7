// value_ranges_test.cpp - the bounds ir::ValueRanges proves for integer blocks (masks, shifts, ors, arithmetic that cannot wrap), and the whole range wherever it cannot
#include <doctest/doctest.h>

#include <vector>

#include <kdsl/kdsl.h>

#include "ir/value_ranges.h"
#include "tests/traced.h"

namespace {
using namespace kdsl;

// Each store's value is one case, in this order.
void u8_cases(Ptr<const u8> q, Ptr<u8> out) {
  auto j = arange<16>();
  auto x = load(q + j);
  store(out + j, x & 15);                          // 0: a nibble
  store(out + j, x >> 4);                          // 1: the other nibble
  store(out + j, (x & 15) | (((x >> 6) & 3) << 4));  // 2: Q6_K's six bits
  store(out + j, x);                               // 3: loaded: anything
  store(out + j, (x & 200) + (x & 100));           // 4: may pass 255 and wrap: anything
  store(out + j, (x & 15) + (x >> 4));             // 5: 0..30
  store(out + j, x << 1);                          // 6: shifts out high bits: anything
  store(out + j, minimum(x, full<u8, 16>(100)));   // 7: 0..100
  store(out + j, where(x > 3, x & 7, x >> 5));     // 8: 0..7
  store(out + j, broadcast_to<16>(reshape<1>(full<u8, 1>(200))));  // 9: a constant through views
}

void i8_cases(Ptr<const i8> q, Ptr<i8> out) {
  auto j = arange<16>();
  auto x = load(q + j);
  store(out + j, x >> 1);                          // 0: arithmetic: -64..63
  store(out + j, x & 127);                         // 1: 0..127
  store(out + j, x & -2);                          // 2: a negative mask proves nothing
  store(out + j, (x >> 2) - (x >> 2));             // 3: -32 - 31 .. 31 + 32: fits
  store(out + j, cast<i8>(load(reinterpret<u8>(q) + j) >> 1));  // 4: u8 0..127 fits i8
  store(out + j, cast<i8>(load(reinterpret<u8>(q) + j)));       // 5: u8 past 127 wraps: anything
  store(out + j, maximum(x, full<i8, 16>(-127)));              // 6: kept from -128
  store(out + j, where(x > 0, full<i8, 16>(-127), full<i8, 16>(113)));  // 7: a grid of constants
}

std::vector<std::optional<ir::ValueRange>> store_ranges(const ir::Function &fn) {
  ir::ValueRanges ranges(fn);
  std::vector<std::optional<ir::ValueRange>> found;
  ir::walk(fn.body, [&](const ir::Op &op) {
    if (op.kind == OpKind::Store) found.push_back(ranges.of(op.operands[1]));
  });
  return found;
}

void check_range(const std::optional<ir::ValueRange> &got, int64_t lo, int64_t hi) {
  REQUIRE(got.has_value());
  CHECK(got->lo == lo);
  CHECK(got->hi == hi);
}

TEST_CASE("ir::ValueRanges: u8 masks, shifts, ors, min and select give their bounds; loads, wrapping sums and left shifts the whole range") {
  auto r = store_ranges(kdsl_test::traced<u8_cases>());
  REQUIRE(r.size() == 10);
  check_range(r[0], 0, 15);
  check_range(r[1], 0, 15);
  check_range(r[2], 0, 63);
  check_range(r[3], 0, 255);
  check_range(r[4], 0, 255);
  check_range(r[5], 0, 30);
  check_range(r[6], 0, 255);
  check_range(r[7], 0, 100);
  check_range(r[8], 0, 7);
  check_range(r[9], 200, 200);
}

TEST_CASE("ir::ValueRanges: i8 arithmetic shifts, non-negative masks, subtraction that fits, casts that keep or lose the value") {
  auto r = store_ranges(kdsl_test::traced<i8_cases>());
  REQUIRE(r.size() == 8);
  check_range(r[0], -64, 63);
  check_range(r[1], 0, 127);
  check_range(r[2], -128, 127);
  check_range(r[3], -63, 63);
  check_range(r[4], 0, 127);
  check_range(r[5], -128, 127);
  check_range(r[6], -127, 127);
  check_range(r[7], -127, 113);
}

TEST_CASE("ir::ValueRanges: no bounds for floats, pointers or i64") {
  auto fn = kdsl_test::traced<u8_cases>();
  ir::ValueRanges ranges(fn);
  int pointers = 0;
  for (ir::ValueId v = 0; v < ir::ValueId(fn.values.size()); ++v)
    if (fn.type(v).is_ptr) {
      CHECK_FALSE(ranges.of(v).has_value());
      ++pointers;
    }
  CHECK(pointers > 0);
}

}  // namespace
