// views.h - shape operations on blocks: expand_dims, broadcast_to, reshape, trans
#pragma once
#include <kdsl/block.h>

namespace kdsl {

// Inserts a unit axis at `Axis` (0 <= Axis <= rank): expand_dims<1>(Block<i32, 64>) is [64, 1].
template <int Axis, class E, int... D>
auto expand_dims(const Block<E, D...> &x) {
  constexpr int r = int(sizeof...(D));
  static_assert(Axis >= 0 && Axis <= r, "expand_dims<Axis>: Axis must be between 0 and the block's rank");
  constexpr auto out = [] {
    std::array<int, sizeof...(D) + 1> o{};
    constexpr std::array<int, sizeof...(D)> src{D...};
    for (int i = 0, j = 0; i <= r; ++i) o[size_t(i)] = i == Axis ? 1 : src[size_t(j++)];
    return o;
  }();
  return detail::emit_as<detail::block_with<E, out>>(OpKind::ExpandDims, {x.id()}, {Axis});
}

// Broadcasts to the extents D... (NumPy rules: leading axes added, unit axes stretched).
template <int... D, class E, int... S>
Block<E, D...> broadcast_to(const Block<E, S...> &x) {
  constexpr std::array<int, sizeof...(D)> target{D...};
  constexpr auto joint = detail::broadcast_of<Block<E, S...>, Block<E, D...>>();
  if constexpr (joint != target) {
    KDSL_STATIC_FAIL(detail::TextBuffer{}.add("broadcast_to: shape ").add_shape(Block<E, S...>::dims).add(" cannot broadcast to ").add_shape(target),
                     "broadcast_to: the block cannot broadcast to the requested shape");
  }
  return detail::broadcast_block<target>(x);
}

// The same elements in row-major order, with extents D...
template <int... D, class E, int... S>
Block<E, D...> reshape(const Block<E, S...> &x) {
  if constexpr (Block<E, D...>::numel != Block<E, S...>::numel) {
    KDSL_STATIC_FAIL(detail::TextBuffer{}.add("reshape: shape ").add_shape(Block<E, S...>::dims).add(" and shape ").add_shape(Block<E, D...>::dims).add(" hold different numbers of elements"),
                     "reshape must keep the number of elements");
  }
  return detail::emit_as<Block<E, D...>>(OpKind::Reshape, {x.id()});
}

// Permutes axes: trans(x) swaps the two axes of a matrix; trans<P...>(x) applies permutation P.
template <int... P, class E, int... D>
auto trans(const Block<E, D...> &x) {
  if constexpr (sizeof...(P) == 0) {
    static_assert(sizeof...(D) == 2, "trans(x) without a permutation needs a 2-D block");
    return trans<1, 0>(x);
  } else {
    static_assert(sizeof...(P) == sizeof...(D), "trans<P...>: the permutation needs one entry per axis");
    constexpr std::array<int, sizeof...(P)> perm{P...};
    constexpr bool valid = [&] {
      std::array<bool, sizeof...(P)> seen{};
      for (int p : perm) {
        if (p < 0 || p >= int(sizeof...(P)) || seen[size_t(p)]) return false;
        seen[size_t(p)] = true;
      }
      return true;
    }();
    static_assert(valid, "trans<P...>: P must be a permutation of 0..rank-1");
    constexpr std::array<int, sizeof...(D)> src{D...};
    constexpr auto out = [&] {
      std::array<int, sizeof...(D)> o{};
      for (size_t i = 0; i < o.size(); ++i) o[i] = src[size_t(perm[i])];
      return o;
    }();
    return detail::emit_as<detail::block_with<E, out>>(OpKind::Trans, {x.id()}, {P...});
  }
}

}  // namespace kdsl
