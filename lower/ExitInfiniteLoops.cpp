// ExitInfiniteLoopsPass: a loop without an exit (MLX's depthwise_conv_2d has one for template parameters that make
// its stride 0: `for (hw = ...; hw < n; hw += 0)`) leaves the branches inside it without a post-dominator, and
// structured control flow without a merge block. Each such loop gets an exit that is never taken: its back edge
// becomes `br m2v.never(), exit, header`, with `m2v.never` a false the optimizer cannot see through (the emitter
// writes OpConstantFalse). What the loop does is unchanged.
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/ADT/DepthFirstIterator.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Instructions.h>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

llvm::PreservedAnalyses ExitInfiniteLoopsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  llvm::LoopInfo& li = am.getResult<llvm::LoopAnalysis>(f);
  std::vector<llvm::Loop*> endless;
  for (llvm::Loop* top : li)
    for (llvm::Loop* l : llvm::depth_first(top)) {
      llvm::SmallVector<llvm::BasicBlock*, 4> exits;
      l->getExitBlocks(exits);
      if (exits.empty()) endless.push_back(l);
    }
  if (endless.empty()) return llvm::PreservedAnalyses::all();
  llvm::Module* m = f.getParent();
  llvm::FunctionCallee never =
      m->getOrInsertFunction(pseudo::kNever, llvm::FunctionType::get(llvm::Type::getInt1Ty(f.getContext()), false));
  auto* neverFn = llvm::cast<llvm::Function>(never.getCallee());
  neverFn->setDoesNotAccessMemory();
  neverFn->setDoesNotThrow();
  neverFn->addFnAttr(llvm::Attribute::WillReturn);
  for (llvm::Loop* l : endless) {
    llvm::BasicBlock* latch = l->getLoopLatch();
    auto* br = latch ? llvm::dyn_cast<llvm::BranchInst>(latch->getTerminator()) : nullptr;
    if (!br || br->isConditional()) continue;  // several back edges: LoopSimplify gives one latch later
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(f.getContext(), "loop.never_exits", &f);
    llvm::ReturnInst::Create(f.getContext(), f.getReturnType()->isVoidTy() ? nullptr : llvm::UndefValue::get(f.getReturnType()), exit);
    llvm::IRBuilder<> b(br);
    b.CreateCondBr(b.CreateCall(never), exit, l->getHeader());
    br->eraseFromParent();
  }
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
