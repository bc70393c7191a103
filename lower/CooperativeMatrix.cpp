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
// LoadFragmentsInDeviceLayoutPass (FragmentLoads.cpp) then removes the permutations of loaded fragments,
// FuseKStepsPass joins consecutive k steps into 16x8x16 operations, and FuseColumnBlocksPass joins bfloat ones that
// share A into 16x16x16 operations (the only bfloat shape; the emitter pads smaller bfloat forms into it).
// Multiplies of bfloat values take the same path as those of half values, with bfloat pairs.
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

// True when every element of `v` is a value of the 16-bit type `narrow` (half or bfloat): one of them, a float
// extended from one, a constant it holds exactly; looking through element moves, phis and selects.
bool holdsValuesOf(llvm::Type* narrow, llvm::Value* v, std::set<llvm::Value*>& seen) {
  if (!seen.insert(v).second) return true;  // a cycle of phis only moves values
  auto holds = [&](llvm::Value* x) { return holdsValuesOf(narrow, x, seen); };
  llvm::Type* st = v->getType()->getScalarType();
  if (st == narrow) return true;
  if (!st->isFloatTy()) return false;
  if (llvm::isa<llvm::PoisonValue, llvm::UndefValue>(v)) return true;
  if (auto* c = llvm::dyn_cast<llvm::ConstantFP>(v)) {
    bool lost = false;
    llvm::APFloat f = c->getValueAPF();
    f.convert(narrow->getFltSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return !lost;
  }
  if (auto* c = llvm::dyn_cast<llvm::Constant>(v); c && v->getType()->isVectorTy()) {
    auto* vt = llvm::cast<llvm::FixedVectorType>(v->getType());
    for (unsigned i = 0; i < vt->getNumElements(); ++i)
      if (!holds(c->getAggregateElement(i))) return false;
    return true;
  }
  if (auto* ext = llvm::dyn_cast<llvm::FPExtInst>(v)) return ext->getSrcTy()->getScalarType() == narrow;
  if (auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(v))
    return holds(ins->getOperand(0)) && holds(ins->getOperand(1));
  if (auto* ext = llvm::dyn_cast<llvm::ExtractElementInst>(v)) return holds(ext->getVectorOperand());
  if (auto* sh = llvm::dyn_cast<llvm::ShuffleVectorInst>(v))
    return holds(sh->getOperand(0)) && holds(sh->getOperand(1));
  if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(v)) return holds(sel->getTrueValue()) && holds(sel->getFalseValue());
  if (auto* phi = llvm::dyn_cast<llvm::PHINode>(v)) return llvm::all_of(phi->incoming_values(), holds);
  return false;
}

// The 16-bit type (half, else bfloat) whose values both operands of a multiply hold, or null.
llvm::Type* multipliedType(llvm::Value* a, llvm::Value* b) {
  llvm::LLVMContext& ctx = a->getContext();
  for (llvm::Type* narrow : {llvm::Type::getHalfTy(ctx), llvm::Type::getBFloatTy(ctx)}) {
    std::set<llvm::Value*> seen;
    if (holdsValuesOf(narrow, a, seen) && holdsValuesOf(narrow, b, seen)) return narrow;
  }
  return nullptr;
}

// `v` (float elements that hold values of a 16-bit type) as elements of that type: those values themselves where `v`
// is built element by element from extended ones (MLX's fragments), saving a conversion there and back; an fptrunc
// otherwise.
llvm::Value* narrowElements(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Type* narrowVector) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(v->getType());
  std::vector<llvm::Value*> elems(vt->getNumElements(), nullptr);
  for (llvm::Value* at = v; auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(at); at = ins->getOperand(0)) {
    auto* index = llvm::dyn_cast<llvm::ConstantInt>(ins->getOperand(2));
    if (!index || index->getZExtValue() >= elems.size()) break;
    if (!elems[index->getZExtValue()]) elems[index->getZExtValue()] = ins->getOperand(1);
  }
  llvm::Value* out = llvm::PoisonValue::get(narrowVector);
  for (size_t i = 0; i < elems.size(); ++i) {
    auto* ext = llvm::dyn_cast_or_null<llvm::FPExtInst>(elems[i]);
    if (!ext || ext->getSrcTy() != narrowVector->getScalarType()) return b.CreateFPTrunc(v, narrowVector);
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

// The pseudo-intrinsics this pass creates; the emitter implements them (spirv/EmitMatrix.cpp).
class MatrixOps {
 public:
  explicit MatrixOps(llvm::Module& m) : m_(m), ctx_(m.getContext()) {}

  llvm::Type* v2(llvm::Type* e) { return llvm::FixedVectorType::get(e, 2); }
  llvm::Type* float2() { return v2(llvm::Type::getFloatTy(ctx_)); }

  llvm::Value* permute(llvm::IRBuilder<>& b, const char* kind, llvm::Value* v) {
    if (isSplatConstant(v)) return v;  // the same in every layout
    return b.CreateCall(declare(std::string(kind) + ".v2" + typeSuffix(v->getType()), v->getType(), {v->getType()}),
                        {v});
  }
  // <4 x float> (top row pair, bottom row pair of the 16x8 result) = a * b + c, on pairs of a 16-bit type
  llvm::CallInst* mma(llvm::IRBuilder<>& b, llvm::Value* aTop, llvm::Value* aBottom, llvm::Value* bm, llvm::Value* cTop,
                      llvm::Value* cBottom) {
    llvm::Type* p = bm->getType();
    return call(b, pseudo::kCoopMatMulAdd, float4(), {p, p, p, float2(), float2()}, {aTop, aBottom, bm, cTop, cBottom});
  }
  // mma(a0, b0, mma(a1, b1, c)) as one 16x8x16 operation: k 0..7 from `first`, k 8..15 from `second`
  llvm::CallInst* mmaK16(llvm::IRBuilder<>& b, llvm::CallInst* first, llvm::CallInst* second) {
    llvm::Type* p = first->getArgOperand(2)->getType();
    return call(b, pseudo::kCoopMatMulAddK16, float4(), {p, p, p, p, p, p, float2(), float2()},
                {first->getArgOperand(0), first->getArgOperand(1), second->getArgOperand(0), second->getArgOperand(1),
                 first->getArgOperand(2), second->getArgOperand(2), first->getArgOperand(3), first->getArgOperand(4)});
  }
  // Two 16x8x16 operations with the same A as one 16x16x16 operation: columns 0..7 from `left`, 8..15 from `right`
  llvm::CallInst* mmaN16(llvm::IRBuilder<>& b, llvm::CallInst* left, llvm::CallInst* right) {
    llvm::Type* p = left->getArgOperand(4)->getType();
    std::vector<llvm::Value*> args;
    for (unsigned i = 0; i < 4; ++i) args.push_back(left->getArgOperand(i));
    for (llvm::CallInst* side : {left, right})
      for (unsigned i = 4; i < 6; ++i) args.push_back(side->getArgOperand(i));
    for (llvm::CallInst* side : {left, right})
      for (unsigned i = 6; i < 8; ++i) args.push_back(side->getArgOperand(i));
    return call(b, pseudo::kCoopMatMulAddN16, llvm::StructType::get(ctx_, {float4(), float4()}),
                {p, p, p, p, p, p, p, p, float2(), float2(), float2(), float2()}, args);
  }

 private:
  static std::string typeSuffix(llvm::Type* pair) {
    llvm::Type* e = pair->getScalarType();
    return e->isHalfTy() ? "f16" : e->isBFloatTy() ? "bf16" : "f32";
  }
  llvm::Type* float4() { return llvm::FixedVectorType::get(llvm::Type::getFloatTy(ctx_), 4); }
  // A multiply named `shape` + its element type.
  llvm::CallInst* call(llvm::IRBuilder<>& b, const char* shape, llvm::Type* result, std::vector<llvm::Type*> params,
                       llvm::ArrayRef<llvm::Value*> args) {
    std::string name = shape + typeSuffix(params[0]);
    return b.CreateCall(declare(name, result, std::move(params)), args);
  }
  llvm::Function* declare(const std::string& name, llvm::Type* result, std::vector<llvm::Type*> params) {
    return declareSubgroupPseudo(m_, name, llvm::FunctionType::get(result, params, false));
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

// Whether one operation at `second` (later in the same block) can compute both `first` and `second`: `second` does
// not depend on `first`, and what does between them is pure and moves to just after `second` (done when true;
// nothing moves otherwise).
bool canMeet(llvm::Instruction* first, llvm::Instruction* second) {
  std::vector<llvm::Instruction*> moving;
  std::set<llvm::Value*> dependent{first};
  for (llvm::Instruction* i = first->getNextNode(); i && i != second; i = i->getNextNode()) {
    if (llvm::none_of(i->operands(), [&](llvm::Value* op) { return dependent.count(op) != 0; })) continue;
    if (i->mayHaveSideEffects() || i->mayReadFromMemory() || llvm::isa<llvm::PHINode>(i)) return false;
    dependent.insert(i);
    moving.push_back(i);
  }
  for (llvm::Value* op : second->operands())
    if (dependent.count(op)) return false;
  llvm::Instruction* at = second;
  for (llvm::Instruction* i : moving) {
    i->moveAfter(at);
    at = i;
  }
  return true;
}

// Pairs up calls of `candidates` (in block order), each at most once, for which `match(first, second)` holds:
// `combine(builder at second, first, second)` replaces their uses, then both are erased. Whether any pair was made.
template <typename Match, typename Combine>
bool pairUp(const std::vector<llvm::CallInst*>& candidates, Match match, Combine combine) {
  bool changed = false;
  std::set<llvm::CallInst*> used;
  for (size_t x = 0; x < candidates.size(); ++x) {
    llvm::CallInst* first = candidates[x];
    if (used.count(first)) continue;
    for (size_t y = x + 1; y < candidates.size(); ++y) {
      llvm::CallInst* second = candidates[y];
      if (used.count(second) || !match(first, second)) continue;
      llvm::IRBuilder<> b(second);
      combine(b, first, second);
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

// Two unpaired multiplies in one block that share B and do not depend on each other become one 16x8x8 operation,
// placed where the second one was.
bool pairMultiplies(MatrixOps& ops, llvm::BasicBlock& bb) {
  std::vector<llvm::CallInst*> single;
  for (llvm::Instruction& i : bb)
    if (llvm::CallInst* c = callToPseudo(&i, pseudo::kCoopMatMulAdd);
        c && isZero(c->getArgOperand(1)) && isZero(c->getArgOperand(4)))
      single.push_back(c);
  return pairUp(
      single,
      [](llvm::CallInst* first, llvm::CallInst* second) {
        return second->getArgOperand(2) == first->getArgOperand(2) && canMeet(first, second);
      },
      [&](llvm::IRBuilder<>& b, llvm::CallInst* first, llvm::CallInst* second) {
        llvm::CallInst* both = ops.mma(b, first->getArgOperand(0), second->getArgOperand(0), first->getArgOperand(2),
                                       first->getArgOperand(3), second->getArgOperand(3));
        // each result keeps the shape of an unpaired one: its rows on top, zero below
        llvm::Value* bottom = b.CreateShuffleVector(both, llvm::Constant::getNullValue(both->getType()), {2, 3, 4, 5});
        first->replaceAllUsesWith(both);
        second->replaceAllUsesWith(bottom);
      });
}

// `v` is `shufflevector <4 x float> op, _, <first, first + 1>` of a 16x8x8 operation: that operation.
llvm::CallInst* halfOfResult(llvm::Value* v, int first) {
  auto* sh = llvm::dyn_cast<llvm::ShuffleVectorInst>(v);
  if (!sh || !sh->hasOneUse()) return nullptr;
  llvm::ArrayRef<int> mask = sh->getShuffleMask();
  if (mask.size() != 2 || mask[0] != first || mask[1] != first + 1) return nullptr;
  return callToPseudo(sh->getOperand(0), pseudo::kCoopMatMulAdd);
}

// A 16x8x8 operation whose accumulator is the whole result of another one in the same block, and nothing else
// uses that result (consecutive k steps of a block multiply): one 16x8x16 operation computes both, at the second.
// Its k 0..7 half is the first operation's operands, its k 8..15 half the second's; the device's 16x8x16 lane layout
// is the two 16x8x8 layouts side by side (docs/SIMDGROUP_MATRIX.md), so no element moves.
bool fuseKSteps(MatrixOps& ops, llvm::BasicBlock& bb) {
  std::vector<llvm::CallInst*> seconds;
  for (llvm::Instruction& i : bb)
    if (llvm::CallInst* c = callToPseudo(&i, pseudo::kCoopMatMulAdd)) seconds.push_back(c);
  // In block order: an operation fused away as `first` was visited before, and its result's users are gone.
  bool changed = false;
  for (llvm::CallInst* second : seconds) {
    llvm::CallInst* first = halfOfResult(second->getArgOperand(3), 0);
    if (!first || first->getParent() != &bb ||
        first->getArgOperand(2)->getType() != second->getArgOperand(2)->getType())
      continue;
    // The bottom half either continues first's bottom half, or both are empty.
    llvm::Value* bottom = second->getArgOperand(4);
    bool bottomContinues = halfOfResult(bottom, 2) == first;
    bool bothEmpty = isZero(bottom) && isZero(first->getArgOperand(1)) && isZero(first->getArgOperand(4));
    if (!bottomContinues && !bothEmpty) continue;
    if (first->getNumUses() != (bottomContinues ? 2u : 1u)) continue;
    llvm::IRBuilder<> b(second);
    llvm::CallInst* both = ops.mmaK16(b, first, second);
    second->replaceAllUsesWith(both);
    std::vector<llvm::Instruction*> dead{second};
    for (llvm::User* u : first->users()) dead.push_back(llvm::cast<llvm::Instruction>(u));
    for (llvm::Instruction* d : dead) d->eraseFromParent();
    first->eraseFromParent();
    changed = true;
  }
  return changed;
}

// Two bfloat 16x8x16 operations in one block with the same A and independent of each other become one 16x16x16
// operation (this GPU's only bfloat shape), at the second; each result is its half of the 16x16 result.
bool fuseColumnBlocks(MatrixOps& ops, llvm::BasicBlock& bb) {
  std::vector<llvm::CallInst*> k16;
  for (llvm::Instruction& i : bb)
    if (llvm::CallInst* c = callToPseudo(&i, pseudo::kCoopMatMulAddK16);
        c && c->getArgOperand(4)->getType()->getScalarType()->isBFloatTy())
      k16.push_back(c);
  auto sameA = [](llvm::CallInst* x, llvm::CallInst* y) {
    for (unsigned i = 0; i < 4; ++i)
      if (x->getArgOperand(i) != y->getArgOperand(i)) return false;
    return true;
  };
  return pairUp(
      k16, [&](llvm::CallInst* left, llvm::CallInst* right) { return sameA(left, right) && canMeet(left, right); },
      [&](llvm::IRBuilder<>& b, llvm::CallInst* left, llvm::CallInst* right) {
        llvm::CallInst* both = ops.mmaN16(b, left, right);
        left->replaceAllUsesWith(b.CreateExtractValue(both, 0));
        right->replaceAllUsesWith(b.CreateExtractValue(both, 1));
      });
}

// Runs a block rewrite on every block of `m`.
llvm::PreservedAnalyses inEveryBlock(llvm::Module& m, bool (*rewrite)(MatrixOps&, llvm::BasicBlock&)) {
  MatrixOps ops(m);
  bool changed = false;
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f) changed |= rewrite(ops, bb);
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace

llvm::PreservedAnalyses FuseColumnBlocksPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  return inEveryBlock(m, fuseColumnBlocks);
}

llvm::PreservedAnalyses FuseKStepsPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  return inEveryBlock(m, fuseKSteps);
}

llvm::PreservedAnalyses ResolveMatrixPathPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  std::vector<llvm::CallInst*> calls = stdlibCalls(m, "simd_mma_cooperative");
  for (llvm::CallInst* call : calls) {
    bool ok = cooperative && multipliedType(call->getArgOperand(0), call->getArgOperand(1));
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
  std::map<std::pair<llvm::Value*, llvm::Type*>, llvm::Value*> narrowed;  // one per value and type, right after it
  for (llvm::CallInst* call : calls) {
    llvm::IRBuilder<> b(call);
    // ResolveMatrixPathPass let only multiplies of half or bfloat values through
    llvm::Type* pair = ops.v2(multipliedType(call->getArgOperand(0), call->getArgOperand(1)));
    auto asNarrow = [&](llvm::Value* v) {
      if (v->getType() == pair) return v;
      llvm::Value*& t = narrowed[{v, pair}];
      if (!t) {
        auto* def = llvm::dyn_cast<llvm::Instruction>(v);
        llvm::IRBuilder<> at(call);
        if (def)
          at.SetInsertPoint(def->getParent(), llvm::isa<llvm::PHINode>(def) ? def->getParent()->getFirstInsertionPt()
                                                                            : std::next(def->getIterator()));
        t = narrowElements(at, v, pair);
      }
      return t;
    };
    llvm::Value* a = ops.permute(b, pseudo::kSgmToNvAC, asNarrow(call->getArgOperand(0)));
    llvm::Value* bm = ops.permute(b, pseudo::kSgmToNvB, asNarrow(call->getArgOperand(1)));
    llvm::Value* c = ops.permute(b, pseudo::kSgmToNvAC, call->getArgOperand(2));
    llvm::Value* d =
        ops.mma(b, a, llvm::Constant::getNullValue(pair), bm, c, llvm::Constant::getNullValue(ops.float2()));
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
