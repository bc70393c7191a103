#include "Intrinsics.h"

#include <llvm/Demangle/Demangle.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Path.h>
#include <llvm/Transforms/Utils/Local.h>

#include <cstdlib>
#include <cstring>

namespace m2v::lower {

llvm::CallInst* callPseudo(llvm::IRBuilderBase& b, const std::string& name, llvm::Type* type,
                           llvm::ArrayRef<llvm::Value*> args) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  std::vector<llvm::Type*> argTypes;
  for (llvm::Value* a : args) argTypes.push_back(a->getType());
  llvm::FunctionCallee f = m->getOrInsertFunction(name, llvm::FunctionType::get(type, argTypes, false));
  auto* fn = llvm::cast<llvm::Function>(f.getCallee());
  fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  fn->addFnAttr(llvm::Attribute::WillReturn);
  // Their operands are constants the emitter reads (push-constant offsets): two calls must never be merged into
  // one call of a phi or select (SimplifyCFG sinks common code otherwise).
  fn->addFnAttr(llvm::Attribute::NoMerge);
  return b.CreateCall(f, args);
}

std::optional<std::string> stdlibIntrinsicName(const llvm::Function& f) {
  if (!f.isDeclaration()) return std::nullopt;
  llvm::StringRef mangled = f.getName();
  if (!mangled.starts_with("_ZN5__m2v")) return std::nullopt;
  llvm::ItaniumPartialDemangler d;
  if (d.partialDemangle(mangled.data())) return std::nullopt;
  size_t n = 0;
  char* base = d.getFunctionBaseName(nullptr, &n);
  if (!base) return std::nullopt;
  std::string name(base);
  std::free(base);
  return name;
}

llvm::CallInst* callToPseudo(llvm::Value* v, llvm::StringRef prefix) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(v);
  llvm::Function* f = call ? call->getCalledFunction() : nullptr;
  return f && f->getName().starts_with(prefix) ? call : nullptr;
}

bool ruleEnabled(const char* variable) {
  const char* s = std::getenv(variable);
  return !(s && std::strcmp(s, "0") == 0);
}

void copyAccessMetadata(llvm::Instruction& to, const llvm::Instruction& from) {
  to.copyMetadata(from, {llvm::LLVMContext::MD_tbaa, llvm::LLVMContext::MD_alias_scope, llvm::LLVMContext::MD_noalias,
                         llvm::LLVMContext::MD_invariant_load, llvm::LLVMContext::MD_nontemporal});
}

void replaceStoredValue(llvm::StoreInst* st, llvm::Value* value) {
  llvm::Value* old = st->getValueOperand();
  llvm::IRBuilder<> b(st);
  copyAccessMetadata(*b.CreateAlignedStore(value, st->getPointerOperand(), st->getAlign()), *st);
  st->eraseFromParent();
  llvm::RecursivelyDeleteTriviallyDeadInstructions(old);
}

std::string kernelLocation(const llvm::Instruction& i) {
  const llvm::DILocation* at = i.getDebugLoc().get();
  if (!at) return "?";
  while (at->getInlinedAt()) at = at->getInlinedAt();
  return llvm::sys::path::filename(at->getFilename()).str() + ":" + std::to_string(at->getLine());
}

bool isCrossLaneIntrinsic(llvm::StringRef name) {
  return name.starts_with("simd_") || name.starts_with("quad_") || name.ends_with("_barrier");
}

llvm::Function* declareSubgroupPseudo(llvm::Module& m, llvm::StringRef name, llvm::FunctionType* type,
                                      bool readsArgMemory) {
  auto* f = llvm::cast<llvm::Function>(m.getOrInsertFunction(name, type).getCallee());
  f->setConvergent();
  f->setDoesNotThrow();
  f->addFnAttr(llvm::Attribute::WillReturn);
  if (readsArgMemory) {
    f->setOnlyReadsMemory();
    f->setOnlyAccessesArgMemory();
  } else {
    f->setDoesNotAccessMemory();
  }
  return f;
}

}  // namespace m2v::lower
