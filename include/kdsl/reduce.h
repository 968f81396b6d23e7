// reduce.h - reductions over an axis (sum, max, min, argmax, argmin), scans, gather and the matrix product dot
#pragma once
#include <string>

#include <kdsl/block.h>
#include <kdsl/error.h>
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

// sum<Axis>(x) removes Axis; sum(x) reduces everything to a scalar. f16/bf16/f8e4m3 accumulate in f32.
template <int Axis, class E, int... D>
auto sum(const Block<E, D...> &x) { return detail::reduce<OpKind::ReduceSum, Axis, void>(x); }
template <class E, int... D>
auto sum(const Block<E, D...> &x) {
  // f16 / bf16 / f8e4m3: one f32 sum over every axis, rounded once (not once per axis).
  if constexpr (sizeof...(D) > 1 && (std::is_same_v<E, f16> || std::is_same_v<E, bf16> || std::is_same_v<E, f8e4m3>))
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

// --- scans and gather ----------------------------------------------------------------------

// What an inclusive scan combines with: running sums, maxima or minima.
enum class ScanCombine { Sum, Max, Min };

namespace detail {

// "[16, 8]": a block's extents, for trace-time messages.
inline std::string shape_text(const TypeDesc &t) {
  std::string s = "[";
  for (int d = 0; d < t.rank; ++d) s += (d ? ", " : "") + std::to_string(t.dims[size_t(d)]);
  return s + "]";
}

// An axis written as Python does (-1: the last): checked against the rank at trace time.
inline int64_t normalized_axis(const char *op, int axis, const TypeDesc &t) {
  if (axis < -t.rank || axis >= t.rank)
    throw Error(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for a block of shape " + shape_text(t) +
                " (axes 0.." + std::to_string(t.rank - 1) + ", or negative from the end)");
  return axis < 0 ? axis + t.rank : axis;
}

}  // namespace detail

// The inclusive scan of x along `axis`: result[..i..] = x[..0..] (+) ... (+) x[..i..], or with
// `reverse`, x[..i..] (+) ... (+) x[..n-1..]. The result has x's shape and type. Floating-point
// sums accumulate in f32 (f16 and bf16 too, each output rounded once): in order on the CPU; a GPU
// combines within threads, then lanes, then warps, so its float sums may differ in the last
// bits. Integer sums wrap. Max and min of floats pass a NaN over where a number is present
// (maxnum), so a run of NaNs at the start stays NaN until the first number. The axis is a run-
// time int checked when the kernel is traced (negative counts from the end).
template <class E, int... D>
Block<E, D...> scan(const Block<E, D...> &x, ScanCombine combine, int axis = 0, bool reverse = false) {
  static_assert(sizeof...(D) > 0, "scan needs a block, not a scalar");
  static_assert(!detail::element_traits<E>::is_ptr && !std::is_same_v<E, boolean>,
                "scan needs a numeric block (cast a mask to i32 to count it)");
  using B = Block<E, D...>;
  int64_t a = detail::normalized_axis("scan", axis, B::type());
  OpKind kind = combine == ScanCombine::Sum ? OpKind::ScanSum : combine == ScanCombine::Max ? OpKind::ScanMax : OpKind::ScanMin;
  return detail::emit_as<B>(kind, {x.id()}, {a, reverse ? 1 : 0});
}

// Running sum, maximum and minimum along `axis` (Triton's cumsum, cummax, cummin).
template <class E, int... D>
Block<E, D...> cumsum(const Block<E, D...> &x, int axis = 0, bool reverse = false) { return scan(x, ScanCombine::Sum, axis, reverse); }
template <class E, int... D>
Block<E, D...> cummax(const Block<E, D...> &x, int axis = 0, bool reverse = false) { return scan(x, ScanCombine::Max, axis, reverse); }
template <class E, int... D>
Block<E, D...> cummin(const Block<E, D...> &x, int axis = 0, bool reverse = false) { return scan(x, ScanCombine::Min, axis, reverse); }

// Elements of src picked along `axis` by index (Triton's gather): for axis 0 of a 2-D block,
// result[i][j] = src[index[i][j]][j]. index is an integer block of src's rank whose other
// extents equal src's; the result is shaped like index. An index outside [0, extent of src
// along axis) reads 0 (the element type's zero), never memory outside the block.
template <class E, int... D, class I, int... DI>
Block<E, DI...> gather(const Block<E, D...> &src, const Block<I, DI...> &index, int axis) {
  static_assert(sizeof...(D) > 0 && sizeof...(D) == sizeof...(DI), "gather: src and index must be blocks of the same rank");
  static_assert(!detail::element_traits<E>::is_ptr, "gather picks numbers or masks, not pointers");
  static_assert(detail::is_int_element<I> && !std::is_same_v<I, boolean>, "gather: index must be an integer block");
  int64_t a = detail::normalized_axis("gather", axis, Block<E, D...>::type());
  constexpr std::array<int, sizeof...(D)> src_dims{D...}, index_dims{DI...};
  for (size_t d = 0; d < src_dims.size(); ++d)
    if (int64_t(d) != a && src_dims[d] != index_dims[d])
      throw Error("gather along axis " + std::to_string(a) + ": index " + detail::shape_text(Block<I, DI...>::type()) + " and src " +
                  detail::shape_text(Block<E, D...>::type()) + " must have the same extent on every other axis (axis " + std::to_string(d) + " differs)");
  return detail::emit_as<Block<E, DI...>>(OpKind::Gather, {src.id(), index.id()}, {a});
}

// How dot multiplies f32 inputs. IEEE: exact products, f32 sums. TF32 lets a GPU's tensor
// cores (NVIDIA sm_80+, mma.sync m16n8k8) multiply them with TF32's 10-bit mantissa, each
// input's low 13 bits ignored, for several times the FMA rate (Triton's
// input_precision="tf32"); on the CPU, and for dots the tensor cores cannot tile, a TF32 dot
// is an IEEE one. Other input types have one precision.
enum class DotPrecision { IEEE, TF32 };

// acc + a @ b for a [M, K] and b [K, N]: f16, bf16, f8e4m3 and f32 inputs accumulate in f32,
// i8 and u8 in i32 (exact: products and sums wrap as two's-complement i32 would, never
// saturate). f8e4m3 runs on Hopper's fp8 tensor cores (sm_90a) and, widened to f16, on the
// f16 ones elsewhere: its products are exact either way.
template <class E, int M, int K, int K2, int N, class A>
Block<A, M, N> dot(const Block<E, M, K> &a, const Block<E, K2, N> &b, const Block<A, M, N> &acc, DotPrecision precision = DotPrecision::IEEE) {
  if constexpr (K != K2) {
    KDSL_STATIC_FAIL(detail::TextBuffer{}.add("dot: inner dimensions differ: a is ").add_shape(Block<E, M, K>::dims).add(" and b is ").add_shape(Block<E, K2, N>::dims),
                     "dot: the inner dimensions of a and b differ");
  }
  static_assert(std::is_same_v<E, f32> || std::is_same_v<E, f16> || std::is_same_v<E, bf16> || std::is_same_v<E, f8e4m3> || std::is_same_v<E, i8> ||
                    std::is_same_v<E, u8>,
                "dot inputs must be f32, f16, bf16, f8e4m3, i8 or u8");
  if constexpr (std::is_same_v<E, i8> || std::is_same_v<E, u8>) static_assert(std::is_same_v<A, i32>, "dot of i8 or u8 blocks accumulates in i32");
  else static_assert(std::is_same_v<A, f32>, "dot of floating-point blocks accumulates in f32");
  if (precision == DotPrecision::TF32) {
    if constexpr (!std::is_same_v<E, f32>) throw Error("dot: DotPrecision::TF32 is for f32 inputs; these are " + std::string(E::text));
    return detail::emit_as<Block<A, M, N>>(OpKind::Dot, {a.id(), b.id(), acc.id()}, {int64_t(DotPrecision::TF32)});
  }
  return detail::emit_as<Block<A, M, N>>(OpKind::Dot, {a.id(), b.id(), acc.id()});
}

template <class E, int M, int K, int K2, int N>
auto dot(const Block<E, M, K> &a, const Block<E, K2, N> &b, DotPrecision precision = DotPrecision::IEEE) {
  using A = std::conditional_t<std::is_same_v<E, i8> || std::is_same_v<E, u8>, i32, f32>;
  return dot(a, b, zeros<A, M, N>(), precision);
}

// --- grouped integer dot products ---------------------------------------------------------

namespace detail {
template <class E>
constexpr bool is_byte_element = std::is_same_v<E, i8> || std::is_same_v<E, u8>;

// a's and b's broadcast shape with its last extent divided by 4: dot4's result shape.
template <class A, class B>
constexpr auto dot4_dims() {
  constexpr auto in = broadcast_of<A, B>();
  static_assert(in.size() > 0, "dot4 needs blocks, not scalars");
  if constexpr (in[in.size() - 1] % 4 != 0) {
    KDSL_STATIC_FAIL(TextBuffer{}.add("dot4: the last extent of ").add_shape(in).add(" is not a multiple of 4"),
                     "dot4: the last extent of its operands must be a multiple of 4");
  }
  auto out = in;
  out[out.size() - 1] /= 4;
  return out;
}
}  // namespace detail

// Dot products of 4 bytes (CUDA's dp4a, x86's vpdpbusd, over whole blocks): for a and b of i8
// or u8 (each either, broadcast to one shape [..., 4G]) and acc of i32 [..., G],
//   result[..., g] = acc[..., g] + a[..., 4g] * b[..., 4g] + ... + a[..., 4g+3] * b[..., 4g+3],
// exact for every value (-128 and 255 included). Why this op rather than
// `sum<axis>(cast<i32>(a) * cast<i32>(b))` over a [..., G, 4] reshape, recognized by the
// lowering: the group of 4 is what the hardware computes in one lane (vpdpbusd's i32 lanes,
// dp4a, the i32 elements of an mma.s8 fragment), so a kernel can keep G partial sums per block
// in registers and scale them once (quantized decode: acc += cast<f32>(dot4(wq, xq)) * d, with
// one horizontal sum per row after the loop). A pattern over reshape + cast + mul + sum would
// fall back silently to slow code whenever a kernel wrote it a little differently; an op
// cannot, and its verifier and lowerings check one thing.
template <class EA, int... DA, class B, int... DC>
auto dot4(const Block<EA, DA...> &a, const B &b, const Block<i32, DC...> &acc) {
  static_assert(is_block_v<B>, "dot4: b must be a block of i8 or u8");
  using EB = typename B::element;
  static_assert(detail::is_byte_element<EA> && detail::is_byte_element<EB>, "dot4 multiplies i8 or u8 blocks (cast other integers first)");
  constexpr auto shape = detail::broadcast_of<Block<EA, DA...>, B>();
  constexpr auto out = detail::dot4_dims<Block<EA, DA...>, B>();
  using R = detail::block_with<i32, out>;
  static_assert(std::is_same_v<R, Block<i32, DC...>>, "dot4: acc must have the result's shape: the operands' shape with its last extent divided by 4");
  auto la = detail::broadcast_block<shape>(a);
  auto lb = detail::broadcast_block<shape>(b);
  return detail::emit_as<R>(OpKind::Dot4, {la.id(), lb.id(), acc.id()});
}

template <class EA, int... DA, class B>
auto dot4(const Block<EA, DA...> &a, const B &b) {
  constexpr auto out = detail::dot4_dims<Block<EA, DA...>, B>();
  return dot4(a, b, detail::constant<detail::block_with<i32, out>>(0));
}

}  // namespace kdsl
