// kernel.h - compiling a traced kernel for a device and launching it over a grid
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <kdsl/block.h>
#include <kdsl/device.h>

namespace kdsl {

// Options recorded in the cache key. num_warps and num_stages shape GPU code; the host
// backend records them and ignores them.
struct CompileOptions {
  int num_warps = 4;
  int num_stages = 2;
  // Checked mode (host backend; KDSL_CHECK=1 turns it on for every kernel): each load, store
  // and atomic is checked against the extent of the argument its pointer came from, and the
  // first access outside fails the launch with a kdsl::Error naming the kernel, the argument,
  // the program and the element. Checked code is a specialization of its own.
  bool checked = false;
};

struct Grid {
  int64_t x = 1, y = 1, z = 1;
};
inline Grid grid(int64_t x, int64_t y = 1, int64_t z = 1) { return Grid{x, y, z}; }

// A launch argument, type-erased: a pointer (with its element type when known) or a
// scalar's bits.
struct ArgValue {
  DType dtype = DType::I32;
  bool is_ptr = false;
  bool untyped_ptr = false;  // void*: accepted for any pointer parameter
  bool on_device = false;    // a pointer into a GPU's memory (a Buffer allocated on it), not host memory
  bool read_only = false;    // a pointer to const data: only a Ptr<const T> parameter takes it
  int64_t extent = -1;       // elements the pointer may reach (a Buffer's size, kdsl::sized); -1: not known
  uint64_t bits = 0;         // pointer address, or the value (integers sign-extended, floats as double bits)
};

namespace detail {

template <class S>
constexpr DType dtype_of_storage() {
  using T = std::remove_cv_t<S>;
  if constexpr (std::is_same_v<T, float>) return DType::F32;
  else if constexpr (std::is_same_v<T, half>) return DType::F16;
  else if constexpr (std::is_same_v<T, bfloat16>) return DType::BF16;
  else if constexpr (std::is_same_v<T, float8_e4m3>) return DType::F8E4M3;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::I16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::U32;
  else if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else static_assert(sizeof(T) == 0, "no kdsl element type stores this host type");
}

}  // namespace detail

template <class T>
ArgValue make_arg(T *p) {
  ArgValue a;
  a.is_ptr = true;
  a.read_only = std::is_const_v<T>;
  a.bits = reinterpret_cast<uintptr_t>(p);
  if constexpr (std::is_void_v<std::remove_cv_t<T>>) a.untyped_ptr = true;
  else a.dtype = detail::dtype_of_storage<T>();
  return a;
}
template <class T>
  requires std::is_arithmetic_v<T>
ArgValue make_arg(T v) {
  ArgValue a;
  if constexpr (std::is_floating_point_v<T>) {
    a.dtype = DType::F32;
    double d = double(v);
    a.bits = std::bit_cast<uint64_t>(d);
  } else {
    a.dtype = std::is_same_v<T, bool> ? DType::Bool : detail::dtype_of_storage<std::conditional_t<(sizeof(T) > 4), int64_t, int32_t>>();
    if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8) {
      a.dtype = DType::U32;  // marks "unsigned 64-bit": range-checked at the call
      a.bits = uint64_t(v);
    } else {
      a.bits = uint64_t(int64_t(v));
      if constexpr (std::is_unsigned_v<T>) a.dtype = DType::U32;
    }
  }
  return a;
}
template <class T>
ArgValue make_arg(const Buffer<T> &b) {
  ArgValue a = make_arg(b.data());
  a.on_device = b.on_device();
  a.extent = int64_t(b.size());
  return a;
}

// A raw pointer with the number of elements it may reach: what checked mode checks its
// accesses against, and expect_extent compares with (a raw pointer alone is not checked).
template <class T>
struct Sized {
  T *address = nullptr;
  size_t count = 0;
};
template <class T>
Sized<T> sized(T *address, size_t count) {
  return {address, count};
}
template <class T>
ArgValue make_arg(Sized<T> p) {
  ArgValue a = make_arg(p.address);
  a.extent = int64_t(p.count);
  return a;
}
template <class T, size_t N>
ArgValue make_arg(std::span<T, N> s) {
  return make_arg(Sized<T>{s.data(), s.size()});
}

// GPU memory kdsl did not allocate (another library's cuMemAlloc), passed to a kernel on that
// GPU: kdsl cannot tell where a raw pointer points, so the caller says so with device_pointer(p).
template <class T>
struct DevicePointer {
  T *address = nullptr;
};
template <class T>
DevicePointer<T> device_pointer(T *address) {
  return {address};
}
template <class T>
ArgValue make_arg(DevicePointer<T> p) {
  ArgValue a = make_arg(p.address);
  a.on_device = true;
  return a;
}

// A pointer whose memory kind is known only at run time: what a library serving both the CPU
// and GPUs passes on (host memory for a CPU launch, device memory for a GPU one).
template <class T>
struct PlacedPointer {
  T *address = nullptr;
  bool on_device = false;
};
template <class T>
ArgValue make_arg(PlacedPointer<T> p) {
  ArgValue a = make_arg(p.address);
  a.on_device = p.on_device;
  return a;
}

namespace detail {

// What the run time needs to know of a kernel: its name, parameter types and how to trace it.
struct KernelSignature {
  std::string name;
  std::vector<TypeDesc> params;
  void (*trace)(const std::vector<int32_t> &arg_ids) = nullptr;
};

class KernelImpl;
std::shared_ptr<KernelImpl> make_kernel(const Device &device, KernelSignature signature, CompileOptions options);
void launch(KernelImpl &kernel, const Grid &grid, const ArgValue *args, size_t count);
// Compiles (or finds in the cache) the specialization for these arguments without running it.
void warm(KernelImpl &kernel, const ArgValue *args, size_t count);
// Traces, compiles and links the specialization for these arguments bypassing every cache;
// returns the milliseconds it took. For benchmarks of the compiler.
double compile_cold(KernelImpl &kernel, const ArgValue *args, size_t count);

template <auto K>
std::string kernel_name() {
  std::string_view f = __PRETTY_FUNCTION__;
  auto start = f.find("K = ");
  if (start == std::string_view::npos) return "kernel";
  start += 4;
  auto end = f.find_first_of(";]", start);
  std::string name(f.substr(start, end - start));
  // Drop a leading '&' of a function address and namespaces, keeping template arguments.
  if (!name.empty() && name[0] == '&') name.erase(0, 1);
  return name;
}

// Whether a launch argument of type A holds const data (a `const T *`, a `const Buffer<T> &`,
// a span, sized, placed or device pointer to const T): only a Ptr<const T> parameter takes it.
template <class A>
struct passes_read_only : std::false_type {};
template <class T>
struct passes_read_only<T *> : std::is_const<T> {};
template <class T>
struct passes_read_only<const Buffer<T>> : std::true_type {};
template <class T, size_t N>
struct passes_read_only<std::span<T, N>> : std::is_const<T> {};
template <class T>
struct passes_read_only<Sized<T>> : std::is_const<T> {};
template <class T>
struct passes_read_only<DevicePointer<T>> : std::is_const<T> {};
template <class T>
struct passes_read_only<PlacedPointer<T>> : std::is_const<T> {};
template <class A>
constexpr bool passes_read_only_v = passes_read_only<std::remove_reference_t<A>>::value ||
                                    passes_read_only<std::decay_t<A>>::value;

// Passing read-only data to a parameter the kernel may write through does not compile.
template <std::size_t I, class P, class A>
constexpr void check_writable_argument() {
  using E = typename std::remove_cvref_t<P>::element;
  if constexpr (element_traits<E>::is_ptr) {
    if constexpr (!element_traits<E>::read_only && passes_read_only_v<A>) {
      KDSL_STATIC_FAIL(TextBuffer{}
                           .add("argument ")
                           .add((long long)I)
                           .add(" passes const data to the writable parameter Ptr<")
                           .add(E::pointee::text)
                           .add(">: declare the parameter Ptr<const ")
                           .add(E::pointee::text)
                           .add("> if the kernel only reads it"),
                       "const data passed to a writable Ptr<T> parameter: declare it Ptr<const T> if the kernel only reads it");
    }
  }
}

template <class F>
struct kernel_params;
template <class... P>
struct kernel_params<void (*)(P...)> {
  static constexpr std::size_t count = sizeof...(P);

  template <class... A, std::size_t... I>
  static constexpr bool check_writable(std::index_sequence<I...>) {
    (check_writable_argument<I, P, A>(), ...);
    return true;
  }
  static_assert((is_block_v<P> && ...), "kernel parameters must be Ptr<T> or Scalar<T>");
  static_assert(((std::remove_cvref_t<P>::rank == 0) && ...), "kernel parameters must be Ptr<T> or Scalar<T> (rank-0 blocks)");

  static std::vector<TypeDesc> types() { return {std::remove_cvref_t<P>::type()...}; }

  template <auto K, std::size_t... I>
  static void call(const std::vector<int32_t> &ids, std::index_sequence<I...>) {
    K(make<std::remove_cvref_t<P>>(ids[I])...);
  }
  template <auto K>
  static void trace(const std::vector<int32_t> &ids) {
    call<K>(ids, std::index_sequence_for<P...>{});
  }
};

// K's name, parameter types and tracer: what launches, compile_for and the registry hold of it.
template <auto K>
KernelSignature kernel_signature() {
  using Params = kernel_params<decltype(K)>;
  return {kernel_name<K>(), Params::types(), &Params::template trace<K>};
}

}  // namespace detail

// A kernel compiled for one device: call it with a grid and the arguments. Each new
// specialization of the arguments (Triton's: integers equal to 1 or divisible by 16, pointers
// aligned to 16 bytes) is traced and compiled once, then found in the cache.
template <auto K>
class Kernel {
  using Params = detail::kernel_params<decltype(K)>;

 public:
  Kernel(const Device &device, CompileOptions options)
      : impl_(detail::make_kernel(device, detail::kernel_signature<K>(), options)) {}

  template <class... A>
  void operator()(const Grid &g, A &&...args) const {
    static_assert(sizeof...(A) == Params::count, "wrong number of kernel arguments: pass one per kernel parameter");
    if constexpr (sizeof...(A) == Params::count) Params::template check_writable<A...>(std::index_sequence_for<A...>{});
    const ArgValue values[] = {make_arg(args)..., ArgValue{}};
    detail::launch(*impl_, g, values, sizeof...(A));
  }

  // Launch with type-erased arguments; count and types are checked at run time.
  void launch(const Grid &g, const std::vector<ArgValue> &args) const { detail::launch(*impl_, g, args.data(), args.size()); }

  // Compile for these arguments' specialization now, without running.
  template <class... A>
  void warm(A &&...args) const {
    const ArgValue values[] = {make_arg(args)..., ArgValue{}};
    detail::warm(*impl_, values, sizeof...(A));
  }

  // Milliseconds to trace, compile and link these arguments' specialization from scratch,
  // bypassing the caches (for compiler benchmarks; the result is not kept).
  template <class... A>
  double compile_cold(A &&...args) const {
    const ArgValue values[] = {make_arg(args)..., ArgValue{}};
    return detail::compile_cold(*impl_, values, sizeof...(A));
  }

  static std::string name() { return detail::kernel_name<K>(); }

 private:
  std::shared_ptr<detail::KernelImpl> impl_;
};

// What the kernel cache has done in this process, for summaries and tests.
struct CacheStats {
  int64_t compiled = 0;     // traced and compiled by LLVM (or a cuda_source compiled by NVRTC)
  int64_t memory_hits = 0;  // traced, found compiled in this process
  int64_t disk_hits = 0;    // traced, loaded from the disk cache
  int64_t launches = 0;
  double compile_ms = 0;    // total time of the compiles
};
CacheStats cache_stats();

template <auto K>
Kernel<K> compile(const Device &device, CompileOptions options = {}) {
  return Kernel<K>(device, options);
}

}  // namespace kdsl
