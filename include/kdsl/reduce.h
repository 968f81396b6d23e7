// reduce.h - reductions over an axis (sum, max, min, argmax, argmin) and the matrix product dot
#pragma once
#include <kdsl/block.h>
#include <kdsl/ops.h>

namespace kdsl {
namespace detail {

template <int Axis, class E, int... D>
constexpr auto reduced_dims() {
  constexpr std::array<int, sizeof...(D)> src{D...};
  std::array<int, sizeof...(D) - 1> out{};
  for (size_t i = 0, j = 0; i < src.size(); ++i)
    if (int(i) != Axis) out[j++] = src[i];
  return out;
}

template <OpKind kind, int Axis, class ResultElement, class E, int... D>
auto reduce(const Block<E, D...> &x) {
  static_assert(sizeof...(D) > 0, "cannot reduce a scalar");
  static_assert(Axis >= 0 && Axis < int(sizeof...(D)), "reduction axis out of range for this block");
  static_assert(!element_traits<E>::is_ptr, "cannot reduce pointers");
  using R = std::conditional_t<std::is_void_v<ResultElement>, E, ResultElement>;
  constexpr auto out = reduced_dims<Axis, E, D...>();
  return emit_as<block_with<R, out>>(kind, {x.id()}, {Axis});
}

// Reduces every axis, last first, down to a scalar.
template <OpKind kind, class E, int... D>
auto reduce_all(const Block<E, D...> &x) {
  if constexpr (sizeof...(D) == 0) return x;
  else return reduce_all<kind>(reduce<kind, int(sizeof...(D)) - 1, void>(x));
}

}  // namespace detail

// sum<Axis>(x) removes Axis; sum(x) reduces everything to a scalar. f16/bf16 accumulate in f32.
template <int Axis, class E, int... D>
auto sum(const Block<E, D...> &x) { return detail::reduce<OpKind::ReduceSum, Axis, void>(x); }
template <class E, int... D>
auto sum(const Block<E, D...> &x) {
  // f16 / bf16: one f32 sum over every axis, rounded once (not once per axis).
  if constexpr (sizeof...(D) > 1 && (std::is_same_v<E, f16> || std::is_same_v<E, bf16>))
    return cast<E>(detail::reduce_all<OpKind::ReduceSum>(cast<f32>(x)));
  else return detail::reduce_all<OpKind::ReduceSum>(x);
}

template <int Axis, class E, int... D>
auto max(const Block<E, D...> &x) { return detail::reduce<OpKind::ReduceMax, Axis, void>(x); }
template <class E, int... D>
auto max(const Block<E, D...> &x) { return detail::reduce_all<OpKind::ReduceMax>(x); }

template <int Axis, class E, int... D>
auto min(const Block<E, D...> &x) { return detail::reduce<OpKind::ReduceMin, Axis, void>(x); }
template <class E, int... D>
auto min(const Block<E, D...> &x) { return detail::reduce_all<OpKind::ReduceMin>(x); }

// The index (i32) of the first maximum / minimum along Axis.
template <int Axis = 0, class E, int... D>
auto argmax(const Block<E, D...> &x) { return detail::reduce<OpKind::ArgMax, Axis, i32>(x); }
template <int Axis = 0, class E, int... D>
auto argmin(const Block<E, D...> &x) { return detail::reduce<OpKind::ArgMin, Axis, i32>(x); }

// acc + a @ b for a [M, K] and b [K, N]: f16, bf16 and f32 inputs accumulate in f32, i8 in i32.
template <class E, int M, int K, int K2, int N, class A>
Block<A, M, N> dot(const Block<E, M, K> &a, const Block<E, K2, N> &b, const Block<A, M, N> &acc) {
  if constexpr (K != K2) {
    KDSL_STATIC_FAIL(detail::TextBuffer{}.add("dot: inner dimensions differ: a is ").add_shape(Block<E, M, K>::dims).add(" and b is ").add_shape(Block<E, K2, N>::dims),
                     "dot: the inner dimensions of a and b differ");
  }
  static_assert(std::is_same_v<E, f32> || std::is_same_v<E, f16> || std::is_same_v<E, bf16> || std::is_same_v<E, i8>,
                "dot inputs must be f32, f16, bf16 or i8");
  if constexpr (std::is_same_v<E, i8>) static_assert(std::is_same_v<A, i32>, "dot of i8 blocks accumulates in i32");
  else static_assert(std::is_same_v<A, f32>, "dot of floating-point blocks accumulates in f32");
  return detail::emit_as<Block<A, M, N>>(OpKind::Dot, {a.id(), b.id(), acc.id()});
}

template <class E, int M, int K, int K2, int N>
auto dot(const Block<E, M, K> &a, const Block<E, K2, N> &b) {
  using A = std::conditional_t<std::is_same_v<E, i8>, i32, f32>;
  return dot(a, b, zeros<A, M, N>());
}

}  // namespace kdsl
