// ops.h - arithmetic, comparisons, math, casts and program coordinates on blocks
#pragma once
#include <kdsl/block.h>

namespace kdsl {

// --- arithmetic and bit operations (NumPy broadcasting, literals take the block's type) --

template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto operator+(const A &a, const B &b) {
  using E = typename detail::operand_element<A, B>::type;
  if constexpr (detail::element_traits<E>::is_ptr) {
    // pointer + offsets: a block of pointers.
    static_assert(is_block_v<A> && detail::element_traits<typename A::element>::is_ptr,
                  "write pointer arithmetic as pointer + offsets");
    if constexpr (is_block_v<B>) {
      using I = typename B::element;
      static_assert(detail::is_int_element<I>, "a pointer offset must be an integer block");
      constexpr auto shape = detail::broadcast_of<A, B>();
      auto la = detail::broadcast_block<shape>(a);
      auto lb = detail::broadcast_block<shape>(b);
      return detail::emit_as<detail::block_with<E, shape>>(OpKind::PtrAdd, {la.id(), lb.id()});
    } else {
      auto off = detail::constant<detail::block_with<i32, A::dims>>(b);  // shaped like the pointers
      return detail::emit_as<A>(OpKind::PtrAdd, {a.id(), off.id()});
    }
  } else {
    return detail::binary<OpKind::Add>(a, b);
  }
}

#define KDSL_BINARY_OPERATOR(symbol, kind, requirement, message)                \
  template <class A, class B>                                                   \
    requires detail::BinaryOperands<A, B>                                       \
  auto operator symbol(const A &a, const B &b) {                                \
    using E = typename detail::operand_element<A, B>::type;                     \
    static_assert(requirement, message);                                        \
    return detail::binary<OpKind::kind>(a, b);                                  \
  }

KDSL_BINARY_OPERATOR(-, Sub, !detail::element_traits<E>::is_ptr, "pointer subtraction is not supported")
KDSL_BINARY_OPERATOR(*, Mul, !detail::element_traits<E>::is_ptr, "cannot multiply pointers")
KDSL_BINARY_OPERATOR(/, Div, !detail::element_traits<E>::is_ptr, "cannot divide pointers")
KDSL_BINARY_OPERATOR(%, Rem, detail::is_int_element<E>, "% needs integer blocks")
KDSL_BINARY_OPERATOR(&, And, detail::is_int_element<E>, "& needs integer or boolean blocks")
KDSL_BINARY_OPERATOR(|, Or, detail::is_int_element<E>, "| needs integer or boolean blocks")
KDSL_BINARY_OPERATOR(^, Xor, detail::is_int_element<E>, "^ needs integer or boolean blocks")
KDSL_BINARY_OPERATOR(<<, Shl, detail::is_int_element<E>, "<< needs integer blocks")
KDSL_BINARY_OPERATOR(>>, Shr, detail::is_int_element<E>, ">> needs integer blocks (arithmetic shift for signed types)")
#undef KDSL_BINARY_OPERATOR

// Logical and / or on boolean blocks (both sides are evaluated: there is no short circuit).
template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto operator&&(const A &a, const B &b) {
  static_assert(std::is_same_v<typename detail::operand_element<A, B>::type, boolean>, "&& needs boolean blocks (masks)");
  return detail::binary<OpKind::And>(a, b);
}
template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto operator||(const A &a, const B &b) {
  static_assert(std::is_same_v<typename detail::operand_element<A, B>::type, boolean>, "|| needs boolean blocks (masks)");
  return detail::binary<OpKind::Or>(a, b);
}

#define KDSL_COMPARISON(symbol, kind)                        \
  template <class A, class B>                                \
    requires detail::BinaryOperands<A, B>                    \
  auto operator symbol(const A &a, const B &b) {             \
    return detail::binary<OpKind::kind, boolean>(a, b);      \
  }
KDSL_COMPARISON(<, CmpLt)
KDSL_COMPARISON(<=, CmpLe)
KDSL_COMPARISON(>, CmpGt)
KDSL_COMPARISON(>=, CmpGe)
KDSL_COMPARISON(==, CmpEq)
KDSL_COMPARISON(!=, CmpNe)
#undef KDSL_COMPARISON

template <class E, int... D>
Block<E, D...> operator-(const Block<E, D...> &x) {
  static_assert(!detail::element_traits<E>::is_ptr, "cannot negate a pointer");
  return detail::unary<OpKind::Neg>(x);
}
template <class E, int... D>
Block<E, D...> operator~(const Block<E, D...> &x) {
  static_assert(detail::is_int_element<E>, "~ needs integer or boolean blocks");
  return detail::unary<OpKind::Not>(x);
}
template <int... D>
Block<boolean, D...> operator!(const Block<boolean, D...> &x) {
  return detail::unary<OpKind::Not>(x);
}

// --- elementwise functions -------------------------------------------------------------

template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto maximum(const A &a, const B &b) {
  return detail::binary<OpKind::Max>(a, b);
}
template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto minimum(const A &a, const B &b) {
  return detail::binary<OpKind::Min>(a, b);
}
// Two-argument min and max are elementwise (as std::min); one-argument forms reduce.
template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto max(const A &a, const B &b) {
  return maximum(a, b);
}
template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto min(const A &a, const B &b) {
  return minimum(a, b);
}

#define KDSL_FLOAT_FUNCTION(name, kind)                                                       \
  template <class E, int... D>                                                                \
  Block<E, D...> name(const Block<E, D...> &x) {                                              \
    static_assert(detail::is_float_element<E>, #name " needs a floating-point block (f32, f16, bf16 or f8e4m3)"); \
    return detail::unary<OpKind::kind>(x);                                                    \
  }
KDSL_FLOAT_FUNCTION(exp, Exp)
KDSL_FLOAT_FUNCTION(exp2, Exp2)
KDSL_FLOAT_FUNCTION(log, Log)
KDSL_FLOAT_FUNCTION(log2, Log2)
KDSL_FLOAT_FUNCTION(sqrt, Sqrt)
KDSL_FLOAT_FUNCTION(rsqrt, Rsqrt)
KDSL_FLOAT_FUNCTION(sin, Sin)
KDSL_FLOAT_FUNCTION(cos, Cos)
KDSL_FLOAT_FUNCTION(tanh, Tanh)
KDSL_FLOAT_FUNCTION(sigmoid, Sigmoid)
KDSL_FLOAT_FUNCTION(erf, Erf)
KDSL_FLOAT_FUNCTION(floor, Floor)  // toward -inf; the result keeps the float type
KDSL_FLOAT_FUNCTION(ceil, Ceil)    // toward +inf
#undef KDSL_FLOAT_FUNCTION

// a^b elementwise, as C's powf (a negative base with an integral exponent has a sign; with
// any other exponent the result is NaN), computed in f32 and rounded to the block's type.
// Blocks of one float type with broadcasting, or a block and a literal (`pow(x, 0.5)`).
template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto pow(const A &a, const B &b) {
  static_assert(detail::is_float_element<typename detail::operand_element<A, B>::type>,
                "pow needs floating-point blocks (f32, f16, bf16 or f8e4m3)");
  return detail::binary<OpKind::Pow>(a, b);
}

template <class E, int... D>
Block<E, D...> abs(const Block<E, D...> &x) {
  static_assert(!detail::element_traits<E>::is_ptr, "abs needs a numeric block");
  return detail::unary<OpKind::Abs>(x);
}

// a * b + c, rounded once.
template <class E, int... DA, class B, class C>
auto fma(const Block<E, DA...> &a, const B &b, const C &c) {
  static_assert(detail::is_float_element<E>, "fma needs floating-point blocks");
  constexpr auto ab = detail::broadcast_of<Block<E, DA...>, detail::dims_holder<B>>();
  constexpr auto shape = detail::broadcast_of<detail::dims_value<ab>, detail::dims_holder<C>>();
  auto la = detail::lift<E, shape>(a);
  auto lb = detail::lift<E, shape>(b);
  auto lc = detail::lift<E, shape>(c);
  return detail::emit_as<detail::block_with<E, shape>>(OpKind::Fma, {la.id(), lb.id(), lc.id()});
}

// cond ? a : b, elementwise with broadcasting; a or b may be literals.
template <int... DC, class A, class B>
auto where(const Block<boolean, DC...> &cond, const A &a, const B &b) {
  using E = typename detail::operand_element<A, B>::type;
  constexpr auto ab = detail::broadcast_of<detail::dims_holder<A>, detail::dims_holder<B>>();
  constexpr auto shape = detail::broadcast_of<Block<boolean, DC...>, detail::dims_value<ab>>();
  auto lc = detail::broadcast_block<shape>(cond);
  auto la = detail::lift<E, shape>(a);
  auto lb = detail::lift<E, shape>(b);
  return detail::emit_as<detail::block_with<E, shape>>(OpKind::Select, {lc.id(), la.id(), lb.id()});
}

// Converts element values (rounding to nearest even for narrower floats, truncating toward
// zero for float to integer).
template <ElementType T, class E, int... D>
Block<T, D...> cast(const Block<E, D...> &x) {
  static_assert(!detail::element_traits<E>::is_ptr, "cannot cast a pointer block");
  if constexpr (std::is_same_v<T, E>) return x;
  else return detail::emit_as<Block<T, D...>>(OpKind::Cast, {x.id()});
}

// Reinterprets the bits of each element as another type of the same width.
template <ElementType T, class E, int... D>
Block<T, D...> bitcast(const Block<E, D...> &x) {
  static_assert(dtype_bytes(T::dtype) == dtype_bytes(detail::element_traits<E>::dtype) && !detail::element_traits<E>::is_ptr,
                "bitcast needs element types of the same width");
  return detail::emit_as<Block<T, D...>>(OpKind::Bitcast, {x.id()});
}

// The same addresses as pointers to U. The result points at the byte `p` points at; offsets
// added to it afterwards count U elements (sizeof(U) bytes each), so
// `reinterpret<f16>(bytes + 34 * b) + 0` reads the f16 at byte 34 * b. Loads and stores
// through it need each address aligned to U's size, as in C.
template <ElementType U, class T, int... D>
Block<ptr<U>, D...> reinterpret(const Block<ptr<T>, D...> &p) {
  if constexpr (std::is_same_v<T, U>) return p;
  else return detail::emit_as<Block<ptr<U>, D...>>(OpKind::PtrCast, {p.id()});
}
template <ElementType U, class E, int... D>
  requires(!detail::element_traits<E>::is_ptr)
Block<ptr<U>, D...> reinterpret(const Block<E, D...> &) {
  static_assert(detail::element_traits<E>::is_ptr, "reinterpret<U> needs a block of pointers (Ptr<T>): to reinterpret values' bits use bitcast<U>");
  return detail::make<Block<ptr<U>, D...>>(-1);  // not reached: the assertion fails first
}

// --- program coordinates and constants -------------------------------------------------

// The index of this program instance along grid axis 0, 1 or 2.
Block<i32> program_id(int axis);
// The number of program instances along grid axis 0, 1 or 2.
Block<i32> num_programs(int axis);

// [Start, End) as i32.
template <int Start, int End = -1>
auto arange() {
  if constexpr (End == -1) {
    static_assert(Start > 0, "arange<N>() needs N > 0");
    return detail::emit_as<Block<i32, Start>>(OpKind::Arange, {}, {0, Start});
  } else {
    static_assert(End > Start, "arange<Start, End>() needs End > Start");
    return detail::emit_as<Block<i32, End - Start>>(OpKind::Arange, {}, {Start, End});
  }
}

template <ElementType T, int... D, Literal V>
Block<T, D...> full(V value) {
  return detail::constant<Block<T, D...>>(value);
}
template <ElementType T, int... D>
Block<T, D...> zeros() {
  return detail::constant<Block<T, D...>>(0);
}

// Infinity of a float type, for masked loads (`other = -inf<f32>()`).
template <ElementType T>
constexpr double inf() {
  static_assert(is_float(T::dtype), "inf<T>() needs a floating-point type");
  return __builtin_huge_val();
}

// Ceiling division: on host integers, and on blocks.
template <std::integral A, std::integral B>
constexpr auto cdiv(A a, B b) {
  return (a + b - 1) / b;
}
template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto cdiv(const A &a, const B &b) {
  return (a + b - 1) / b;
}

}  // namespace kdsl
