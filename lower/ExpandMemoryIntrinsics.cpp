// ExpandMemoryIntrinsicsPass: llvm.memcpy/memmove/memset become loads and stores. Small constant sizes are unrolled
// into the widest units the alignment allows (at most 4 bytes, so threadgroup and private memory can stay typed as
// 32-bit words); anything else becomes a loop.
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/Transforms/Utils/LowerMemIntrinsics.h>

#include "Passes.h"

namespace m2v::lower {

namespace {

constexpr uint64_t kMaxUnrolledUnits = 64;

unsigned unitBytes(uint64_t len, llvm::Align a, llvm::Align b) {
  uint64_t align = std::min<uint64_t>(std::min(a.value(), b.value()), 4);
  unsigned unit = static_cast<unsigned>(align);
  while (unit > 1 && len % unit) unit /= 2;
  return unit;
}

bool unrollCopy(llvm::MemTransferInst* mt) {
  auto* len = llvm::dyn_cast<llvm::ConstantInt>(mt->getLength());
  if (!len) return false;
  uint64_t n = len->getZExtValue();
  unsigned unit = unitBytes(n, mt->getDestAlign().valueOrOne(), mt->getSourceAlign().valueOrOne());
  if (n / unit > kMaxUnrolledUnits) return false;
  llvm::IRBuilder<> b(mt);
  llvm::Type* t = b.getIntNTy(unit * 8);
  // Load everything first: correct for overlapping memmove too.
  std::vector<llvm::Value*> values;
  for (uint64_t off = 0; off < n; off += unit)
    values.push_back(b.CreateAlignedLoad(t, b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), mt->getRawSource(), off),
                                         llvm::Align(unit), mt->isVolatile()));
  for (uint64_t off = 0, i = 0; off < n; off += unit, ++i)
    b.CreateAlignedStore(values[i], b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), mt->getRawDest(), off),
                         llvm::Align(unit), mt->isVolatile());
  return true;
}

bool unrollSet(llvm::MemSetInst* ms) {
  auto* len = llvm::dyn_cast<llvm::ConstantInt>(ms->getLength());
  auto* val = llvm::dyn_cast<llvm::ConstantInt>(ms->getValue());
  if (!len || !val) return false;
  uint64_t n = len->getZExtValue();
  unsigned unit = unitBytes(n, ms->getDestAlign().valueOrOne(), ms->getDestAlign().valueOrOne());
  if (n / unit > kMaxUnrolledUnits) return false;
  llvm::IRBuilder<> b(ms);
  uint64_t byte = val->getZExtValue() & 0xff, pattern = 0;
  for (unsigned i = 0; i < unit; ++i) pattern |= byte << (8 * i);
  llvm::Value* v = b.getIntN(unit * 8, pattern);
  for (uint64_t off = 0; off < n; off += unit)
    b.CreateAlignedStore(v, b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), ms->getRawDest(), off), llvm::Align(unit),
                         ms->isVolatile());
  return true;
}

}  // namespace

llvm::PreservedAnalyses ExpandMemoryIntrinsicsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  std::vector<llvm::MemIntrinsic*> work;
  for (llvm::Instruction& i : llvm::instructions(f))
    if (auto* mi = llvm::dyn_cast<llvm::MemIntrinsic>(&i)) work.push_back(mi);
  if (work.empty()) return llvm::PreservedAnalyses::all();
  const llvm::TargetTransformInfo& tti = am.getResult<llvm::TargetIRAnalysis>(f);
  for (llvm::MemIntrinsic* mi : work) {
    if (auto* ms = llvm::dyn_cast<llvm::MemSetInst>(mi)) {
      if (!unrollSet(ms)) llvm::expandMemSetAsLoop(ms);
    } else if (auto* mc = llvm::dyn_cast<llvm::MemCpyInst>(mi)) {
      if (!unrollCopy(mc)) llvm::expandMemCpyAsLoop(mc, tti);
    } else if (auto* mm = llvm::dyn_cast<llvm::MemMoveInst>(mi)) {
      if (!unrollCopy(mm) && !llvm::expandMemMoveAsLoop(mm, tti)) continue;
    } else {
      continue;
    }
    mi->eraseFromParent();
  }
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
