// ResolvePrecise16Pass: Metal's precise float exp, exp2, exp10, log, log2, log10 and tanh whose result is only ever
// rounded to half (or only to bfloat) are computed as the 16-bit overloads compute them.
//
// metal_math writes each of these float functions as __m2v::precise16_pick(precise, for_half, for_bfloat): the
// float routine of __m2v::pm, and the float evaluations the half and bfloat overloads use (metal_math's p16_*, whose
// error stays within 1 ulp of the 16-bit result for any float argument). The optimizer sees three pure values. Here,
// after it, a pick whose every use converts it to half becomes for_half, to bfloat for_bfloat, anything else (a
// float use, a select, a phi, a store) precise; the unused computations are then dead code. `half(exp(x))` and
// MLX's bfloat math (bf16_math.h: `static_cast<bfloat16_t>(__metal_exp(static_cast<float>(x)))`) are what this
// serves. A use through a vector counts when the pick is inserted into a vector whose uses all convert it.
// The optimizer runs the pass after each of its instruction-combining steps (so that loops are unrolled, and code
// size judged, with only the chosen computation left), deciding only picks whose uses it sees; the run after the
// optimizer decides the rest (float).
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {
namespace {

// What the uses of `v` (through insertelement chains) make of it: all round it to one 16-bit type (`narrow` set),
// some use it as a float (Float), or some pass it on where this function cannot see what becomes of it (a return,
// a call, a phi or select, a store into a thread variable that may become a register again: Unknown until inlining
// and the optimizer have run; the final run takes Unknown as Float). A store to memory is a float use.
enum class Use { Narrow, Float, Unknown };
Use classify(llvm::Value* v, llvm::Type*& narrow, int depth) {
  if (depth > 8) return Use::Float;
  Use result = Use::Narrow;
  for (llvm::User* u : v->users()) {
    if (auto* t = llvm::dyn_cast<llvm::FPTruncInst>(u)) {
      llvm::Type* e = t->getType()->getScalarType();
      if (!e->isHalfTy() && !e->isBFloatTy()) return Use::Float;
      if (narrow && narrow != e) return Use::Float;
      narrow = e;
    } else if (auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(u); ins && ins->getOperand(2) != v) {
      Use inner = classify(ins, narrow, depth + 1);
      if (inner == Use::Float) return Use::Float;
      if (inner == Use::Unknown) result = Use::Unknown;
    } else if (auto* st = llvm::dyn_cast<llvm::StoreInst>(u)) {
      // into a thread variable: perhaps a register again after SROA; into memory: a float use
      if (st->getValueOperand() != v ||
          !llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(st->getPointerOperand())))
        return Use::Float;
      result = Use::Unknown;
    } else if (llvm::isa<llvm::ReturnInst, llvm::CallBase, llvm::PHINode, llvm::SelectInst, llvm::ShuffleVectorInst,
                         llvm::BitCastInst>(u)) {
      result = Use::Unknown;
    } else {
      return Use::Float;
    }
  }
  if (result == Use::Narrow && !narrow) return Use::Unknown;  // no use at all
  return result;
}

}  // namespace

llvm::PreservedAnalyses ResolvePrecise16Pass::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  bool changed = false;
  for (llvm::Instruction& i : llvm::make_early_inc_range(llvm::instructions(f))) {
    auto* call = llvm::dyn_cast<llvm::CallInst>(&i);
    llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
    if (!callee || !callee->isDeclaration()) continue;
    auto name = stdlibIntrinsicName(*callee);
    if (!name || *name != "precise16_pick") continue;
    llvm::Type* narrow = nullptr;
    Use use = classify(call, narrow, 0);
    if (use == Use::Unknown && !final) continue;
    unsigned pick = use == Use::Narrow ? (narrow->isHalfTy() ? 1 : 2) : 0;
    call->replaceAllUsesWith(call->getArgOperand(pick));
    call->eraseFromParent();
    changed = true;
  }
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
