// BFloatWordsPass: bfloat values move between buffers and float arithmetic as 32-bit words.
//
// A bfloat is the high half of a float, so widening one is a shift: the emitter turns `fpext bfloat %x to float`
// into a 16-bit value widened to 32 bits, shifted left by 16 and bitcast (three instructions per element), and a
// `<4 x bfloat>` load into a 4 x 16-bit load whose lanes are then extracted one by one. Read as 32-bit words, lane
// 2k of a word w is `w << 16` and lane 2k + 1 is `w & 0xffff0000`: one instruction per element, as half's
// conversion is. So:
//  1. a load of 2 or 4 bfloats from device or constant memory, aligned to 4 bytes or more, whose uses all take
//     single lanes or widen the whole vector to float, becomes a load of 1 or 2 words, each bitcast to two bfloats
//     (a widened vector is built from the words' shifts and masks directly);
//  2. bfloat arithmetic becomes float arithmetic on the widened operands, narrowed (as the emitter computes it), and
//     `fcmp` of bfloats `fcmp` of their widened floats (the same answer), so that what they read is widened by
//     step 3 and what they compute is a narrowing that steps 3 and 4 see;
//  3. `fpext` to float is moved through what computes a bfloat without rounding, down to where the bfloat came
//     from: a lane of a word, `fpext (extractelement (bitcast i32 %w to <2 x bfloat>), k)`, becomes
//     `bitcast (shl %w, 16)` for k = 0 and `bitcast (and %w, 0xffff0000)` for k = 1 (what WidenAccesses' 16-byte
//     accesses and step 1 produce); a narrowing of float becomes its rounded word (below) with the low half cleared,
//     the narrowing's other users taking the word's high half, so the value is rounded once and never converted to
//     16 bits and back; `select`, `fneg`, `fabs` and `copysign` of bfloats become the same on the widened floats.
//     What is left of bfloat `fneg`, `fabs` and `copysign` are bit operations (the emitter would widen and round).
//     MLX's `Sigmoid<bfloat>` rounds exp(|x|), 1 / (1 + e) and 1 - y: each is rounded once and then used as a float.
//     M2V_BFLOAT_EXACT_WIDENING=0 keeps step 3 to lanes of words (to measure the rest).
// Both give exactly the float the conversion gives (the same bits). Narrowing goes the other way:
//  4. a store of 2 or 4 bfloats to device memory, aligned to 4 bytes or more, whose lanes are narrowings of float
//     (bfloat arithmetic is one since step 2), or selects among those, constants and other bfloat values,
//     becomes a store of 1 or 2 words. Each lane is computed as a word holding it in its high half: a narrowing is
//     `m2v.bfloat.rounded_word` (the rounding without its final shift), a select chooses between words, a lane of a
//     loaded word is the word shifted or masked as in step 3. A stored word is its odd lane's high half or'ed with its
//     even lane's shifted down. The emitter would otherwise shift each rounded lane down, convert it to 16 bits, select
//     among 16-bit values and rebuild a 16-bit vector for the store. The stored bits are the same.
//     M2V_BFLOAT_STORE_WORDS=0 turns this step off (to measure it).
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/IR/ValueHandle.h>
#include <llvm/IR/ValueMap.h>
#include <llvm/Transforms/Utils/Local.h>

#include <optional>
#include <utility>
#include <vector>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

bool exactWidening() {
  static const bool on = ruleEnabled("M2V_BFLOAT_EXACT_WIDENING");
  return on;
}
bool storeWords() {
  static const bool on = ruleEnabled("M2V_BFLOAT_STORE_WORDS");
  return on;
}

// The float (or floats) whose bfloat is the high half (`high`) or the low half of 32-bit word(s) `w`: the word
// masked or shifted, the same bits `fpext` gives.
llvm::Value* floatOfHalf(llvm::IRBuilder<>& b, llvm::Value* w, bool high) {
  llvm::Value* bits = high ? b.CreateAnd(w, llvm::ConstantInt::get(w->getType(), 0xffff0000u)) : b.CreateShl(w, 16);
  return b.CreateBitCast(bits, w->getType()->getWithNewType(b.getFloatTy()));
}

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
  copyAccessMetadata(*w, *ld);
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
        r = b.CreateInsertElement(r, floatOfHalf(b, wordAt(k / 2), k % 2 == 1), uint64_t(k));
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

// (word, high) when bfloat `v` is lane 0 (the low half) or lane 1 (the high half) of a 32-bit word.
std::optional<std::pair<llvm::Value*, bool>> laneOfWord(llvm::Value* v) {
  auto* e = v->getType()->isBFloatTy() ? llvm::dyn_cast<llvm::ExtractElementInst>(v) : nullptr;
  auto* k = e ? llvm::dyn_cast<llvm::ConstantInt>(e->getIndexOperand()) : nullptr;
  auto* cast = e ? llvm::dyn_cast<llvm::BitCastInst>(e->getVectorOperand()) : nullptr;
  if (!k || k->getZExtValue() > 1 || !cast || !cast->getOperand(0)->getType()->isIntegerTy(32)) return std::nullopt;
  return std::make_pair(cast->getOperand(0), !k->isZero());
}

// W when bfloat `v` (scalar or vector) is `bitcast (trunc (lshr W, 16) to i16)`: the high half of 32-bit word W,
// the form narrowings take in step 3.
llvm::Value* wordOfHighHalf(llvm::Value* v) {
  using namespace llvm::PatternMatch;
  llvm::Value* w = nullptr;
  if (!v->getType()->getScalarType()->isBFloatTy() ||
      !match(v, m_BitCast(m_Trunc(m_LShr(m_Value(w), m_SpecificInt(16))))) ||
      !w->getType()->getScalarType()->isIntegerTy(32))
    return nullptr;
  return w;
}

llvm::Value* roundedWord(llvm::IRBuilder<>& b, llvm::Value* f);

// Narrowing `t` as a rounded word (built right after it), whose high half replaces `t` and is returned.
llvm::Value* narrowingAsWord(llvm::FPTruncInst* t) {
  llvm::IRBuilder<> b(t->getNextNode());
  llvm::Value* w = roundedWord(b, t->getOperand(0));
  llvm::Value* bits = b.CreateTrunc(b.CreateLShr(w, 16), w->getType()->getWithNewType(b.getInt16Ty()));
  llvm::Value* high = b.CreateBitCast(bits, t->getType());
  t->replaceAllUsesWith(high);
  t->eraseFromParent();
  return high;
}

// Step 3 over one function: `v` (bfloat, scalar or vector) widened to float without rounding anything again, built
// at `b`. A value widened before in the same block is reused (fpexts are visited in order, so it comes first there).
class ExactWidening {
 public:
  bool rewrite(llvm::FPExtInst* ext) {
    llvm::Value* v = ext->getOperand(0);
    if (!ext->getType()->getScalarType()->isFloatTy() || !v->getType()->getScalarType()->isBFloatTy()) return false;
    llvm::IRBuilder<> b(ext);
    if (!prior(b, v) && !movable(v)) {
      done_[v] = ext;  // nothing to move through: later widenings of `v` in this block reuse `ext`
      return false;
    }
    llvm::WeakTrackingVH operand(v);  // follows a narrowing replaced by its word
    ext->replaceAllUsesWith(widened(b, v));
    ext->eraseFromParent();
    if (operand) llvm::RecursivelyDeleteTriviallyDeadInstructions(operand);
    return true;
  }

 private:
  // What step 3 moves a widening through.
  static bool movable(llvm::Value* v) {
    if (laneOfWord(v)) return true;
    if (!exactWidening()) return false;
    if (llvm::isa<llvm::Constant>(v) || wordOfHighHalf(v) || llvm::isa<llvm::SelectInst>(v)) return true;
    if (auto* t = llvm::dyn_cast<llvm::FPTruncInst>(v)) return t->getSrcTy()->getScalarType()->isFloatTy();
    if (auto* n = llvm::dyn_cast<llvm::UnaryOperator>(v)) return n->getOpcode() == llvm::Instruction::FNeg;
    auto* c = llvm::dyn_cast<llvm::IntrinsicInst>(v);
    return c && (c->getIntrinsicID() == llvm::Intrinsic::fabs || c->getIntrinsicID() == llvm::Intrinsic::copysign);
  }

  // `v` widened before, usable at `b`: a constant, or built earlier in the same block.
  llvm::Value* prior(llvm::IRBuilder<>& b, llvm::Value* v) {
    auto it = done_.find(v);
    if (it == done_.end() || !it->second) return nullptr;
    auto* i = llvm::dyn_cast<llvm::Instruction>(&*it->second);
    return !i || i->getParent() == b.GetInsertBlock() ? &*it->second : nullptr;
  }

  llvm::Value* widened(llvm::IRBuilder<>& b, llvm::Value* v) {
    if (auto* t = llvm::dyn_cast<llvm::FPTruncInst>(v); t && t->getSrcTy()->getScalarType()->isFloatTy())
      v = narrowingAsWord(t);
    if (llvm::Value* r = prior(b, v)) return r;
    llvm::Value* r = build(b, v);
    done_[v] = r;
    return r;
  }

  llvm::Value* build(llvm::IRBuilder<>& b, llvm::Value* v) {
    if (auto lane = laneOfWord(v)) return floatOfHalf(b, lane->first, lane->second);
    if (llvm::Value* w = wordOfHighHalf(v)) return floatOfHalf(b, w, true);
    if (auto* s = llvm::dyn_cast<llvm::SelectInst>(v))
      return b.CreateSelect(s->getCondition(), widened(b, s->getTrueValue()), widened(b, s->getFalseValue()));
    if (auto* n = llvm::dyn_cast<llvm::UnaryOperator>(v); n && n->getOpcode() == llvm::Instruction::FNeg)
      return b.CreateFNeg(widened(b, n->getOperand(0)));
    if (auto* c = llvm::dyn_cast<llvm::IntrinsicInst>(v)) {
      if (c->getIntrinsicID() == llvm::Intrinsic::fabs)
        return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, widened(b, c->getArgOperand(0)));
      if (c->getIntrinsicID() == llvm::Intrinsic::copysign)
        return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, widened(b, c->getArgOperand(0)),
                                       widened(b, c->getArgOperand(1)));
    }
    return b.CreateFPExt(v, v->getType()->getWithNewType(b.getFloatTy()));  // a constant (folded) or anything else
  }

  llvm::ValueMap<llvm::Value*, llvm::WeakTrackingVH> done_;  // entries go with their deleted keys
};

// bfloat `fneg`, `fabs` and `copysign` as operations on the sign bit of the 16-bit value (exact, as on floats).
bool signAsBits(llvm::Instruction* i) {
  llvm::Type* t = i->getType();
  if (!t->getScalarType()->isBFloatTy()) return false;
  auto* c = llvm::dyn_cast<llvm::IntrinsicInst>(i);
  llvm::Intrinsic::ID id = c ? c->getIntrinsicID() : llvm::Intrinsic::not_intrinsic;
  bool neg = llvm::isa<llvm::UnaryOperator>(i) && i->getOpcode() == llvm::Instruction::FNeg;
  if (!neg && id != llvm::Intrinsic::fabs && id != llvm::Intrinsic::copysign) return false;
  llvm::IRBuilder<> b(i);
  llvm::Type* it = t->getWithNewType(b.getInt16Ty());
  auto bits = [&](llvm::Value* x) { return b.CreateBitCast(x, it); };
  llvm::Value* x = bits(i->getOperand(0));
  llvm::Value* r;
  if (neg) {
    r = b.CreateXor(x, llvm::ConstantInt::get(it, 0x8000));
  } else {
    r = b.CreateAnd(x, llvm::ConstantInt::get(it, 0x7fff));
    if (id == llvm::Intrinsic::copysign)
      r = b.CreateOr(r, b.CreateAnd(bits(c->getArgOperand(1)), llvm::ConstantInt::get(it, 0x8000)));
  }
  i->replaceAllUsesWith(b.CreateBitCast(r, t));
  i->eraseFromParent();
  return true;
}

// Step 2: bfloat arithmetic (a BinaryOperator) as float arithmetic narrowed, an `fcmp` of bfloats as an `fcmp` of
// their widened floats.
bool computedInFloat(llvm::Instruction* i) {
  llvm::Type* t = i->getOperand(0)->getType();
  if (!t->getScalarType()->isBFloatTy()) return false;
  llvm::IRBuilder<> b(i);
  llvm::Type* ft = t->getWithNewType(b.getFloatTy());
  llvm::Value* x = b.CreateFPExt(i->getOperand(0), ft);
  llvm::Value* y = b.CreateFPExt(i->getOperand(1), ft);
  auto* compare = llvm::dyn_cast<llvm::FCmpInst>(i);
  llvm::Value* r = compare ? b.CreateFCmp(compare->getPredicate(), x, y)
                           : b.CreateBinOp(llvm::cast<llvm::BinaryOperator>(i)->getOpcode(), x, y);
  if (auto* ri = llvm::dyn_cast<llvm::Instruction>(r)) ri->copyIRFlags(i);
  i->replaceAllUsesWith(compare ? r : b.CreateFPTrunc(r, t));
  i->eraseFromParent();
  return true;
}

llvm::Value* roundedWord(llvm::IRBuilder<>& b, llvm::Value* f) {
  llvm::Type* ft = f->getType();
  llvm::Type* wt = ft->getWithNewType(b.getInt32Ty());
  std::string name = pseudo::kBfloatRoundedWord;
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(ft)) {
    name += ".v";
    name += std::to_string(vt->getNumElements());
  } else {
    name += ".";
  }
  name += "f32";
  llvm::Module& m = *b.GetInsertBlock()->getModule();
  auto* fn =
      llvm::cast<llvm::Function>(m.getOrInsertFunction(name, llvm::FunctionType::get(wt, {ft}, false)).getCallee());
  fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  fn->addFnAttr(llvm::Attribute::WillReturn);
  return b.CreateCall(fn, {f});
}

// The float value (scalar or vector) that bfloat `v` is the narrowing of (step 2 made bfloat arithmetic one), or null.
llvm::Value* narrowedFloat(llvm::Instruction* v) {
  auto* t = llvm::dyn_cast<llvm::FPTruncInst>(v);
  return t && t->getSrcTy()->getScalarType()->isFloatTy() ? t->getOperand(0) : nullptr;
}

// Scalar bfloat `v` as a 32-bit word whose high half is `v`, built before `store`; `narrows` is set when a narrowing
// of float is folded in. Narrowings and selects are folded only where the store is their one use, in its block.
llvm::Value* highWord(llvm::IRBuilder<>& b, llvm::Value* v, const llvm::StoreInst* store, bool& narrows) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantFP>(v))
    return b.getInt32(static_cast<uint32_t>(c->getValueAPF().bitcastToAPInt().getZExtValue()) << 16);
  if (llvm::isa<llvm::UndefValue>(v)) return llvm::PoisonValue::get(b.getInt32Ty());
  auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
  bool foldable = inst && inst->hasOneUse() && inst->getParent() == store->getParent();
  if (llvm::Value* f = foldable ? narrowedFloat(inst) : nullptr) {
    narrows = true;
    return roundedWord(b, f);
  }
  if (auto* s = llvm::dyn_cast<llvm::SelectInst>(v); s && foldable) {
    llvm::Value* a = highWord(b, s->getTrueValue(), store, narrows);
    llvm::Value* c = highWord(b, s->getFalseValue(), store, narrows);
    return b.CreateSelect(s->getCondition(), a, c);
  }
  if (auto lane = laneOfWord(v)) return lane->second ? lane->first : b.CreateShl(lane->first, 16);
  if (llvm::Value* w = wordOfHighHalf(v)) {  // a narrowing step 3 made a word: its rounding is not repeated
    narrows = true;
    return w;
  }
  return b.CreateShl(b.CreateZExt(b.CreateBitCast(v, b.getInt16Ty()), b.getInt32Ty()), 16);
}

// The lanes of a vector built by a chain of insertelements with constant indices (on poison or a constant), or
// nothing.
std::vector<llvm::Value*> insertedLanes(llvm::Value* v, unsigned n) {
  std::vector<llvm::Value*> lanes(n, nullptr);
  while (auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(v)) {
    auto* k = llvm::dyn_cast<llvm::ConstantInt>(ins->getOperand(2));
    if (!k || k->getZExtValue() >= n) return {};
    if (!lanes[k->getZExtValue()]) lanes[k->getZExtValue()] = ins->getOperand(1);
    v = ins->getOperand(0);
  }
  auto* base = llvm::dyn_cast<llvm::Constant>(v);
  if (!base) return {};
  for (unsigned k = 0; k < n; ++k)
    if (!lanes[k]) lanes[k] = base->getAggregateElement(k);
  for (llvm::Value* l : lanes)
    if (!l) return {};
  return lanes;
}

bool wordsForStore(llvm::StoreInst* st) {
  llvm::Value* v = st->getValueOperand();
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
  if (!vt || !vt->getElementType()->isBFloatTy() || (vt->getNumElements() != 2 && vt->getNumElements() != 4) ||
      st->isVolatile() || st->getAlign().value() < 4 || st->getPointerAddressSpace() != kDeviceAS)
    return false;
  unsigned n = vt->getNumElements(), words = n / 2;
  llvm::IRBuilder<> b(st);
  auto pack = [&](llvm::Value* even, llvm::Value* odd) {
    llvm::Type* t = even->getType();
    return b.CreateOr(b.CreateAnd(odd, llvm::ConstantInt::get(t, 0xffff0000u)), b.CreateLShr(even, 16));
  };
  llvm::Value* packed = nullptr;
  auto* whole = llvm::dyn_cast<llvm::Instruction>(v);
  llvm::Value* f =
      whole && whole->hasOneUse() && whole->getParent() == st->getParent() ? narrowedFloat(whole) : nullptr;
  if (f) {  // a whole vector narrowed
    llvm::Value* w = roundedWord(b, f);
    if (words == 1) {
      packed = pack(b.CreateExtractElement(w, uint64_t(0)), b.CreateExtractElement(w, uint64_t(1)));
    } else {
      packed = pack(b.CreateShuffleVector(w, {0, 2}), b.CreateShuffleVector(w, {1, 3}));
    }
  } else {
    std::vector<llvm::Value*> lanes = insertedLanes(v, n);
    if (lanes.empty()) return false;
    bool narrows = false;
    std::vector<llvm::Value*> laneWords;
    for (llvm::Value* lane : lanes) laneWords.push_back(highWord(b, lane, st, narrows));
    if (!narrows) {  // nothing to save: leave the store as it was
      for (llvm::Value* w : llvm::reverse(laneWords)) llvm::RecursivelyDeleteTriviallyDeadInstructions(w);
      return false;
    }
    packed = llvm::PoisonValue::get(llvm::FixedVectorType::get(b.getInt32Ty(), words));
    for (unsigned k = 0; k < words; ++k) {
      llvm::Value* word = pack(laneWords[2 * k], laneWords[2 * k + 1]);
      packed = words == 1 ? word : b.CreateInsertElement(packed, word, uint64_t(k));
    }
  }
  replaceStoredValue(st, packed);
  return true;
}

}  // namespace

llvm::PreservedAnalyses BFloatWordsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  bool changed = false;
  std::vector<llvm::LoadInst*> loads;  // collected first: rewriting one erases the instructions after it
  for (llvm::Instruction& i : llvm::instructions(f))
    if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(&i)) loads.push_back(ld);
  for (llvm::LoadInst* ld : loads) changed |= wordsForLoad(ld);
  std::vector<llvm::Instruction*> arithmetic;
  for (llvm::Instruction& i : llvm::instructions(f))
    if (llvm::isa<llvm::BinaryOperator, llvm::FCmpInst>(&i)) arithmetic.push_back(&i);
  for (llvm::Instruction* i : arithmetic) changed |= computedInFloat(i);
  std::vector<llvm::WeakTrackingVH> exts;  // a rewrite deletes the operands it leaves dead
  for (llvm::Instruction& i : llvm::instructions(f))
    if (llvm::isa<llvm::FPExtInst>(&i)) exts.emplace_back(&i);
  ExactWidening widening;
  for (llvm::WeakTrackingVH& ext : exts)
    if (ext) changed |= widening.rewrite(llvm::cast<llvm::FPExtInst>(ext));
  if (exactWidening()) {
    std::vector<llvm::Instruction*> signs;
    for (llvm::Instruction& i : llvm::instructions(f)) signs.push_back(&i);
    for (llvm::Instruction* i : signs) changed |= signAsBits(i);
  }
  if (storeWords()) {
    std::vector<llvm::StoreInst*> stores;
    for (llvm::Instruction& i : llvm::instructions(f))
      if (auto* st = llvm::dyn_cast<llvm::StoreInst>(&i)) stores.push_back(st);
    for (llvm::StoreInst* st : stores) changed |= wordsForStore(st);
  }
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
