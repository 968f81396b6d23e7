// kv_element.h - how a KV cache page stores its values: the element policies that kv_append, kv_move and attention read and write through
#pragma once
#include <kdsl/formats/quant_blocks.h>
#include <kdsl/formats/weight_types.h>

#include "kernels/paged_kv.h"

namespace kdsl::kernels {

// A KV cache of n_kv_heads * head_dim = `row` values per position, page_size positions per
// page, pages numbered by the block table. A page is head-major: head h's vectors for the
// page's page_size positions are one run, vector `h * page_size + slot` of the page (kv_vector
// below), so a decode step reads each head's positions as one contiguous stream. Keeping a
// position's row together instead laid one head's rows a whole row apart, and on the CPU the
// decode attention read them at a third of the bandwidth (bench/RESULTS.md, the entry on
// head-major KV pages). A policy says how a page holds its vectors:
//   Storage                 the page pointer's element type (Ptr<Storage>)
//   kType                   the WeightType it stores (--cache-type-k / -v)
//   kBlockValues            head_dim must be a multiple of it
//   kMinColumns             the fewest columns a kv_append / kv_move program or an attention
//                           tile covers (a multiple of kBlockValues)
//   load_head<BT, D, FULL_D>(pages, at, page_size, n_kv_heads, head_dim, kv_head)
//                           [BT, D] f32: kv head kv_head's vectors at the positions `at`
//                           (columns past head_dim clamped, as head_columns says)
//   store_head<D>(pages, page, slot, page_size, n_kv_heads, head_dim, kv_head, x)
//                           writes x's first head_dim values as head kv_head's vector at one
//                           position; D a multiple of kMinColumns
//   copy_head<D>(pages, from_page, from_slot, to_page, to_slot, page_size, n_kv_heads,
//                head_dim, kv_head)
//                           copies that vector's stored bits from one position to another
// A new cache type is one more policy here, one case in library_impl.h's with_kv_types, one
// entry in library.h's kKvCacheTypes and one name in kernels/CMakeLists.txt's list.

// Which vector of its page holds kv head kv_head at `slot`: the page's vectors are
// [n_kv_heads][page_size], each head_dim values.
template <int... S>
Block<i64, S...> kv_vector(const Block<i64, S...> &slot, const Scalar<i32> &page_size, const Scalar<i32> &kv_head) {
  return wide(kv_head) * wide(page_size) + slot;
}

// f32, f16 or bf16: page p is [n_kv_heads][page_size][head_dim] of T; values are stored
// rounded to nearest even and read back as f32.
template <class T>
struct KvPlain {
  using Storage = T;
  static constexpr formats::WeightType kType = T::dtype == DType::F32   ? formats::WeightType::F32
                                               : T::dtype == DType::F16 ? formats::WeightType::F16
                                                                        : formats::WeightType::BF16;
  static constexpr int kBlockValues = 1;
  static constexpr int kMinColumns = 16;

  template <int BT, int D, bool FULL_D>
  static Block<f32, BT, D> load_head(const Ptr<const T> &pages, const PagedSlots<BT> &at, const Scalar<i32> &page_size,
                                     const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim, const Scalar<i32> &kv_head) {
    return cast<f32>(load_head_stored<BT, D, FULL_D>(pages, at, page_size, n_kv_heads, head_dim, kv_head));
  }
  // The same in the stored type: a tensor-core dot's operand (f16, bf16).
  template <int BT, int D, bool FULL_D>
  static Block<T, BT, D> load_head_stored(const Ptr<const T> &pages, const PagedSlots<BT> &at, const Scalar<i32> &page_size,
                                          const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim, const Scalar<i32> &kv_head) {
    auto base = vector_offset(at.page, at.slot, page_size, n_kv_heads, head_dim, kv_head);
    return load(pages + (col(base) + row(wide(head_columns<D, FULL_D>(head_dim)))));
  }

  template <int D>
  static void store_head(const Ptr<T> &pages, const Scalar<i64> &page, const Scalar<i64> &slot, const Scalar<i32> &page_size,
                         const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim, const Scalar<i32> &kv_head, const Block<f32, D> &x) {
    auto d = arange<D>();
    store(pages + vector_offset(page, slot, page_size, n_kv_heads, head_dim, kv_head) + d, cast<T>(x), d < head_dim);
  }

  template <int D>
  static void copy_head(const Ptr<T> &pages, const Scalar<i64> &from_page, const Scalar<i64> &from_slot, const Scalar<i64> &to_page,
                        const Scalar<i64> &to_slot, const Scalar<i32> &page_size, const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim,
                        const Scalar<i32> &kv_head) {
    auto d = arange<D>();
    auto mask = d < head_dim;
    auto from = vector_offset(from_page, from_slot, page_size, n_kv_heads, head_dim, kv_head);
    auto to = vector_offset(to_page, to_slot, page_size, n_kv_heads, head_dim, kv_head);
    store(pages + to + d, load(pages + from + d, mask, 0), mask);
  }

 private:
  // The element where kv head kv_head's vector at (page, slot) starts.
  template <int... S>
  static Block<i64, S...> vector_offset(const Block<i64, S...> &page, const Block<i64, S...> &slot, const Scalar<i32> &page_size,
                                        const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim, const Scalar<i32> &kv_head) {
    return (page * wide(n_kv_heads * page_size) + kv_vector(slot, page_size, kv_head)) * wide(head_dim);
  }
};

// Q8_0, as llama.cpp's q8_0 cache: each run of 32 consecutive values along head_dim is one
// block, 32 int8 quants q and one f16 scale d, x = d * q, quantized as ggml quantizes Q8_0
// (d = max|x| / 127, q = round(x / d) with ties away from zero, computed as x * (1 / d) in
// f32, q = 0 where d is 0; d is rounded to f16 after). head_dim is a multiple of 32, so blocks
// never straddle heads.
//
// Page layout, with V = n_kv_heads * page_size vectors a page (kv_vector numbers them) and
// B = head_dim / 32 blocks a vector: page p is V * B * 34 bytes starting at byte p * V * B * 34
// (the bytes of as many ggml BlockQ8_0, not interleaved):
//   quants [V][head_dim] int8     at its start: a vector's quants are contiguous, and so are a
//                                 head's page_size vectors
//   scales [V][B] f16             after them
// Keeping quants and scales apart keeps the quants' addresses affine in the column (34-byte
// blocks would split every vector into 2-byte-misaligned runs of 32).
struct KvQ8_0 {
  using Storage = i8;
  static constexpr formats::WeightType kType = formats::WeightType::Q8_0;
  static constexpr int kBlockValues = formats::kQK8_0;
  static constexpr int kMinColumns = formats::kQK8_0;

  template <int BT, int D, bool FULL_D>
  static Block<f32, BT, D> load_head(const Ptr<const i8> &pages, const PagedSlots<BT> &at, const Scalar<i32> &page_size,
                                     const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim, const Scalar<i32> &kv_head) {
    static_assert(D % kBlockValues == 0, "KvQ8_0::load_head: the tile's columns D must be whole blocks of 32 (head_dim is)");
    constexpr int NB = D / kBlockValues;
    auto columns = row(wide(head_columns<D, FULL_D>(head_dim)));
    auto vector = kv_vector(at.slot, page_size, kv_head);
    auto q = load(pages + (col(quant_offset(at.page, vector, page_size, n_kv_heads, head_dim)) + columns));  // [BT, D]
    auto b = FULL_D ? arange<NB>() : minimum(arange<NB>(), head_dim / kBlockValues - 1);
    auto d = cast<f32>(load(reinterpret<f16>(pages) + (col(scale_offset(at.page, vector, page_size, n_kv_heads, head_dim)) + row(wide(b)))));  // [BT, NB]
    // Each scale broadcast over its 32 values, then laid out as the quants: the host reads each
    // scale once, and the GPU lowering changes the layout of this one block only. Reshaping the
    // quants to [BT, NB, 32] instead took two layout changes through shared memory (more than
    // an AMD workgroup's 64 KiB at head_dim 128); a scale loaded per value, at its own
    // address, took the host twice as long as this (bench/RESULTS.md).
    return cast<f32>(q) * reshape<BT, D>(broadcast_to<BT, NB, kBlockValues>(expand_dims<2>(d)));
  }

  template <int D>
  static void store_head(const Ptr<i8> &pages, const Scalar<i64> &page, const Scalar<i64> &slot, const Scalar<i32> &page_size,
                         const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim, const Scalar<i32> &kv_head, const Block<f32, D> &x) {
    static_assert(D % kBlockValues == 0, "KvQ8_0::store_head: a program's columns D must be whole blocks of 32");
    constexpr int NB = D / kBlockValues;
    auto vector = kv_vector(slot, page_size, kv_head);
    auto v = reshape<NB, kBlockValues>(x);
    auto d = max<1>(abs(v)) / 127.0f;  // [NB]
    auto inverse = where(d > 0.0f, 1.0f / d, 0.0f);
    auto c = reshape<NB, kBlockValues>(arange<D>());
    store(pages + (quant_offset(page, vector, page_size, n_kv_heads, head_dim) + wide(c)), cast<i8>(round_half_away(v * col(inverse))), c < head_dim);
    auto b = arange<NB>();
    store(reinterpret<f16>(pages) + (scale_offset(page, vector, page_size, n_kv_heads, head_dim) + wide(b)), cast<f16>(d), b < head_dim / kBlockValues);
  }

  template <int D>
  static void copy_head(const Ptr<i8> &pages, const Scalar<i64> &from_page, const Scalar<i64> &from_slot, const Scalar<i64> &to_page,
                        const Scalar<i64> &to_slot, const Scalar<i32> &page_size, const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim,
                        const Scalar<i32> &kv_head) {
    static_assert(D % kBlockValues == 0, "KvQ8_0::copy_head: a program's columns D must be whole blocks of 32");
    auto from = kv_vector(from_slot, page_size, kv_head), to = kv_vector(to_slot, page_size, kv_head);
    auto c = arange<D>();
    auto mask = c < head_dim;
    store(pages + quant_offset(to_page, to, page_size, n_kv_heads, head_dim) + c,
          load(pages + quant_offset(from_page, from, page_size, n_kv_heads, head_dim) + c, mask, 0), mask);
    auto b = arange<D / kBlockValues>();
    auto in_vector = b < head_dim / kBlockValues;
    auto scales = reinterpret<f16>(pages);
    store(scales + scale_offset(to_page, to, page_size, n_kv_heads, head_dim) + b,
          load(scales + scale_offset(from_page, from, page_size, n_kv_heads, head_dim) + b, in_vector, 0), in_vector);
  }

 private:
  // Byte of vector `vector` of page `page`'s first quant, and half index of its first scale.
  template <int... S>
  static Block<i64, S...> quant_offset(const Block<i64, S...> &page, const Block<i64, S...> &vector, const Scalar<i32> &page_size,
                                       const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim) {
    return page * page_bytes(page_size, n_kv_heads, head_dim) + vector * wide(head_dim);
  }
  template <int... S>
  static Block<i64, S...> scale_offset(const Block<i64, S...> &page, const Block<i64, S...> &vector, const Scalar<i32> &page_size,
                                       const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim) {
    auto vectors = wide(n_kv_heads * page_size);
    auto blocks = wide(head_dim / kBlockValues);
    return page * (page_bytes(page_size, n_kv_heads, head_dim) / 2) + vectors * wide(head_dim) / 2 + vector * blocks;
  }
  static Scalar<i64> page_bytes(const Scalar<i32> &page_size, const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim) {
    return wide(n_kv_heads * page_size) * wide(head_dim / kBlockValues) * int64_t(sizeof(formats::BlockQ8_0));
  }
  // round(x) with ties away from zero, as C's round (ggml's roundf): exact for |x| < 2^23.
  template <int... S>
  static Block<f32, S...> round_half_away(const Block<f32, S...> &x) {
    auto a = abs(x);
    auto t = floor(a);
    auto r = where(a - t >= 0.5f, t + 1.0f, t);
    return where(x < 0.0f, -r, r);
  }
};

static_assert(sizeof(formats::BlockQ8_0) == 34, "KvQ8_0's page layout counts 34 bytes per block of 32");

}  // namespace kdsl::kernels
