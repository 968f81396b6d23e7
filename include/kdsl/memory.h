// memory.h - load, store and atomics (add, max, min, exchange, compare-and-swap) through blocks of pointers, with masks
#pragma once
#include <kdsl/block.h>
#include <kdsl/ops.h>

namespace kdsl {

// Reads *ptrs where mask holds and `other` (default 0) elsewhere; masked-off addresses are
// never touched, so they may point past the end of an array.
template <class T, int... D>
Block<std::remove_const_t<T>, D...> load(const Block<ptr<T>, D...> &ptrs) {
  return detail::emit_as<Block<std::remove_const_t<T>, D...>>(OpKind::Load, {ptrs.id()});
}

template <class T, int... D, int... M, class O = int>
Block<std::remove_const_t<T>, D...> load(const Block<ptr<T>, D...> &ptrs, const Block<boolean, M...> &mask, const O &other = 0) {
  using E = std::remove_const_t<T>;
  constexpr std::array<int, sizeof...(D)> shape{D...};
  auto m = broadcast_to<D...>(mask);
  auto o = detail::lift<E, shape>(other);
  return detail::emit_as<Block<E, D...>>(OpKind::Load, {ptrs.id(), m.id(), o.id()});
}

// Writes value (broadcast to the pointers' shape) to *ptrs where mask holds.
template <class T, int... D, class V>
void store(const Block<ptr<T>, D...> &ptrs, const V &value) {
  static_assert(!std::is_const_v<T>, "store through a Ptr<const T>: the parameter is read-only (declare it Ptr<T> if the kernel writes it)");
  constexpr std::array<int, sizeof...(D)> shape{D...};
  auto v = detail::lift<std::remove_const_t<T>, shape>(value);
  detail::emit_effect(OpKind::Store, {ptrs.id(), v.id()});
}

template <class T, int... D, class V, int... M>
void store(const Block<ptr<T>, D...> &ptrs, const V &value, const Block<boolean, M...> &mask) {
  static_assert(!std::is_const_v<T>, "store through a Ptr<const T>: the parameter is read-only (declare it Ptr<T> if the kernel writes it)");
  constexpr std::array<int, sizeof...(D)> shape{D...};
  auto v = detail::lift<std::remove_const_t<T>, shape>(value);
  auto m = broadcast_to<D...>(mask);
  detail::emit_effect(OpKind::Store, {ptrs.id(), v.id(), m.id()});
}

// A hint that *ptrs will be read soon: the CPU backend fetches their cache lines into the
// cache ahead of the loads (one prefetch per line along the last axis), so a loop streaming
// memory can ask for the data some steps ahead of use. The addresses need not be valid (a
// prefetch never faults) and no mask is needed. The GPU backend drops it: its latency is
// hidden by the other warps.
template <class T, int... D>
void prefetch(const Block<ptr<T>, D...> &ptrs) {
  detail::emit_effect(OpKind::Prefetch, {ptrs.id()});
}

namespace detail {

// One atomic read-modify-write per element where the mask holds: operands are (ptrs,
// values..., mask), each value broadcast to the pointers' shape; returns the old values (0
// where masked off).
template <class T, class V>
constexpr void check_atomic_value() {
  if constexpr (is_block_v<V>) check_same_element<T, typename V::element>();
}

template <OpKind kind, class T, int... D, class... V, int... M>
Block<T, D...> atomic_rmw(const Block<ptr<T>, D...> &ptrs, const Block<boolean, M...> &mask, const V &...values) {
  static_assert(!std::is_const_v<T>, "an atomic through a Ptr<const T>: the parameter is read-only (declare it Ptr<T> if the kernel writes it)");
  (check_atomic_value<T, V>(), ...);
  constexpr std::array<int, sizeof...(D)> shape{D...};
  auto m = broadcast_to<D...>(mask);
  return emit_as<Block<T, D...>>(kind, {ptrs.id(), lift<std::remove_const_t<T>, shape>(values).id()..., m.id()});
}

template <class T>
constexpr bool atomic_arithmetic_type = std::is_same_v<std::remove_const_t<T>, f32> || std::is_same_v<std::remove_const_t<T>, i32> || std::is_same_v<std::remove_const_t<T>, u32> || std::is_same_v<std::remove_const_t<T>, i64>;

}  // namespace detail

// All atomics are relaxed (no ordering of other memory accesses around them, as atomic_add),
// act on global memory one element at a time, and return the values seen before their update
// (0 where the mask is false: those addresses are never touched).

// Atomically adds value to *ptrs where mask holds; returns the values seen before the add.
template <class T, int... D, class V, int... M>
Block<T, D...> atomic_add(const Block<ptr<T>, D...> &ptrs, const V &value, const Block<boolean, M...> &mask) {
  static_assert(detail::atomic_arithmetic_type<T>, "atomic_add supports f32, i32, u32 and i64");
  return detail::atomic_rmw<OpKind::AtomicAdd>(ptrs, mask, value);
}
template <class T, int... D, class V>
Block<T, D...> atomic_add(const Block<ptr<T>, D...> &ptrs, const V &value) {
  return atomic_add(ptrs, value, full<boolean, D...>(1));
}

// Declares that the pointer argument `x` must hold at least `n` elements, n computed from the
// kernel's Scalar arguments and constants (expect_extent(a, M * K)). Recorded while tracing and
// checked at every launch, whatever the mode, against the extent the caller passed (a Buffer's
// size, kdsl::sized, a std::span): a shorter one fails the launch naming the argument, the
// size expected and the size found. Raw pointers carry no extent and are not checked.
template <class T, class S>
  requires(detail::is_int_element<S>)
void expect_extent(const Ptr<T> &x, const Block<S> &n) {
  detail::require_extent(x.id(), n.id());
}
template <class T, std::integral I>
void expect_extent(const Ptr<T> &x, I n) {
  detail::require_extent(x.id(), detail::constant<Block<i64>>(int64_t(n)).id());
}

// *ptrs = max(*ptrs, value) / min(*ptrs, value) where mask holds. Integers compare by their
// type's order (u32 unsigned). f32 compares in sign-magnitude order of the bits, as Triton's
// atomic_max: -0.0 < +0.0, and a NaN orders beyond the infinity of its sign (a NaN with the
// sign bit clear is above +inf, one with it set below -inf), so a NaN stored in memory or
// passed as value takes part like any other number of that order.
template <class T, int... D, class V, int... M>
Block<T, D...> atomic_max(const Block<ptr<T>, D...> &ptrs, const V &value, const Block<boolean, M...> &mask) {
  static_assert(detail::atomic_arithmetic_type<T>, "atomic_max supports f32, i32, u32 and i64");
  return detail::atomic_rmw<OpKind::AtomicMax>(ptrs, mask, value);
}
template <class T, int... D, class V>
Block<T, D...> atomic_max(const Block<ptr<T>, D...> &ptrs, const V &value) {
  return atomic_max(ptrs, value, full<boolean, D...>(1));
}
template <class T, int... D, class V, int... M>
Block<T, D...> atomic_min(const Block<ptr<T>, D...> &ptrs, const V &value, const Block<boolean, M...> &mask) {
  static_assert(detail::atomic_arithmetic_type<T>, "atomic_min supports f32, i32, u32 and i64");
  return detail::atomic_rmw<OpKind::AtomicMin>(ptrs, mask, value);
}
template <class T, int... D, class V>
Block<T, D...> atomic_min(const Block<ptr<T>, D...> &ptrs, const V &value) {
  return atomic_min(ptrs, value, full<boolean, D...>(1));
}

// *ptrs = value where mask holds; returns the values replaced.
template <class T, int... D, class V, int... M>
Block<T, D...> atomic_xchg(const Block<ptr<T>, D...> &ptrs, const V &value, const Block<boolean, M...> &mask) {
  static_assert(detail::atomic_arithmetic_type<T>, "atomic_xchg supports f32, i32, u32 and i64");
  return detail::atomic_rmw<OpKind::AtomicXchg>(ptrs, mask, value);
}
template <class T, int... D, class V>
Block<T, D...> atomic_xchg(const Block<ptr<T>, D...> &ptrs, const V &value) {
  return atomic_xchg(ptrs, value, full<boolean, D...>(1));
}

// Where mask holds: if *ptrs == compare then *ptrs = value, in one atomic step; returns the
// values seen (equal to compare exactly where the swap happened). f32 compares the bits, so
// -0.0 does not match +0.0 and a NaN matches the same NaN bits.
template <class T, int... D, class C, class V, int... M>
Block<T, D...> atomic_cas(const Block<ptr<T>, D...> &ptrs, const C &compare, const V &value, const Block<boolean, M...> &mask) {
  static_assert(detail::atomic_arithmetic_type<T>, "atomic_cas supports f32, i32, u32 and i64");
  return detail::atomic_rmw<OpKind::AtomicCas>(ptrs, mask, compare, value);
}
template <class T, int... D, class C, class V>
Block<T, D...> atomic_cas(const Block<ptr<T>, D...> &ptrs, const C &compare, const V &value) {
  return atomic_cas(ptrs, compare, value, full<boolean, D...>(1));
}

}  // namespace kdsl
