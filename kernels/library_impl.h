// library_impl.h - what the Library dispatch files share: compiled kernels by identity, block-size choice, checks
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <kdsl/kdsl.h>

#include "kernels/kv_element.h"
#include "kernels/launch_recorder.h"
#include "kernels/library.h"

namespace kdsl::kernels {

// A library kernel as its dispatch code calls it: the Library's raw pointers are the device's
// memory (host memory on the CPU, device addresses on a GPU), so each is passed on marked as
// such (device_memory: the device has memory of its own); other arguments pass through. With a
// recorder the launch is recorded, and run only when the recorder records beside launching
// (kernel is null otherwise).
template <auto K>
struct LibraryKernel {
  const Kernel<K> *kernel;
  bool device_memory;
  LaunchRecorder *recorder;
  const void *identity;
  const CompileOptions &options;

  template <class... Args>
  void operator()(const Grid &g, Args... args) const {
    if (recorder) {
      const ArgValue values[] = {make_arg(place(args))..., ArgValue{}};
      recorder->record(identity, &kdsl::detail::kernel_signature<K>, options, values, sizeof...(Args));
    }
    if (kernel) (*kernel)(g, place(args)...);
  }

 private:
  template <class T>
  PlacedPointer<T> place(T *p) const {
    return {p, device_memory};
  }
  template <class T>
  T place(T v) const {
    return v;
  }
};

struct Library::Impl {
  Impl(const Device &d, LaunchRecorder *r) : device(d), device_memory(d.memory_space() == MemorySpace::Device), recorder(r) {}

  // The compiled kernel K for this device, created at its first use. A launch traces and
  // compiles each new specialization once; later launches find it in the cache. Recording
  // instead of launching creates nothing.
  template <auto K>
  LibraryKernel<K> kernel() {
    static const char identity = 0;  // one address per kernel instantiation
    return kernel_at<K>(&identity, options);
  }

  // K compiled at its own warps and pipeline stages (a GPU tile that wants 8 warps); the
  // Library's other options (checked mode) still apply.
  template <auto K, int NUM_WARPS, int NUM_STAGES>
  LibraryKernel<K> kernel_with() {
    static const char identity = 0;
    auto [it, fresh] = own_options.try_emplace(&identity, options);
    if (fresh) it->second.num_warps = NUM_WARPS, it->second.num_stages = NUM_STAGES;
    return kernel_at<K>(&identity, it->second);
  }

  // Processors the dispatch fills: the CPU's threads, a GPU's multiprocessors (or those of the
  // device a recording stands for).
  int threads() const { return recorder && recorder->stand_in().threads > 0 ? recorder->stand_in().threads : device.threads(); }

  Device device;
  bool device_memory;  // the Library's pointers are device addresses, not host memory
  LaunchRecorder *recorder;
  CompileOptions options;  // every library kernel's, except those of kernel_with
  std::unordered_map<const void *, std::shared_ptr<const void>> kernels;
  std::unordered_map<const void *, CompileOptions> own_options;  // kernel_with's (nodes: references stay valid)

  // Scratch in the device's memory, grown (never shrunk) on demand so steady-state calls reuse it.
  Buffer<float> attention_partials;   // decode split-K: normalized outputs, then (max, sum) pairs
  Buffer<int32_t> argmax_result;
  Buffer<float> rope_inv_freq;        // theta^(-2i/head_dim), for rope_theta and rope_head_dim
  double rope_theta = 0;
  int rope_head_dim = 0;
  std::vector<float> rope_divisors;  // those rope_inv_freq was divided by (empty: none)
  Buffer<int8_t> activation_quants;  // the integer-dot kernels' quantized x (quantize_activations.h)
  Buffer<float> activation_scales;
  int integer_dot_rows = Library::kDefaultIntegerDotRows;
  bool prefill_tiles_everywhere = false;
  bool gpu_forms = false;  // Library::set_gpu_forms
  bool row_groups = true;  // Library::set_row_groups
  Buffer<int32_t> activation_sums;    // their integer group sums (quantize_activations_sums)
  Buffer<uint8_t> ungrouped_weights;  // a grouped matrix's rows as stored, for a prefill (Library::matmul)
  Buffer<uint8_t> made_rows;          // matmul_normed's and matmul_swiglu's rows, where no quantizer makes them
  uint64_t scratch_generation = 0;    // Library::scratch_generation

 private:
  template <auto K>
  LibraryKernel<K> kernel_at(const void *identity, const CompileOptions &o) {
    if (recorder && !recorder->launches()) return {nullptr, device_memory, recorder, identity, o};
    auto it = kernels.find(identity);
    if (it == kernels.end()) it = kernels.emplace(identity, std::make_shared<Kernel<K>>(device, o)).first;
    return {static_cast<const Kernel<K> *>(it->second.get()), device_memory, recorder, identity, o};
  }
};

namespace detail {

// RoPE turns a position into an f32 angle factor, exact up to 2^24: later positions are refused.
constexpr int64_t kMaxPosition = int64_t(1) << 24;

// Calls f.template operator()<B>() with B the smallest power of two in [Lo, Hi] that is >= n;
// n > Hi is a user error naming the operation and the size.
template <int Lo, int Hi, class F>
void with_block(std::string_view what, std::string_view size_name, int64_t n, F &&f) {
  if constexpr (Lo > Hi) {
    throw Error(std::string("kdsl::kernels::") + std::string(what) + ": " + std::string(size_name) + " " + std::to_string(n) +
                " is larger than the largest supported (" + std::to_string(Hi) + ")");
  } else {
    if (n <= Lo) f.template operator()<Lo>();
    else with_block<Lo * 2, Hi>(what, size_name, n, f);
  }
}

// Throws kdsl::Error "kdsl::kernels::<what>: <message()>" unless ok; the message is only
// built on failure, so checks cost nothing (and allocate nothing) in the per-token loop.
template <class Message>
void require(bool ok, std::string_view what, Message &&message) {
  if (!ok) throw Error(std::string("kdsl::kernels::") + std::string(what) + ": " + std::string(message()));
}

// Calls f.template operator()<KP, VP>() with the element policies (kv_element.h) of a KV
// cache's keys and values: f32, f16, bf16 or q8_0, the same for both. Each type pair compiles
// every attention kernel variant again (attention_dispatch.h), so mixed pairs, which no
// common setup uses, are not built; they, any other type and a head_dim the type cannot
// hold (q8_0: a multiple of 32) are user errors naming the operation.
template <class F>
void with_kv_types(std::string_view what, KvTypes types, int head_dim, F &&f) {
  auto fail = [&](const std::string &message) { throw Error(std::string("kdsl::kernels::") + std::string(what) + ": " + message); };
  auto name = [](WeightType t) { return std::string(weight_type_info(t).name); };
  if (types.k != types.v) fail("keys in " + name(types.k) + " and values in " + name(types.v) + ": a KV cache holds keys and values of one type");
  auto run = [&]<class P>() {
    if (head_dim % P::kBlockValues != 0)
      fail("a " + name(P::kType) + " KV cache stores blocks of " + std::to_string(P::kBlockValues) + " values along head_dim: head_dim " +
           std::to_string(head_dim) + " is not a multiple of " + std::to_string(P::kBlockValues));
    f.template operator()<P, P>();
  };
  switch (types.k) {
    case WeightType::F32: return run.template operator()<KvPlain<f32>>();
    case WeightType::F16: return run.template operator()<KvPlain<f16>>();
    case WeightType::BF16: return run.template operator()<KvPlain<bf16>>();
    case WeightType::Q8_0: return run.template operator()<KvQ8_0>();
    default: break;
  }
  fail("a KV cache of " + name(types.k) + " is not supported (f32, f16, bf16 or q8_0)");
}

// A KV cache page pointer as the kernels take it: the policy P's storage.
template <class P>
auto kv_pages(void *p) {
  return static_cast<typename P::Storage::storage *>(p);
}
template <class P>
auto kv_pages(const void *p) {
  return static_cast<const typename P::Storage::storage *>(p);
}

// Grows a scratch buffer in the Library's device memory to hold at least n elements (a growth
// moves it: Library::scratch_generation counts that).
template <class T>
T *reserve(Library::Impl &im, Buffer<T> &buffer, size_t n) {
  if (buffer.size() < n) buffer = Buffer<T>(im.device, n), ++im.scratch_generation;
  return buffer.data();
}

}  // namespace detail
}  // namespace kdsl::kernels
