// FunctionConstantsPass: a Metal function constant (`constant bool has_bias [[function_constant(0)]];`) reads as a
// specialization constant with SpecId = its index; `is_function_constant_defined(x)` reads a second bool constant.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

static std::string typeSuffix(llvm::Type* t) {
  if (t->isIntegerTy()) return "i" + std::to_string(t->getIntegerBitWidth());
  if (t->isHalfTy()) return "f16";
  if (t->isFloatTy()) return "f32";
  if (t->isDoubleTy()) return "f64";
  if (t->isBFloatTy()) return "bf16";
  return "";
}

// A call `m2v.spec.<type>(i32 id)` that the emitter turns into an OpSpecConstant with that SpecId.
llvm::Value* specConstant(llvm::IRBuilder<>& b, llvm::Type* t, uint32_t specId) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  llvm::FunctionCallee f = m->getOrInsertFunction(pseudo::kSpecPrefix + typeSuffix(t), t, b.getInt32Ty());
  llvm::cast<llvm::Function>(f.getCallee())->setDoesNotAccessMemory();
  return b.CreateCall(f, {b.getInt32(specId)});
}

llvm::PreservedAnalyses FunctionConstantsPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  bool changed = false;
  for (const frontend::FunctionConstantFacts& fc : constants) {
    llvm::GlobalVariable* g = m.getGlobalVariable(fc.mangledName, true);
    if (!g) continue;  // not used by this kernel
    llvm::Type* valueType = g->getValueType();
    std::vector<llvm::User*> users(g->user_begin(), g->user_end());
    bool used = false;
    for (llvm::User* u : users) {
      auto* inst = llvm::dyn_cast<llvm::Instruction>(u);
      if (!inst) continue;
      llvm::IRBuilder<> b(inst);
      if (auto* load = llvm::dyn_cast<llvm::LoadInst>(inst); load && load->getType() == valueType) {
        // A bool lives in memory as a byte; its specialization constant is a SPIR-V bool.
        llvm::Value* v = fc.type == "bool" ? b.CreateZExt(specConstant(b, b.getInt1Ty(), fc.index), valueType)
                                           : specConstant(b, valueType, fc.index);
        load->replaceAllUsesWith(v);
        load->eraseFromParent();
        used = true;
      } else if (auto* call = llvm::dyn_cast<llvm::CallInst>(inst)) {
        // is_function_constant_defined(x): `__m2v::function_constant_defined(&x)`.
        llvm::Function* callee = call->getCalledFunction();
        auto name = callee ? stdlibIntrinsicName(*callee) : std::nullopt;
        if (name && *name == "function_constant_defined") {
          llvm::Value* v = specConstant(b, b.getInt1Ty(), kFunctionConstantDefinedSpecBase + fc.index);
          call->replaceAllUsesWith(b.CreateZExtOrTrunc(v, call->getType()));
          call->eraseFromParent();
          used = true;
        }
      }
    }
    if (used || !g->use_empty()) {
      reflection.functionConstants.push_back(
          {fc.name, fc.type, fc.index, fc.index, kFunctionConstantDefinedSpecBase + fc.index});
    }
    changed = true;
  }
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
