// FindSpinWaitsPass: a loop that leaves only when an atomic or volatile load of device memory returns some value
// waits for another thread to store it: a spin-wait on a flag, a lock, a decoupled look-back scan's predecessor. When
// that thread is in another threadgroup, the kernel finishes only if that threadgroup runs at the same time, which
// neither Metal nor Vulkan promises for a grid larger than the device keeps resident. Such loops are listed in the
// reflection (spin_waits), so that the runtime can name them when the kernel outlasts its budget.
//
// Retry loops of compare-and-exchange or read-modify-write (an atomic float add, a lock-free maximum) succeed after
// finitely many tries however the threads are scheduled, and are not spin-waits; neither are waits on threadgroup
// memory (the threads they wait for are resident together).
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/Instructions.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <string>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

bool loadsDeviceFlag(const llvm::LoadInst& load) {
  if (!load.isAtomic() && !load.isVolatile()) return false;
  const unsigned as = load.getPointerAddressSpace();
  return as == kDeviceAS || as == kGenericAS;
}

// The atomic or volatile device load inside `loop` that `v` depends on, if any (through values computed in the loop).
const llvm::LoadInst* flagLoadBehind(const llvm::Value* v, const llvm::Loop& loop) {
  llvm::SmallPtrSet<const llvm::Value*, 32> seen;
  std::vector<const llvm::Value*> work{v};
  while (!work.empty()) {
    const auto* i = llvm::dyn_cast<llvm::Instruction>(work.back());
    work.pop_back();
    if (!i || !loop.contains(i) || !seen.insert(i).second) continue;
    if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(i)) {
      if (loadsDeviceFlag(*load)) return load;
      continue;  // a plain load's value is not waited for
    }
    if (llvm::isa<llvm::AtomicCmpXchgInst, llvm::AtomicRMWInst, llvm::CallBase>(i)) continue;
    for (const llvm::Value* op : i->operands()) work.push_back(op);
  }
  return nullptr;
}

}  // namespace

llvm::PreservedAnalyses FindSpinWaitsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  if (f.isDeclaration()) return llvm::PreservedAnalyses::all();
  llvm::LoopInfo& li = am.getResult<llvm::LoopAnalysis>(f);
  for (llvm::Loop* loop : li.getLoopsInPreorder()) {
    llvm::SmallVector<llvm::BasicBlock*, 4> exiting;
    loop->getExitingBlocks(exiting);
    for (llvm::BasicBlock* bb : exiting) {
      const auto* br = llvm::dyn_cast<llvm::BranchInst>(bb->getTerminator());
      const llvm::LoadInst* load = br && br->isConditional() ? flagLoadBehind(br->getCondition(), *loop) : nullptr;
      if (!load) continue;
      auto& where = reflection.spinWaits;
      if (std::string at = kernelLocation(*load); std::find(where.begin(), where.end(), at) == where.end())
        where.push_back(at);
    }
  }
  return llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
