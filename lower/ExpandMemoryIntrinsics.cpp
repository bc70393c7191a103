// ExpandMemoryIntrinsicsPass: llvm.memcpy/memmove/memset become loads and stores. Small constant sizes are unrolled
// into the widest units the alignment allows (at most 4 bytes, so threadgroup and private memory can stay typed as
// 32-bit words); anything else becomes a loop. A copy out of device memory whose alignment the program does not
// promise (MLX's tile loaders copy 16-byte vectors of half declared 2-byte aligned) checks the address at run time
// and reads 16, 8 or 4 bytes at a time when it is aligned: one wide load instead of eight 16-bit ones. Alignments are
// what the program states or what the address's known low zero bits prove, whichever is larger.
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/KnownBits.h>
#include <llvm/Transforms/Utils/LowerMemIntrinsics.h>

#include "Intrinsics.h"
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

// The copy's bytes as 32-bit words, read `unit` bytes at a time (unit 1, 2, 4, 8 or 16; n a multiple of 4).
std::vector<llvm::Value*> loadWords(llvm::IRBuilder<>& b, llvm::Value* src, uint64_t n, unsigned unit, bool isVolatile) {
  std::vector<llvm::Value*> words;
  llvm::Type* i32 = b.getInt32Ty();
  if (unit >= 4) {
    unsigned per = unit / 4;
    llvm::Type* t = per == 1 ? i32 : static_cast<llvm::Type*>(llvm::FixedVectorType::get(i32, per));
    for (uint64_t off = 0; off < n; off += unit) {
      llvm::Value* v = b.CreateAlignedLoad(t, b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), src, off), llvm::Align(unit),
                                           isVolatile);
      for (unsigned k = 0; k < per; ++k) words.push_back(per == 1 ? v : b.CreateExtractElement(v, uint64_t(k)));
    }
    return words;
  }
  llvm::Type* t = b.getIntNTy(unit * 8);
  for (uint64_t off = 0; off < n; off += 4) {
    llvm::Value* word = nullptr;
    for (unsigned k = 0; k < 4; k += unit) {
      llvm::Value* part = b.CreateAlignedLoad(t, b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), src, off + k),
                                              llvm::Align(unit), isVolatile);
      part = b.CreateShl(b.CreateZExt(part, i32), 8 * k);
      word = word ? b.CreateOr(word, part) : part;
    }
    words.push_back(word);
  }
  return words;
}

// A copy of n bytes (a multiple of 4) from device memory that may or may not be `wide`-byte aligned: the words come
// from `wide`-byte loads when the address is aligned, from `narrow` ones otherwise.
std::vector<llvm::Value*> loadWordsVersioned(llvm::MemTransferInst* mt, uint64_t n, unsigned wide, unsigned narrow) {
  llvm::IRBuilder<> b(mt);
  llvm::Value* src = mt->getRawSource();
  llvm::Value* aligned =
      b.CreateICmpEQ(b.CreateAnd(b.CreatePtrToInt(src, b.getInt64Ty()), b.getInt64(wide - 1)), b.getInt64(0));
  llvm::BasicBlock* head = mt->getParent();
  llvm::BasicBlock* tail = head->splitBasicBlock(mt->getIterator(), "copy.join");
  llvm::Function* f = head->getParent();
  llvm::BasicBlock* fast = llvm::BasicBlock::Create(f->getContext(), "copy.aligned", f, tail);
  llvm::BasicBlock* slow = llvm::BasicBlock::Create(f->getContext(), "copy.unaligned", f, tail);
  head->getTerminator()->eraseFromParent();
  llvm::BranchInst::Create(fast, slow, aligned, head);
  llvm::IRBuilder<> fb(fast), sb(slow);
  std::vector<llvm::Value*> fastWords = loadWords(fb, src, n, wide, mt->isVolatile());
  std::vector<llvm::Value*> slowWords = loadWords(sb, src, n, narrow, mt->isVolatile());
  fb.CreateBr(tail);
  sb.CreateBr(tail);
  llvm::IRBuilder<> tb(&*tail->begin());
  std::vector<llvm::Value*> words;
  for (size_t i = 0; i < fastWords.size(); ++i) {
    llvm::PHINode* phi = tb.CreatePHI(b.getInt32Ty(), 2);
    phi->addIncoming(fastWords[i], fast);
    phi->addIncoming(slowWords[i], slow);
    words.push_back(phi);
  }
  return words;
}

// Widest unit (at most 16 bytes) that divides n and that device-memory loads can use after an alignment check.
unsigned versionedUnit(llvm::MemTransferInst* mt, uint64_t n, unsigned staticUnit) {
  if (!llvm::isa<llvm::MemCpyInst>(mt) || mt->isVolatile() || n % 4 || n / 4 > kMaxUnrolledUnits) return 0;
  if (mt->getRawSource()->getType()->getPointerAddressSpace() != kDeviceAS) return 0;
  unsigned wide = 16;
  while (wide > 4 && n % wide) wide /= 2;
  return wide > staticUnit ? wide : 0;
}

// The alignment of `p` the program states, or what its known low zero bits prove (up to 16).
llvm::Align knownAlign(llvm::Value* p, llvm::MaybeAlign stated, const llvm::DataLayout& dl) {
  unsigned zeros = std::min(llvm::computeKnownBits(p, dl).countMinTrailingZeros(), 4u);
  return std::max(stated.valueOrOne(), llvm::Align(uint64_t(1) << zeros));
}

bool unrollCopy(llvm::MemTransferInst* mt) {
  auto* len = llvm::dyn_cast<llvm::ConstantInt>(mt->getLength());
  if (!len) return false;
  const llvm::DataLayout& dl = mt->getModule()->getDataLayout();
  mt->setDestAlignment(knownAlign(mt->getRawDest(), mt->getDestAlign(), dl));
  mt->setSourceAlignment(knownAlign(mt->getRawSource(), mt->getSourceAlign(), dl));
  uint64_t n = len->getZExtValue();
  unsigned unit = unitBytes(n, mt->getDestAlign().valueOrOne(), mt->getSourceAlign().valueOrOne());
  if (n / unit > kMaxUnrolledUnits) return false;
  unsigned srcUnit = unitBytes(n, mt->getSourceAlign().valueOrOne(), llvm::Align(16));
  if (unsigned wide = versionedUnit(mt, n, srcUnit)) {
    std::vector<llvm::Value*> words = loadWordsVersioned(mt, n, wide, srcUnit);
    // stores in the destination's own units (threadgroup memory stays typed by them)
    unsigned dstUnit = unitBytes(n, mt->getDestAlign().valueOrOne(), llvm::Align(4));
    llvm::IRBuilder<> b(mt);
    llvm::Type* t = b.getIntNTy(dstUnit * 8);
    for (uint64_t off = 0; off < n; off += dstUnit) {
      llvm::Value* word = words[off / 4];
      llvm::Value* v = dstUnit == 4 ? word : b.CreateTrunc(b.CreateLShr(word, 8 * (off % 4)), t);
      b.CreateAlignedStore(v, b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), mt->getRawDest(), off),
                           llvm::Align(dstUnit), mt->isVolatile());
    }
    return true;
  }
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
