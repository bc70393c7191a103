// BFloatWordsPass: bfloat values loaded from buffers and widened to float are taken from 32-bit words.
//
// A bfloat is the high half of a float, so widening one is a shift: the emitter turns `fpext bfloat %x to float`
// into a 16-bit value widened to 32 bits, shifted left by 16 and bitcast (three instructions per element), and a
// `<4 x bfloat>` load into a 4 x 16-bit load whose lanes are then extracted one by one. Read as 32-bit words, lane
// 2k of a word w is `w << 16` and lane 2k + 1 is `w & 0xffff0000`: one instruction per element, as half's
// conversion is. So:
//  1. a load of 2 or 4 bfloats from device or constant memory, aligned to 4 bytes or more, whose uses all take
//     single lanes or widen the whole vector to float, becomes a load of 1 or 2 words, each bitcast to two bfloats
//     (a widened vector is built from the words' shifts and masks directly);
//  2. `fpext (extractelement (bitcast i32 %w to <2 x bfloat>), k)` becomes `bitcast (shl %w, 16)` for k = 0 and
//     `bitcast (and %w, 0xffff0000)` for k = 1 (what WidenAccesses' 16-byte accesses and step 1 produce).
// Both give exactly the float the conversion gives (the same bits).
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>

#include <vector>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

bool wordsForLoad(llvm::LoadInst* ld) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(ld->getType());
  if (!vt || !vt->getElementType()->isBFloatTy() || (vt->getNumElements() != 2 && vt->getNumElements() != 4) ||
      ld->isVolatile() || ld->getAlign().value() < 4)
    return false;
  unsigned as = ld->getPointerAddressSpace();
  if (as != kDeviceAS && as != kConstantAS) return false;
  for (llvm::User* u : ld->users()) {
    if (auto* ext = llvm::dyn_cast<llvm::FPExtInst>(u); ext && ext->getType()->getScalarType()->isFloatTy()) continue;
    auto* e = llvm::dyn_cast<llvm::ExtractElementInst>(u);
    if (!e || !llvm::isa<llvm::ConstantInt>(e->getIndexOperand())) return false;
  }
  llvm::IRBuilder<> b(ld);
  unsigned words = vt->getNumElements() / 2;
  llvm::Type* wordsType = b.getInt32Ty();
  if (words > 1) wordsType = llvm::FixedVectorType::get(wordsType, words);
  llvm::LoadInst* w = b.CreateAlignedLoad(wordsType, ld->getPointerOperand(), ld->getAlign());
  w->copyMetadata(*ld, {llvm::LLVMContext::MD_tbaa, llvm::LLVMContext::MD_alias_scope, llvm::LLVMContext::MD_noalias,
                        llvm::LLVMContext::MD_invariant_load, llvm::LLVMContext::MD_nontemporal});
  auto* pair = llvm::FixedVectorType::get(vt->getElementType(), 2);
  std::vector<llvm::Value*> pairs(words, nullptr), wordValues(words, nullptr);
  auto wordAt = [&](unsigned k) {
    if (!wordValues[k]) wordValues[k] = words == 1 ? w : b.CreateExtractElement(w, uint64_t(k));
    return wordValues[k];
  };
  for (llvm::User* u : llvm::make_early_inc_range(ld->users())) {
    if (auto* ext = llvm::dyn_cast<llvm::FPExtInst>(u)) {  // the whole vector widened: lane by lane from the words
      llvm::Value* r = llvm::PoisonValue::get(ext->getType());
      for (unsigned k = 0; k < vt->getNumElements(); ++k) {
        llvm::Value* word = wordAt(k / 2);
        llvm::Value* bits = k % 2 == 0 ? b.CreateShl(word, 16) : b.CreateAnd(word, b.getInt32(0xffff0000u));
        r = b.CreateInsertElement(r, b.CreateBitCast(bits, b.getFloatTy()), uint64_t(k));
      }
      ext->replaceAllUsesWith(r);
      ext->eraseFromParent();
      continue;
    }
    auto* e = llvm::cast<llvm::ExtractElementInst>(u);
    uint64_t k = llvm::cast<llvm::ConstantInt>(e->getIndexOperand())->getZExtValue();
    llvm::Value* r = llvm::PoisonValue::get(vt->getElementType());
    if (k < vt->getNumElements()) {
      if (!pairs[k / 2]) pairs[k / 2] = b.CreateBitCast(wordAt(unsigned(k / 2)), pair);
      r = b.CreateExtractElement(pairs[k / 2], k % 2);
    }
    e->replaceAllUsesWith(r);
    e->eraseFromParent();
  }
  ld->eraseFromParent();
  return true;
}

bool floatFromWord(llvm::FPExtInst* ext) {
  if (!ext->getType()->isFloatTy() || !ext->getOperand(0)->getType()->isBFloatTy()) return false;
  auto* e = llvm::dyn_cast<llvm::ExtractElementInst>(ext->getOperand(0));
  auto* k = e ? llvm::dyn_cast<llvm::ConstantInt>(e->getIndexOperand()) : nullptr;
  auto* cast = e ? llvm::dyn_cast<llvm::BitCastInst>(e->getVectorOperand()) : nullptr;
  if (!k || k->getZExtValue() > 1 || !cast || !cast->getOperand(0)->getType()->isIntegerTy(32)) return false;
  llvm::IRBuilder<> b(ext);
  llvm::Value* word = cast->getOperand(0);
  llvm::Value* bits = k->isZero() ? b.CreateShl(word, 16) : b.CreateAnd(word, b.getInt32(0xffff0000u));
  ext->replaceAllUsesWith(b.CreateBitCast(bits, ext->getType()));
  ext->eraseFromParent();
  if (e->use_empty()) e->eraseFromParent();
  if (cast->use_empty()) cast->eraseFromParent();
  return true;
}

}  // namespace

llvm::PreservedAnalyses BFloatWordsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  bool changed = false;
  std::vector<llvm::LoadInst*> loads;  // collected first: rewriting one erases the instructions after it
  for (llvm::Instruction& i : llvm::instructions(f))
    if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(&i)) loads.push_back(ld);
  for (llvm::LoadInst* ld : loads) changed |= wordsForLoad(ld);
  std::vector<llvm::FPExtInst*> exts;
  for (llvm::Instruction& i : llvm::instructions(f))
    if (auto* ext = llvm::dyn_cast<llvm::FPExtInst>(&i)) exts.push_back(ext);
  for (llvm::FPExtInst* ext : exts) changed |= floatFromWord(ext);
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
