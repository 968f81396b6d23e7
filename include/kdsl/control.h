// control.h - run-time control flow while tracing: for_range loops with carried values, and if_
#pragma once
#include <tuple>
#include <type_traits>
#include <vector>

#include <kdsl/block.h>
#include <kdsl/ops.h>

namespace kdsl {
namespace detail {

inline Block<i32> as_index(const Block<i32> &x) { return x; }
template <std::integral I>
Block<i32> as_index(I x) {
  return constant<Block<i32>>(x);
}

template <class T>
std::vector<int32_t> ids_of(const T &values) {
  if constexpr (is_block_v<T>) {
    return {values.id()};
  } else {
    return std::apply([](const auto &...v) { return std::vector<int32_t>{v.id()...}; }, values);
  }
}

template <class Tuple, std::size_t... I>
Tuple blocks_from(const std::vector<int32_t> &ids, std::size_t first, std::index_sequence<I...>) {
  return Tuple(make<std::tuple_element_t<I, Tuple>>(ids[first + I])...);
}

template <class Body, class Iv, class... C>
auto for_range_impl(const Iv &iv_lo, const Block<i32> &hi, const Block<i32> &step, Body &&body, const C &...carried) {
  static_assert((is_block_v<C> && ...), "for_range: carried values must be blocks (write full<T>(x) for a constant)");
  std::vector<int32_t> args = begin_for(iv_lo.id(), hi.id(), step.id(), {carried.id()...});
  auto iv = make<Block<i32>>(args[0]);
  using Carried = std::tuple<C...>;
  Carried inner = blocks_from<Carried>(args, 1, std::index_sequence_for<C...>{});
  using Result = decltype(std::apply([&](const auto &...c) { return body(iv, c...); }, inner));
  if constexpr (sizeof...(C) == 0) {
    static_assert(std::is_void_v<Result>, "for_range without carried values: the body must return nothing");
    body(iv);
    end_for({});
  } else if constexpr (sizeof...(C) == 1) {
    using C0 = std::tuple_element_t<0, Carried>;
    static_assert(std::is_same_v<std::remove_cvref_t<Result>, C0>,
                  "for_range: the body must return a block of the same type (element and shape) as the carried value");
    Result next = std::apply([&](const auto &...c) { return body(iv, c...); }, inner);
    return make<C0>(end_for({next.id()})[0]);
  } else {
    static_assert(std::is_same_v<std::remove_cvref_t<Result>, Carried>,
                  "for_range: the body must return std::tuple of the carried blocks' types, in order");
    Result next = std::apply([&](const auto &...c) { return body(iv, c...); }, inner);
    std::vector<int32_t> results = end_for(ids_of(next));
    return blocks_from<Carried>(results, 0, std::index_sequence_for<C...>{});
  }
}

template <class Tuple, std::size_t... I>
auto for_range_unpack(Tuple &&t, std::index_sequence<I...>) {
  constexpr std::size_t n = std::tuple_size_v<std::remove_cvref_t<Tuple>>;
  return for_range_impl(as_index(std::get<0>(t)), as_index(std::get<1>(t)), as_index(std::get<2>(t)),
                        std::get<n - 1>(t), std::get<3 + I>(t)...);
}

}  // namespace detail

// for_range(lo, hi, step, carried..., body): a loop that runs at kernel run time.
// body(iv, carried...) returns the next carried values (one block, or a std::tuple of them);
// for_range returns the values after the last iteration. With no carried values, body
// returns nothing. C++ loops over compile-time bounds, by contrast, unroll while tracing.
template <class... A>
auto for_range(A &&...args) {
  static_assert(sizeof...(A) >= 4, "for_range(lo, hi, step, carried..., body)");
  auto t = std::forward_as_tuple(args...);
  return detail::for_range_unpack(t, std::make_index_sequence<sizeof...(A) - 4>{});
}

// if_(cond, then) runs `then` where the scalar cond holds; if_(cond, then, otherwise) returns
// the value of the branch taken (both branches return the same block types).
template <class Then>
void if_(const Block<boolean> &cond, Then &&then) {
  detail::begin_if(cond.id());
  then();
  detail::begin_else({});
  detail::end_if({});
}

template <class Then, class Else>
auto if_(const Block<boolean> &cond, Then &&then, Else &&otherwise) {
  using R = std::remove_cvref_t<decltype(then())>;
  if constexpr (!std::is_same_v<R, std::remove_cvref_t<decltype(otherwise())>>) {
    static_assert(std::is_same_v<R, std::remove_cvref_t<decltype(otherwise())>>, "if_: both branches must return the same block types");
    return then();  // never traced: the caller sees then's type, so the error above stays the only one
  } else if constexpr (std::is_void_v<R>) {
    detail::begin_if(cond.id());
    then();
    detail::begin_else({});
    otherwise();
    detail::end_if({});
  } else {
    detail::begin_if(cond.id());
    R a = then();
    detail::begin_else(detail::ids_of(a));
    R b = otherwise();
    std::vector<int32_t> results = detail::end_if(detail::ids_of(b));
    if constexpr (is_block_v<R>) return detail::make<R>(results[0]);
    else return detail::blocks_from<R>(results, 0, std::make_index_sequence<std::tuple_size_v<R>>{});
  }
}

}  // namespace kdsl
