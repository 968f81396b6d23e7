// memory.h - load, store and atomic_add through blocks of pointers, with masks
#pragma once
#include <kdsl/block.h>
#include <kdsl/ops.h>

namespace kdsl {

// Reads *ptrs where mask holds and `other` (default 0) elsewhere; masked-off addresses are
// never touched, so they may point past the end of an array.
template <class T, int... D>
Block<T, D...> load(const Block<ptr<T>, D...> &ptrs) {
  return detail::emit_as<Block<T, D...>>(OpKind::Load, {ptrs.id()});
}

template <class T, int... D, int... M, class O = int>
Block<T, D...> load(const Block<ptr<T>, D...> &ptrs, const Block<boolean, M...> &mask, const O &other = 0) {
  constexpr std::array<int, sizeof...(D)> shape{D...};
  auto m = broadcast_to<D...>(mask);
  auto o = detail::lift<T, shape>(other);
  return detail::emit_as<Block<T, D...>>(OpKind::Load, {ptrs.id(), m.id(), o.id()});
}

// Writes value (broadcast to the pointers' shape) to *ptrs where mask holds.
template <class T, int... D, class V>
void store(const Block<ptr<T>, D...> &ptrs, const V &value) {
  constexpr std::array<int, sizeof...(D)> shape{D...};
  auto v = detail::lift<T, shape>(value);
  detail::emit_effect(OpKind::Store, {ptrs.id(), v.id()});
}

template <class T, int... D, class V, int... M>
void store(const Block<ptr<T>, D...> &ptrs, const V &value, const Block<boolean, M...> &mask) {
  constexpr std::array<int, sizeof...(D)> shape{D...};
  auto v = detail::lift<T, shape>(value);
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
  static_assert(std::is_same_v<T, f32> || std::is_same_v<T, i32> || std::is_same_v<T, u32> || std::is_same_v<T, i64>,
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

}  // namespace kdsl
