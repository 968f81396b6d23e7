// library.cpp - Library: construction and the dispatch of the norm, elementwise, lookup and cache kernels
#include <cmath>

#include "kernels/argmax.h"
#include "kernels/embedding.h"
#include "kernels/kv_append.h"
#include "kernels/kv_move.h"
#include "kernels/library_device.h"
#include "kernels/library_impl.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax.h"
#include "kernels/swiglu.h"

namespace kdsl::kernels {

using detail::require;
using detail::with_block;

Library::Library(const Device &device, LaunchRecorder *recorder) : impl_(std::make_unique<Impl>(device, recorder)) {}
Library::~Library() = default;

void Library::set_integer_dot_rows(int max_rows) { impl_->integer_dot_rows = max_rows; }
void Library::set_prefill_tiles_everywhere(bool on) { impl_->prefill_tiles_everywhere = on; }
void Library::set_gpu_forms(bool on) { impl_->gpu_forms = on; }
void Library::set_row_groups(bool on) { impl_->row_groups = on; }
bool Library::dispatches_for_gpu() const { return !detail::dispatches_for_cpu(*impl_); }

namespace {

// Calls f.template operator()<E>() for the float element type E of a row's storage (f32, f16 or
// bf16: the rows a producer writes, an embedding table's), `what` naming the operation's
// argument in the error for any other.
template <class F>
void with_row_type(const char *op, const char *what, DType type, F &&f) {
  switch (type) {
    case DType::F32: return f.template operator()<f32>();
    case DType::F16: return f.template operator()<f16>();
    case DType::BF16: return f.template operator()<bf16>();
    default:
      require(false, op, [&] { return std::string(what) + " type " + std::string(dtype_name(type)) + " is not supported (f32, f16 or bf16)"; });
  }
}

// A 16-bit output written over f32 inputs would overwrite inputs that other programs have yet
// to read (its elements are half as wide): refused where the two ranges meet.
void require_apart(const char *op, const char *out_name, const void *out, DType type, const char *in_name, const void *in, int64_t n) {
  if (type == DType::F32 || n == 0) return;
  const auto o = reinterpret_cast<uintptr_t>(out), i = reinterpret_cast<uintptr_t>(in);
  const bool meet = o < i + uintptr_t(n) * sizeof(float) && i < o + uintptr_t(n) * dtype_bytes(type);
  require(!meet, op, [&] {
    return std::string(out_name) + " of " + std::string(dtype_name(type)) + " overlaps " + in_name + ": a 16-bit output cannot be written over its f32 input";
  });
}

}  // namespace

void Library::rmsnorm(const float *x, const float *w, float *y, int rows, int dim, float eps) { rmsnorm(x, w, y, DType::F32, rows, dim, eps); }

void Library::rmsnorm(const float *x, const float *w, void *y, DType ytype, int rows, int dim, float eps) {
  require(rows >= 0 && dim > 0, "rmsnorm",
          [&] { return "rows and dim must be positive (got rows " + std::to_string(rows) + ", dim " + std::to_string(dim) + ")"; });
  if (rows == 0) return;
  with_row_type("rmsnorm", "y", ytype, [&]<class Y>() {
    require_apart("rmsnorm", "y", y, ytype, "x", x, int64_t(rows) * dim);
    with_block<16, 8192>("rmsnorm", "dim", dim, [&]<int B>() {
      impl_->kernel<kernels::rmsnorm<B, false, Y>>()(grid(rows), x, x, w, static_cast<typename Y::storage *>(y), dim, eps);
    });
  });
}

void Library::add_rmsnorm(float *x, const float *residual, const float *w, float *y, int rows, int dim, float eps) {
  add_rmsnorm(x, residual, w, y, DType::F32, rows, dim, eps);
}

void Library::add_rmsnorm(float *x, const float *residual, const float *w, void *y, DType ytype, int rows, int dim, float eps) {
  require(rows >= 0 && dim > 0, "add_rmsnorm",
          [&] { return "rows and dim must be positive (got rows " + std::to_string(rows) + ", dim " + std::to_string(dim) + ")"; });
  if (rows == 0) return;
  with_row_type("add_rmsnorm", "y", ytype, [&]<class Y>() {
    require_apart("add_rmsnorm", "y", y, ytype, "x", x, int64_t(rows) * dim);
    require_apart("add_rmsnorm", "y", y, ytype, "residual", residual, int64_t(rows) * dim);
    with_block<16, 8192>("add_rmsnorm", "dim", dim, [&]<int B>() {
      impl_->kernel<kernels::rmsnorm<B, true, Y>>()(grid(rows), x, residual, w, static_cast<typename Y::storage *>(y), dim, eps);
    });
  });
}

DType Library::product_input_type(WeightType wtype) const {
  const bool narrow = wtype == WeightType::F16 || wtype == WeightType::BF16;
  return narrow && dispatches_for_gpu() ? *dtype_of(wtype) : DType::F32;
}

void Library::swiglu(const float *gate, const float *up, float *out, int64_t n) { swiglu(gate, up, out, DType::F32, n); }

void Library::swiglu(const float *gate, const float *up, void *out, DType otype, int64_t n) {
  require(n >= 0 && n < (int64_t(1) << 31), "swiglu", [&] { return "n must be in [0, 2^31) (got " + std::to_string(n) + ")"; });
  if (n == 0) return;
  constexpr int kBlock = 1024;
  with_row_type("swiglu", "out", otype, [&]<class O>() {
    require_apart("swiglu", "out", out, otype, "gate", gate, n);
    require_apart("swiglu", "out", out, otype, "up", up, n);
    impl_->kernel<kernels::swiglu<kBlock, O>>()(grid(cdiv(n, int64_t(kBlock))), gate, up, static_cast<typename O::storage *>(out), int(n));
  });
}

void Library::embedding(const int32_t *ids, const void *table, DType ttype, float *out, int rows, int dim) {
  require(rows >= 0 && dim > 0, "embedding",
          [&] { return "rows and dim must be positive (got rows " + std::to_string(rows) + ", dim " + std::to_string(dim) + ")"; });
  if (rows == 0) return;
  with_row_type("embedding", "table", ttype, [&]<class T>() {
    with_block<16, 1024>("embedding", "dim", std::min(dim, 1024), [&]<int B>() {
      impl_->kernel<kernels::embedding<T, B>>()(grid(rows, cdiv(dim, B)), ids, static_cast<const typename T::storage *>(table), out, dim);
    });
  });
}

void Library::kv_append(const float *k, const float *v, void *k_pages, void *v_pages, const int32_t *block_table, int pos0, int rows,
                        int n_kv_heads, int head_dim, int page_size, KvTypes types) {
  require(rows >= 0 && pos0 >= 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0, "kv_append", [&] {
    return "sizes must be positive (rows " + std::to_string(rows) + ", pos0 " + std::to_string(pos0) + ", n_kv_heads " +
           std::to_string(n_kv_heads) + ", head_dim " + std::to_string(head_dim) + ", page_size " + std::to_string(page_size) + ")";
  });
  require(int64_t(pos0) + rows <= detail::kMaxPosition, "kv_append", [&] { return "positions past 2^24 are not supported"; });
  if (rows == 0) return;
  detail::with_kv_types("kv_append", types, head_dim, [&]<class KP, class VP>() {
    with_block<KP::kMinColumns, 256>("kv_append", "head_dim", head_dim, [&]<int D>() {
      impl_->kernel<kernels::kv_append<D, KP, VP>>()(grid(rows, n_kv_heads), k, v, detail::kv_pages<KP>(k_pages), detail::kv_pages<VP>(v_pages),
                                                      block_table, pos0, n_kv_heads, head_dim, page_size);
    });
  });
}

void Library::kv_append_at(const float *k, const float *v, void *k_pages, void *v_pages, const int32_t *block_table, const int32_t *positions,
                           int rows, int n_kv_heads, int head_dim, int page_size, KvTypes types) {
  require(rows >= 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0, "kv_append_at", [&] {
    return "sizes must be positive (rows " + std::to_string(rows) + ", n_kv_heads " + std::to_string(n_kv_heads) + ", head_dim " +
           std::to_string(head_dim) + ", page_size " + std::to_string(page_size) + ")";
  });
  if (rows == 0) return;
  detail::with_kv_types("kv_append_at", types, head_dim, [&]<class KP, class VP>() {
    with_block<KP::kMinColumns, 256>("kv_append_at", "head_dim", head_dim, [&]<int D>() {
      impl_->kernel<kernels::kv_append_at<D, KP, VP>>()(grid(rows, n_kv_heads), k, v, detail::kv_pages<KP>(k_pages), detail::kv_pages<VP>(v_pages),
                                                         block_table, positions, n_kv_heads, head_dim, page_size);
    });
  });
}

uint64_t Library::scratch_generation() const { return impl_->scratch_generation; }

namespace {

// Checks what every rotation shares and returns the device's theta^(-2i/head_dim) / divisor_i
// table, rebuilt only when theta, head_dim or the divisors change.
const float *rope_inv_freq(Library::Impl &im, int rows, int n_heads, int n_kv_heads, int head_dim, float theta, const float *freq_divisors,
                           float magnitude) {
  require(head_dim > 0 && head_dim % 2 == 0, "rope",
          [&] { return "head_dim must be positive and even (got " + std::to_string(head_dim) + ")"; });
  require(rows >= 0 && n_heads >= 0 && n_kv_heads >= 0, "rope", [&] { return "rows and heads must not be negative"; });
  require(magnitude > 0 && std::isfinite(magnitude), "rope", [&] { return "magnitude must be positive and finite (got " + std::to_string(magnitude) + ")"; });
  std::vector<float> divisors;
  if (freq_divisors) divisors.assign(freq_divisors, freq_divisors + head_dim / 2);
  for (float d : divisors) require(d > 0 && std::isfinite(d), "rope", [&] { return "frequency divisors must be positive and finite (got " + std::to_string(d) + ")"; });
  if (im.rope_theta != double(theta) || im.rope_head_dim != head_dim || im.rope_divisors != divisors) {
    std::vector<float> f(size_t(head_dim / 2));
    for (int i = 0; i < head_dim / 2; ++i)
      f[size_t(i)] = float(std::pow(double(theta), -2.0 * i / head_dim) / (divisors.empty() ? 1.0 : double(divisors[size_t(i)])));
    detail::reserve(im, im.rope_inv_freq, f.size());
    im.rope_inv_freq.copy_from_host(f);
    im.rope_theta = theta;
    im.rope_head_dim = head_dim;
    im.rope_divisors = std::move(divisors);
    ++im.scratch_generation;  // the table's contents changed under any captured launch reading it
  }
  return im.rope_inv_freq.data();
}

}  // namespace

void Library::rope(float *q, float *k, int rows, int n_heads, int n_kv_heads, int head_dim, int pos0, float theta, bool neox,
                   const float *freq_divisors, float magnitude) {
  require(pos0 >= 0, "rope", [&] { return "pos0 must not be negative (got " + std::to_string(pos0) + ")"; });
  require(int64_t(pos0) + rows <= detail::kMaxPosition, "rope", [&] { return "positions past 2^24 are not supported"; });
  Impl &im = *impl_;
  const float *inv_freq = rope_inv_freq(im, rows, n_heads, n_kv_heads, head_dim, theta, freq_divisors, magnitude);
  if (rows == 0) return;
  const bool gpu = !detail::dispatches_for_cpu(im);
  with_block<8, 128>("rope", "head_dim / 2", head_dim / 2, [&]<int H>() {
    if (gpu) {  // a program per head (rope_heads says why)
      auto heads = [&]<bool NEOX>() {
        im.kernel<kernels::rope_heads<H, NEOX>>()(grid(rows, n_heads + n_kv_heads), q, k, inv_freq, n_heads, n_kv_heads, head_dim, pos0, magnitude);
      };
      if (neox) heads.template operator()<true>();
      else heads.template operator()<false>();
    } else if (neox) {
      im.kernel<kernels::rope<H, true>>()(grid(rows), q, k, inv_freq, n_heads, n_kv_heads, head_dim, pos0, magnitude);
    } else {
      im.kernel<kernels::rope<H, false>>()(grid(rows), q, k, inv_freq, n_heads, n_kv_heads, head_dim, pos0, magnitude);
    }
  });
}

void Library::rope_at(float *q, float *k, int rows, int n_heads, int n_kv_heads, int head_dim, const int32_t *positions, float theta, bool neox,
                      const float *freq_divisors, float magnitude) {
  Impl &im = *impl_;
  const float *inv_freq = rope_inv_freq(im, rows, n_heads, n_kv_heads, head_dim, theta, freq_divisors, magnitude);
  if (rows == 0) return;
  const bool gpu = !detail::dispatches_for_cpu(im);
  with_block<8, 128>("rope", "head_dim / 2", head_dim / 2, [&]<int H>() {
    auto at = [&]<bool NEOX>() {
      if (gpu)  // a program per head, as in rope
        im.kernel<kernels::rope_heads_at<H, NEOX>>()(grid(rows, n_heads + n_kv_heads), q, k, inv_freq, positions, n_heads, n_kv_heads, head_dim,
                                                     magnitude);
      else
        im.kernel<kernels::rope_at<H, NEOX>>()(grid(rows), q, k, inv_freq, positions, n_heads, n_kv_heads, head_dim, magnitude);
    };
    if (neox) at.template operator()<true>();
    else at.template operator()<false>();
  });
}

void Library::kv_move(void *k_pages, void *v_pages, const int32_t *block_table, const int32_t *moves, int n_moves, int n_kv_heads, int head_dim,
                      int page_size, KvTypes types) {
  require(n_moves >= 0 && n_kv_heads > 0 && head_dim > 0 && page_size > 0, "kv_move", [&] {
    return "sizes must be positive (n_moves " + std::to_string(n_moves) + ", n_kv_heads " + std::to_string(n_kv_heads) + ", head_dim " +
           std::to_string(head_dim) + ", page_size " + std::to_string(page_size) + ")";
  });
  if (n_moves == 0) return;
  detail::with_kv_types("kv_move", types, head_dim, [&]<class KP, class VP>() {
    with_block<KP::kMinColumns, 256>("kv_move", "head_dim", head_dim, [&]<int D>() {
      impl_->kernel<kernels::kv_move<D, KP, VP>>()(grid(n_kv_heads), detail::kv_pages<KP>(k_pages), detail::kv_pages<VP>(v_pages), block_table,
                                                    moves, n_moves, n_kv_heads, head_dim, page_size);
    });
  });
}

void Library::softmax(float *x, int rows, int cols) {
  require(rows >= 0 && cols > 0, "softmax",
          [&] { return "rows and cols must be positive (got rows " + std::to_string(rows) + ", cols " + std::to_string(cols) + ")"; });
  if (rows == 0) return;
  if (cols > 8192) {
    impl_->kernel<kernels::softmax_online<2048>>()(grid(rows), x, cols);
    return;
  }
  with_block<16, 8192>("softmax", "cols", cols, [&]<int B>() { impl_->kernel<kernels::softmax<B>>()(grid(rows), x, cols); });
}

int32_t Library::argmax(const float *x, int n) {
  require(n > 0, "argmax", [&] { return "n must be positive (got " + std::to_string(n) + ")"; });
  int32_t *result = detail::reserve(*impl_, impl_->argmax_result, 1);
  impl_->kernel<kernels::argmax<512>>()(grid(1), x, result, n);
  int32_t index = 0;
  impl_->argmax_result.copy_to_host(std::span<int32_t>(&index, 1));
  return index;
}

}  // namespace kdsl::kernels
