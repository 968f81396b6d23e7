// weight_blocks.h - how a kernel reads its weight rows' blocks: as a file stores them (row after row) or with the rows of a group interleaved
#pragma once
#include <cstddef>
#include <string>

#include <kdsl/error.h>

#include <kdsl/formats/row_groups.h>

#include "kernels/common.h"

namespace kdsl::kernels {

// The integer-dot policies (kquant_int_dot.h, decoded_int_dot.h) read a block's bytes through
// one of these, so that one policy serves both layouts. Each gives kPiece, the bytes of quants
// a row it reads as one piece (a piece lies inside one grain of the grouped layout), and, for
// every weight row the kernel holds,
//   bytes(offset, piece): bytes offset + piece of the row's block (piece: offsets of a few
//                         bytes along the last axis, or zeros that spread the row's value
//                         along it), u8;
//   half(offset):         the f16 at byte `offset` of the row's block, as f32,
// shaped as the rows' index with the piece's axes, and kBlockBits, how those bytes are written
// (formats::BlockBits: Q6_K's grouped quants are six-bit bytes, Q5_K's, Q5_0's and Q5_1's
// five-bit bytes).

// Row after row, as GGUF stores a matrix: block `block` (counted over the matrix) at
// block * sizeof(Layout).
template <class Layout, class BlockIndex>
struct StoredBlocks {
  static constexpr int kPiece = 16;
  static constexpr formats::BlockBits kBlockBits = formats::BlockBits::AsStored;
  Ptr<const u8> wq;
  BlockIndex block;

  template <class Piece>
  auto bytes(int offset, const Piece &piece) const {
    return load(wq + (block * int(sizeof(Layout)) + offset + piece));
  }
  template <class Piece>
  auto half(size_t offset, const Piece &spread) const {
    static_assert(sizeof(Layout) % 2 == 0, "the f16 factors are addressed in halves: the block size must be even");
    return cast<f32>(load(reinterpret<f16>(wq) + (block * int(sizeof(Layout) / 2) + int(offset / 2) + spread)));
  }
};

// R rows interleaved (formats/row_groups.h): group block `group` (counted over the matrix: a
// group's blocks one after another, then the next group's) of R rows, every field's R copies
// side by side at its grain, so that a field's bytes of all R rows are one contiguous run. The
// rows are the group's R, in order ([1, R, 1]). The f16 factors are addressed in halves from
// the group's index (R * sizeof(Layout) is even), not by halving a byte offset, which hid
// from LLVM that 16 rows' factors are one run.
template <class Layout, int R>
struct GroupedBlocks {
  static constexpr int kPiece = formats::kGroupedQuantGrain;
  static constexpr formats::BlockBits kBlockBits = formats::row_group_plan<Layout>().block_bits;  // how the bytes read are written
  static constexpr int64_t kGroupBytes = int64_t(R) * int64_t(sizeof(Layout));
  static_assert(kGroupBytes % 2 == 0, "a group's f16 factors are addressed in halves");
  Ptr<const u8> wq;
  Block<i64> group;

  static auto lane_offsets(int grain) { return reshape<1, R, 1>(wide(arange<R>()) * int64_t(grain)); }

  template <class Piece>
  auto bytes(int offset, const Piece &piece) const {
    constexpr formats::RowGroupPlan plan = formats::row_group_plan<Layout>();
    const formats::GroupedPlace p = plan.place(R, offset);
    // A piece of offsets runs on within its grain; one wider would read the next row's bytes.
    constexpr int kExtent = Piece::rank > 0 ? Piece::dims[Piece::rank - 1] : 1;
    if (kExtent > p.room)
      internal_error("weight_blocks.h: a piece of " + std::to_string(kExtent) + " bytes at byte " + std::to_string(offset) + " of a block crosses its grain of " +
                     std::to_string(p.grain));
    return load(wq + (group * kGroupBytes + p.first + lane_offsets(p.grain) + piece));
  }
  // The R rows' 4 bytes at `offset` of a field of grain 4, a contiguous run, seen as rows of
  // 16 bytes ([1, R / 4, 16]): the shape the host lowering loads and computes on as byte
  // vectors, where [1, R, 4] bytes are loaded and computed element by element.
  auto run_of_16(int offset) const {
    static_assert(R % 4 == 0, "R rows of 4 bytes make rows of 16");
    constexpr formats::RowGroupPlan plan = formats::row_group_plan<Layout>();
    const formats::GroupedPlace p = plan.place(R, offset);
    if (p.grain != 4 || p.room != 4) internal_error("weight_blocks.h: run_of_16 reads whole grains of 4 bytes");
    return load(wq + (group * kGroupBytes + p.first + wide(reshape<1, R / 4, 16>(arange<R * 4>()))));
  }
  // Asks for the group's bytes DISTANCE further on (a later group's, which this program's next
  // steps or a later program read), one prefetch a cache line; past the matrix's end it asks
  // for bytes nobody reads, which a prefetch may (it never faults).
  template <int64_t DISTANCE>
  void prefetch_ahead() const {
    constexpr int kLines = int((kGroupBytes + 63) / 64);
    prefetch(wq + (group * kGroupBytes + DISTANCE + wide(arange<kLines * 64>())));
  }
  template <class Piece>
  auto half(size_t offset, const Piece &spread) const {
    constexpr formats::RowGroupPlan plan = formats::row_group_plan<Layout>();
    const formats::GroupedPlace p = plan.place(R, int(offset));
    return cast<f32>(load(reinterpret<f16>(wq) + (group * (kGroupBytes / 2) + p.first / 2 + lane_offsets(p.grain / 2) + spread)));
  }
};

}  // namespace kdsl::kernels
