// simdgroup_matrix multiplies on the device's matrix units (VK_KHR_cooperative_matrix).
//
// metal_stdlib's simdgroup_multiply_accumulate asks `simd_mma_cooperative(a, b)` and runs `simd_mma(a, b, c)` when
// it is true, its subgroup-shuffle code otherwise. The operands are 8x8 fragments in Apple's lane layout (two
// elements per lane, which kernels also read and write directly through thread_elements()), so a cooperative
// multiply converts them to the layout of the device's matrices and back, as explicit lane permutations:
//
//   simd_mma(a, b, c) = to_apple(mma16x8x8(to_nv_ac(a) | 0, to_nv_b(b), to_nv_ac(c) | 0).top)
//
// The device's smallest f16 shape is 16x8x8 (M x N x K; docs/SIMDGROUP_MATRIX.md): an 8x8 fragment is the top
// half of the 16x8 A and C matrices; B is 8x8. Conversions then cancel where values only move between multiplies
// (the accumulator carried across a k loop), and two multiplies that share B fill one 16x8x8 operation.
// LoadFragmentsInDeviceLayoutPass (FragmentLoads.cpp) then removes the permutations of loaded fragments.
//
// The per-lane element order of the device's matrices is not part of Vulkan: the module assumes NVIDIA's mma
// layout (docs/SIMDGROUP_MATRIX.md) and the runtime checks it with a probe kernel before choosing this module.
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <map>
#include <set>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

// Stdlib intrinsic calls named `name`, collected first (callers rewrite them).
std::vector<llvm::CallInst*> stdlibCalls(llvm::Module& m, llvm::StringRef name) {
  std::vector<llvm::CallInst*> calls;
  for (llvm::Function& f : m)
    if (stdlibIntrinsicName(f) == name)
      for (llvm::User* u : f.users())
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(u)) calls.push_back(call);
  return calls;
}

// True when every element of `v` is a half value (a half, a float extended from one, a constant half holds
// exactly), looking through element moves, phis and selects.
bool holdsHalfValues(llvm::Value* v, std::set<llvm::Value*>& seen) {
  if (!seen.insert(v).second) return true;  // a cycle of phis only moves values
  llvm::Type* st = v->getType()->getScalarType();
  if (st->isHalfTy()) return true;
  if (!st->isFloatTy()) return false;
  if (llvm::isa<llvm::PoisonValue, llvm::UndefValue>(v)) return true;
  if (auto* c = llvm::dyn_cast<llvm::ConstantFP>(v)) {
    bool lost = false;
    llvm::APFloat f = c->getValueAPF();
    f.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return !lost;
  }
  if (auto* c = llvm::dyn_cast<llvm::Constant>(v); c && v->getType()->isVectorTy()) {
    auto* vt = llvm::cast<llvm::FixedVectorType>(v->getType());
    for (unsigned i = 0; i < vt->getNumElements(); ++i)
      if (!holdsHalfValues(c->getAggregateElement(i), seen)) return false;
    return true;
  }
  if (auto* ext = llvm::dyn_cast<llvm::FPExtInst>(v)) return ext->getSrcTy()->getScalarType()->isHalfTy();
  if (auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(v))
    return holdsHalfValues(ins->getOperand(0), seen) && holdsHalfValues(ins->getOperand(1), seen);
  if (auto* ext = llvm::dyn_cast<llvm::ExtractElementInst>(v)) return holdsHalfValues(ext->getVectorOperand(), seen);
  if (auto* sh = llvm::dyn_cast<llvm::ShuffleVectorInst>(v))
    return holdsHalfValues(sh->getOperand(0), seen) && holdsHalfValues(sh->getOperand(1), seen);
  if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(v))
    return holdsHalfValues(sel->getTrueValue(), seen) && holdsHalfValues(sel->getFalseValue(), seen);
  if (auto* phi = llvm::dyn_cast<llvm::PHINode>(v)) {
    for (llvm::Value* in : phi->incoming_values())
      if (!holdsHalfValues(in, seen)) return false;
    return true;
  }
  return false;
}

bool holdsHalfValues(llvm::Value* v) {
  std::set<llvm::Value*> seen;
  return holdsHalfValues(v, seen);
}

// `v` (float elements that hold half values) as half elements: the halves themselves where `v` is built element by
// element from extended halves (MLX's fragments), saving a conversion there and back; an fptrunc otherwise.
llvm::Value* halfElements(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Type* halfVector) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(v->getType());
  std::vector<llvm::Value*> elems(vt->getNumElements(), nullptr);
  for (llvm::Value* at = v; auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(at); at = ins->getOperand(0)) {
    auto* index = llvm::dyn_cast<llvm::ConstantInt>(ins->getOperand(2));
    if (!index || index->getZExtValue() >= elems.size()) break;
    if (!elems[index->getZExtValue()]) elems[index->getZExtValue()] = ins->getOperand(1);
  }
  llvm::Value* out = llvm::PoisonValue::get(halfVector);
  for (size_t i = 0; i < elems.size(); ++i) {
    auto* ext = llvm::dyn_cast_or_null<llvm::FPExtInst>(elems[i]);
    if (!ext || !ext->getSrcTy()->isHalfTy()) return b.CreateFPTrunc(v, halfVector);
    out = b.CreateInsertElement(out, ext->getOperand(0), uint64_t(i));
  }
  return out;
}

bool isZero(llvm::Value* v) { return llvm::isa<llvm::Constant>(v) && llvm::cast<llvm::Constant>(v)->isNullValue(); }

// A splat constant: the same matrix in every lane layout.
bool isSplatConstant(llvm::Value* v) {
  auto* c = llvm::dyn_cast<llvm::Constant>(v);
  return c && (c->isNullValue() || c->getSplatValue() != nullptr);
}

// The pseudo-intrinsics this pass creates; the emitter implements them (spirv/EmitCalls.cpp).
class MatrixOps {
 public:
  explicit MatrixOps(llvm::Module& m) : m_(m), ctx_(m.getContext()) {}

  llvm::Type* v2(llvm::Type* e) { return llvm::FixedVectorType::get(e, 2); }
  llvm::Type* half2() { return v2(llvm::Type::getHalfTy(ctx_)); }
  llvm::Type* float2() { return v2(llvm::Type::getFloatTy(ctx_)); }

  llvm::Value* permute(llvm::IRBuilder<>& b, const char* kind, llvm::Value* v) {
    if (isSplatConstant(v)) return v;  // the same in every layout
    std::string suffix = v->getType()->getScalarType()->isHalfTy() ? ".v2f16" : ".v2f32";
    return b.CreateCall(declare(std::string(kind) + suffix, v->getType(), {v->getType()}), {v});
  }
  // <4 x float> (top row pair, bottom row pair of the 16x8 result) = a * b + c
  llvm::CallInst* mma(llvm::IRBuilder<>& b, llvm::Value* aTop, llvm::Value* aBottom, llvm::Value* bm, llvm::Value* cTop,
                      llvm::Value* cBottom) {
    llvm::Type* f4 = llvm::FixedVectorType::get(llvm::Type::getFloatTy(ctx_), 4);
    llvm::Function* f = declare(pseudo::kCoopMatMulAddF16, f4, {half2(), half2(), half2(), float2(), float2()});
    return b.CreateCall(f, {aTop, aBottom, bm, cTop, cBottom});
  }

 private:
  llvm::Function* declare(const std::string& name, llvm::Type* result, std::vector<llvm::Type*> params) {
    auto fc = m_.getOrInsertFunction(name, llvm::FunctionType::get(result, params, false));
    auto* f = llvm::cast<llvm::Function>(fc.getCallee());
    f->setConvergent();
    f->setDoesNotThrow();
    f->addFnAttr(llvm::Attribute::WillReturn);
    f->setDoesNotAccessMemory();
    return f;
  }
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
};

// Phis whose values, in Apple's layout, only come from to_apple(x) or splat constants get twins in the device's
// layout, so the accumulator of a k loop stays in the device's layout between multiplies, and a loop's result is
// converted once after the loop rather than in every iteration.
class AccumulatorWeb {
 public:
  explicit AccumulatorWeb(MatrixOps& ops) : ops_(ops) {}

  // The device-layout twin of `v`, or null.
  llvm::Value* twin(llvm::Value* v) {
    if (llvm::CallInst* c = callToPseudo(v, pseudo::kSgmToApple)) return c->getArgOperand(0);
    if (isSplatConstant(v)) return v;
    auto* phi = llvm::dyn_cast<llvm::PHINode>(v);
    if (!phi) return nullptr;
    if (auto it = twins_.find(phi); it != twins_.end()) return it->second;
    auto* t =
        llvm::PHINode::Create(phi->getType(), phi->getNumIncomingValues(), phi->getName() + ".nv", phi->getIterator());
    twins_[phi] = t;
    for (unsigned i = 0; i < phi->getNumIncomingValues(); ++i) {
      llvm::Value* in = twin(phi->getIncomingValue(i));
      if (!in) {
        failed_ = true;
        return nullptr;
      }
      t->addIncoming(in, phi->getIncomingBlock(i));
    }
    return t;
  }

  // Rewrites `phi`'s uses to its twin (through to_apple for users that need Apple's layout) when the whole web
  // converted; otherwise removes the twins made for it.
  bool commit(llvm::PHINode* root) {
    twin(root);
    if (failed_) {
      for (auto& [phi, t] : twins_) t->dropAllReferences();
      for (auto& [phi, t] : twins_) t->eraseFromParent();
      twins_.clear();
      failed_ = false;
      return false;
    }
    for (auto& [phi, t] : twins_) {
      llvm::Value* apple = nullptr;  // made at most once, right after the phis
      for (llvm::Use& u : llvm::make_early_inc_range(phi->uses())) {
        llvm::User* user = u.getUser();
        if (llvm::isa<llvm::PHINode>(user) && twins_.count(llvm::cast<llvm::PHINode>(user))) continue;
        if (llvm::CallInst* c = callToPseudo(user, pseudo::kSgmToNvAC)) {
          c->replaceAllUsesWith(t);
          c->eraseFromParent();
          continue;
        }
        if (!apple) {
          llvm::IRBuilder<> b(&*phi->getParent()->getFirstInsertionPt());
          apple = ops_.permute(b, pseudo::kSgmToApple, t);
        }
        u.set(apple);
      }
    }
    for (auto& [phi, t] : twins_) phi->dropAllReferences();
    for (auto& [phi, t] : twins_) phi->eraseFromParent();
    twins_.clear();
    return true;
  }

 private:
  MatrixOps& ops_;
  std::map<llvm::PHINode*, llvm::PHINode*> twins_;
  bool failed_ = false;
};

// Identical conversions in one block become one (they are pure, but convergent calls escape LLVM's CSE).
void shareConversions(llvm::BasicBlock& bb) {
  std::map<std::pair<llvm::Function*, llvm::Value*>, llvm::CallInst*> first;
  for (llvm::Instruction& i : llvm::make_early_inc_range(bb)) {
    llvm::CallInst* c = callToPseudo(&i, "m2v.sgm.");
    if (!c) continue;
    auto [it, inserted] = first.try_emplace({c->getCalledFunction(), c->getArgOperand(0)}, c);
    if (inserted) continue;
    c->replaceAllUsesWith(it->second);
    c->eraseFromParent();
  }
}

// Moves the pure instructions of `bb` between `from` and `to` that depend on `from` to just after `to`; false
// (nothing moved) when one of them has side effects.
bool sinkDependents(llvm::Instruction* from, llvm::Instruction* to) {
  std::vector<llvm::Instruction*> moving;
  std::set<llvm::Value*> dependent{from};
  for (llvm::Instruction* i = from->getNextNode(); i && i != to; i = i->getNextNode()) {
    bool depends = llvm::any_of(i->operands(), [&](llvm::Value* op) { return dependent.count(op) != 0; });
    if (!depends) continue;
    if (i->mayHaveSideEffects() || i->mayReadFromMemory() || llvm::isa<llvm::PHINode>(i)) return false;
    dependent.insert(i);
    moving.push_back(i);
  }
  llvm::Instruction* at = to;
  for (llvm::Instruction* i : moving) {
    i->moveAfter(at);
    at = i;
  }
  return true;
}

// Two unpaired multiplies in one block that share B and do not depend on each other become one 16x8x8 operation,
// placed where the second one was.
bool pairMultiplies(MatrixOps& ops, llvm::BasicBlock& bb) {
  std::vector<llvm::CallInst*> single;
  for (llvm::Instruction& i : bb)
    if (llvm::CallInst* c = callToPseudo(&i, pseudo::kCoopMatMulAddF16);
        c && isZero(c->getArgOperand(1)) && isZero(c->getArgOperand(4)))
      single.push_back(c);
  bool changed = false;
  std::set<llvm::CallInst*> used;
  for (size_t x = 0; x < single.size(); ++x) {
    llvm::CallInst* first = single[x];
    if (used.count(first)) continue;
    for (size_t y = x + 1; y < single.size(); ++y) {
      llvm::CallInst* second = single[y];
      if (used.count(second) || second->getArgOperand(2) != first->getArgOperand(2)) continue;
      std::set<llvm::Value*> afterFirst;  // does `second` depend on `first`?
      bool independent = true;
      afterFirst.insert(first);
      for (llvm::Instruction* i = first->getNextNode(); i != second; i = i->getNextNode())
        if (llvm::any_of(i->operands(), [&](llvm::Value* op) { return afterFirst.count(op) != 0; }))
          afterFirst.insert(i);
      for (llvm::Value* op : second->operands()) independent &= afterFirst.count(op) == 0;
      if (!independent || !sinkDependents(first, second)) continue;
      llvm::IRBuilder<> b(second);
      llvm::CallInst* both = ops.mma(b, first->getArgOperand(0), second->getArgOperand(0), first->getArgOperand(2),
                                     first->getArgOperand(3), second->getArgOperand(3));
      // each result keeps the shape of an unpaired one: its rows on top, zero below
      llvm::Value* bottom = b.CreateShuffleVector(both, llvm::Constant::getNullValue(both->getType()), {2, 3, 4, 5});
      first->replaceAllUsesWith(both);
      second->replaceAllUsesWith(bottom);
      first->eraseFromParent();
      second->eraseFromParent();
      used.insert(first);
      used.insert(second);
      changed = true;
      break;
    }
  }
  return changed;
}

}  // namespace

llvm::PreservedAnalyses ResolveMatrixPathPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  std::vector<llvm::CallInst*> calls = stdlibCalls(m, "simd_mma_cooperative");
  for (llvm::CallInst* call : calls) {
    bool ok = cooperative && holdsHalfValues(call->getArgOperand(0)) && holdsHalfValues(call->getArgOperand(1));
    if (ok) *cooperativeMultiplies += 1;
    call->replaceAllUsesWith(llvm::ConstantInt::getBool(m.getContext(), ok));
    call->eraseFromParent();
  }
  return calls.empty() ? llvm::PreservedAnalyses::all() : llvm::PreservedAnalyses::none();
}

llvm::PreservedAnalyses CooperativeMatrixPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  std::vector<llvm::CallInst*> calls = stdlibCalls(m, "simd_mma");
  if (calls.empty()) return llvm::PreservedAnalyses::all();
  MatrixOps ops(m);
  std::map<llvm::Value*, llvm::Value*> truncated;  // one fptrunc per value, right after it
  for (llvm::CallInst* call : calls) {
    llvm::IRBuilder<> b(call);
    auto asHalf = [&](llvm::Value* v) {
      if (v->getType()->getScalarType()->isHalfTy()) return v;
      llvm::Value*& t = truncated[v];
      if (!t) {
        auto* def = llvm::dyn_cast<llvm::Instruction>(v);
        llvm::IRBuilder<> at(call);
        if (def)
          at.SetInsertPoint(def->getParent(), llvm::isa<llvm::PHINode>(def) ? def->getParent()->getFirstInsertionPt()
                                                                            : std::next(def->getIterator()));
        t = halfElements(at, v, ops.half2());
      }
      return t;
    };
    llvm::Value* a = ops.permute(b, pseudo::kSgmToNvAC, asHalf(call->getArgOperand(0)));
    llvm::Value* bm = ops.permute(b, pseudo::kSgmToNvB, asHalf(call->getArgOperand(1)));
    llvm::Value* c = ops.permute(b, pseudo::kSgmToNvAC, call->getArgOperand(2));
    llvm::Value* d =
        ops.mma(b, a, llvm::Constant::getNullValue(ops.half2()), bm, c, llvm::Constant::getNullValue(ops.float2()));
    llvm::Value* top = b.CreateShuffleVector(d, {0, 1});
    call->replaceAllUsesWith(ops.permute(b, pseudo::kSgmToApple, top));
    call->eraseFromParent();
  }

  // Cancel conversions: to_nv_ac(to_apple(x)) is x; accumulators carried through phis stay in the device layout.
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f) shareConversions(bb);
  AccumulatorWeb web(ops);
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<llvm::WeakVH> work;
    for (llvm::Function& f : m)
      for (llvm::BasicBlock& bb : f)
        for (llvm::Instruction& i : bb)
          if (callToPseudo(&i, pseudo::kSgmToNvAC)) work.emplace_back(&i);
    for (llvm::WeakVH& h : work) {
      auto* c = llvm::cast_or_null<llvm::CallInst>(h);
      if (!c) continue;
      llvm::Value* src = c->getArgOperand(0);
      if (llvm::CallInst* back = callToPseudo(src, pseudo::kSgmToApple)) {
        c->replaceAllUsesWith(back->getArgOperand(0));
        c->eraseFromParent();
        changed = true;
      } else if (auto* phi = llvm::dyn_cast<llvm::PHINode>(src)) {
        changed |= web.commit(phi);
      }
    }
    // A phi of converted values converts once, after it (a loop's result, converted after the loop).
    std::vector<llvm::WeakVH> phis;
    for (llvm::Function& f : m)
      for (llvm::BasicBlock& bb : f)
        for (llvm::PHINode& phi : bb.phis())
          if (llvm::any_of(phi.incoming_values(), [](llvm::Value* v) { return callToPseudo(v, pseudo::kSgmToApple); }))
            phis.emplace_back(&phi);
    for (llvm::WeakVH& h : phis)
      if (auto* phi = llvm::cast_or_null<llvm::PHINode>(h)) changed |= web.commit(phi);
  }
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f) {
      shareConversions(bb);
      pairMultiplies(ops, bb);
    }
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
