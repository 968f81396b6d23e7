// int_dot.h - dot products of 4 bytes (dot4) on host vectors: AVX-512/AVX VNNI, AVX2 pmaddwd, or portable LLVM vector code
#pragma once
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "codegen/codegen.h"
#include "codegen/host/byte_kind.h"

namespace kdsl::codegen {

// The path Auto stands for on this CPU (the widest it has), or `path` itself; throws kdsl::Error
// when `path` is forced and the CPU lacks its instructions.
IntDotPath resolve_int_dot_path(IntDotPath path);

// How one chunk of bytes becomes sums of 4 products. Every path is exact for every i8 / u8
// value: the saturating vpmaddubsw is used only where no pair sum can saturate.
//   Vnni:     vpdpbusd (u8 x s8 -> i32, AVX512-VNNI or AVX-VNNI) where one operand reads as u8
//             and the other as s8; otherwise (s8 x s8, u8 x u8 with high bytes) one operand
//             shifts by 128 and a correction, a second vpdpbusd of the other operand, comes off.
//   Pmaddwd:  vpmaddubsw (u8 x s8 pair sums into i16, saturating) and vpmaddwd by ones, as
//             llama.cpp's AVX2 kernels do, where no pair can saturate: one operand below 128
//             against the other as s8, or s8 x s8 with one operand within +-127 (its sign moved
//             to it from the other by vpsignb, the other's magnitude by vpabsb: at most 128
//             * 127 * 2 < 2^15); otherwise both operands widened to i16, vpmaddwd (exact
//             i16 x i16 pair sums), pairs added.
//   Portable: widened to i32, multiplied, groups of 4 added with shuffles (any LLVM target).
// The chosen path is the widest the host CPU has unless codegen::Options::int_dot forces one.
class IntDotEmitter {
 public:
  // Throws kdsl::Error when `path` is forced and the host CPU lacks its instructions.
  IntDotEmitter(llvm::IRBuilder<> &b, llvm::Module &m, IntDotPath path);

  IntDotPath path() const { return path_; }

  // Chunk widths in bytes, widest first, each a multiple of 4, that dot4() takes at full speed;
  // any other multiple of 4 also works (portable code).
  const std::vector<int> &widths() const { return widths_; }

  // The value a row's chunk of `b` contributes to every result, computed once when `b` is the
  // same for many rows (nullptr when the path needs none for these signednesses).
  llvm::Value *correction(llvm::Value *b, ByteKind a_kind, ByteKind b_kind);

  // acc (<n/4 x i32>) + group sums of a and b (<n x i8> each, signed as given). `correction`
  // is this chunk's correction(b, ...), or nullptr to compute it here.
  llvm::Value *dot4(llvm::Value *acc, llvm::Value *a, ByteKind a_kind, llvm::Value *b, ByteKind b_kind, llvm::Value *correction = nullptr);

 private:
  llvm::Value *vpdpbusd(llvm::Value *acc, llvm::Value *u, llvm::Value *s);
  llvm::Value *pmaddwd_dot4(llvm::Value *acc, llvm::Value *a, bool a_signed, llvm::Value *b, bool b_signed);
  llvm::Value *maddubs_dot4(llvm::Value *acc, llvm::Value *u8, llvm::Value *s8, int pair_bound);
  llvm::Value *signed_maddubs_dot4(llvm::Value *acc, llvm::Value *any, llvm::Value *within_127, int pair_bound);
  llvm::Value *portable_dot4(llvm::Value *acc, llvm::Value *a, bool a_signed, llvm::Value *b, bool b_signed);
  llvm::Value *add_adjacent_pairs(llvm::Value *v);
  llvm::Value *splat_byte(int n, uint8_t value);
  bool vnni_width(int n) const;

  llvm::IRBuilder<> &b_;
  llvm::Module &m_;
  IntDotPath path_;
  bool vnni_512_ = false, vnni_256_ = false;
  std::vector<int> widths_;
};

}  // namespace kdsl::codegen
