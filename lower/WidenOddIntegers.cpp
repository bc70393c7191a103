// Integers of widths SPIR-V has no type for (i5, i24, ...; LLVM's optimizer makes them, e.g. InstCombine's
// bit-reverse idiom `bitreverse.i5(trunc x)`) are computed in the next wider legal type W (8, 16, 32 or 64 bits).
// A widened value holds the narrow value in its low N bits and zeros above; each instruction keeps that invariant:
// trunc and add/sub/mul/shl mask the result, and/or/xor/lshr/udiv/urem need nothing, bitreverse shifts the
// reversed W-bit value down, sext/ashr/signed compares sign-extend from bit N - 1 first. A function with any other
// instruction on such a type is left as it is (the emitter names the type as unsupported).
#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>

#include <map>

#include "Passes.h"

namespace m2v::lower {
namespace {

bool isOdd(const llvm::Type* t) {
  auto* it = llvm::dyn_cast<llvm::IntegerType>(t);
  if (!it) return false;
  unsigned n = it->getBitWidth();
  return n != 1 && n != 8 && n != 16 && n != 32 && n != 64 && n < 64;
}

unsigned legalWidth(unsigned n) { return n <= 8 ? 8 : n <= 16 ? 16 : n <= 32 ? 32 : 64; }

bool touchesOdd(const llvm::Instruction& i) {
  if (isOdd(i.getType())) return true;
  for (const llvm::Use& u : i.operands())
    if (isOdd(u->getType())) return true;
  return false;
}

bool supported(const llvm::Instruction& i) {
  if (llvm::isa<llvm::TruncInst, llvm::ZExtInst, llvm::SExtInst, llvm::PHINode, llvm::SelectInst, llvm::ICmpInst,
                llvm::FreezeInst>(i))
    return true;
  if (auto* b = llvm::dyn_cast<llvm::BinaryOperator>(&i)) {
    switch (b->getOpcode()) {
      case llvm::Instruction::And:
      case llvm::Instruction::Or:
      case llvm::Instruction::Xor:
      case llvm::Instruction::Add:
      case llvm::Instruction::Sub:
      case llvm::Instruction::Mul:
      case llvm::Instruction::Shl:
      case llvm::Instruction::LShr:
      case llvm::Instruction::AShr:
      case llvm::Instruction::UDiv:
      case llvm::Instruction::URem:
        return true;
      default:
        return false;
    }
  }
  if (auto* ii = llvm::dyn_cast<llvm::IntrinsicInst>(&i)) return ii->getIntrinsicID() == llvm::Intrinsic::bitreverse;
  return false;
}

class Widener {
 public:
  explicit Widener(llvm::Function& f) : f_(f) {}

  bool run() {
    // in reverse post-order: a value is widened before its uses (phis aside)
    std::vector<llvm::Instruction*> odd;
    for (llvm::BasicBlock* bb : llvm::ReversePostOrderTraversal<llvm::Function*>(&f_))
      for (llvm::Instruction& i : *bb)
        if (touchesOdd(i)) {
          if (!supported(i)) return false;
          odd.push_back(&i);
        }
    if (odd.empty()) return false;
    size_t everywhere = 0;  // an unreachable block's instructions are not in the traversal: leave the function
    for (llvm::BasicBlock& bb : f_)
      for (llvm::Instruction& i : bb) everywhere += touchesOdd(i);
    if (everywhere != odd.size()) return false;
    // phis first (their incoming values may be defined later), then everything in order
    for (llvm::Instruction* i : odd)
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(i); phi && isOdd(phi->getType()))
        wide_[phi] = llvm::PHINode::Create(widen(phi->getType()), phi->getNumIncomingValues(), phi->getName() + ".w",
                                           phi->getIterator());
    for (llvm::Instruction* i : odd) rewrite(i);
    for (llvm::Instruction* i : odd)
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(i); phi && isOdd(phi->getType())) {
        auto* w = llvm::cast<llvm::PHINode>(wide_[phi]);
        for (unsigned k = 0; k < phi->getNumIncomingValues(); ++k)
          w->addIncoming(value(phi->getIncomingValue(k)), phi->getIncomingBlock(k));
      }
    for (llvm::Instruction* i : odd) i->dropAllReferences();
    for (llvm::Instruction* i : odd) i->eraseFromParent();
    return true;
  }

 private:
  static llvm::IntegerType* widen(llvm::Type* t) {
    return llvm::IntegerType::get(t->getContext(), legalWidth(t->getIntegerBitWidth()));
  }
  static unsigned bits(llvm::Type* oddType) { return oddType->getIntegerBitWidth(); }

  // the widened form of an odd-typed value
  llvm::Value* value(llvm::Value* v) {
    if (auto it = wide_.find(v); it != wide_.end()) return it->second;
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(v))
      return llvm::ConstantInt::get(widen(v->getType()), c->getValue().zext(legalWidth(bits(v->getType()))));
    if (llvm::isa<llvm::UndefValue, llvm::PoisonValue>(v)) return llvm::Constant::getNullValue(widen(v->getType()));
    return nullptr;
  }
  llvm::Value* mask(llvm::IRBuilder<>& b, llvm::Value* w, unsigned n) {
    return b.CreateAnd(
        w, llvm::ConstantInt::get(w->getType(), llvm::APInt::getLowBitsSet(w->getType()->getIntegerBitWidth(), n)));
  }
  // sign-extended within W from bit n - 1
  llvm::Value* signExtend(llvm::IRBuilder<>& b, llvm::Value* w, unsigned n) {
    unsigned s = w->getType()->getIntegerBitWidth() - n;
    return b.CreateAShr(b.CreateShl(w, s), s);
  }

  void rewrite(llvm::Instruction* i) {
    if (llvm::isa<llvm::PHINode>(i) && isOdd(i->getType())) return;  // made above
    llvm::IRBuilder<> b(i);
    llvm::Value* out = nullptr;
    if (auto* t = llvm::dyn_cast<llvm::TruncInst>(i)) {
      llvm::Value* src = isOdd(t->getSrcTy()) ? value(t->getOperand(0)) : t->getOperand(0);
      if (isOdd(t->getDestTy())) {
        out = mask(b, b.CreateZExtOrTrunc(src, widen(t->getDestTy())), bits(t->getDestTy()));
      } else {
        i->replaceAllUsesWith(b.CreateTrunc(src, t->getDestTy()));  // odd to narrower legal: the low bits
        return;
      }
    } else if (auto* z = llvm::dyn_cast<llvm::ZExtInst>(i)) {
      llvm::Value* src = value(z->getOperand(0));
      if (isOdd(z->getDestTy()))
        out = b.CreateZExtOrTrunc(src, widen(z->getDestTy()));
      else if (isOdd(z->getSrcTy())) {
        i->replaceAllUsesWith(b.CreateZExtOrTrunc(src, z->getDestTy()));
        return;
      }
    } else if (auto* s = llvm::dyn_cast<llvm::SExtInst>(i)) {
      llvm::Value* src =
          isOdd(s->getSrcTy()) ? signExtend(b, value(s->getOperand(0)), bits(s->getSrcTy())) : s->getOperand(0);
      if (isOdd(s->getDestTy())) {
        out = mask(b, b.CreateSExtOrTrunc(src, widen(s->getDestTy())), bits(s->getDestTy()));
      } else {
        i->replaceAllUsesWith(b.CreateSExtOrTrunc(src, s->getDestTy()));
        return;
      }
    } else if (auto* c = llvm::dyn_cast<llvm::ICmpInst>(i)) {
      unsigned n = bits(c->getOperand(0)->getType());
      llvm::Value* l = value(c->getOperand(0));
      llvm::Value* r = value(c->getOperand(1));
      if (c->isSigned()) {
        l = signExtend(b, l, n);
        r = signExtend(b, r, n);
      }
      i->replaceAllUsesWith(b.CreateICmp(c->getPredicate(), l, r));
      return;
    } else if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(i)) {
      out = b.CreateSelect(sel->getCondition(), value(sel->getTrueValue()), value(sel->getFalseValue()));
    } else if (auto* fr = llvm::dyn_cast<llvm::FreezeInst>(i)) {
      out = b.CreateFreeze(value(fr->getOperand(0)));
    } else if (auto* bo = llvm::dyn_cast<llvm::BinaryOperator>(i)) {
      unsigned n = bits(bo->getType());
      llvm::Value* l = value(bo->getOperand(0));
      llvm::Value* r = value(bo->getOperand(1));
      switch (bo->getOpcode()) {
        case llvm::Instruction::And:
        case llvm::Instruction::Or:
        case llvm::Instruction::Xor:
        case llvm::Instruction::LShr:
        case llvm::Instruction::UDiv:
        case llvm::Instruction::URem:
          out = b.CreateBinOp(bo->getOpcode(), l, r);
          break;
        case llvm::Instruction::AShr:
          out = mask(b, b.CreateAShr(signExtend(b, l, n), r), n);
          break;
        default:  // add, sub, mul, shl: the low n bits are right; clear what carried above them
          out = mask(b, b.CreateBinOp(bo->getOpcode(), l, r), n);
          break;
      }
    } else if (auto* ii = llvm::dyn_cast<llvm::IntrinsicInst>(i)) {
      llvm::Value* w = value(ii->getArgOperand(0));
      unsigned shift = w->getType()->getIntegerBitWidth() - bits(ii->getType());
      out = b.CreateLShr(b.CreateUnaryIntrinsic(llvm::Intrinsic::bitreverse, w), shift);
    }
    if (out) wide_[i] = out;
  }

  llvm::Function& f_;
  std::map<llvm::Value*, llvm::Value*> wide_;
};

}  // namespace

llvm::PreservedAnalyses WidenOddIntegersPass::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  return Widener(f).run() ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
