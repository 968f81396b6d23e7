// block.h - Block<T, Shape...>: a traced block value whose element type and shape are in its C++ type
#pragma once
#include <array>
#include <concepts>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <kdsl/detail/static_text.h>
#include <kdsl/detail/trace.h>
#include <kdsl/dtype.h>

namespace kdsl {

// The element type of a block of pointers: Ptr<f16> is Block<ptr<f16>>. Ptr<const f16> points
// to data the kernel only reads: store and atomics through it do not compile, and a launch may
// pass it const data (a `const half *`, a `const Buffer<half> &`).
template <ElementType T>
struct ptr {
  using pointee = T;
};

// The most elements a block holds, 2^20: a block the host backend materializes lives on the
// stack of the thread running the program, and a few blocks past this size overflow it.
inline constexpr int64_t kMaxBlockElements = int64_t(1) << 20;

namespace detail {

template <class E>
struct element_traits {
  static constexpr DType dtype = E::dtype;
  static constexpr bool is_ptr = false;
  static constexpr std::string_view name = E::text;
};
template <class T>
struct element_traits<ptr<T>> {
  static constexpr DType dtype = T::dtype;
  static constexpr bool is_ptr = true;
  static constexpr bool read_only = std::is_const_v<T>;
  static constexpr std::string_view name = std::is_const_v<T> ? "read-only pointer" : "pointer";
};

template <class E>
constexpr bool is_float_element = !element_traits<E>::is_ptr && is_float(element_traits<E>::dtype);
template <class E>
constexpr bool is_int_element = !element_traits<E>::is_ptr && !is_float(element_traits<E>::dtype);

struct Traced {};  // tag: a Block built from an existing IR value

template <int... D>
constexpr bool check_block_size() {
  constexpr int64_t numel = (int64_t(1) * ... * int64_t(D));
  if constexpr (numel > kMaxBlockElements) {
    KDSL_STATIC_FAIL(TextBuffer{}
                         .add("block shape ")
                         .add_shape(std::array<int, sizeof...(D)>{D...})
                         .add(" holds ")
                         .add((long long)numel)
                         .add(" elements, more than the limit of 2^20 (1048576): split the work into smaller blocks"),
                     "a block holds at most 2^20 elements (the shape is named in the compile_error note)");
  }
  return true;
}

}  // namespace detail

template <class E, int... D>
class Block {
  static_assert(((D > 0) && ...), "every block dimension must be positive");
  static_assert(sizeof...(D) <= 4, "blocks have at most 4 dimensions");

 public:
  using element = E;
  static constexpr int rank = int(sizeof...(D));
  static constexpr std::array<int, sizeof...(D)> dims{D...};
  static constexpr int64_t numel = (int64_t(1) * ... * int64_t(D));
  static_assert(detail::check_block_size<D...>());

  Block(detail::Traced, int32_t id) : id_(id) {}
  // Pointers to writable data convert to pointers to read-only data (Ptr<f32> to
  // Ptr<const f32>), so a helper taking Ptr<const T> accepts both.
  template <class T>
    requires(detail::element_traits<E>::is_ptr && std::is_same_v<E, ptr<const T>> && !std::is_const_v<T>)
  Block(const Block<ptr<T>, D...> &writable) : id_(writable.id()) {}

  int32_t id() const { return id_; }

  // `if (x < n)` on blocks: while a kernel is traced a block holds no values, only an IR value,
  // so a C++ branch cannot test it. This makes the mistake a compile error that says what to write.
  template <class Never = void>
  explicit operator bool() const {
    static_assert(sizeof(Never *) == 0,
                  "a block has no single truth value while the kernel is traced: choose per element with "
                  "kdsl::where(cond, a, b), branch at run time with kdsl::if_(cond, then, otherwise), or mask "
                  "loads and stores with the condition");
    return false;
  }

  static detail::TypeDesc type() {
    detail::TypeDesc t;
    t.elem = detail::element_traits<E>::dtype;
    t.is_ptr = detail::element_traits<E>::is_ptr;
    if constexpr (detail::element_traits<E>::is_ptr) t.read_only = detail::element_traits<E>::read_only;
    t.rank = rank;
    int i = 0;
    ((t.dims[i++] = D), ...);
    return t;
  }

 private:
  int32_t id_;
};

// A run-time scalar kernel argument, and a pointer argument: both are rank-0 blocks.
template <ElementType T>
using Scalar = Block<T>;
template <ElementType T>
using Ptr = Block<ptr<T>>;

// A run-time scalar kernel argument that is never specialized: where a Scalar<i32> equal to 1
// or a multiple of 16 gets its own compiled kernel (constant-folded, vector accesses), a
// Dynamic<i32> is one compiled kernel for every value. For arguments that change at every
// launch (a token position, a sequence length) and would otherwise compile up to three
// variants. Inside the kernel it is a Scalar<T>.
template <ElementType T>
class Dynamic : public Block<T> {
 public:
  using Block<T>::Block;

  static detail::TypeDesc type() {
    detail::TypeDesc t = Block<T>::type();
    t.no_specialize = true;
    return t;
  }
};

// Dynamic<T> derives from Block<T>: anything publicly derived from a Block is one.
namespace detail {
template <class E, int... D>
std::true_type derives_from_block(const Block<E, D...> *);
std::false_type derives_from_block(const void *);
}  // namespace detail
template <class X>
struct is_block : decltype(detail::derives_from_block(static_cast<X *>(nullptr))) {};
template <class X>
constexpr bool is_block_v = is_block<std::remove_cvref_t<X>>::value;

// A C++ number written in a kernel: it takes the element type of the block beside it.
template <class X>
concept Literal = std::is_arithmetic_v<std::remove_cvref_t<X>> && !std::is_same_v<std::remove_cvref_t<X>, bool>;

template <class X>
concept BlockLike = is_block_v<X>;

namespace detail {

// --- compile-time shapes -------------------------------------------------------------

template <int... D>
struct Dims {};

template <class E, class DimsT>
struct block_from;
template <class E, int... D>
struct block_from<E, Dims<D...>> {
  using type = Block<E, D...>;
};

template <auto Arr, std::size_t... I>
Dims<Arr[I]...> dims_from_array(std::index_sequence<I...>);
template <auto Arr>
using dims_of = decltype(dims_from_array<Arr>(std::make_index_sequence<Arr.size()>{}));

// A block type with element E and the extents held in a constexpr std::array.
template <class E, auto Arr>
using block_with = typename block_from<E, dims_of<Arr>>::type;

template <std::size_t A, std::size_t B>
struct BroadcastResult {
  bool ok = true;
  std::array<int, (A > B ? A : B)> dims{};
};

// NumPy broadcasting: align on the right; extents must match or one must be 1.
template <std::size_t A, std::size_t B>
constexpr BroadcastResult<A, B> broadcast_dims(std::array<int, A> a, std::array<int, B> b) {
  BroadcastResult<A, B> r;
  constexpr std::size_t n = A > B ? A : B;
  for (std::size_t i = 0; i < n; ++i) {
    int da = i < A ? a[A - 1 - i] : 1;
    int db = i < B ? b[B - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) r.ok = false;
    r.dims[n - 1 - i] = da == 1 ? db : da;
  }
  return r;
}

template <class A, class B>
constexpr auto broadcast_of() {
  constexpr auto r = broadcast_dims(A::dims, B::dims);
  if constexpr (!r.ok) {
    KDSL_STATIC_FAIL(TextBuffer{}.add("shapes ").add_shape(A::dims).add(" and ").add_shape(B::dims).add(" do not broadcast"),
                     "block shapes do not broadcast (the shapes are named in the compile_error note)");
  }
  return r.dims;
}

template <class EA, class EB>
constexpr void check_same_element() {
  if constexpr (!std::is_same_v<EA, EB>) {
    KDSL_STATIC_FAIL(TextBuffer{}
                         .add("element types ")
                         .add(element_traits<EA>::name)
                         .add(" and ")
                         .add(element_traits<EB>::name)
                         .add(" differ: convert one with kdsl::cast<T>"),
                     "block element types differ (named in the compile_error note)");
  }
}

// --- emitting ops ----------------------------------------------------------------------

template <class B>
B make(int32_t id) {
  return B(Traced{}, id);
}

template <class B>
B emit_as(OpKind kind, std::initializer_list<int32_t> operands, std::initializer_list<int64_t> ints = {}) {
  return make<B>(emit(kind, operands, B::type(), ints));
}

// A splat constant of block type B.
template <class B, class V>
B constant(V value) {
  using E = typename B::element;
  static_assert(!element_traits<E>::is_ptr, "pointer constants are not supported");
  if constexpr (is_float_element<E>) {
    // A literal takes the precision of its block: 0.1 in an f16 block is the f16 nearest 0.1,
    // so `x + 0.1` rounds as an f16 sum would.
    double v = double(value);
    if constexpr (std::is_same_v<E, f32>) v = double(float(v));
    else if constexpr (std::is_same_v<E, f16>) v = double(f16_bits_to_f32(f32_to_f16_bits(float(v))));
    else if constexpr (std::is_same_v<E, bf16>) v = double(bf16_bits_to_f32(f32_to_bf16_bits(float(v))));
    else if constexpr (std::is_same_v<E, f8e4m3>) v = double(e4m3_bits_to_f32(f32_to_e4m3_bits(float(v))));
    return make<B>(emit(OpKind::Constant, {}, B::type(), {}, v));
  } else {
    static_assert(std::is_integral_v<V> || std::is_enum_v<V> || std::is_same_v<V, bool>,
                  "a floating-point literal cannot combine with an integer block: cast the block or write an integer");
    return make<B>(emit(OpKind::Constant, {}, B::type(), {int64_t(value)}));
  }
}

// Re-shapes x to the extents `Target` (rank >= x's rank) by adding leading unit axes and
// broadcasting unit axes.
template <auto Target, class E, int... D>
block_with<E, Target> broadcast_block(const Block<E, D...> &x) {
  using Out = block_with<E, Target>;
  constexpr std::size_t R = Target.size();
  constexpr std::size_t r = sizeof...(D);
  static_assert(r <= R, "cannot broadcast a block to a lower rank");
  if constexpr (std::is_same_v<Out, Block<E, D...>>) {
    return x;
  } else {
    // Leading unit axes first, then one broadcast to the full extents.
    constexpr auto padded = [] {
      std::array<int, R> p{};
      constexpr std::array<int, r> src{D...};
      for (std::size_t i = 0; i < R; ++i) p[i] = i < R - r ? 1 : src[i - (R - r)];
      return p;
    }();
    int32_t id = x.id();
    if constexpr (r < R) {
      constexpr auto one_more = [] {
        std::array<int, r + 1> p{};
        constexpr std::array<int, r> src{D...};
        p[0] = 1;
        for (std::size_t i = 0; i < r; ++i) p[i + 1] = src[i];
        return p;
      }();
      auto expanded = emit_as<block_with<E, one_more>>(OpKind::ExpandDims, {id}, {0});
      return broadcast_block<Target>(expanded);
    } else {
      (void)padded;
      return emit_as<Out>(OpKind::Broadcast, {id});
    }
  }
}

// The element type an operand pair computes in: blocks must agree; a literal takes the
// other side's type.
template <class A, class B>
struct operand_element;
template <BlockLike A, BlockLike B>
struct operand_element<A, B> {
  using type = typename std::remove_cvref_t<A>::element;
};
template <BlockLike A, Literal B>
struct operand_element<A, B> {
  using type = typename std::remove_cvref_t<A>::element;
};
template <Literal A, BlockLike B>
struct operand_element<A, B> {
  using type = typename std::remove_cvref_t<B>::element;
};

template <class X>
struct dims_holder {
  static constexpr std::array<int, 0> dims{};
};
template <BlockLike X>
struct dims_holder<X> {
  static constexpr auto dims = std::remove_cvref_t<X>::dims;
};

template <auto Arr>
struct dims_value {
  static constexpr auto dims = Arr;
};

// Brings x (a block or a literal) to element E and extents Target.
// A block of another element type is a compile error here (operands never convert
// implicitly); the placeholder returned then keeps that error the only one.
template <class E, auto Target, class X>
block_with<E, Target> lift(const X &x) {
  if constexpr (is_block_v<X>) {
    if constexpr (!std::is_same_v<typename X::element, E>) {
      check_same_element<E, typename X::element>();
      return make<block_with<E, Target>>(x.id());
    } else {
      return broadcast_block<Target>(x);
    }
  } else {
    return constant<block_with<E, Target>>(x);
  }
}

template <class A, class B>
concept BinaryOperands = (BlockLike<A> && (BlockLike<B> || Literal<B>)) || (Literal<A> && BlockLike<B>);

// out = a <kind> b with broadcasting; the result element is `R` (or the operands' type).
template <OpKind kind, class ResultElement = void, class A, class B>
auto binary(const A &a, const B &b) {
  using E = typename operand_element<A, B>::type;
  constexpr auto shape = broadcast_of<dims_holder<A>, dims_holder<B>>();
  using R = std::conditional_t<std::is_void_v<ResultElement>, E, ResultElement>;
  auto la = lift<E, shape>(a);
  auto lb = lift<E, shape>(b);
  return emit_as<block_with<R, shape>>(kind, {la.id(), lb.id()});
}

template <OpKind kind, class B>
B unary(const B &x) {
  return emit_as<B>(kind, {x.id()});
}

}  // namespace detail
}  // namespace kdsl
