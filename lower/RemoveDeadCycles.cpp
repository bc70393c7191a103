// RemoveDeadCyclesPass: values that only feed each other (a phi cycle through a loop, left by SROA and the
// structurizer: MLX's steel attention keeps a bool2 mask fragment as `<8 x i1>` phis and inserts that nothing reads)
// are dead, but plain dead-code elimination keeps cycles alive. Mark and sweep: what a side effect, a terminator or a
// live value uses is live; every other instruction goes. Control flow is left alone (it is structured already).
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>

#include "Passes.h"

namespace m2v::lower {

llvm::PreservedAnalyses RemoveDeadCyclesPass::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  llvm::SmallPtrSet<llvm::Instruction*, 32> live;
  llvm::SmallVector<llvm::Instruction*, 256> work;
  for (llvm::Instruction& i : llvm::instructions(f))
    if (i.isTerminator() || i.mayHaveSideEffects() || llvm::isa<llvm::AllocaInst>(i)) {
      live.insert(&i);
      work.push_back(&i);
    }
  while (!work.empty()) {
    llvm::Instruction* i = work.pop_back_val();
    for (llvm::Value* op : i->operands())
      if (auto* oi = llvm::dyn_cast<llvm::Instruction>(op); oi && live.insert(oi).second) work.push_back(oi);
  }
  llvm::SmallVector<llvm::Instruction*, 32> dead;
  for (llvm::Instruction& i : llvm::instructions(f))
    if (!live.count(&i)) dead.push_back(&i);
  if (dead.empty()) return llvm::PreservedAnalyses::all();
  for (llvm::Instruction* i : dead) i->dropAllReferences();
  for (llvm::Instruction* i : dead) i->eraseFromParent();
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
