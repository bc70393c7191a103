// ClusterStreamingLoadsPass: in a loop that streams device memory, a trip's loads are issued before the arithmetic
// that waits for the first of them.
//
// GPUs issue a thread's instructions in order: a load does not stop the thread, the first instruction that uses its
// result does. Lowered as written, MLX's gemv trip reads "load x, load row 0, 4 fmas on them, load row 1, ...": the
// row-1 load could be issued only after row 0's data arrived, so a trip would cost a memory round trip per row. A
// driver's scheduler may already move such loads up: on the H200 it does (MLX's gemv took the same time with and
// without this pass, bench/membound-round4.md), so there it changes nothing measurable; the module's own order is
// the one wanted on drivers that schedule less. In each block of an innermost streaming loop
// (streamingLoopSize: device loads at per-iteration addresses, no convergent operation), the loads of device memory
// and the instructions their addresses need move ahead of everything else, in their own order. Nothing moves across
// an instruction that may write memory or has other side effects (each such instruction starts a new region), and
// phis and the terminator stay where they are. M2V_CLUSTER_LOADS=0 turns it off (a measurement knob).
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Instructions.h>

#include <vector>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

bool enabled() {
  static const bool on = ruleEnabled("M2V_CLUSTER_LOADS");
  return on;
}

// An instruction loads may not move across.
bool isRegionBoundary(const llvm::Instruction& i) {
  if (i.mayWriteToMemory() || i.mayHaveSideEffects() || i.isTerminator()) return true;
  auto* call = llvm::dyn_cast<llvm::CallBase>(&i);
  return call && call->isConvergent();
}

// Reorders [begin, end) of `bb`: the device loads and the in-region instructions they depend on first (their order
// kept), then the rest (its order kept). True when anything moved.
bool clusterRegion(llvm::BasicBlock& bb, llvm::BasicBlock::iterator begin, llvm::BasicBlock::iterator end) {
  std::vector<llvm::Instruction*> region;
  for (auto it = begin; it != end; ++it) region.push_back(&*it);
  llvm::SmallPtrSet<llvm::Instruction*, 32> inRegion(region.begin(), region.end()), early;
  // Walk backwards so that an instruction's operands are marked after it: a load marks its address computation.
  for (auto it = region.rbegin(); it != region.rend(); ++it) {
    llvm::Instruction* i = *it;
    auto* ld = llvm::dyn_cast<llvm::LoadInst>(i);
    bool deviceLoad = ld && ld->isSimple() && ld->getPointerAddressSpace() == kDeviceAS;
    if (!deviceLoad && !early.contains(i)) continue;
    early.insert(i);
    for (llvm::Value* op : i->operands())
      if (auto* def = llvm::dyn_cast<llvm::Instruction>(op); def && inRegion.contains(def)) early.insert(def);
  }
  if (early.empty() || early.size() == region.size()) return false;
  std::vector<llvm::Instruction*> order;
  for (llvm::Instruction* i : region)
    if (early.contains(i)) order.push_back(i);
  for (llvm::Instruction* i : region)
    if (!early.contains(i)) order.push_back(i);
  if (order == region) return false;
  llvm::Instruction* anchor = end == bb.end() ? nullptr : &*end;
  for (llvm::Instruction* i : order) {
    if (anchor) i->moveBefore(anchor->getIterator());
    else i->moveBefore(bb, bb.end());
  }
  return true;
}

bool clusterBlock(llvm::BasicBlock& bb) {
  bool changed = false;
  auto begin = bb.getFirstNonPHIIt();
  while (begin != bb.end()) {
    auto end = begin;
    while (end != bb.end() && !isRegionBoundary(*end)) ++end;
    if (begin != end) changed |= clusterRegion(bb, begin, end);
    if (end == bb.end()) break;
    begin = std::next(end);
  }
  return changed;
}

}  // namespace

llvm::PreservedAnalyses ClusterStreamingLoadsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  if (!enabled()) return llvm::PreservedAnalyses::all();
  llvm::LoopInfo& li = am.getResult<llvm::LoopAnalysis>(f);
  bool changed = false;
  for (llvm::Loop* loop : li.getLoopsInPreorder())
    if (loop->isInnermost() && streamingLoopSize(*loop, false))
      for (llvm::BasicBlock* bb : loop->blocks()) changed |= clusterBlock(*bb);
  if (!changed) return llvm::PreservedAnalyses::all();
  llvm::PreservedAnalyses kept;
  kept.preserveSet<llvm::CFGAnalyses>();
  return kept;
}

}  // namespace m2v::lower
