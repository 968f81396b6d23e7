// kv_element.h - how a KV cache page stores its values: the element policies that kv_append, kv_move and attention read and write through
#pragma once
#include <kdsl/formats/quant_blocks.h>
#include <kdsl/formats/weight_types.h>

#include "kernels/paged_kv.h"

namespace kdsl::kernels {

// A KV cache of n_kv_heads * head_dim = `row` values per position, page_size positions per
// page, pages numbered by the block table. A policy says how a page holds them:
//   Storage                 the page pointer's element type (Ptr<Storage>)
//   kType                   the WeightType it stores (--cache-type-k / -v)
//   kBlockValues            head_dim must be a multiple of it
//   kMinColumns             the fewest columns a kv_append / kv_move program or an attention
//                           tile covers (a multiple of kBlockValues)
//   load_head<BT, D, FULL_D>(pages, at, page_size, n_kv_heads, head_dim, kv_head)
//                           [BT, D] f32: kv head kv_head's vectors at the positions `at`
//                           (columns past head_dim clamped, as head_columns says)
//   store_row<B>(pages, page, slot, page_size, row, c0, x)
//                           writes x, the values of columns c0 .. c0 + B - 1 (those < row) of
//                           one position; c0 a multiple of B, B of kMinColumns
//   copy_row<B>(pages, from_page, from_slot, to_page, to_slot, page_size, row, c0)
//                           copies those columns' stored bits from one position to another
// A new cache type is one more policy here, one case in library_impl.h's with_kv_types, one
// entry in library.h's kKvCacheTypes and one name in kernels/CMakeLists.txt's list.

// f32, f16 or bf16: page p is [page_size][row] of T; values are stored rounded to nearest
// even and read back as f32.
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
    auto base = ((at.page * wide(page_size) + at.slot) * wide(n_kv_heads) + wide(kv_head)) * wide(head_dim);
    return cast<f32>(load(pages + (col(base) + row(wide(head_columns<D, FULL_D>(head_dim))))));
  }

  template <int B>
  static void store_row(const Ptr<T> &pages, const Scalar<i64> &page, const Scalar<i64> &slot, const Scalar<i32> &page_size,
                        const Scalar<i32> &row, const Scalar<i32> &c0, const Block<f32, B> &x) {
    auto c = c0 + arange<B>();
    store(pages + offset(page, slot, page_size, row) + c, cast<T>(x), c < row);
  }

  template <int B>
  static void copy_row(const Ptr<T> &pages, const Scalar<i64> &from_page, const Scalar<i64> &from_slot, const Scalar<i64> &to_page,
                       const Scalar<i64> &to_slot, const Scalar<i32> &page_size, const Scalar<i32> &row, const Scalar<i32> &c0) {
    auto c = c0 + arange<B>();
    auto mask = c < row;
    auto from = offset(from_page, from_slot, page_size, row), to = offset(to_page, to_slot, page_size, row);
    store(pages + to + c, load(pages + from + c, mask, 0), mask);
  }

 private:
  static Scalar<i64> offset(const Scalar<i64> &page, const Scalar<i64> &slot, const Scalar<i32> &page_size, const Scalar<i32> &row) {
    return (page * wide(page_size) + slot) * wide(row);
  }
};

// Q8_0, as llama.cpp's q8_0 cache: each run of 32 consecutive values along head_dim is one
// block, 32 int8 quants q and one f16 scale d, x = d * q, quantized as ggml quantizes Q8_0
// (d = max|x| / 127, q = round(x / d) with ties away from zero, computed as x * (1 / d) in
// f32, q = 0 where d is 0; d is rounded to f16 after). head_dim is a multiple of 32, so blocks
// never straddle heads.
//
// Page layout, with blocks = row / 32: page p is page_size * blocks * 34 bytes starting at
// byte p * page_size * blocks * 34 (the bytes of as many ggml BlockQ8_0, not interleaved):
//   quants [page_size][row] int8     at its start: one position's row is contiguous, so a
//                                    head's vector loads as D bytes
//   scales [page_size][blocks] f16   after them: a head's head_dim / 32 scales are contiguous
// Keeping quants and scales apart keeps the quants' addresses affine in the column (34-byte
// blocks would split every row into 2-byte-misaligned runs of 32).
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
    auto width = n_kv_heads * head_dim;
    auto columns = row(wide(head_columns<D, FULL_D>(head_dim)));
    auto q = load(pages + (col(quant_offset(at.page, at.slot, page_size, width) + wide(kv_head * head_dim)) + columns));  // [BT, D]
    auto head_blocks = head_dim / kBlockValues;
    auto b = FULL_D ? arange<NB>() : minimum(arange<NB>(), head_blocks - 1);
    auto d_base = scale_offset(at.page, at.slot, page_size, width) + wide(kv_head * head_blocks);
    auto d = cast<f32>(load(reinterpret<f16>(pages) + (col(d_base) + row(wide(b)))));  // [BT, NB]
    // Each scale broadcast over its 32 values, then laid out as the quants: the host reads each
    // scale once, and the GPU lowering changes the layout of this one block only. Reshaping the
    // quants to [BT, NB, 32] instead took two layout changes through shared memory (more than
    // an AMD workgroup's 64 KiB at head_dim 128); a scale loaded per value, at its own
    // address, took the host twice as long as this (bench/RESULTS.md).
    return cast<f32>(q) * reshape<BT, D>(broadcast_to<BT, NB, kBlockValues>(expand_dims<2>(d)));
  }

  template <int B>
  static void store_row(const Ptr<i8> &pages, const Scalar<i64> &page, const Scalar<i64> &slot, const Scalar<i32> &page_size,
                        const Scalar<i32> &row, const Scalar<i32> &c0, const Block<f32, B> &x) {
    static_assert(B % kBlockValues == 0, "KvQ8_0::store_row: a program's columns B must be whole blocks of 32");
    constexpr int NB = B / kBlockValues;
    auto v = reshape<NB, kBlockValues>(x);
    auto d = max<1>(abs(v)) / 127.0f;  // [NB]
    auto inverse = where(d > 0.0f, 1.0f / d, 0.0f);
    auto c = c0 + reshape<NB, kBlockValues>(arange<B>());
    store(pages + (quant_offset(page, slot, page_size, row) + wide(c)), cast<i8>(round_half_away(v * col(inverse))), c < row);
    auto b = c0 / kBlockValues + arange<NB>();
    store(reinterpret<f16>(pages) + (scale_offset(page, slot, page_size, row) + wide(b)), cast<f16>(d), b < row / kBlockValues);
  }

  template <int B>
  static void copy_row(const Ptr<i8> &pages, const Scalar<i64> &from_page, const Scalar<i64> &from_slot, const Scalar<i64> &to_page,
                       const Scalar<i64> &to_slot, const Scalar<i32> &page_size, const Scalar<i32> &row, const Scalar<i32> &c0) {
    static_assert(B % kBlockValues == 0, "KvQ8_0::copy_row: a program's columns B must be whole blocks of 32");
    auto c = c0 + arange<B>();
    auto mask = c < row;
    store(pages + quant_offset(to_page, to_slot, page_size, row) + c, load(pages + quant_offset(from_page, from_slot, page_size, row) + c, mask, 0),
          mask);
    auto b = c0 / kBlockValues + arange<B / kBlockValues>();
    auto in_row = b < row / kBlockValues;
    auto scales = reinterpret<f16>(pages);
    store(scales + scale_offset(to_page, to_slot, page_size, row) + b, load(scales + scale_offset(from_page, from_slot, page_size, row) + b, in_row, 0),
          in_row);
  }

 private:
  // Byte of (page, slot)'s first quant, and half index of its first scale.
  template <int... S>
  static Block<i64, S...> quant_offset(const Block<i64, S...> &page, const Block<i64, S...> &slot, const Scalar<i32> &page_size, const Scalar<i32> &row) {
    auto blocks = wide(row / kBlockValues);
    return page * (wide(page_size) * blocks * int64_t(sizeof(formats::BlockQ8_0))) + slot * wide(row);
  }
  template <int... S>
  static Block<i64, S...> scale_offset(const Block<i64, S...> &page, const Block<i64, S...> &slot, const Scalar<i32> &page_size, const Scalar<i32> &row) {
    auto blocks = wide(row / kBlockValues);
    return page * (wide(page_size) * blocks * int64_t(sizeof(formats::BlockQ8_0) / 2)) + wide(page_size) * blocks * int64_t(kBlockValues / 2) +
           slot * blocks;
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
