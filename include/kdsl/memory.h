// memory.h - load, store and atomic_add through blocks of pointers, with masks
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

// Atomically adds value to *ptrs where mask holds; returns the values seen before the add.
template <class T, int... D, class V, int... M>
Block<T, D...> atomic_add(const Block<ptr<T>, D...> &ptrs, const V &value, const Block<boolean, M...> &mask) {
  static_assert(!std::is_const_v<T>, "atomic_add through a Ptr<const T>: the parameter is read-only (declare it Ptr<T> if the kernel writes it)");
  using E = std::remove_const_t<T>;
  static_assert(std::is_same_v<E, f32> || std::is_same_v<E, i32> || std::is_same_v<E, u32> || std::is_same_v<E, i64>,
                "atomic_add supports f32, i32, u32 and i64");
  constexpr std::array<int, sizeof...(D)> shape{D...};
  auto v = detail::lift<T, shape>(value);
  auto m = broadcast_to<D...>(mask);
  return detail::emit_as<Block<T, D...>>(OpKind::AtomicAdd, {ptrs.id(), v.id(), m.id()});
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

}  // namespace kdsl
