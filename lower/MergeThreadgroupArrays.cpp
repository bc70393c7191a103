// MergeThreadgroupArraysPass: a pointer that selects between threadgroup arrays (`p = odd ? a : b`, ping-pong
// buffers) needs one variable behind it, since threadgroup memory has no addresses (see the emitter's pointer model).
// Arrays that meet in a phi or select are laid out in one byte arena; each becomes an offset into it.
#include <llvm/ADT/EquivalenceClasses.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Module.h>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

llvm::PreservedAnalyses MergeThreadgroupArraysPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  llvm::EquivalenceClasses<llvm::GlobalVariable*> groups;
  for (llvm::Function& f : m)
    for (llvm::Instruction& i : llvm::instructions(f)) {
      if (!i.getType()->isPointerTy() || i.getType()->getPointerAddressSpace() != kThreadgroupAS) continue;
      if (!llvm::isa<llvm::PHINode>(i) && !llvm::isa<llvm::SelectInst>(i)) continue;
      // Through phis and selects, also loop-carried ones (ping-pong buffers swapped each iteration).
      llvm::SmallVector<const llvm::Value*, 4> objects;
      llvm::getUnderlyingObjects(&i, objects);
      llvm::GlobalVariable* first = nullptr;
      for (const llvm::Value* v : objects) {
        auto* g = llvm::dyn_cast<llvm::GlobalVariable>(const_cast<llvm::Value*>(v));
        if (!g || g->getAddressSpace() != kThreadgroupAS) continue;
        groups.insert(g);
        if (first && first != g) groups.unionSets(first, g);
        first = first ? first : g;
      }
    }

  bool changed = false;
  const llvm::DataLayout& dl = m.getDataLayout();
  for (auto it = groups.begin(); it != groups.end(); ++it) {
    if (!(*it)->isLeader()) continue;
    std::vector<llvm::GlobalVariable*> members(groups.member_begin(**it), groups.member_end());
    if (members.size() < 2) continue;
    // Run-time sized arrays ([[threadgroup(n)]]) cannot share an arena; the emitter will name the select.
    if (llvm::any_of(members, [](llvm::GlobalVariable* g) { return g->hasMetadata(pseudo::kDynamicThreadgroupMD); }))
      continue;
    uint64_t size = 0, align = 1;
    std::vector<uint64_t> offsets;
    for (llvm::GlobalVariable* g : members) {
      uint64_t a =
          std::max<uint64_t>(g->getAlign().valueOrOne().value(), dl.getABITypeAlign(g->getValueType()).value());
      size = (size + a - 1) / a * a;
      offsets.push_back(size);
      size += dl.getTypeAllocSize(g->getValueType());
      align = std::max(align, a);
    }
    auto* type = llvm::ArrayType::get(llvm::Type::getInt8Ty(m.getContext()), size);
    auto* arena =
        new llvm::GlobalVariable(m, type, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(type),
                                 "m2v.threadgroup.arena", nullptr, llvm::GlobalValue::NotThreadLocal, kThreadgroupAS);
    arena->setAlignment(llvm::Align(align));
    for (size_t k = 0; k < members.size(); ++k) {
      llvm::Constant* at = llvm::ConstantExpr::getInBoundsGetElementPtr(
          llvm::Type::getInt8Ty(m.getContext()), arena,
          llvm::ConstantInt::get(llvm::Type::getInt64Ty(m.getContext()), offsets[k]));
      members[k]->replaceAllUsesWith(at);
      members[k]->eraseFromParent();
    }
    changed = true;
  }
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
