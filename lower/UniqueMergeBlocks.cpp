// UniqueMergeBlocksPass: shapes a structurized CFG for SPIR-V's structured control flow rules.
//
// - Every loop header holds only its phis and branches to the loop body, so the header carries OpLoopMerge alone.
// - Every conditional branch that is not a loop's back edge gets a merge block (its immediate post-dominator) that no
//   other construct uses as merge, continue target or header; where one would be shared, the edges from inside the
//   selection are routed through a new block.
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/PostDominators.h>
#include <llvm/IR/Dominators.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

#include "Passes.h"

namespace m2v::lower {

static bool splitLoopHeaders(llvm::Function& f) {
  llvm::DominatorTree dt(f);
  llvm::LoopInfo li(dt);
  std::vector<llvm::BasicBlock*> headers;
  for (llvm::Loop* l : li.getLoopsInPreorder()) headers.push_back(l->getHeader());
  for (llvm::BasicBlock* h : headers)
    llvm::SplitBlock(h, h->getFirstNonPHIIt(), static_cast<llvm::DominatorTree*>(nullptr), nullptr, nullptr,
                     h->getName() + ".body");
  return !headers.empty();
}

// A loop's exit (its merge block) must belong to that loop alone: not be an enclosing loop's latch (its continue
// target) or header. Where it is, the exiting edges go through a new block.
static bool giveLoopsTheirOwnExits(llvm::Function& f) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    llvm::DominatorTree dt(f);
    llvm::LoopInfo li(dt);
    llvm::SmallPtrSet<llvm::BasicBlock*, 16> special;
    for (llvm::Loop* l : li.getLoopsInPreorder()) {
      special.insert(l->getHeader());
      if (llvm::BasicBlock* latch = l->getLoopLatch()) special.insert(latch);
    }
    llvm::SmallPtrSet<llvm::BasicBlock*, 16> exits;
    for (llvm::Loop* l : li.getLoopsInPreorder()) {
      llvm::BasicBlock* exit = l->getExitBlock();
      if (!exit) continue;
      if (!special.contains(exit) && exits.insert(exit).second) continue;
      llvm::SmallVector<llvm::BasicBlock*, 4> inside;
      for (llvm::BasicBlock* pred : llvm::predecessors(exit))
        if (l->contains(pred)) inside.push_back(pred);
      llvm::SplitBlockPredecessors(exit, inside, ".loop.merge");
      changed = again = true;
      break;
    }
  }
  return changed;
}

llvm::PreservedAnalyses UniqueMergeBlocksPass::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  bool changed = splitLoopHeaders(f);
  changed |= giveLoopsTheirOwnExits(f);
  // Each split invalidates the analyses; functions here are small, so recompute and retry.
  for (bool again = true; again;) {
    again = false;
    llvm::DominatorTree dt(f);
    llvm::PostDominatorTree pdt(f);
    llvm::LoopInfo li(dt);
    llvm::SmallPtrSet<llvm::BasicBlock*, 32> claimed;
    for (llvm::Loop* l : li.getLoopsInPreorder()) {
      claimed.insert(l->getHeader());
      if (llvm::BasicBlock* latch = l->getLoopLatch()) claimed.insert(latch);
      if (llvm::BasicBlock* exit = l->getExitBlock()) claimed.insert(exit);
    }
    // Innermost selections first: they come later in reverse post-order.
    llvm::ReversePostOrderTraversal<llvm::Function*> rpo(&f);
    std::vector<llvm::BasicBlock*> order(rpo.begin(), rpo.end());
    for (auto it = order.rbegin(); it != order.rend() && !again; ++it) {
      llvm::BasicBlock* bb = *it;
      auto* br = llvm::dyn_cast<llvm::BranchInst>(bb->getTerminator());
      if (!br || !br->isConditional()) continue;
      llvm::Loop* l = li.getLoopFor(bb);
      if (l && l->getLoopLatch() == bb) continue;  // the back edge: OpLoopMerge covers it
      llvm::DomTreeNode* node = pdt.getNode(bb);
      llvm::BasicBlock* merge = node && node->getIDom() ? node->getIDom()->getBlock() : nullptr;
      if (!merge) continue;  // the emitter reports selections without a merge point
      // A branch that leaves the innermost loop is a break; the loop's merge handles it.
      if (l && !l->contains(merge)) continue;
      if (!claimed.contains(merge)) {
        claimed.insert(merge);
        continue;
      }
      llvm::SmallVector<llvm::BasicBlock*, 4> inside;
      for (llvm::BasicBlock* pred : llvm::predecessors(merge))
        if (dt.dominates(bb, pred)) inside.push_back(pred);
      if (inside.empty()) continue;
      llvm::SplitBlockPredecessors(merge, inside, ".merge");
      changed = again = true;
    }
  }
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
