// Thread arrays that one pointer may point into become parts of one array. SROA splits an array a loop walks with
// a pointer (`float sums[2]` read through `sums + i` in a rotated loop) into one variable per element and leaves a
// phi or select that chooses between them; a SPIR-V pointer into thread memory is one variable and an offset, so
// the variables such a pointer chooses between (of one type) are put back side by side in one array, each replaced
// by a pointer to its element.
#include <llvm/ADT/EquivalenceClasses.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>

#include "Passes.h"

namespace m2v::lower {
namespace {

// A fixed-size variable of the entry block, not an array allocation.
bool mergeable(const llvm::AllocaInst* a) {
  return a && a->isStaticAlloca() && !a->isArrayAllocation() && a->getParent() == &a->getFunction()->getEntryBlock();
}

}  // namespace

llvm::PreservedAnalyses MergeSelectedAllocasPass::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  llvm::EquivalenceClasses<llvm::AllocaInst*> groups;
  bool any = false;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb) {
      if (!i.getType()->isPointerTy() || (!llvm::isa<llvm::PHINode>(i) && !llvm::isa<llvm::SelectInst>(i))) continue;
      llvm::SmallVector<const llvm::Value*, 4> objects;
      llvm::getUnderlyingObjects(&i, objects);
      llvm::SmallVector<llvm::AllocaInst*, 4> allocas;
      bool allAllocas = true;
      for (const llvm::Value* o : objects) {
        auto* a = llvm::dyn_cast<llvm::AllocaInst>(const_cast<llvm::Value*>(o));
        if (llvm::isa<llvm::UndefValue>(o)) continue;
        if (!mergeable(a)) {
          allAllocas = false;
          break;
        }
        allocas.push_back(a);
      }
      if (!allAllocas || allocas.size() < 2) continue;
      llvm::Type* t = allocas[0]->getAllocatedType();
      if (!llvm::all_of(allocas, [&](llvm::AllocaInst* a) { return a->getAllocatedType() == t; })) continue;
      for (llvm::AllocaInst* a : allocas) groups.unionSets(allocas[0], a);
      any = true;
    }
  if (!any) return llvm::PreservedAnalyses::all();

  bool changed = false;
  for (auto it = groups.begin(); it != groups.end(); ++it) {
    if (!(*it)->isLeader()) continue;
    llvm::SmallVector<llvm::AllocaInst*, 8> members(groups.member_begin(**it), groups.member_end());
    if (members.size() < 2) continue;
    // in the order they stand in the entry block, so that the merged array is where the first one was
    llvm::sort(members, [](llvm::AllocaInst* a, llvm::AllocaInst* b) { return a->comesBefore(b); });
    llvm::Type* t = members[0]->getAllocatedType();
    llvm::Align align = members[0]->getAlign();
    for (llvm::AllocaInst* a : members) align = std::max(align, a->getAlign());
    auto* arrayType = llvm::ArrayType::get(t, members.size());
    llvm::IRBuilder<> b(members[0]);
    llvm::AllocaInst* merged =
        b.CreateAlloca(arrayType, members[0]->getAddressSpace(), nullptr, members[0]->getName() + ".merged");
    merged->setAlignment(align);
    // lifetime markers name a whole variable: the parts of one array have none of their own
    for (llvm::AllocaInst* a : members)
      for (llvm::User* u : llvm::make_early_inc_range(a->users()))
        if (auto* ii = llvm::dyn_cast<llvm::IntrinsicInst>(u); ii && ii->isLifetimeStartOrEnd()) ii->eraseFromParent();
    for (size_t k = 0; k < members.size(); ++k) {
      llvm::Value* element =
          b.CreateConstInBoundsGEP2_32(arrayType, merged, 0, static_cast<unsigned>(k), members[k]->getName());
      members[k]->replaceAllUsesWith(element);
    }
    for (llvm::AllocaInst* a : members) a->eraseFromParent();
    changed = true;
  }
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
