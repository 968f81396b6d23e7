// views_test.cpp - reshape, trans, expand_dims, broadcast_to, broadcasting arithmetic, arange, full and zeros
#include <kdsl/kdsl.h>

#include <functional>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace views_test {

// x with unit axes added: Before in front, After behind.
template <int Before, int After, class B>
auto pad_axes(const B &x) {
  if constexpr (Before > 0) return pad_axes<Before - 1, After>(expand_dims<0>(x));
  else if constexpr (After > 0) return pad_axes<0, After - 1>(expand_dims<B::rank>(x));
  else return x;
}

// Row-major offsets of a block of extents D..., built from one arange per axis (no reshape,
// so the reshape under test is not used to check itself).
template <int... D, std::size_t... A>
auto offsets_impl(std::index_sequence<A...>) {
  constexpr int rank = int(sizeof...(D));
  constexpr std::array<int, sizeof...(D)> dims{D...};
  constexpr auto strides = [&] {
    std::array<int, sizeof...(D)> s{};
    int stride = 1;
    for (int a = rank - 1; a >= 0; --a) s[size_t(a)] = stride, stride *= dims[size_t(a)];
    return s;
  }();
  return broadcast_to<D...>((... + (pad_axes<int(A), rank - 1 - int(A)>(arange<dims[A]>()) * strides[A])));
}
template <int... D>
Block<i32, D...> offsets() {
  return offsets_impl<D...>(std::make_index_sequence<sizeof...(D)>{});
}

template <class T, class E, int... D>
void store_flat(const Ptr<T> &p, const Block<E, D...> &v) {
  if constexpr (sizeof...(D) == 0) store(p, v);
  else store(p + offsets<D...>(), v);
}

// x is in[0:32] as [4, 8]; each view is written row-major after the previous one.
template <class T>
void views(Ptr<T> in, Ptr<T> out) {
  auto x = load(in + offsets<4, 8>());
  int at = 0;
  auto put = [&](const auto &v) {
    store_flat(out + at, v);
    at += int(std::remove_cvref_t<decltype(v)>::numel);
  };
  put(trans(x));
  put(reshape<2, 16>(x));
  put(reshape<32>(x));
  put(reshape<8, 4>(trans(x)));
  put(trans<2, 0, 1>(reshape<2, 2, 8>(x)));
  put(trans<3, 1, 0, 2>(reshape<2, 2, 2, 4>(x)));
  put(broadcast_to<3, 4, 8>(x));
  put(broadcast_to<4, 8>(expand_dims<0>(load(in + arange<8>()))));
  put(broadcast_to<4, 8>(expand_dims<1>(load(in + arange<4>() * 8))));
  put(broadcast_to<2, 3>(load(in + 5)));
  put(expand_dims<0>(x));
  put(expand_dims<2>(x));
  put(cast<T>(arange<3, 11>()));
  put(full<T, 2, 3>(7));
  put(zeros<T, 5>());
  put(x + expand_dims<0>(load(in + 8 + arange<8>())));
  put(expand_dims<1>(load(in + arange<4>())) * x);
  put(expand_dims<1>(load(in + arange<4>())) - load(in + 16 + arange<8>()));
}

using Ref = std::function<double(int)>;  // element k of a view, from x

template <class T>
void check_views(std::mt19937 &rng) {
  auto in = random_values<T>(rng, 32, -100, 100);  // integers: every op below is exact
  for (auto &v : in) v = to_storage<T>(std::round(as_double(v)));
  auto x = [&](int i, int j) { return as_double(in[size_t(i * 8 + j)]); };
  auto flat = [&](int k) { return as_double(in[size_t(k)]); };
  const std::pair<const char *, std::pair<int, Ref>> views[] = {
      {"trans", {32, [&](int k) { return x(k % 4, k / 4); }}},
      {"reshape<2, 16>", {32, flat}},
      {"reshape<32>", {32, flat}},
      {"reshape<8, 4>(trans)", {32, [&](int k) { return x(k % 4, k / 4); }}},
      {"trans<2, 0, 1>", {32, [&](int k) { return flat((k / 2 % 2) * 16 + (k % 2) * 8 + k / 4); }}},  // out[a][b][c] = y[b][c][a]
      {"trans<3, 1, 0, 2>", {32, [&](int k) { return flat((k / 2 % 2) * 16 + (k / 4 % 2) * 8 + (k % 2) * 4 + k / 8); }}},  // y[c][b][d][a]
      {"broadcast_to<3, 4, 8>", {96, [&](int k) { return flat(k % 32); }}},
      {"row broadcast", {32, [&](int k) { return flat(k % 8); }}},
      {"column broadcast", {32, [&](int k) { return flat(k / 8 * 8); }}},
      {"scalar broadcast", {6, [&](int) { return flat(5); }}},
      {"expand_dims<0>", {32, flat}},
      {"expand_dims<2>", {32, flat}},
      {"arange<3, 11>", {8, [](int k) { return 3.0 + k; }}},
      {"full", {6, [](int) { return 7.0; }}},
      {"zeros", {5, [](int) { return 0.0; }}},
      {"[4, 8] + [1, 8]", {32, [&](int k) { return flat(k) + flat(8 + k % 8); }}},
      {"[4, 1] * [4, 8]", {32, [&](int k) { return flat(k / 8) * flat(k); }}},
      {"[4, 1] - [8]", {32, [&](int k) { return flat(k / 8) - flat(16 + k % 8); }}},
  };
  int total = 0;
  for (const auto &v : views) total += v.second.first;
  std::vector<storage_t<T>> out(static_cast<size_t>(total));
  compile<views_test::views<T>>(cpu())(grid(1), in.data(), out.data());
  int at = 0;
  for (const auto &[name, view] : views) {
    expect_close(
        {name, 0, 0}, size_t(view.first), [&](size_t k) { return as_double(out[size_t(at) + k]); },
        [&](size_t k) { return view.second(int(k)); });
    at += view.first;
  }
}

}  // namespace views_test

TEST_CASE_TEMPLATE("frontend: shape views and broadcasting move the right elements", T, f32, i16) {
  KDSL_TEST_RNG(rng);
  views_test::check_views<T>(rng);
}
