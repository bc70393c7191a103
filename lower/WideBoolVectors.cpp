// Bool vectors of more than four lanes (`vec<bool, 8>`, the mask fragments of attention kernels) have no SPIR-V
// type. Each one becomes an integer with one bit per lane -- lane i is bit i, which is also how LLVM lays out
// <N x i1> in memory -- and the instructions on it become bit operations: phi, select and freeze carry the
// integer, insertelement and extractelement set and test a bit, and/or/xor work on all lanes at once, a bitcast to
// or from the integer is the integer, loads and stores move it. A function with any other instruction on such a
// vector is left as it is (the emitter names the type as unsupported).
#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>

#include "Passes.h"

namespace m2v::lower {
namespace {

bool isWideBool(const llvm::Type* t) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t);
  return vt && vt->getElementType()->isIntegerTy(1) && vt->getNumElements() > 4 && vt->getNumElements() <= 64;
}

bool touchesWideBool(const llvm::Instruction& i) {
  if (isWideBool(i.getType())) return true;
  for (const llvm::Use& u : i.operands())
    if (isWideBool(u->getType())) return true;
  return false;
}

bool supported(const llvm::Instruction& i) {
  if (llvm::isa<llvm::PHINode, llvm::InsertElementInst, llvm::ExtractElementInst, llvm::FreezeInst,
                llvm::ShuffleVectorInst>(i))
    return true;
  if (auto* s = llvm::dyn_cast<llvm::SelectInst>(&i)) return isWideBool(s->getType());
  if (auto* b = llvm::dyn_cast<llvm::BinaryOperator>(&i))
    return b->getOpcode() == llvm::Instruction::And || b->getOpcode() == llvm::Instruction::Or ||
           b->getOpcode() == llvm::Instruction::Xor;
  if (auto* c = llvm::dyn_cast<llvm::BitCastInst>(&i))
    return c->getType()->isIntegerTy() || c->getOperand(0)->getType()->isIntegerTy();
  if (auto* l = llvm::dyn_cast<llvm::LoadInst>(&i)) return l->isSimple();
  if (auto* s = llvm::dyn_cast<llvm::StoreInst>(&i)) return s->isSimple() && !isWideBool(s->getPointerOperandType());
  return false;
}

class Legalizer {
 public:
  explicit Legalizer(llvm::Function& f) : f_(f) {}

  bool run() {
    std::vector<llvm::Instruction*> work;
    for (llvm::BasicBlock* bb : llvm::ReversePostOrderTraversal<llvm::Function*>(&f_))
      for (llvm::Instruction& i : *bb)
        if (touchesWideBool(i)) {
          if (!supported(i)) return false;
          work.push_back(&i);
        }
    if (work.empty()) return false;
    // Every wide value used must be one of these instructions or a constant (not an argument or a call's result).
    llvm::SmallPtrSet<llvm::Value*, 32> inWork(work.begin(), work.end());
    for (llvm::Instruction* i : work)
      for (const llvm::Use& u : i->operands())
        if (isWideBool(u->getType()) && !llvm::isa<llvm::Constant>(u.get()) && !inWork.count(u.get())) return false;
    // Phis first, so that a value reaching a phi around a loop has its integer already.
    for (llvm::Instruction* i : work)
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(i); phi && isWideBool(phi->getType()))
        map_[phi] = llvm::PHINode::Create(intFor(phi->getType()), phi->getNumIncomingValues(), phi->getName() + ".bits",
                                          phi->getIterator());
    for (llvm::Instruction* i : work)
      if (!rewrite(*i)) return false;  // (cannot happen after the checks above)
    for (llvm::Instruction* i : work)
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(i); phi && isWideBool(phi->getType())) {
        auto* bits = llvm::cast<llvm::PHINode>(map_[phi]);
        for (unsigned k = 0; k < phi->getNumIncomingValues(); ++k) {
          llvm::Value* v = bitsOf(phi->getIncomingValue(k));
          if (!v) return false;
          bits->addIncoming(v, phi->getIncomingBlock(k));
        }
      }
    // Old instructions go last, users first.
    for (auto it = work.rbegin(); it != work.rend(); ++it) {
      llvm::Instruction* i = *it;
      if (!i->getType()->isVoidTy()) i->replaceAllUsesWith(llvm::PoisonValue::get(i->getType()));
      i->eraseFromParent();
    }
    return true;
  }

 private:
  static llvm::IntegerType* intFor(llvm::Type* t) {
    return llvm::IntegerType::get(t->getContext(), llvm::cast<llvm::FixedVectorType>(t)->getNumElements());
  }

  // The integer of a wide bool vector value; null when it has none.
  llvm::Value* bitsOf(llvm::Value* v) {
    if (auto it = map_.find(v); it != map_.end()) return it->second;
    auto* c = llvm::dyn_cast<llvm::Constant>(v);
    if (!c) return nullptr;
    llvm::IntegerType* it = intFor(v->getType());
    if (llvm::isa<llvm::PoisonValue>(c)) return llvm::PoisonValue::get(it);
    if (llvm::isa<llvm::UndefValue>(c)) return llvm::UndefValue::get(it);
    uint64_t bits = 0;
    unsigned n = it->getBitWidth();
    for (unsigned k = 0; k < n; ++k) {
      llvm::Constant* e = c->getAggregateElement(k);
      if (auto* ci = llvm::dyn_cast_or_null<llvm::ConstantInt>(e); ci && ci->isOne()) bits |= uint64_t(1) << k;
    }
    return llvm::ConstantInt::get(it, bits);
  }

  // Lane `lane` (an integer value) of `v`, which is a wide bool vector or an ordinary vector of i1.
  llvm::Value* lane(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Value* index) {
    if (!isWideBool(v->getType())) return b.CreateExtractElement(v, index);
    llvm::Value* bits = bitsOf(v);
    if (!bits) return nullptr;
    llvm::Value* shift = b.CreateZExtOrTrunc(index, bits->getType());
    return b.CreateTrunc(b.CreateLShr(bits, shift), b.getInt1Ty());
  }

  llvm::Value* setLane(llvm::IRBuilder<>& b, llvm::Value* bits, llvm::Value* bit, llvm::Value* index) {
    llvm::Type* t = bits->getType();
    llvm::Value* shift = b.CreateZExtOrTrunc(index, t);
    llvm::Value* mask = b.CreateShl(llvm::ConstantInt::get(t, 1), shift);
    llvm::Value* cleared = b.CreateAnd(bits, b.CreateNot(mask));
    return b.CreateOr(cleared, b.CreateShl(b.CreateZExt(bit, t), shift));
  }

  bool rewrite(llvm::Instruction& i) {
    llvm::IRBuilder<> b(&i);
    b.SetCurrentDebugLocation(i.getDebugLoc());
    if (llvm::isa<llvm::PHINode>(i)) return true;  // filled in afterwards
    if (auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(&i)) {
      llvm::Value* bits = bitsOf(ins->getOperand(0));
      if (!bits) return false;
      map_[&i] = setLane(b, bits, ins->getOperand(1), ins->getOperand(2));
      return true;
    }
    if (auto* ext = llvm::dyn_cast<llvm::ExtractElementInst>(&i)) {
      llvm::Value* bit = lane(b, ext->getVectorOperand(), ext->getIndexOperand());
      if (!bit) return false;
      i.replaceAllUsesWith(bit);
      return true;
    }
    if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(&i)) {
      llvm::Value *t = bitsOf(sel->getTrueValue()), *f = bitsOf(sel->getFalseValue());
      if (!t || !f) return false;
      llvm::Value* c = sel->getCondition();
      if (isWideBool(c->getType())) {
        llvm::Value* cb = bitsOf(c);
        if (!cb) return false;
        map_[&i] = b.CreateOr(b.CreateAnd(cb, t), b.CreateAnd(b.CreateNot(cb), f));
      } else {
        map_[&i] = b.CreateSelect(c, t, f);
      }
      return true;
    }
    if (auto* fr = llvm::dyn_cast<llvm::FreezeInst>(&i)) {
      llvm::Value* v = bitsOf(fr->getOperand(0));
      if (!v) return false;
      map_[&i] = b.CreateFreeze(v);
      return true;
    }
    if (auto* bo = llvm::dyn_cast<llvm::BinaryOperator>(&i)) {
      llvm::Value *l = bitsOf(bo->getOperand(0)), *r = bitsOf(bo->getOperand(1));
      if (!l || !r) return false;
      map_[&i] = b.CreateBinOp(bo->getOpcode(), l, r);
      return true;
    }
    if (auto* bc = llvm::dyn_cast<llvm::BitCastInst>(&i)) {
      if (isWideBool(bc->getType())) {  // from an integer
        map_[&i] = bc->getOperand(0);
      } else {
        llvm::Value* v = bitsOf(bc->getOperand(0));
        if (!v) return false;
        i.replaceAllUsesWith(v);
      }
      return true;
    }
    if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(&i)) {
      llvm::LoadInst* n = b.CreateLoad(intFor(ld->getType()), ld->getPointerOperand(), ld->isVolatile());
      n->setAlignment(ld->getAlign());
      map_[&i] = n;
      return true;
    }
    if (auto* st = llvm::dyn_cast<llvm::StoreInst>(&i)) {
      llvm::Value* v = bitsOf(st->getValueOperand());
      if (!v) return false;
      llvm::StoreInst* n = b.CreateStore(v, st->getPointerOperand(), st->isVolatile());
      n->setAlignment(st->getAlign());
      return true;
    }
    if (auto* sh = llvm::dyn_cast<llvm::ShuffleVectorInst>(&i)) {
      // lane by lane: the result's lane k is lane mask[k] of the two operands side by side
      unsigned n0 = llvm::cast<llvm::FixedVectorType>(sh->getOperand(0)->getType())->getNumElements();
      llvm::ArrayRef<int> mask = sh->getShuffleMask();
      bool wide = isWideBool(sh->getType());
      llvm::Value* out = wide ? static_cast<llvm::Value*>(llvm::ConstantInt::get(intFor(sh->getType()), 0))
                              : llvm::PoisonValue::get(sh->getType());
      for (unsigned k = 0; k < mask.size(); ++k) {
        if (mask[k] < 0) continue;
        unsigned from = unsigned(mask[k]);
        llvm::Value* src = from < n0 ? sh->getOperand(0) : sh->getOperand(1);
        llvm::Value* bit = lane(b, src, b.getInt32(from < n0 ? from : from - n0));
        if (!bit) return false;
        out = wide ? setLane(b, out, bit, b.getInt32(k)) : b.CreateInsertElement(out, bit, b.getInt32(k));
      }
      if (wide)
        map_[&i] = out;
      else
        i.replaceAllUsesWith(out);
      return true;
    }
    return false;
  }

  llvm::Function& f_;
  llvm::DenseMap<llvm::Value*, llvm::Value*> map_;
};

}  // namespace

llvm::PreservedAnalyses WideBoolVectorsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  if (f.isDeclaration() || !Legalizer(f).run()) return llvm::PreservedAnalyses::all();
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
