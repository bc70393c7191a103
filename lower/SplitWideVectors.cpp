// Vectors of more than four lanes that are not bool vectors (`vec<half, 8>`, the register fragments of Metal 4
// matrix kernels) have no SPIR-V type. A function that has one is scalarized by LLVM's scalarizer, loads and stores
// included; functions without one are left exactly as they are. Runs after WideBoolVectorsPass, which gives wide
// bool vectors their own form.
//
// With a fragment size (in bits), vectors are split into vectors of at most that size instead of scalars: before the
// cooperative-matrix passes, 64 bits cut a `vec<float, 8>` register fragment into the `float2` pairs that 8x8
// simdgroup_matrix multiplies take, so an accumulator carried through a loop in an 8-wide fragment becomes phis of
// pairs, which those passes keep in the device's layout (lower/CooperativeMatrix.cpp).
#include <llvm/IR/Instructions.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/Scalarizer.h>

#include "Passes.h"

namespace m2v::lower {
namespace {

bool isWide(const llvm::Type* t) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t);
  return vt && vt->getNumElements() > 4;
}

bool hasWideVector(const llvm::Function& f) {
  for (const llvm::BasicBlock& bb : f)
    for (const llvm::Instruction& i : bb) {
      if (isWide(i.getType())) return true;
      for (const llvm::Use& u : i.operands())
        if (isWide(u->getType())) return true;
    }
  return false;
}

}  // namespace

llvm::PreservedAnalyses SplitWideVectorsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  if (!hasWideVector(f)) return llvm::PreservedAnalyses::all();
  llvm::ScalarizerPassOptions options;
  options.ScalarizeMinBits = fragmentBits;
  options.ScalarizeLoadStore = true;
  options.ScalarizeVariableInsertExtract = true;
  llvm::ScalarizerPass(options).run(f, am);
  // what the split leaves behind, e.g. a pair rebuilt element by element from a pair, folded back
  llvm::InstCombinePass().run(f, am);
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
