// atomics_test.cpp - atomic_max, atomic_min, atomic_xchg and atomic_cas from many programs at once, masks, and f32's order with signed zeros and NaNs
#include <kdsl/kdsl.h>

#include <algorithm>
#include <bit>
#include <map>
#include <set>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace atomics_test {

constexpr int kBlock = 32;
constexpr int kSlots = 4;

// Four programs' worth of threads contend for a few addresses (the pool has more threads than
// the machine has cores, so programs really interleave).
inline const Device &contended() {
  static const Device device = Device::cpu(4);
  return device;
}

// Every element folds x[i] into slot i % kSlots of maxes and mins; old values kept per element.
template <class T>
void extremes(Ptr<T> x, Ptr<T> maxes, Ptr<T> mins, Ptr<T> old_max, Ptr<T> old_min, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto v = load(x + offs, m, 0);
  store(old_max + offs, atomic_max(maxes + offs % kSlots, v, m), m);
  store(old_min + offs, atomic_min(mins + offs % kSlots, v, m), m);
}

// Every element swaps its own id into one slot: the values returned and the last one left
// are each id (and the initial value) exactly once.
template <class T>
void exchange(Ptr<T> slot, Ptr<T> old, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  store(old + offs, atomic_xchg(slot + 0 * offs, cast<T>(offs + 1), m), m);
}

// Every element tries to claim slot i % kSlots (holding `free`) with its id + 1: one claim
// per slot succeeds; the others see the winner. Masked-off elements return 0.
template <class T>
void claim(Ptr<T> slots, Ptr<T> old, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  store(old + offs, atomic_cas(slots + offs % kSlots, -1, cast<T>(offs + 1), m));
}

// Element-wise (no contention): memory[i] = max/min(memory[i], v[i]), the old value kept.
void f32_order(Ptr<f32> a, Ptr<f32> b, Ptr<f32> v, Ptr<f32> old_a, Ptr<f32> old_b) {
  auto k = arange<16>();
  auto x = load(v + k);
  store(old_a + k, atomic_max(a + k, x));
  store(old_b + k, atomic_min(b + k, x));
}

// A scalar atomic (rank 0), masked by a scalar condition.
void scalar_cas(Ptr<i32> p, Ptr<i32> old, Scalar<i32> expect) {
  store(old, atomic_cas(p, expect, 42, expect >= 0));
}

}  // namespace atomics_test

using namespace atomics_test;

TEST_CASE_TEMPLATE("frontend: atomic_max and atomic_min from many programs leave the extremes and return values seen", T, f32, i32, u32, i64) {
  KDSL_TEST_RNG(rng);
  using S = storage_t<T>;
  for (int n : {4096, 3001}) {
    CAPTURE(n);
    // u32 values reach past 2^31, so a signed compare would get them wrong.
    auto x = std::is_same_v<T, u32> ? random_values<T>(rng, size_t(n), 0, 4e9) : random_values<T>(rng, size_t(n), -1e6, 1e6);
    HostArray<S> maxes(kSlots), mins(kSlots), old_max{size_t(n)}, old_min{size_t(n)};
    for (int s = 0; s < kSlots; ++s) {
      maxes[size_t(s)] = std::is_same_v<T, u32> ? S(0) : S(-5e5);  // some values stay below it
      mins[size_t(s)] = S(5e5);
    }
    const S max_init = maxes[0], min_init = mins[0];
    compile<extremes<T>>(contended())(grid(cdiv(n, kBlock)), x.data(), maxes.data(), mins.data(), old_max.data(), old_min.data(), n);
    for (int s = 0; s < kSlots; ++s) {
      CAPTURE(s);
      S want_max = max_init, want_min = min_init;
      std::set<S> seen_max{max_init}, seen_min{min_init};  // what a slot can hold at some point
      for (int i = s; i < n; i += kSlots) {
        want_max = std::max(want_max, x[size_t(i)]);
        want_min = std::min(want_min, x[size_t(i)]);
        seen_max.insert(x[size_t(i)]);
        seen_min.insert(x[size_t(i)]);
      }
      CHECK(maxes[size_t(s)] == want_max);
      CHECK(mins[size_t(s)] == want_min);
      int bad = 0;
      for (int i = s; i < n; i += kSlots)
        bad += !seen_max.count(old_max[size_t(i)]) || old_max[size_t(i)] > want_max || !seen_min.count(old_min[size_t(i)]) || old_min[size_t(i)] < want_min;
      CHECK_MESSAGE(bad == 0, bad, " old values were never held by their slot");
    }
  }
}

TEST_CASE_TEMPLATE("frontend: atomic_xchg from many programs passes each value on exactly once", T, f32, i32, u32, i64) {
  using S = storage_t<T>;
  for (int n : {2048, 999}) {
    CAPTURE(n);
    HostArray<S> slot(1, S(0)), old{size_t(n)};
    compile<exchange<T>>(contended())(grid(cdiv(n, kBlock)), slot.data(), old.data(), n);
    std::map<int64_t, int> count;
    for (int i = 0; i < n; ++i) ++count[int64_t(old[size_t(i)])];
    ++count[int64_t(slot[0])];
    CHECK(count.size() == size_t(n) + 1);  // 0 and every id 1..n
    CHECK(count.begin()->first == 0);
    CHECK(count.rbegin()->first == n);
    CHECK(std::all_of(count.begin(), count.end(), [](auto &c) { return c.second == 1; }));
  }
}

TEST_CASE_TEMPLATE("frontend: atomic_cas from many programs lets one claim per slot succeed; masked-off elements return 0", T, f32, i32, i64) {
  using S = storage_t<T>;
  for (int n : {2048, 999}) {
    CAPTURE(n);
    const int padded = int(cdiv(n, kBlock)) * kBlock;
    HostArray<S> slots(kSlots, S(-1)), old(size_t(padded), S(77));
    compile<claim<T>>(contended())(grid(cdiv(n, kBlock)), slots.data(), old.data(), n);
    for (int s = 0; s < kSlots; ++s) {
      CAPTURE(s);
      int winners = 0, others_saw_winner = 0, others = 0;
      for (int i = s; i < n; i += kSlots) {
        if (old[size_t(i)] == S(-1)) {
          ++winners;
          CHECK(slots[size_t(s)] == S(i + 1));
        } else {
          ++others;
          others_saw_winner += old[size_t(i)] == slots[size_t(s)];
        }
      }
      CHECK(winners == 1);
      CHECK(others_saw_winner == others);
    }
    for (int i = n; i < padded; ++i) CHECK(old[size_t(i)] == S(0));
  }
}

TEST_CASE("frontend: f32 atomic_max / atomic_min order signed zeros and NaNs by sign and magnitude") {
  const float nan = std::bit_cast<float>(0x7fc00000u), neg_nan = std::bit_cast<float>(0xffc00000u);
  const float inf = INFINITY;
  // memory, value
  std::vector<std::pair<float, float>> cases{{1, 2},        {-1, -2},     {-3, 2},  {2, -3},    {-0.0f, 0.0f}, {0.0f, -0.0f}, {nan, inf},   {inf, nan},
                                             {neg_nan, -inf}, {-inf, neg_nan}, {nan, 1}, {neg_nan, 1}, {-5, -0.0f},  {1e-45f, -1e-45f}, {-7.5f, -7.25f}, {3, 3}};
  std::vector<float> a, b, v, old_a(16), old_b(16);
  for (auto [memory, value] : cases) {
    a.push_back(memory);
    b.push_back(memory);
    v.push_back(value);
  }
  compile<f32_order>(cpu())(grid(1), a.data(), b.data(), v.data(), old_a.data(), old_b.data());
  // Sign-magnitude order of the bits: map to an integer key that sorts the same way.
  auto key = [](float f) {
    int32_t bits = std::bit_cast<int32_t>(f);
    return bits < 0 ? -int64_t(bits & 0x7fffffff) - 1 : int64_t(bits);
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    auto [memory, value] = cases[i];
    float want_max = key(value) > key(memory) ? value : memory, want_min = key(value) < key(memory) ? value : memory;
    CHECK(std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(want_max));
    CHECK(std::bit_cast<uint32_t>(b[i]) == std::bit_cast<uint32_t>(want_min));
    CHECK(std::bit_cast<uint32_t>(old_a[i]) == std::bit_cast<uint32_t>(memory));
    CHECK(std::bit_cast<uint32_t>(old_b[i]) == std::bit_cast<uint32_t>(memory));
  }
  // The order the key encodes: -NaN < -inf < -1 < -0 < +0 < 1 < inf < +NaN.
  CHECK(std::bit_cast<uint32_t>(a[4]) == 0u);           // max(-0, +0) = +0
  CHECK(std::bit_cast<uint32_t>(b[5]) == 0x80000000u);  // min(+0, -0) = -0
  CHECK(std::isnan(a[6]));                              // +NaN is above inf
  CHECK(a[8] == -inf);                                  // -NaN is below -inf
}

TEST_CASE("frontend: a scalar atomic_cas with a scalar mask") {
  int32_t p = 5, old = -9;
  auto k = compile<scalar_cas>(cpu());
  k(grid(1), &p, &old, 5);
  CHECK(p == 42);
  CHECK(old == 5);
  k(grid(1), &p, &old, 5);  // 42 != 5: no swap
  CHECK(p == 42);
  CHECK(old == 42);
  k(grid(1), &p, &old, -1);  // masked off
  CHECK(p == 42);
  CHECK(old == 0);
}
