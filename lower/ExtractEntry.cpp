// extractEntry: a new module with one kernel and exactly what it reaches, so that lowering an entry point of a
// library file (MLX's binary.metal has 4,122) costs what that entry uses, not what the whole file holds.
#include <llvm/ADT/SetVector.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include "Passes.h"

namespace m2v::lower {

namespace {

// Functions and global variables that `root` reaches through calls, references and initializers.
// Program-scope initializers that are not constant (`constant bool b = is_function_constant_defined(x);`) are
// global constructors, listed in llvm.global_ctors: every entry point runs them (EntryABIPass), so they count too.
llvm::SetVector<const llvm::GlobalValue*> reachableFrom(const llvm::Function& root) {
  llvm::SetVector<const llvm::GlobalValue*> reached;
  llvm::SmallVector<const llvm::GlobalValue*, 64> work{&root};
  if (const llvm::GlobalVariable* ctors = root.getParent()->getGlobalVariable("llvm.global_ctors")) work.push_back(ctors);
  llvm::SmallPtrSet<const llvm::Constant*, 32> seenConstants;
  auto visitConstant = [&](const llvm::Constant* c, auto& self) -> void {
    if (const auto* gv = llvm::dyn_cast<llvm::GlobalValue>(c)) {
      if (!reached.count(gv)) work.push_back(gv);
      return;
    }
    if (!seenConstants.insert(c).second) return;
    for (const llvm::Use& op : c->operands())
      if (const auto* oc = llvm::dyn_cast<llvm::Constant>(op.get())) self(oc, self);
  };
  while (!work.empty()) {
    const llvm::GlobalValue* gv = work.pop_back_val();
    if (!reached.insert(gv)) continue;
    if (const auto* var = llvm::dyn_cast<llvm::GlobalVariable>(gv)) {
      if (var->hasInitializer()) visitConstant(var->getInitializer(), visitConstant);
    } else if (const auto* f = llvm::dyn_cast<llvm::Function>(gv)) {
      for (const llvm::Instruction& inst : llvm::instructions(*f))
        for (const llvm::Use& op : inst.operands())
          if (const auto* c = llvm::dyn_cast<llvm::Constant>(op.get())) visitConstant(c, visitConstant);
    }
  }
  return reached;
}

}  // namespace

std::unique_ptr<llvm::Module> extractEntry(const llvm::Module& m, llvm::StringRef mangledName) {
  const llvm::Function* root = m.getFunction(mangledName);
  if (!root) return nullptr;
  llvm::SetVector<const llvm::GlobalValue*> reached = reachableFrom(*root);

  auto out = std::make_unique<llvm::Module>(m.getModuleIdentifier(), m.getContext());
  out->setSourceFileName(m.getSourceFileName());
  out->setDataLayout(m.getDataLayout());
  out->setTargetTriple(m.getTargetTriple());
  llvm::ValueToValueMapTy vmap;
  // Declarations first (the bodies and initializers refer to each other), then the contents.
  for (const llvm::GlobalValue* gv : reached) {
    if (const auto* var = llvm::dyn_cast<llvm::GlobalVariable>(gv)) {
      auto* copy = new llvm::GlobalVariable(*out, var->getValueType(), var->isConstant(), var->getLinkage(), nullptr,
                                            var->getName(), nullptr, var->getThreadLocalMode(),
                                            var->getType()->getAddressSpace());
      copy->copyAttributesFrom(var);
      vmap[var] = copy;
    } else if (const auto* f = llvm::dyn_cast<llvm::Function>(gv)) {
      auto* copy = llvm::Function::Create(f->getFunctionType(), f->getLinkage(), f->getAddressSpace(), f->getName(),
                                          out.get());
      copy->copyAttributesFrom(f);
      vmap[f] = copy;
    }
  }
  for (const llvm::GlobalValue* gv : reached) {
    if (const auto* var = llvm::dyn_cast<llvm::GlobalVariable>(gv)) {
      auto* copy = llvm::cast<llvm::GlobalVariable>(vmap[var]);
      if (var->hasInitializer()) copy->setInitializer(llvm::MapValue(var->getInitializer(), vmap));
      llvm::SmallVector<std::pair<unsigned, llvm::MDNode*>, 1> mds;
      var->getAllMetadata(mds);
      for (auto [kind, md] : mds) copy->addMetadata(kind, *llvm::MapMetadata(md, vmap));
    } else if (const auto* f = llvm::dyn_cast<llvm::Function>(gv)) {
      if (f->isDeclaration()) continue;
      auto* copy = llvm::cast<llvm::Function>(vmap[f]);
      auto arg = copy->arg_begin();
      for (const llvm::Argument& a : f->args()) {
        arg->setName(a.getName());
        vmap[&a] = &*arg++;
      }
      llvm::SmallVector<llvm::ReturnInst*, 8> returns;
      llvm::CloneFunctionInto(copy, f, vmap, llvm::CloneFunctionChangeType::DifferentModule, returns);
    }
  }
  // The debug-info compile unit and module flags come along (the verifier wants the units listed).
  for (const llvm::NamedMDNode& nmd : m.named_metadata()) {
    if (nmd.getName() != "llvm.dbg.cu" && nmd.getName() != "llvm.module.flags") continue;
    llvm::NamedMDNode* copy = out->getOrInsertNamedMetadata(nmd.getName());
    for (const llvm::MDNode* op : nmd.operands()) copy->addOperand(llvm::MapMetadata(op, vmap));
  }
  return out;
}

}  // namespace m2v::lower
