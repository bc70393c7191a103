// KeepLoopHintsPass: the source's "do not unroll this loop" survives structurization.
//
// `#pragma clang loop unroll(disable)` (MLX's STEEL_PRAGMA_NO_UNROLL) is LLVM loop metadata on a loop's back edge;
// StructurizeCFG and the passes around it rebuild those branches and drop it, so the emitter would give the driver
// no hint and the driver may unroll a loop whose body is large (the NAX GEMM's K steps: minutes of pipeline build).
// Before structurizing, the pass records the headers of such loops; after, it puts the hint back on each loop that
// one of them still heads. The emitter turns it into OpLoopMerge's DontUnroll.
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Metadata.h>
#include <llvm/Transforms/Utils/LoopUtils.h>

#include "Passes.h"

namespace m2v::lower {

namespace {
constexpr const char* kDontUnroll = "llvm.loop.unroll.disable";
}

llvm::PreservedAnalyses KeepLoopHintsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  llvm::LoopInfo& li = am.getResult<llvm::LoopAnalysis>(f);
  if (mode == Mode::Record) {
    for (llvm::Loop* l : li.getLoopsInPreorder())
      if (llvm::findOptionMDForLoop(l, kDontUnroll)) hints->dontUnroll.emplace_back(l->getHeader());
    return llvm::PreservedAnalyses::all();
  }
  bool changed = false;
  llvm::LLVMContext& c = f.getContext();
  for (llvm::WeakVH& h : hints->dontUnroll) {
    auto* header = llvm::dyn_cast_or_null<llvm::BasicBlock>(&*h);
    llvm::Loop* l = header && header->getParent() == &f ? li.getLoopFor(header) : nullptr;
    if (!l || l->getHeader() != header || !l->getLoopLatch() || llvm::findOptionMDForLoop(l, kDontUnroll)) continue;
    auto self = llvm::MDNode::getTemporary(c, {});
    llvm::MDNode* id =
        llvm::MDNode::getDistinct(c, {self.get(), llvm::MDNode::get(c, llvm::MDString::get(c, kDontUnroll))});
    id->replaceOperandWith(0, id);
    l->setLoopID(id);
    changed = true;
  }
  hints->dontUnroll.clear();
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
