// storage_plan.cpp - the fusion decisions of the host lowering
#include "codegen/host/storage_plan.h"

#include <limits>
#include <unordered_map>

namespace kdsl::codegen {
namespace {
using namespace ir;  // op traits: is_view, is_elementwise, has_effect, has_regions

constexpr int kManyPlaces = std::numeric_limits<int>::max();

struct Use {
  const ir::Op *user = nullptr;
  size_t operand = 0;
  const ir::Region *region = nullptr;
  int position = 0;
};

class Planner {
 public:
  explicit Planner(const ir::Function &fn) : fn_(fn) {
    size_t n = fn.values.size();
    plan_.storage.assign(n, Storage::Array);
    plan_.def.assign(n, nullptr);
    uses_.resize(n);
    eval_position_.assign(n, kManyPlaces);
    into_write_.assign(n, false);
    carried_.assign(n, false);
    data_.assign(n, -1);
    index_uses(fn.body);
  }

  StoragePlan run() {
    for (size_t v = 0; v < fn_.values.size(); ++v)
      if (fn_.values[v].shape.rank == 0) plan_.storage[v] = Storage::Scalar;
    plan_region(fn_.body);
    plan_.write_into.assign(fn_.values.size(), kNoValue);
    walk(fn_.body, [&](const Op &op) {
      if (op.kind == OpKind::For) plan_in_place(op.regions[0]);
    });
    walk(fn_.body, [&](const Op &op) { plan_dot_onto_accumulator(op); });
    plan_.reductions_in_loop.assign(fn_.values.size(), {});
    walk(fn_.body, [&](const Op &op) { plan_riding_reduction(op); });
    return std::move(plan_);
  }

 private:
  void index_uses(const ir::Region &r) {
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const ir::Op &op = r.ops[i];
      for (size_t k = 0; k < op.operands.size(); ++k) uses_[size_t(op.operands[k])].push_back({&op, k, &r, int(i)});
      for (ir::ValueId res : op.results) plan_.def[size_t(res)] = &op;
      def_region_[&op] = &r;
      if (op.kind == OpKind::For)
        for (size_t a = 1; a < op.regions[0].args.size(); ++a) carried_[size_t(op.regions[0].args[a])] = true;
      for (const ir::Region &inner : op.regions) index_uses(inner);
    }
  }

  static bool is_index_math(const ir::Op &op, const ir::Type &t) {
    switch (op.kind) {
      case OpKind::Constant: case OpKind::Arange: case OpKind::ProgramId: case OpKind::NumPrograms:
        return true;
      default:
        break;
    }
    if (is_view(op.kind)) return true;
    return is_elementwise(op.kind) && (t.is_ptr || !is_float(t.elem));
  }

  void plan_region(const ir::Region &r) {
    // effects[i]: stores, atomics and nested regions before op i.
    std::vector<int> effects(r.ops.size() + 1, 0);
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const ir::Op &op = r.ops[i];
      bool effect = writes_memory(op.kind) || has_regions(op.kind);
      effects[i + 1] = effects[i] + (effect ? 1 : 0);
    }
    // Users come after definitions, so walking backwards decides users first.
    for (size_t i = r.ops.size(); i-- > 0;) {
      const ir::Op &op = r.ops[i];
      for (const ir::Region &inner : op.regions) plan_region(inner);
      if (op.results.size() != 1) continue;
      ir::ValueId v = op.results[0];
      const ir::Type &t = fn_.type(v);
      if (t.shape.rank == 0) continue;
      // Integer arithmetic on a few rows of lanes (dot4's sums times their scales, summed over
      // a block's sub-blocks) is data, not index math, and is computed where the program
      // computes it. As index math it was fused into every use: the Q6_K decode's chain of
      // sixteen such updates ran at its end, with every dot4 result it reads alive until then
      // and spilled. f32 lanes keep the usual fusion: stored at each step, they made the Q4_K
      // and Q5_K decodes slower (bench/RESULTS.md, 2026-12-04, "rows of lanes").
      if (t.elem == DType::I32 && is_elementwise(op.kind) && is_lane_block(t) && is_data(v)) continue;
      if (is_index_math(op, t)) {
        plan_.storage[size_t(v)] = Storage::Fused;
        // A view of float data that neither copies nor drops elements (a reshape, an
        // expand_dims) is evaluated where its one elementwise reader is, so that what it
        // views can be fused there too: the decode attention's scores read each key tile
        // through expand_dims, and its f16 keys were converted into a stack array first
        // and read back (bench/RESULTS.md, 2026-12-06, "keys read where the scores use
        // them"). Otherwise its eval position stays "many places".
        if (is_one_to_one_view(op) && !t.is_ptr && is_float(t.elem)) place_at_single_reader(v, r);
        continue;
      }
      bool fusable = is_elementwise(op.kind) || op.kind == OpKind::Load;
      if (!fusable) continue;
      int place = 0;
      bool into_write = false;
      if (!single_reader_place(v, r, place, into_write)) continue;
      // A load fused into a store's loop would read elements the same loop already wrote
      // when the two ranges overlap (an in-place shift), so loads feed only pure roots.
      if (op.kind == OpKind::Load && (into_write || effects[size_t(place)] != effects[i])) continue;
      plan_.storage[size_t(v)] = Storage::Fused;
      eval_position_[size_t(v)] = place;
      into_write_[size_t(v)] = into_write;
    }
  }

  // Where v would be evaluated fused into its one user, an op of region r that reads it
  // elementwise (at the user's own place, or where the user itself is fused), and whether that
  // chain ends in a write; false where v has other users or the user is recomputed in many places.
  bool single_reader_place(ValueId v, const Region &r, int &place, bool &into_write) const {
    if (uses_[size_t(v)].size() != 1) return false;
    const Use &use = uses_[size_t(v)][0];
    const bool reads_each_once =
        ir::reads_operand_elementwise(*use.user, use.operand) || is_one_to_one_view(*use.user) || reads_b_rows_once(*use.user, use.operand);
    if (use.region != &r || !reads_each_once || use.user->kind == OpKind::Yield) return false;
    ir::ValueId user_value = use.user->results.empty() ? ir::kNoValue : use.user->results[0];
    bool user_fused = user_value != ir::kNoValue && plan_.storage[size_t(user_value)] == Storage::Fused;
    place = user_fused ? eval_position_[size_t(user_value)] : use.position;
    into_write = user_fused ? into_write_[size_t(user_value)] : has_effect(use.user->kind);
    return place != kManyPlaces;
  }

  // An f32 dot of one row of C reads each element of its B once, a row of B a k: B (a load,
  // or the widening of one) is then read where the dot is, its rows loaded inside the dot's
  // k loop (lower_host.cpp, emit_dot_strips), where it was staged into an array first. The
  // decode attention's values are such a B: the staging took 30% of its time
  // (bench/RESULTS.md, 2026-12-06, "the decode attention's values read where the dot uses
  // them").
  bool reads_b_rows_once(const Op &user, size_t operand) const {
    if (user.kind != OpKind::Dot || operand != 1 || user.results.empty()) return false;
    const ir::Type &c = fn_.type(user.results[0]);
    return c.elem == DType::F32 && c.shape.rank == 2 && c.shape[0] == 1;
  }

  // A view that reads each element of its operand once and in row-major order: as many
  // elements in as out, not a transpose (fused through one, a tile's loads would go down its
  // columns).
  bool is_one_to_one_view(const Op &op) const {
    return is_view(op.kind) && op.kind != OpKind::Trans && op.operands.size() == 1 && !op.results.empty() &&
           fn_.type(op.operands[0]).shape.numel() == fn_.type(op.results[0]).shape.numel();
  }

  void place_at_single_reader(ValueId v, const Region &r) {
    int place = 0;
    bool into_write = false;
    if (!single_reader_place(v, r, place, into_write)) return;
    eval_position_[size_t(v)] = place;
    into_write_[size_t(v)] = into_write;
  }

  // Does v's fused elementwise computation read `arg` directly (at v's own index)?
  bool reads_elementwise(ValueId v, ValueId arg) const {
    const Op *def = plan_.def[size_t(v)];
    if (!def || !is_elementwise(def->kind)) return false;
    for (ValueId operand : def->operands) {
      if (operand == arg) return true;
      if (plan_.storage[size_t(operand)] == Storage::Fused && reads_elementwise(operand, arg)) return true;
    }
    return false;
  }

  void plan_in_place(const Region &body) {
    const Op &yield = body.ops.back();
    for (size_t i = 0; i < yield.operands.size(); ++i) {
      ValueId next = yield.operands[i], arg = body.args[i + 1];
      const Op *def = plan_.def[size_t(next)];
      if (fn_.type(next).shape.rank == 0 || plan_.storage[size_t(next)] != Storage::Array || !def) continue;
      if (uses_[size_t(next)].size() != 1 || uses_[size_t(arg)].size() != 1 || uses_[size_t(next)][0].region != &body) continue;
      if (reads_elementwise(next, arg)) {
        plan_.write_into[size_t(next)] = arg;
        continue;
      }
      for (ValueId v : dot_chain(next, arg, body)) plan_.write_into[size_t(v)] = arg;
    }
  }

  // The dots (or dot4s) that take `next` back to `arg` through their accumulators, each
  // intermediate an array used by the next dot alone, in `body`: a step that makes several dots
  // into one accumulator (a tile of parts, each its own dot) then updates it in place
  // throughout instead of copying it between them. Empty where `next` is no such chain.
  std::vector<ValueId> dot_chain(ValueId next, ValueId arg, const Region &body) const {
    std::vector<ValueId> chain;
    for (ValueId v = next;;) {
      const Op *def = plan_.def[size_t(v)];
      if (!def || (def->kind != OpKind::Dot && def->kind != OpKind::Dot4 && def->kind != OpKind::ScaledDot)) return {};
      chain.push_back(v);
      ValueId acc = def->operands[2];
      if (acc == arg) return chain;
      if (plan_.storage[size_t(acc)] != Storage::Array || uses_[size_t(acc)].size() != 1 || uses_[size_t(acc)][0].region != &body) return {};
      v = acc;
    }
  }

  // A dot whose accumulator is another dot's result used by it alone, in the same region (a
  // k-quant's sub-blocks, each a dot into the last one's sums), adds into that array in place
  // rather than copying it first. The chains that end in a loop's carried value are
  // plan_in_place's.
  void plan_dot_onto_accumulator(const Op &op) {
    if ((op.kind != OpKind::Dot && op.kind != OpKind::ScaledDot) || plan_.write_into[size_t(op.results[0])] != kNoValue) return;
    const ValueId acc = op.operands[2];
    const Op *def = plan_.def[size_t(acc)];
    if (!def || (def->kind != OpKind::Dot && def->kind != OpKind::ScaledDot) || plan_.storage[size_t(acc)] != Storage::Array) return;
    if (uses_[size_t(acc)].size() != 1 || def_region_.at(def) != def_region_.at(&op)) return;
    plan_.write_into[size_t(op.results[0])] = acc;
  }

  // A full reduction of a 1-D array written by an elementwise op or a load in the same region.
  void plan_riding_reduction(const Op &op) {
    if (op.kind != OpKind::ReduceSum && op.kind != OpKind::ReduceMax && op.kind != OpKind::ReduceMin) return;
    ValueId in = op.operands[0];
    const Op *def = plan_.def[size_t(in)];
    if (!def || fn_.type(in).shape.rank != 1 || plan_.storage[size_t(in)] != Storage::Array) return;
    if (!is_elementwise(def->kind) && def->kind != OpKind::Load) return;
    bool same_region = false;
    for (const Use &u : uses_[size_t(in)])
      if (u.user == &op) same_region = definition_region(def) == u.region;
    if (same_region) plan_.reductions_in_loop[size_t(in)].push_back(&op);
  }

  const Region *definition_region(const Op *def) const { return def_region_.at(def); }

  // A few rows of lanes (lane_count): 128 elements at most.
  static bool is_lane_block(const ir::Type &t) { return lane_count(t) && t.shape.numel() <= 128; }

  // Whether v is data (floats, what loads, dot products and reductions give, loop-carried
  // values, and arithmetic on any of them) rather than index arithmetic.
  bool is_data(ValueId v) {
    int8_t &known = data_[size_t(v)];
    if (known >= 0) return known;
    const ir::Type &t = fn_.type(v);
    const Op *def = plan_.def[size_t(v)];
    bool data = (!t.is_ptr && is_float(t.elem)) || carried_[size_t(v)];
    if (!data && def) {
      if (is_elementwise(def->kind) || is_view(def->kind)) {
        for (ValueId operand : def->operands) data = data || is_data(operand);
      } else {
        data = !is_index_math(*def, t);
      }
    }
    known = data ? 1 : 0;
    return data;
  }

  const ir::Function &fn_;
  StoragePlan plan_;
  std::unordered_map<const Op *, const Region *> def_region_;
  std::vector<std::vector<Use>> uses_;
  std::vector<int> eval_position_;
  std::vector<bool> into_write_;  // fused into a chain that ends in a store or atomic
  std::vector<bool> carried_;     // a loop's carried argument
  std::vector<int8_t> data_;      // is_data, once known (-1: not yet)
};

}  // namespace

unsigned lane_count(const ir::Type &t) {
  if (t.is_ptr || t.shape.rank < 1) return 0;
  const int64_t lanes = t.shape[t.shape.rank - 1];
  if ((lanes & (lanes - 1)) != 0) return 0;
  if (t.elem == DType::F32 || t.elem == DType::I32) return lanes >= 2 && lanes <= 16 ? unsigned(lanes) : 0;
  if (t.elem == DType::U8 || t.elem == DType::I8) return lanes >= 8 && lanes <= 32 ? unsigned(lanes) : 0;
  return 0;
}

StoragePlan plan_storage(const ir::Function &fn) { return Planner(fn).run(); }

}  // namespace kdsl::codegen
