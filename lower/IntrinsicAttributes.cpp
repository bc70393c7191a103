// IntrinsicAttributesPass: what the optimizer must know about our intrinsics before it runs.
//
// Cross-lane operations (simd_*, quad_*, barriers) are `convergent`: no pass may make them depend on more or fewer
// conditions. Pure helpers (rsqrt, fract, ...) are marked side-effect free so they fold and hoist like LLVM's own.
// Every user function becomes always-inline: SPIR-V modules here hold a single function.
#include <llvm/IR/Module.h>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

llvm::PreservedAnalyses IntrinsicAttributesPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) {
      auto name = stdlibIntrinsicName(f);
      if (!name) continue;
      f.setDoesNotThrow();
      f.addFnAttr(llvm::Attribute::WillReturn);
      if (isCrossLaneIntrinsic(*name)) {
        f.setConvergent();
        // Barriers order memory; lane exchanges touch no memory the program can see.
        if (name->find("barrier") == std::string::npos) f.setMemoryEffects(llvm::MemoryEffects::inaccessibleMemOnly());
      } else if (*name != "function_constant_defined") {
        f.setDoesNotAccessMemory();
        f.addFnAttr(llvm::Attribute::Speculatable);
      }
      continue;
    }
    if (f.getName() == "main") continue;
    f.removeFnAttr(llvm::Attribute::OptimizeNone);
    f.removeFnAttr(llvm::Attribute::NoInline);
    f.addFnAttr(llvm::Attribute::AlwaysInline);
  }
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
