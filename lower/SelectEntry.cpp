// SelectEntryPass: one module per entry point. Everything but the kernel becomes internal, so global DCE removes the
// other kernels and the optimizer may assume it sees every use.
#include <llvm/IR/Module.h>
#include <llvm/Transforms/IPO/GlobalDCE.h>

#include "Passes.h"

namespace m2v::lower {

llvm::PreservedAnalyses SelectEntryPass::run(llvm::Module& m, llvm::ModuleAnalysisManager& am) {
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    if (f.getName() == kernel) continue;
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.setComdat(nullptr);
  }
  for (llvm::GlobalVariable& g : m.globals()) {
    if (g.getName().starts_with("llvm.")) continue;
    if (g.isDeclaration()) continue;
    g.setLinkage(llvm::GlobalValue::InternalLinkage);
    g.setComdat(nullptr);
  }
  // Annotations would keep every annotated function alive.
  if (llvm::GlobalVariable* ann = m.getGlobalVariable("llvm.global.annotations")) ann->eraseFromParent();
  llvm::GlobalDCEPass().run(m, am);
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
