// int_dot_tile.cpp - byte dots as register tiles: strips of rows, panels of 8-column vectors, k-quads in i16 groups or vpdpbusd chains
#include "codegen/host/int_dot_tile.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "codegen/host/counted_loop.h"
#include "codegen/host/int_dot.h"
#include "codegen/host/target_machine.h"

namespace kdsl::codegen {

namespace {

// The host's vector pipes as a byte dot's tile meets them, from llvm-mca-19's models of the
// throughput of vpmaddubsw, vpaddw and vpbroadcastd ymm from memory: Zen 1 and 2 multiply on
// one pipe of three ALU pipes, Zen 3 and later on two of four, both issuing a broadcast from
// memory on an FP pipe besides its load; Intel's cores multiply on two of three ALU ports and
// broadcast on the load ports alone.
DotMachine byte_dot_machine() {
  DotMachine machine;
  machine.registers = host_has_feature("avx512f") ? 32 : 16;
  machine.lanes = 8;  // i32 columns a vector
  const std::string &cpu = host_target().arch;
  const bool zen = cpu.rfind("znver", 0) == 0, early_zen = cpu == "znver1" || cpu == "znver2";
  machine.fma_ports = early_zen ? 1 : 2;
  machine.alu_ports = zen && !early_zen ? 4 : 3;
  machine.alu_ops_per_row = zen ? 1 : 0;  // A's broadcast
  return machine;
}

// s8 x s8 without VNNI, one operand within +-127 (int_dot_tile.h, SignedMaddubs).
IntDotTilePlan signed_maddubs_plan(int64_t M, int64_t N, ByteKind a, DotMachine machine) {
  IntDotTilePlan plan;
  plan.kind = IntDotTilePlan::Kind::SignedMaddubs;
  plan.b_is_u8 = plan.magnitude_of_b = a.within_127();
  machine.fma_latency = 2;   // the chains are vpaddd's; the products are independent
  machine.multiplies_per_product = 2;  // vpmaddubsw, and vpmaddwd widening its pairs at once
  machine.alu_ops_per_product = 2;     // vpsignb, and the vpaddd into the accumulator
  machine.registers -= 2;    // the signed operand and vpmaddubsw's result before they are used
  if (plan.magnitude_of_b) machine.registers_per_b_vector = 2, machine.alu_ops_per_b_vector = 1;  // B and |B|
  else machine.registers -= 1, machine.alu_ops_per_row += 1;                                     // |A| beside A's broadcast
  plan.tile = choose_dot_tile(M, N, machine);
  return plan;
}

}  // namespace

std::optional<IntDotTilePlan> plan_int_dot_tile(int64_t M, int64_t N, int64_t K, ByteKind a, ByteKind b, IntDotPath path) {
  path = resolve_int_dot_path(path);
  IntDotTilePlan plan;
  // One broadcast of A and the panel's vectors of B stay in registers beside the accumulators.
  DotMachine machine = byte_dot_machine();
  ByteKind u, s;
  if (path == IntDotPath::Vnni) {
    if (b.reads_as_u8() && a.reads_as_s8()) plan.b_is_u8 = true;
    else if (a.reads_as_u8() && b.reads_as_s8()) plan.b_is_u8 = false;
    else if (a.reads_as_s8() && b.reads_as_s8()) plan.b_is_u8 = plan.flip_b = true;  // s8 x s8: B + 128 as u8, corrected
    else return std::nullopt;
    plan.kind = IntDotTilePlan::Kind::Vnni;
    machine.fma_latency = 6;  // each quad's vpdpbusd waits for the last on its accumulator
  } else if (path == IntDotPath::Pmaddwd) {
    if (b.below_128() && a.reads_as_s8()) plan.b_is_u8 = true;
    else if (a.below_128() && b.reads_as_s8()) plan.b_is_u8 = false;
    else if (a.reads_as_s8() && b.reads_as_s8() && (a.within_127() || b.within_127())) return signed_maddubs_plan(M, N, a, machine);
    else return std::nullopt;
    plan.kind = IntDotTilePlan::Kind::Maddubs;
    u = plan.b_is_u8 ? b : a, s = plan.b_is_u8 ? a : b;
    // An i16 lane takes one pair sum a quad, each at most 2 * max|u| * max|s| in magnitude.
    const int64_t pair = 2 * int64_t(u.hi) * std::max<int64_t>(-int64_t(s.lo), s.hi);
    plan.group_quads = pair == 0 ? (K + 3) / 4 : std::max<int64_t>(1, 32767 / pair);
    machine.fma_latency = 2;  // the chains are vpaddw's; the vpmaddubsw are independent
    machine.alu_ops_per_product = 1;  // the vpaddw summing its pairs in i16
    machine.registers -= 1;   // vpmaddubsw's result before it is added
  } else {
    return std::nullopt;
  }
  plan.tile = choose_dot_tile(M, N, machine);
  return plan;
}

namespace {

class TileEmitter {
 public:
  TileEmitter(llvm::IRBuilderBase &b, llvm::Module &m, const IntDotTilePlan &plan, int64_t M, int64_t N, int64_t K, const IntDotOperands &ops)
      : b_(b), m_(m), plan_(plan), M_(M), N_(N), quads_((K + 3) / 4), columns_(padded_columns(N)), ops_(ops) {}

  void run() {
    const DotTile t = plan_.tile;
    const int64_t full = M_ / t.rows, rest = M_ % t.rows;
    auto strip = [&](llvm::Value *m0, int64_t rows) {
      const int64_t vectors = columns_ / 8;
      for (int64_t j0 = 0; j0 < vectors; j0 += t.vectors) tile(m0, rows, j0, std::min<int64_t>(t.vectors, vectors - j0));
    };
    if (full) loop(b_.getInt64(full), [&](llvm::Value *s) { strip(b_.CreateMul(s, b_.getInt64(t.rows)), t.rows); });
    if (rest) strip(b_.getInt64(full * t.rows), rest);
  }

 private:
  // for (i = 0; i < n; ++i) body(i), n >= 1.
  void loop(llvm::Value *n, const std::function<void(llvm::Value *)> &body) {
    counted_loop(b_, n, {}, [&](llvm::Value *i, const CarriedValues &) {
      body(i);
      return CarriedValues{};
    }, "idot.loop");
  }

  bool accumulates_i32() const { return plan_.kind != IntDotTilePlan::Kind::Maddubs; }
  llvm::Type *acc_type() {
    return accumulates_i32() ? llvm::FixedVectorType::get(b_.getInt32Ty(), 8) : llvm::FixedVectorType::get(b_.getInt16Ty(), 16);
  }
  llvm::Value *magnitude(llvm::Value *bytes) { return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, bytes, b_.getFalse()); }

  // acc + the quad's products of u (u8) and s (s8), both <32 x i8>.
  llvm::Value *step(llvm::Value *acc, llvm::Value *u, llvm::Value *s) {
    if (plan_.kind == IntDotTilePlan::Kind::Vnni) {
      llvm::Function *f = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_avx512_vpdpbusd_256);
      llvm::FunctionType *ty = f->getFunctionType();  // LLVM 19 types the byte operands as i32 vectors
      return b_.CreateCall(f, {acc, b_.CreateBitCast(u, ty->getParamType(1)), b_.CreateBitCast(s, ty->getParamType(2))});
    }
    return b_.CreateAdd(acc, b_.CreateIntrinsic(llvm::Intrinsic::x86_avx2_pmadd_ub_sw, {}, {u, s}));
  }
  // SignedMaddubs: acc (i32) + the quad's products of `any` and `within_127` (both s8), given
  // |any| as `magnitude_of_any`.
  llvm::Value *signed_step(llvm::Value *acc, llvm::Value *magnitude_of_any, llvm::Value *any, llvm::Value *within_127) {
    llvm::Value *signed_bytes = b_.CreateIntrinsic(llvm::Intrinsic::x86_avx2_psign_b, {}, {within_127, any});
    llvm::Value *pairs = b_.CreateIntrinsic(llvm::Intrinsic::x86_avx2_pmadd_ub_sw, {}, {magnitude_of_any, signed_bytes});
    return b_.CreateAdd(acc, b_.CreateIntrinsic(llvm::Intrinsic::x86_avx2_pmadd_wd, {}, {pairs, llvm::ConstantInt::get(pairs->getType(), 1)}));
  }
  // The accumulator of vector `vector` of columns as 8 i32 column sums, times the columns'
  // scales where the dot has them. Exact either way: a vpmaddwd lane is at most
  // 2 * 32767 * 32768 < 2^31, and the i32 multiply wraps as the unfused product does.
  llvm::Value *widen(llvm::Value *acc, int64_t vector) {
    llvm::Value *scales = nullptr;
    if (ops_.column_scales)
      scales = b_.CreateAlignedLoad(llvm::FixedVectorType::get(b_.getInt32Ty(), 8), b_.CreateConstInBoundsGEP1_64(b_.getInt32Ty(), ops_.column_scales, uint64_t(vector * 8)), llvm::Align(4));
    if (accumulates_i32()) return scales ? b_.CreateMul(acc, scales) : acc;
    if (scales && ops_.scales_as_i16_pairs) return b_.CreateIntrinsic(llvm::Intrinsic::x86_avx2_pmadd_wd, {}, {acc, b_.CreateBitCast(scales, acc->getType())});
    llvm::Value *sums = b_.CreateIntrinsic(llvm::Intrinsic::x86_avx2_pmadd_wd, {}, {acc, llvm::ConstantInt::get(acc->getType(), 1)});
    return scales ? b_.CreateMul(sums, scales) : sums;
  }

  // Quads [q0, q0 + count) of a tile of `rows` rows from m0 by vectors [j0, j0 + vectors),
  // added into C (stored over it where C starts as zero and this is the first group).
  void group(llvm::Value *m0, int64_t rows, int64_t j0, int64_t vectors, llvm::Value *q0, int64_t count, bool first) {
    auto *i32 = b_.getInt32Ty();
    auto *bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), 32);
    const CarriedValues zeros(size_t(rows * vectors), llvm::Constant::getNullValue(acc_type()));
    auto quad = [&](llvm::Value *i, const CarriedValues &acc) {
      llvm::Value *q = b_.CreateAdd(q0, i);
      const bool signed_pairs = plan_.kind == IntDotTilePlan::Kind::SignedMaddubs;
      std::vector<llvm::Value *> bv, b_magnitude;
      for (int64_t j = 0; j < vectors; ++j) {
        llvm::Value *at = b_.CreateAdd(b_.CreateMul(q, b_.getInt64(columns_)), b_.getInt64((j0 + j) * 8));
        bv.push_back(b_.CreateAlignedLoad(bytes, b_.CreateInBoundsGEP(i32, ops_.b_packed, at), llvm::Align(4)));
        if (signed_pairs && plan_.magnitude_of_b) b_magnitude.push_back(magnitude(bv.back()));
      }
      CarriedValues next(acc.size());
      // Row m0's quad; the tile's other rows at constant offsets from it, which instruction
      // selection folds into the loads' displacements: one base register for the tile's rows
      // where a product per row kept a register each (and spilled them past a few rows).
      llvm::Value *first_row = b_.CreateInBoundsGEP(b_.getInt8Ty(), ops_.a, b_.CreateAdd(b_.CreateMul(m0, b_.getInt64(ops_.a_stride)), b_.CreateMul(q, b_.getInt64(4))));
      for (int64_t r = 0; r < rows; ++r) {
        llvm::Value *word = b_.CreateAlignedLoad(i32, b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), first_row, uint64_t(r * ops_.a_stride)), llvm::Align(1));
        llvm::Value *av = b_.CreateBitCast(b_.CreateVectorSplat(8, word), bytes);
        llvm::Value *a_magnitude = signed_pairs && !plan_.magnitude_of_b ? magnitude(av) : nullptr;
        for (int64_t j = 0; j < vectors; ++j) {
          const size_t k = size_t(r * vectors + j);
          if (signed_pairs)
            next[k] = plan_.magnitude_of_b ? signed_step(acc[k], b_magnitude[size_t(j)], bv[size_t(j)], av) : signed_step(acc[k], a_magnitude, av, bv[size_t(j)]);
          else
            next[k] = plan_.b_is_u8 ? step(acc[k], bv[size_t(j)], av) : step(acc[k], av, bv[size_t(j)]);
        }
      }
      return next;
    };
    const CarriedValues next = counted_loop(b_, b_.getInt64(count), zeros, quad, "idot.q");
    llvm::Value *c_tile = b_.CreateInBoundsGEP(i32, ops_.c, b_.CreateAdd(b_.CreateMul(m0, b_.getInt64(N_)), b_.getInt64(j0 * 8)));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < vectors; ++j) {
        const int64_t col = (j0 + j) * 8, width = std::min<int64_t>(8, N_ - col);
        llvm::Value *sums = widen(next[size_t(r * vectors + j)], j0 + j);
        if (width < 8) {
          std::vector<int> lanes;
          for (int l = 0; l < width; ++l) lanes.push_back(l);
          sums = b_.CreateShuffleVector(sums, lanes);
        }
        llvm::Value *slot = b_.CreateConstInBoundsGEP1_64(i32, c_tile, uint64_t(r * N_ + j * 8));
        if (!(first && ops_.c_is_zero)) sums = b_.CreateAdd(b_.CreateAlignedLoad(sums->getType(), slot, llvm::Align(4)), sums);
        b_.CreateAlignedStore(sums, slot, llvm::Align(4));
      }
    }
  }

  // One tile over all of K: whole groups of group_quads (i32 accumulators: one group, all of K), then the rest.
  void tile(llvm::Value *m0, int64_t rows, int64_t j0, int64_t vectors) {
    const int64_t g = accumulates_i32() ? quads_ : std::min(plan_.group_quads, quads_);
    const int64_t groups = quads_ / g, rest = quads_ % g;
    group(m0, rows, j0, vectors, b_.getInt64(0), g, true);
    if (groups > 1)
      loop(b_.getInt64(groups - 1), [&](llvm::Value *i) { group(m0, rows, j0, vectors, b_.CreateMul(b_.CreateAdd(i, b_.getInt64(1)), b_.getInt64(g)), g, false); });
    if (rest) group(m0, rows, j0, vectors, b_.getInt64(groups * g), rest, false);
  }

  llvm::IRBuilderBase &b_;
  llvm::Module &m_;
  const IntDotTilePlan &plan_;
  int64_t M_, N_, quads_, columns_;
  IntDotOperands ops_;
};

}  // namespace

void emit_int_dot_tiles(llvm::IRBuilderBase &b, llvm::Module &m, const IntDotTilePlan &plan, int64_t M, int64_t N, int64_t K, const IntDotOperands &ops) {
  TileEmitter(b, m, plan, M, N, K, ops).run();
}

}  // namespace kdsl::codegen
