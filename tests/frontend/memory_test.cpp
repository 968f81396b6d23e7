// memory_test.cpp - masked loads with `other`, masked stores, pointer offsets of every integer type, atomic_add
#include <kdsl/kdsl.h>

#include <numeric>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace memory_test {

constexpr int kBlock = 64;

// out[i] = in[i] for i < n, `other` (a literal, then a block) past n; elements where
// keep[i] is false are not stored at all.
template <class T>
void masked_copy(Ptr<T> in, Ptr<T> out_literal, Ptr<T> out_block, Ptr<boolean> keep, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto in_range = offs < n;
  auto k = load(keep + offs);  // keep has the padded length
  store(out_literal + offs, load(in + offs, in_range, -7), k);
  store(out_block + offs, load(in + offs, in_range, cast<T>(offs)), k && (offs % 3 != 0));
}

// A [R, C] tile with the mask given per row ([R, 1]) and per column ([C]), each broadcast.
void masked_tile(Ptr<f32> in, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> cols) {
  auto r = expand_dims<1>(arange<8>());
  auto c = arange<16>();
  auto v = load(in + r * 16 + c, r < rows, 0.5f);
  store(out + r * 16 + c, v, c < cols);
  store(out + 128 + r * 16 + c, 3.0f, r < rows && c < cols);  // a literal value, broadcast
}

// Offsets of each integer type; unsigned ones must not be sign-extended.
void offsets(Ptr<i32> in, Ptr<i32> out) {
  auto k = arange<256>();
  store(out + k, load(in + cast<u8>(k)));
  store(out + 256 + k, load(in + 128 + cast<i8>(k - 128)));
  store(out + 512 + k, load(in + cast<i64>(k)));
  store(out + 768 + k, load(in + cast<u32>(k)));
  store(out + 1024 + k, load(in + (cast<i16>(k) * 2 - cast<i16>(k))));
}

// Many programs add into a few addresses; `old` receives the values seen before each add.
template <class T>
void accumulate(Ptr<T> x, Ptr<T> sums, Ptr<i32> counter, Ptr<i32> old, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  atomic_add(sums + offs % 4, load(x + offs, m), m);
  store(old + offs, atomic_add(counter + 0 * offs, 1, m), m);
  atomic_add(counter + 1, 2);  // unmasked scalar form
}

template <class T>
void check_masked_copy(std::mt19937 &rng, int n) {
  using S = storage_t<T>;
  CAPTURE(n);
  const int padded = int(cdiv(n, kBlock)) * kBlock;
  auto in = random_values<T>(rng, size_t(n), -50, 50);
  auto keep = random_values<boolean>(rng, size_t(padded), 0, 1);
  const S sentinel = to_storage<T>(99);
  std::vector<S> a(size_t(padded), sentinel), b(size_t(padded), sentinel);
  compile<masked_copy<T>>(cpu())(grid(cdiv(n, kBlock)), in.data(), a.data(), b.data(), keep.data(), n);
  std::vector<S> ref_a(a.size()), ref_b(b.size());
  for (int i = 0; i < padded; ++i) {
    S loaded = i < n ? in[size_t(i)] : is_float(T::dtype) ? to_storage<T>(-7) : S(int64_t(-7));  // u8: wraps to 249
    ref_a[size_t(i)] = keep[size_t(i)] ? loaded : sentinel;
    ref_b[size_t(i)] = keep[size_t(i)] && i % 3 != 0 ? (i < n ? in[size_t(i)] : to_storage<T>(i)) : sentinel;
  }
  expect_equal("load(p, mask, -7), stored where keep", a, ref_a);
  expect_equal("load(p, mask, offs), stored where keep and i % 3", b, ref_b);
}

}  // namespace memory_test

TEST_CASE_TEMPLATE("frontend: masked loads give `other` and masked stores leave the rest alone", T, f32, bf16, i32, u8) {
  KDSL_TEST_RNG(rng);
  for (int n : {memory_test::kBlock * 3, memory_test::kBlock * 3 + 7, 5}) memory_test::check_masked_copy<T>(rng, n);
}

TEST_CASE("frontend: 2-D masks broadcast from a row or a column") {
  KDSL_TEST_RNG(rng);
  auto in = random_values<f32>(rng, 128, -1, 1);
  for (auto [rows, cols] : {std::pair{8, 16}, std::pair{5, 11}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    std::vector<float> out(256, -1.0f), ref(256);
    compile<memory_test::masked_tile>(cpu())(grid(1), in.data(), out.data(), rows, cols);
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 16; ++c) {
        ref[size_t(r * 16 + c)] = c < cols ? (r < rows ? in[size_t(r * 16 + c)] : 0.5f) : -1.0f;
        ref[size_t(128 + r * 16 + c)] = r < rows && c < cols ? 3.0f : -1.0f;
      }
    expect_equal("masked tile", out, ref);
  }
}

TEST_CASE("frontend: pointer offsets of every integer type") {
  std::vector<int32_t> in(384), out(1280, -1), ref(1280);
  std::iota(in.begin(), in.end(), 1000);
  compile<memory_test::offsets>(cpu())(grid(1), in.data(), out.data());
  for (int k = 0; k < 256; ++k)
    for (int j = 0; j < 5; ++j) ref[size_t(j * 256 + k)] = 1000 + k;
  expect_equal("offsets (u8, i8, i64, u32, i16)", out, ref);
}

TEST_CASE_TEMPLATE("frontend: atomic_add from many programs sums every contribution", T, f32, i32, u32, i64) {
  using S = storage_t<T>;
  KDSL_TEST_RNG(rng);
  for (int n : {memory_test::kBlock * 40, memory_test::kBlock * 40 + 7}) {
    CAPTURE(n);
    auto x = random_values<T>(rng, size_t(n), 0, 1000);
    for (auto &v : x) v = S(std::round(double(v)));  // integers: any order of adds is exact
    std::vector<S> sums(4, S(5));
    std::vector<int32_t> counter(2, 0), old(size_t(n), -1);
    const int programs = int(cdiv(n, memory_test::kBlock));
    compile<memory_test::accumulate<T>>(cpu())(grid(programs), x.data(), sums.data(), counter.data(), old.data(), n);
    std::vector<S> ref(4, S(5));
    for (size_t i = 0; i < size_t(n); ++i) ref[i % 4] = S(ref[i % 4] + x[i]);
    expect_equal("sums", sums, ref);
    CHECK(counter[0] == n);
    CHECK(counter[1] == 2 * programs);
    // Each add saw a distinct count: the old values are a permutation of 0 .. n-1.
    std::sort(old.begin(), old.end());
    std::vector<int32_t> all(old.size());
    std::iota(all.begin(), all.end(), 0);
    expect_equal("values returned by atomic_add", old, all);
  }
}
