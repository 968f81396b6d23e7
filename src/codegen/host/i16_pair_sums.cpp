// i16_pair_sums.cpp - groups of vpmaddwd-by-ones leaves of an i32 add tree whose vpmaddubsw bounds fit i16, widened once
#include "codegen/host/i16_pair_sums.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace kdsl::codegen {
namespace {

constexpr const char *kPairBound = "kdsl.pair_bound";

bool is_intrinsic(const llvm::Value *v, llvm::Intrinsic::ID id) {
  const auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(v);
  return call && call->getIntrinsicID() == id;
}
bool is_widening(const llvm::Value *v) { return is_intrinsic(v, llvm::Intrinsic::x86_avx2_pmadd_wd) || is_intrinsic(v, llvm::Intrinsic::x86_sse2_pmadd_wd); }

// The pair-sum vector v widens by vpmaddwd with a splat of 1, or null.
llvm::Value *widened_pairs(llvm::Value *v) {
  if (!is_widening(v) || !v->hasOneUse()) return nullptr;
  auto *call = llvm::cast<llvm::CallInst>(v);
  auto *ones = llvm::dyn_cast<llvm::Constant>(call->getArgOperand(1));
  auto *splat = ones ? llvm::dyn_cast_or_null<llvm::ConstantInt>(ones->getSplatValue()) : nullptr;
  return splat && splat->isOne() ? call->getArgOperand(0) : nullptr;
}

class Grouper {
 public:
  int run(llvm::Function &f) {
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &i : bb)
        if (auto *call = llvm::dyn_cast<llvm::CallInst>(&i))
          if (llvm::MDNode *md = call->getMetadata(kPairBound))
            bound_[call] = llvm::mdconst::extract<llvm::ConstantInt>(md->getOperand(0))->getSExtValue();
    if (bound_.empty()) return 0;
    int removed = 0;
    // Roots: i32 vector adds not feeding a single-use add of their own tree.
    std::vector<llvm::BinaryOperator *> roots;
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &i : bb)
        if (auto *add = as_tree_add(&i); add && !(add->hasOneUse() && as_tree_add(*add->user_begin()) && same_block(add, *add->user_begin()))) roots.push_back(add);
    for (llvm::BinaryOperator *root : roots) removed += regroup(root);
    return removed;
  }

 private:
  static llvm::BinaryOperator *as_tree_add(llvm::Value *v) {
    auto *add = llvm::dyn_cast<llvm::BinaryOperator>(v);
    if (!add || add->getOpcode() != llvm::Instruction::Add || !add->getType()->isVectorTy()) return nullptr;
    return add->getType()->getScalarType()->isIntegerTy(32) ? add : nullptr;
  }
  static bool same_block(const llvm::Value *a, const llvm::Value *b) {
    return llvm::cast<llvm::Instruction>(a)->getParent() == llvm::cast<llvm::Instruction>(b)->getParent();
  }

  // The leaves of root's tree: operands of adds that are themselves single-use adds in the same block.
  void leaves(llvm::BinaryOperator *add, std::vector<llvm::Value *> &out, std::vector<llvm::BinaryOperator *> &inner) {
    inner.push_back(add);
    for (llvm::Value *op : add->operands()) {
      auto *sub = as_tree_add(op);
      if (sub && sub->hasOneUse() && same_block(sub, add)) leaves(sub, out, inner);
      else out.push_back(op);
    }
  }

  int regroup(llvm::BinaryOperator *root) {
    std::vector<llvm::Value *> all;
    std::vector<llvm::BinaryOperator *> inner;
    leaves(root, all, inner);
    // Widened pair sums with a known bound, in first-come groups that fit i16.
    struct Group {
      std::vector<llvm::Value *> pairs;
      int64_t bound = 0;
    };
    std::vector<Group> groups;
    std::vector<llvm::Value *> others;
    std::vector<llvm::Instruction *> dead(inner.begin(), inner.end());  // the old tree and its widenings
    int widenings = 0;
    for (llvm::Value *leaf : all) {
      llvm::Value *pairs = widened_pairs(leaf);
      auto known = pairs ? bound_.find(pairs) : bound_.end();
      if (known == bound_.end()) {
        others.push_back(leaf);
        continue;
      }
      ++widenings;
      dead.push_back(llvm::cast<llvm::Instruction>(leaf));
      Group *fit = nullptr;
      for (Group &g : groups)
        if (g.pairs[0]->getType() == pairs->getType() && g.bound + known->second <= 32767) fit = &g;
      if (!fit) fit = &groups.emplace_back();
      fit->pairs.push_back(pairs);
      fit->bound += known->second;
    }
    if (size_t(widenings) == groups.size()) return 0;  // nothing to share
    llvm::IRBuilder<> b(root);
    llvm::Value *total = nullptr;
    auto add = [&](llvm::Value *v) { total = total ? b.CreateAdd(total, v) : v; };
    for (llvm::Value *v : others) add(v);
    for (Group &g : groups) {
      // The group's pair sums in the order they are made, each added right where it is made:
      // one running i16 sum is alive between them, where adding them all at the root kept
      // every one alive until then (Q4_K's decode step: 64 of them, and spills).
      const bool in_root_block = std::all_of(g.pairs.begin(), g.pairs.end(), [&](llvm::Value *v) {
        auto *made = llvm::dyn_cast<llvm::Instruction>(v);
        return made && made->getParent() == root->getParent();
      });
      auto made_before = [](llvm::Value *x, llvm::Value *y) { return llvm::cast<llvm::Instruction>(x)->comesBefore(llvm::cast<llvm::Instruction>(y)); };
      if (in_root_block) std::sort(g.pairs.begin(), g.pairs.end(), made_before);
      llvm::Value *sum = g.pairs[0];
      for (size_t i = 1; i < g.pairs.size(); ++i) {
        llvm::IRBuilder<> at(root);
        if (in_root_block) at.SetInsertPoint(llvm::cast<llvm::Instruction>(g.pairs[i])->getNextNode());
        sum = at.CreateAdd(sum, g.pairs[i]);
      }
      auto *ones = llvm::ConstantInt::get(sum->getType(), 1);
      const bool wide = llvm::cast<llvm::FixedVectorType>(sum->getType())->getNumElements() == 16;
      add(b.CreateIntrinsic(wide ? llvm::Intrinsic::x86_avx2_pmadd_wd : llvm::Intrinsic::x86_sse2_pmadd_wd, {}, {sum, ones}));
    }
    root->replaceAllUsesWith(total);
    for (llvm::Instruction *i : dead) i->dropAllReferences();
    for (llvm::Instruction *i : dead) i->eraseFromParent();
    return widenings - int(groups.size());
  }

  std::unordered_map<llvm::Value *, int64_t> bound_;
};

}  // namespace

void mark_pair_bound(llvm::CallInst &maddubs, int bound) {
  llvm::LLVMContext &ctx = maddubs.getContext();
  maddubs.setMetadata(kPairBound, llvm::MDNode::get(ctx, {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), bound))}));
}

int sum_pair_products_in_i16(llvm::Module &m) {
  int removed = 0;
  for (llvm::Function &f : m)
    if (!f.isDeclaration()) removed += Grouper().run(f);
  return removed;
}

}  // namespace kdsl::codegen
