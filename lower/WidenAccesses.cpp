// WidenAccessesPass: a thread's adjacent narrow loads and stores of device or constant memory become vector accesses
// (up to 16 bytes: 4 elements, or 8 of 16 bits and 16 of 8 bits as 32-bit words) where their alignment allows, on a
// fast path that the kernel takes only when facts it checks once per thread hold: the buffer addresses (and the integer
// arguments its addresses are computed from) are multiples of 16, and a written buffer lies at least 64 bytes from the
// other buffers whose accesses are reordered around its stores.
//
// Why a checked fast path: a Metal buffer argument is aligned only to its element type (setBuffer:offset: takes any
// offset that is a multiple of the type's size; MLX binds views at element offsets), so `a[4 * gid]` of a half
// buffer is provably 2-byte aligned and nothing more. A SPIR-V access that claims more alignment than the address
// has is undefined behaviour. Likewise buffers may overlap (an output bound over an input), so `c[i] = a[i] + b[i]`
// for four i in turn keeps its load/store order unless the buffers are known apart.
//
// The rule:
//  1. Alignment facts: the kernel's buffer addresses (`inttoptr` of a push constant or of an argument-buffer entry)
//     and the integers it reads from constant-space arguments (below). Distance facts: pairs (written device buffer,
//     other device buffer) whose addresses differ by at least kAliasGap bytes.
//  2. A copy of the kernel assumes every fact. LLVM's alignment inference (known bits and ScalarEvolution over the
//     assumptions, plus pointer recurrences below) raises the accesses' alignment, and LLVM's load/store vectorizer,
//     told what SPIR-V can express (WideAccessTTI) and which accesses the distance facts separate (DistantRootsAA),
//     combines adjacent accesses that are aligned to their combined size. It never moves an access over one that
//     may alias it.
//  3. When the copy has fewer device/constant accesses than the kernel, a second copy assumes only the facts the
//     widened accesses' addresses are computed from (and the distance facts between their buffers), and is widened
//     the same way; the kernel becomes `if (facts hold) fast copy; else the kernel as it was`. Otherwise nothing
//     changes. The condition depends only on arguments, so it is uniform over the dispatch: barriers and simdgroup
//     functions stay in uniform control flow.
//  4. Later facts: where an address is computed from values the entry cannot compute again (a batch offset a
//     function constant chooses, one path summing strides read at run-time indices; a params field read after an
//     early return), the threadgroup-uniform values it is computed from (laterFacts) are candidates too. When a trial
//     with them widens more than one with the entry facts alone, the kernel is versioned after the last definition
//     of the facts that the most widened elements need (versionAfter): only the region that point dominates (not in
//     a loop) is copied, the check is uniform over the threadgroup, and what precedes it runs once.
// Alignment is followed through chains of offsets deeper than LLVM's known-bits limit, and around loops whose
// pointer steps are known multiples (alignChains, alignRecurrences). Integer loads of one constant-space address
// are one value (reuseConstantLoads: constant memory does not change while the kernel runs).
// Every alignment the fast copy states and every reordering it makes follows from checked facts, so both paths
// compute exactly what the kernel computed.
#include <llvm/ADT/SetVector.h>
#include <llvm/Analysis/AliasAnalysis.h>
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/Analysis/TargetTransformInfoImpl.h>
#include <llvm/Analysis/UniformityAnalysis.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/Scalar/AlignmentFromAssumptions.h>
#include <llvm/Transforms/Scalar/InferAlignment.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/Local.h>
#include <llvm/Transforms/Vectorize/LoadStoreVectorizer.h>

#include <functional>
#include <optional>
#include <set>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

constexpr unsigned kFactAlign = 16;
constexpr unsigned kMaxLanes = 4;  // SPIR-V vectors (without the Vector16 capability) have 2 to 4 elements

bool isBufferSpace(unsigned as) { return as == kDeviceAS || as == kConstantAS; }

// Element types the emitter loads and stores as SPIR-V vector components from a physical pointer.
bool widenableElement(llvm::Type* t) {
  return t->isHalfTy() || t->isBFloatTy() || t->isFloatTy() || t->isIntegerTy(8) || t->isIntegerTy(16) ||
         t->isIntegerTy(32);
}
bool widenableType(llvm::Type* t) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t))
    return vt->getNumElements() <= kMaxLanes && widenableElement(vt->getElementType());
  return widenableElement(t);
}

// Lanes of one access the vectorizer may build for elements of `t`: 4 (SPIR-V's vectors), or with `wide` as many as
// fill 16 bytes (8 of 16 bits, 16 of 8 bits), which legalizeWideAccesses then expresses as 32-bit words.
unsigned laneLimit(llvm::Type* t, bool wide) {
  unsigned bytes = std::max(1u, unsigned(t->getScalarSizeInBits() / 8));
  return wide ? std::max(kMaxLanes, kFactAlign / bytes) : kMaxLanes;
}

// What the load/store vectorizer may build for SPIR-V: accesses of device or constant memory, up to 16 bytes and 4
// elements (8 or 16 with `wide`). Nothing else in the pipeline sees this description.
class WideAccessTTI : public llvm::TargetTransformInfoImplBase {
 public:
  WideAccessTTI(const llvm::DataLayout& dl, bool wide) : TargetTransformInfoImplBase(dl), wide_(wide) {}
  unsigned getLoadStoreVecRegBitWidth(unsigned) const override { return 8 * kFactAlign; }
  bool isLegalToVectorizeLoad(llvm::LoadInst* li) const override {
    return !li->isVolatile() && isBufferSpace(li->getPointerAddressSpace()) && widenableType(li->getType());
  }
  bool isLegalToVectorizeStore(llvm::StoreInst* si) const override {
    return !si->isVolatile() && isBufferSpace(si->getPointerAddressSpace()) &&
           widenableType(si->getValueOperand()->getType());
  }
  bool isLegalToVectorizeLoadChain(unsigned bytes, llvm::Align, unsigned as) const override {
    return isBufferSpace(as) && bytes <= kFactAlign;
  }
  bool isLegalToVectorizeStoreChain(unsigned bytes, llvm::Align, unsigned as) const override {
    return isBufferSpace(as) && bytes <= kFactAlign;
  }
  unsigned getLoadVectorFactor(unsigned vf, unsigned, unsigned, llvm::VectorType* vt) const override {
    return std::min(vf, laneLimit(vt->getElementType(), wide_));
  }
  unsigned getStoreVectorFactor(unsigned vf, unsigned, unsigned, llvm::VectorType* vt) const override {
    return std::min(vf, laneLimit(vt->getElementType(), wide_));
  }
  // Uniformity over a threadgroup (LLVM's UniformityAnalysis): what differs between its threads are the per-thread
  // and per-simdgroup builtins, memory a thread may have written (anything but constant memory) and the results of
  // calls; a value computed from none of those (push constants, function constants, the threadgroup's position,
  // constant-memory reads at such addresses) is the same in every thread that computes it.
  bool hasBranchDivergence(const llvm::Function*) const override { return true; }
  llvm::InstructionUniformity getInstructionUniformity(const llvm::Value* v) const override {
    if (auto* c = llvm::dyn_cast<llvm::CallBase>(v)) {
      const llvm::Function* f = c->getCalledFunction();
      if (!f) return llvm::InstructionUniformity::NeverUniform;
      llvm::StringRef n = f->getName();
      static const char* uniformBuiltins[] = {"workgroup_id", "num_workgroups", "subgroup_size"};
      for (const char* b : uniformBuiltins)
        if (n == std::string(pseudo::kBuiltinPrefix) + b) return llvm::InstructionUniformity::Default;
      if (n == pseudo::kPushI64 || n == pseudo::kPushGrid || n == pseudo::kWorkgroupSize ||
          n == pseudo::kNominalThreadgroupSize || n == pseudo::kThreadgroupShape || n.starts_with(pseudo::kSpecPrefix))
        return llvm::InstructionUniformity::Default;
      if (f->isIntrinsic() && f->doesNotAccessMemory() && !f->isConvergent())
        return llvm::InstructionUniformity::Default;
      return llvm::InstructionUniformity::NeverUniform;
    }
    if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(v))
      return ld->isSimple() && ld->getPointerAddressSpace() == kConstantAS ? llvm::InstructionUniformity::Default
                                                                           : llvm::InstructionUniformity::NeverUniform;
    if (llvm::isa<llvm::AtomicRMWInst, llvm::AtomicCmpXchgInst, llvm::AllocaInst, llvm::Argument>(v))
      return llvm::InstructionUniformity::NeverUniform;
    return llvm::InstructionUniformity::Default;
  }

 private:
  bool wide_;
};

// ---- accesses of more than 4 lanes (8 x 16-bit, 8 or 16 x 8-bit) as 32-bit words ----
// SPIR-V has no vectors of more than 4 components (without Vector16), so the vectorizer's `load <8 x half>` becomes
// `load <4 x i32>` with each word bitcast to <2 x half>, its lanes extracted from those; a `store <8 x half>` stores
// the words built from its lanes. What uses a wide load must be lane extracts or shuffles into at most 4 lanes, and
// a wide stored value must be built of inserts, shuffles and constants (what the vectorizer makes); otherwise the
// access stays and the copy is not expressible (the caller retries with 4 lanes).
llvm::Value* wordPart(llvm::IRBuilder<>& b, std::vector<llvm::Value*>& parts, llvm::Value* words, unsigned w,
                      llvm::Type* et, unsigned per) {
  if (!parts[w])
    parts[w] = b.CreateBitCast(b.CreateExtractElement(words, uint64_t(w)), llvm::FixedVectorType::get(et, per));
  return parts[w];
}

bool legalizeWideLoad(llvm::LoadInst* ld) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(ld->getType());
  llvm::Type* et = vt->getElementType();
  unsigned n = vt->getNumElements(), bytes = n * et->getScalarSizeInBits() / 8;
  if (et->getScalarSizeInBits() > 16 || bytes % 4 || bytes / 4 > kMaxLanes) return false;
  for (llvm::User* u : ld->users()) {
    if (auto* e = llvm::dyn_cast<llvm::ExtractElementInst>(u); e && llvm::isa<llvm::ConstantInt>(e->getIndexOperand()))
      continue;
    auto* sh = llvm::dyn_cast<llvm::ShuffleVectorInst>(u);
    if (sh && sh->getOperand(0) == ld && (sh->getOperand(1) == ld || llvm::isa<llvm::UndefValue>(sh->getOperand(1))) &&
        llvm::cast<llvm::FixedVectorType>(sh->getType())->getNumElements() <= kMaxLanes)
      continue;
    return false;
  }
  unsigned words = bytes / 4, per = n / words;
  llvm::IRBuilder<> b(ld);
  llvm::LoadInst* wide =
      b.CreateAlignedLoad(llvm::FixedVectorType::get(b.getInt32Ty(), words), ld->getPointerOperand(), ld->getAlign());
  copyAccessMetadata(*wide, *ld);
  std::vector<llvm::Value*> parts(words, nullptr);
  auto lane = [&](uint64_t k) -> llvm::Value* {
    if (k >= n) return llvm::PoisonValue::get(et);
    return b.CreateExtractElement(wordPart(b, parts, wide, unsigned(k / per), et, per), k % per);
  };
  for (llvm::User* u : llvm::make_early_inc_range(ld->users())) {
    auto* i = llvm::cast<llvm::Instruction>(u);
    llvm::Value* r;
    if (auto* e = llvm::dyn_cast<llvm::ExtractElementInst>(i)) {
      r = lane(llvm::cast<llvm::ConstantInt>(e->getIndexOperand())->getZExtValue());
    } else {
      auto* sh = llvm::cast<llvm::ShuffleVectorInst>(i);
      r = llvm::PoisonValue::get(sh->getType());
      for (unsigned j = 0; j < sh->getShuffleMask().size(); ++j)
        if (int m = sh->getMaskValue(j); m >= 0) r = b.CreateInsertElement(r, lane(unsigned(m) % n), uint64_t(j));
    }
    i->replaceAllUsesWith(r);
    i->eraseFromParent();
  }
  ld->eraseFromParent();
  return true;
}

// The lanes of a wide vector value (null: poison), from the inserts, shuffles and constants that build it.
bool lanesOf(llvm::Value* v, std::vector<llvm::Value*>& lanes, llvm::IRBuilder<>& b, int depth) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(v->getType());
  unsigned n = vt->getNumElements();
  lanes.assign(n, nullptr);
  if (depth > 64) return false;
  if (llvm::isa<llvm::UndefValue>(v)) return true;
  if (auto* c = llvm::dyn_cast<llvm::Constant>(v)) {
    for (unsigned k = 0; k < n; ++k) lanes[k] = c->getAggregateElement(k);
    return llvm::all_of(lanes, [](llvm::Value* x) { return x != nullptr; });
  }
  if (auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(v)) {
    auto* k = llvm::dyn_cast<llvm::ConstantInt>(ins->getOperand(2));
    if (!k || !lanesOf(ins->getOperand(0), lanes, b, depth + 1)) return false;
    if (k->getZExtValue() < n) lanes[k->getZExtValue()] = ins->getOperand(1);
    return true;
  }
  if (auto* sh = llvm::dyn_cast<llvm::ShuffleVectorInst>(v)) {
    std::vector<llvm::Value*> src[2];
    unsigned na = llvm::cast<llvm::FixedVectorType>(sh->getOperand(0)->getType())->getNumElements();
    for (unsigned j = 0; j < n; ++j) {
      int m = sh->getMaskValue(j);
      if (m < 0) continue;
      unsigned which = unsigned(m) < na ? 0 : 1, idx = unsigned(m) - which * na;
      llvm::Value* op = sh->getOperand(which);
      if (llvm::cast<llvm::FixedVectorType>(op->getType())->getNumElements() <= kMaxLanes) {
        lanes[j] = b.CreateExtractElement(op, uint64_t(idx));
        continue;
      }
      if (src[which].empty() && !lanesOf(op, src[which], b, depth + 1)) return false;
      lanes[j] = src[which][idx];
    }
    return true;
  }
  return false;
}

bool legalizeWideStore(llvm::StoreInst* st) {
  llvm::Value* v = st->getValueOperand();
  auto* vt = llvm::cast<llvm::FixedVectorType>(v->getType());
  llvm::Type* et = vt->getElementType();
  unsigned n = vt->getNumElements(), bytes = n * et->getScalarSizeInBits() / 8;
  if (et->getScalarSizeInBits() > 16 || bytes % 4 || bytes / 4 > kMaxLanes) return false;
  llvm::IRBuilder<> b(st);
  std::vector<llvm::Value*> lanes;
  if (!lanesOf(v, lanes, b, 0)) return false;
  unsigned words = bytes / 4, per = n / words;
  auto* partType = llvm::FixedVectorType::get(et, per);
  llvm::Value* wide = llvm::PoisonValue::get(llvm::FixedVectorType::get(b.getInt32Ty(), words));
  for (unsigned w = 0; w < words; ++w) {
    llvm::Value* part = llvm::PoisonValue::get(partType);
    for (unsigned j = 0; j < per; ++j) {
      llvm::Value* l = lanes[w * per + j];
      part = b.CreateInsertElement(part, l ? l : llvm::Constant::getNullValue(et), uint64_t(j));
    }
    wide = b.CreateInsertElement(wide, b.CreateBitCast(part, b.getInt32Ty()), uint64_t(w));
  }
  replaceStoredValue(st, wide);
  return true;
}

// Expresses every buffer access of more than 4 lanes as 32-bit words; false when one could not be.
bool legalizeWideAccesses(llvm::Function& f) {
  std::vector<llvm::Instruction*> wide;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb)
      if (llvm::Value* p = llvm::getLoadStorePointerOperand(&i);
          p && isBufferSpace(p->getType()->getPointerAddressSpace()))
        if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(llvm::getLoadStoreType(&i));
            vt && vt->getNumElements() > kMaxLanes)
          wide.push_back(&i);
  bool ok = true;
  for (llvm::Instruction* i : wide)
    ok &= llvm::isa<llvm::LoadInst>(i) ? legalizeWideLoad(llvm::cast<llvm::LoadInst>(i))
                                       : legalizeWideStore(llvm::cast<llvm::StoreInst>(i));
  return ok;
}

unsigned countBufferAccesses(llvm::Function& f) {
  unsigned n = 0;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb)
      if (llvm::Value* p = llvm::getLoadStorePointerOperand(&i);
          p && isBufferSpace(p->getType()->getPointerAddressSpace()))
        ++n;
  return n;
}

// The slot of an i64 address read from the push constants or from the argument buffer at a fixed offset (computable
// again in the first block: it reads nothing that can change, and the argument buffer is always bound); nullopt for
// anything else.
std::optional<uint64_t> addressSlot(llvm::Value* v) {
  if (llvm::CallInst* c = callToPseudo(v, pseudo::kPushI64)) {
    if (auto* k = llvm::dyn_cast<llvm::ConstantInt>(c->getArgOperand(0))) return k->getZExtValue();
    return std::nullopt;
  }
  auto* load = llvm::dyn_cast<llvm::LoadInst>(v);
  if (!load || !load->getType()->isIntegerTy(64) || load->isVolatile()) return std::nullopt;
  llvm::Value* p = load->getPointerOperand();
  uint64_t offset = 0;
  if (auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(p)) {
    llvm::APInt o(64, 0);
    if (!gep->accumulateConstantOffset(load->getDataLayout(), o)) return std::nullopt;
    offset = o.getZExtValue();
    p = gep->getPointerOperand();
  }
  auto* table = llvm::dyn_cast<llvm::IntToPtrInst>(p);
  if (!table || !callToPseudo(table->getOperand(0), pseudo::kPushI64)) return std::nullopt;
  return offset;
}

// A buffer address: `inttoptr` of an address read, to device or constant memory.
bool isBufferBase(llvm::Value* v) {
  auto* itp = llvm::dyn_cast<llvm::IntToPtrInst>(v);
  return itp && isBufferSpace(itp->getType()->getPointerAddressSpace()) && addressSlot(itp->getOperand(0));
}

// An integer argument: an i32 or i64 load at a fixed offset of a constant buffer address, either in the first block
// or, anywhere, at offset 0 of a constant-space argument the host must bind (`constant int& ld`,
// `constant int64_t* strides`; no function constant guard): reading it before the kernel starts cannot fault, as
// the runtime places such bytes in non-empty 16-byte-aligned slices (Stream::setBytes).
bool isIntegerArgument(llvm::Value* v, const std::set<uint64_t>& boundConstants) {
  auto* load = llvm::dyn_cast<llvm::LoadInst>(v);
  if (!load || load->isVolatile()) return false;
  if (!load->getType()->isIntegerTy(32) && !load->getType()->isIntegerTy(64)) return false;
  llvm::Value* p = load->getPointerOperand();
  if (p->getType()->getPointerAddressSpace() != kConstantAS) return false;
  if (load->getParent() == &load->getFunction()->getEntryBlock()) {
    if (auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(p)) {
      if (!gep->hasAllConstantIndices()) return false;
      p = gep->getPointerOperand();
    }
    return isBufferBase(p);
  }
  if (!isBufferBase(p)) return false;
  std::optional<uint64_t> slot = addressSlot(llvm::cast<llvm::IntToPtrInst>(p)->getOperand(0));
  return slot && boundConstants.count(*slot);
}

std::vector<llvm::Value*> collectFacts(llvm::Function& f, const std::set<uint64_t>& boundConstants) {
  std::vector<llvm::Value*> facts;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb)
      if (isBufferBase(&i) || isIntegerArgument(&i, boundConstants)) facts.push_back(&i);
  return facts;
}

// Later facts: values that are the same in every thread of a threadgroup (`uniform`) and that the addresses of
// buffer accesses are computed from, found by searching each address's operands down to the first uniform value
// (`base + batch * stride`, `lda`: what a kernel computes from its arguments, its threadgroup's position and
// constant memory). Through a uniform value plus, times or shifted by a constant and through integer casts the search
// continues to its operand (the constant's low bits are known); a value computed in a loop is not a fact (the check
// would have to be repeated), its operands are searched instead.
void laterFacts(llvm::Value* v, const llvm::UniformityInfo& ui, const llvm::LoopInfo& li,
                const llvm::DenseSet<llvm::Value*>& entryFacts, llvm::SmallPtrSetImpl<llvm::Value*>& seen,
                llvm::SetVector<llvm::Value*>& out) {
  using namespace llvm::PatternMatch;
  auto* i = llvm::dyn_cast<llvm::Instruction>(v);
  if (!i || entryFacts.count(v) || !seen.insert(v).second) return;
  llvm::Type* t = i->getType();
  bool factType =
      t->isIntegerTy(32) || t->isIntegerTy(64) || (t->isPointerTy() && isBufferSpace(t->getPointerAddressSpace()));
  if (factType && ui.isUniform(i) && !li.getLoopFor(i->getParent())) {
    llvm::Value* x = nullptr;
    if (auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(i); gep && gep->hasAllConstantIndices())
      x = gep->getPointerOperand();
    else if (!match(i, m_Add(m_Value(x), m_ConstantInt())) && !match(i, m_Sub(m_Value(x), m_ConstantInt())) &&
             !match(i, m_Mul(m_Value(x), m_ConstantInt())) && !match(i, m_Shl(m_Value(x), m_ConstantInt())) &&
             !match(i, m_DisjointOr(m_Value(x), m_ConstantInt())) && !match(i, m_ZExtOrSExt(m_Value(x))) &&
             !match(i, m_Trunc(m_Value(x))))
      x = nullptr;
    if (x) return laterFacts(x, ui, li, entryFacts, seen, out);
    if (llvm::isa<llvm::CallBase>(i) && !llvm::isa<llvm::IntrinsicInst>(i)) return;
    const llvm::DataLayout& dl = i->getDataLayout();
    bool known = t->isPointerTy() ? llvm::getKnownAlignment(i, dl).value() >= kFactAlign
                                  : llvm::computeKnownBits(i, dl).countMinTrailingZeros() >= 4;
    if (!known) out.insert(i);  // (a multiple of 16 already needs no check)
    return;
  }
  if (llvm::isa<llvm::CallBase, llvm::LoadInst>(i)) return;
  for (llvm::Value* op : i->operands()) laterFacts(op, ui, li, entryFacts, seen, out);
}

std::vector<llvm::Value*> collectLaterFacts(llvm::Function& f, const std::vector<llvm::Value*>& entry,
                                            const llvm::UniformityInfo& ui, const llvm::LoopInfo& li) {
  llvm::DenseSet<llvm::Value*> entryFacts(entry.begin(), entry.end());
  llvm::SmallPtrSet<llvm::Value*, 32> seen;
  llvm::SetVector<llvm::Value*> out;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb)
      if (llvm::Value* p = llvm::getLoadStorePointerOperand(&i);
          p && isBufferSpace(p->getType()->getPointerAddressSpace()) && widenableType(llvm::getLoadStoreType(&i)))
        laterFacts(p, ui, li, entryFacts, seen, out);
  return {out.begin(), out.end()};
}

// Constant memory does not change while a kernel runs: an integer load from the same constant-space pointer as one
// that dominates it reads the same value (MLX reloads `params->ldd` in its epilogue; as one value, the fact checked
// before the main loop covers the epilogue's stores too). True when a load was replaced.
bool reuseConstantLoads(llvm::Function& f) {
  llvm::DominatorTree dt(f);
  llvm::DenseMap<std::pair<llvm::Value*, llvm::Type*>, llvm::SmallVector<llvm::LoadInst*, 2>> byAddress;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb)
      if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(&i);
          ld && ld->isSimple() && ld->getPointerAddressSpace() == kConstantAS &&
          (ld->getType()->isIntegerTy(32) || ld->getType()->isIntegerTy(64)))
        byAddress[{ld->getPointerOperand(), ld->getType()}].push_back(ld);
  llvm::SetVector<llvm::LoadInst*> replaced;
  for (auto& [key, loads] : byAddress)
    for (llvm::LoadInst* ld : loads)
      for (llvm::LoadInst* other : loads)
        if (other != ld && !replaced.count(other) && dt.dominates(other, ld)) {
          ld->replaceAllUsesWith(other);
          replaced.insert(ld);
          break;
        }
  for (llvm::LoadInst* ld : replaced) ld->eraseFromParent();
  return !replaced.empty();
}

// An assumption, inserted before `at`, that `v` (a pointer or an integer) is a multiple of kFactAlign.
llvm::CallInst* assumeMultiple(llvm::Value* v, llvm::Instruction* at) {
  llvm::IRBuilder<> b(at);
  if (v->getType()->isPointerTy()) {
    llvm::Value* args[] = {v, b.getInt64(kFactAlign)};
    return b.CreateAssumption(b.getTrue(), {llvm::OperandBundleDef("align", args)});
  }
  llvm::Value* low = b.CreateAnd(v, llvm::ConstantInt::get(v->getType(), kFactAlign - 1));
  return b.CreateAssumption(b.CreateICmpEQ(low, llvm::ConstantInt::get(v->getType(), 0)));
}

// Assumes, in `copy`, that each of `facts` (values of the original function, mapped through `vmap`) is a multiple
// of kFactAlign. Returns the assumption calls.
std::vector<llvm::CallInst*> assumeFacts(const std::vector<llvm::Value*>& facts, llvm::ValueToValueMapTy& vmap) {
  std::vector<llvm::CallInst*> assumes;
  for (llvm::Value* fact : facts) {
    auto* v = llvm::cast<llvm::Instruction>(vmap[fact]);
    assumes.push_back(
        assumeMultiple(v, llvm::isa<llvm::PHINode>(v) ? &*v->getParent()->getFirstInsertionPt() : v->getNextNode()));
  }
  return assumes;
}

// The facts an address is computed from (searched through its operands).
void factsUnder(llvm::Value* v, const llvm::DenseMap<llvm::Value*, llvm::Value*>& factOfCopy,
                llvm::SmallPtrSetImpl<llvm::Value*>& seen, llvm::SetVector<llvm::Value*>& out) {
  if (!seen.insert(v).second) return;
  if (auto it = factOfCopy.find(v); it != factOfCopy.end()) {
    out.insert(it->second);
    return;
  }
  auto* i = llvm::dyn_cast<llvm::Instruction>(v);
  if (!i || llvm::isa<llvm::CallInst>(i)) return;
  for (llvm::Value* op : i->operands()) factsUnder(op, factOfCopy, seen, out);
}

// Distance facts: pairs of buffer addresses (in the copy being widened) that the fast path has checked to be at
// least kAliasGap bytes apart. Two accesses whose addresses are those bases plus offsets that differ by a constant of
// at most kAliasWindow bytes (ScalarEvolution: `a + 2*i + 2` and `c + 2*i`) then cannot overlap (accesses are at
// most 16 bytes), which is what lets the vectorizer move `a[i + 1]`'s load above `c[i]`'s store.
constexpr int64_t kAliasGap = 64;
constexpr int64_t kAliasWindow = 32;
using RootPair = std::pair<const llvm::Value*, const llvm::Value*>;

class DistantRootsAAResult : public llvm::AAResultBase {
 public:
  DistantRootsAAResult(const llvm::DenseSet<RootPair>* pairs, const llvm::DenseSet<const llvm::BasicBlock*>* region,
                       llvm::ScalarEvolution* se)
      : pairs_(pairs), region_(region), se_(se) {}
  bool invalidate(llvm::Function&, const llvm::PreservedAnalyses&, llvm::FunctionAnalysisManager::Invalidator&) {
    return false;
  }
  llvm::AliasResult alias(const llvm::MemoryLocation& a, const llvm::MemoryLocation& b, llvm::AAQueryInfo& q,
                          const llvm::Instruction* at) {
    if (!pairs_ || pairs_->empty() || !small(a) || !small(b)) return AAResultBase::alias(a, b, q, at);
    // In a kernel versioned at a later point, the distance facts hold only in the checked region.
    if (region_ && !region_->empty() && (!at || !region_->count(at->getParent())))
      return AAResultBase::alias(a, b, q, at);
    const llvm::Value* ra = llvm::getUnderlyingObject(a.Ptr);
    const llvm::Value* rb = llvm::getUnderlyingObject(b.Ptr);
    if (!pairs_->count({ra, rb})) return AAResultBase::alias(a, b, q, at);
    const llvm::SCEV* oa =
        se_->getMinusSCEV(se_->getSCEV(const_cast<llvm::Value*>(a.Ptr)), se_->getSCEV(const_cast<llvm::Value*>(ra)));
    const llvm::SCEV* ob =
        se_->getMinusSCEV(se_->getSCEV(const_cast<llvm::Value*>(b.Ptr)), se_->getSCEV(const_cast<llvm::Value*>(rb)));
    if (llvm::isa<llvm::SCEVCouldNotCompute>(oa) || llvm::isa<llvm::SCEVCouldNotCompute>(ob) ||
        oa->getType() != ob->getType())
      return AAResultBase::alias(a, b, q, at);
    auto* d = llvm::dyn_cast<llvm::SCEVConstant>(se_->getMinusSCEV(oa, ob));
    if (d && d->getAPInt().abs().sle(kAliasWindow)) return llvm::AliasResult::NoAlias;
    return AAResultBase::alias(a, b, q, at);
  }

 private:
  static bool small(const llvm::MemoryLocation& l) {
    return l.Size.hasValue() && !l.Size.isScalable() && l.Size.getValue().getFixedValue() <= kFactAlign;
  }
  const llvm::DenseSet<RootPair>* pairs_;
  const llvm::DenseSet<const llvm::BasicBlock*>* region_;
  llvm::ScalarEvolution* se_;
};

struct DistantRootsAA : llvm::AnalysisInfoMixin<DistantRootsAA> {
  using Result = DistantRootsAAResult;
  DistantRootsAA(const llvm::DenseSet<RootPair>* p, const llvm::DenseSet<const llvm::BasicBlock*>* r)
      : pairs(p), region(r) {}
  Result run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
    return Result(pairs, region, &am.getResult<llvm::ScalarEvolutionAnalysis>(f));
  }
  const llvm::DenseSet<RootPair>* pairs;
  const llvm::DenseSet<const llvm::BasicBlock*>* region;
  static llvm::AnalysisKey Key;
};
llvm::AnalysisKey DistantRootsAA::Key;

// Pairs (written device buffer, other device buffer) among `facts`: the distance facts a copy may assume.
std::vector<std::pair<llvm::Value*, llvm::Value*>> candidatePairs(llvm::Function& f,
                                                                  const std::vector<llvm::Value*>& facts) {
  llvm::SmallPtrSet<const llvm::Value*, 8> written;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb)
      if (auto* st = llvm::dyn_cast<llvm::StoreInst>(&i))
        written.insert(llvm::getUnderlyingObject(st->getPointerOperand()));
  std::vector<llvm::Value*> device;
  for (llvm::Value* v : facts)
    if (v->getType()->isPointerTy() && v->getType()->getPointerAddressSpace() == kDeviceAS) device.push_back(v);
  std::vector<std::pair<llvm::Value*, llvm::Value*>> pairs;
  for (size_t i = 0; i < device.size(); ++i)
    for (size_t j = i + 1; j < device.size(); ++j)
      if (written.count(device[i]) || written.count(device[j])) pairs.emplace_back(device[i], device[j]);
  return pairs;
}

class Widener {
 public:
  Widener() {
    fam_.registerPass([this] {
      return llvm::TargetIRAnalysis([this](const llvm::Function& f) {
        return llvm::TargetTransformInfo(std::make_unique<WideAccessTTI>(f.getDataLayout(), wide));
      });
    });
    llvm::PassBuilder pb;
    fam_.registerPass([this] { return DistantRootsAA(&pairs, &region); });
    fam_.registerPass([&pb] {
      llvm::AAManager aa = pb.buildDefaultAAPipeline();
      aa.registerFunctionAnalysis<DistantRootsAA>();
      return aa;
    });
    pb.registerModuleAnalyses(mam_);
    pb.registerCGSCCAnalyses(cgam_);
    pb.registerFunctionAnalyses(fam_);
    pb.registerLoopAnalyses(lam_);
    pb.crossRegisterProxies(lam_, fam_, cgam_, mam_);
  }

  // Realigns and widens `f`'s accesses under its assumptions; `assumes` receives the assumptions added on the way.
  void widen(llvm::Function& f, std::vector<llvm::CallInst*>& assumes) {
    llvm::FunctionPassManager realign;
    realign.addPass(llvm::AlignmentFromAssumptionsPass());
    realign.addPass(llvm::InferAlignmentPass());
    realign.run(f, fam_);
    if (alignRecurrences(f, assumes)) {
      fam_.invalidate(f, llvm::PreservedAnalyses::none());
      llvm::FunctionPassManager again;
      again.addPass(llvm::InferAlignmentPass());
      again.run(f, fam_);
    }
    if (alignChains(f)) fam_.invalidate(f, llvm::PreservedAnalyses::none());
    llvm::FunctionPassManager vectorize;
    vectorize.addPass(llvm::LoadStoreVectorizerPass());
    vectorize.run(f, fam_);
    fam_.clear(f, f.getName());
    if (wide) legalizeWideAccesses(f);
  }

  bool wide = true;            // 16-byte accesses of 8- and 16-bit elements (more than 4 lanes, legalized as words)
  bool inexpressible = false;  // the last copy held an access the emitter cannot express

 private:
  // Trailing zero bits of an integer known at `at`: through sums, products, shifts, casts and phis of any depth
  // (known bits look only a few operands deep, and one past a phi), LLVM's known bits at the leaves (assumptions
  // included). At most 12.
  static unsigned trailingZeros(llvm::Value* v, llvm::Instruction* at, llvm::AssumptionCache& ac,
                                llvm::DominatorTree& dt, llvm::DenseMap<llvm::Value*, unsigned>& memo) {
    using namespace llvm::PatternMatch;
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    memo[v] = 0;  // around a cycle: nothing known beyond what known bits show
    auto tz = [&](llvm::Value* x) { return trailingZeros(x, at, ac, dt, memo); };
    unsigned own = 0;
    unsigned depth = llvm::MaxAnalysisRecursionDepth - 1;  // operands are followed here; assumptions still apply
    llvm::Value *a, *b;
    const llvm::APInt* c;
    if (auto* k = llvm::dyn_cast<llvm::ConstantInt>(v))
      own = k->isZero() ? 12 : k->getValue().countr_zero();
    else if (match(v, m_ZExtOrSExt(m_Value(a))) || match(v, m_Trunc(m_Value(a))))
      own = tz(a);
    else if (match(v, m_Add(m_Value(a), m_Value(b))) || match(v, m_Sub(m_Value(a), m_Value(b))) ||
             match(v, m_DisjointOr(m_Value(a), m_Value(b))))
      own = std::min(tz(a), tz(b));
    else if (match(v, m_Mul(m_Value(a), m_Value(b))))
      own = tz(a) + tz(b);
    else if (match(v, m_Shl(m_Value(a), m_APInt(c))))
      own = tz(a) + unsigned(c->getLimitedValue(12));
    else if (match(v, m_And(m_Value(a), m_Value(b))))
      own = std::max(tz(a), tz(b));
    else if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(v))
      own = std::min(tz(sel->getTrueValue()), tz(sel->getFalseValue()));
    else if (auto* phi = llvm::dyn_cast<llvm::PHINode>(v)) {
      own = 12;
      for (llvm::Value* in : phi->incoming_values()) own = std::min(own, tz(in));
      depth = 0;  // known bits follow recurrences (`i = phi [0, i + 32]`)
    } else {
      depth = 0;
    }
    if (own < 12 && llvm::isa<llvm::Instruction>(v))
      own = std::max(own,
                     llvm::computeKnownBits(v, at->getDataLayout(), &ac, at, &dt, true, depth).countMinTrailingZeros());
    return memo[v] = std::min(own, 12u);
  }

  // What a GEP's offset is known to be a multiple of (up to 4096) where `at` executes.
  static uint64_t offsetAlign(llvm::GetElementPtrInst* gep, llvm::Instruction* at, llvm::AssumptionCache& ac,
                              llvm::DominatorTree& dt) {
    const llvm::DataLayout& dl = gep->getDataLayout();
    unsigned bits = dl.getIndexTypeSizeInBits(gep->getType());
    llvm::SmallMapVector<llvm::Value*, llvm::APInt, 4> vars;
    llvm::APInt constant(bits, 0);
    if (!gep->collectOffset(dl, bits, vars, constant)) return 1;
    unsigned tz = std::min(constant.countr_zero(), 12u);
    llvm::DenseMap<llvm::Value*, unsigned> memo;
    for (auto& [var, scale] : vars)
      tz = std::min(tz, std::min(trailingZeros(var, at, ac, dt, memo) + scale.countr_zero(), 12u));
    return uint64_t(1) << tz;
  }

  // Known bits stop a few operands deep (LLVM's analysis depth limit), which an address reached through a chain of
  // offsets (`((base + i) + lane offset) + row stride) + 32`) exceeds. The alignment of a buffer pointer computed
  // once per value: of a GEP, the smaller of its base's and its offsets' (known bits of each index, times its
  // scale); of anything else, LLVM's known alignment. An access whose pointer is aligned more than it states gets
  // that alignment. True when one changed.
  bool alignChains(llvm::Function& f) {
    const llvm::DataLayout& dl = f.getDataLayout();
    auto& ac = fam_.getResult<llvm::AssumptionAnalysis>(f);
    auto& dt = fam_.getResult<llvm::DominatorTreeAnalysis>(f);
    // Per value and block of the access it is computed for: assumptions hold where they dominate the access (a
    // versioned region's facts are assumed at its start, after the values' definitions).
    llvm::DenseMap<std::pair<llvm::Value*, llvm::BasicBlock*>, uint64_t> memo;
    std::function<uint64_t(llvm::Value*, llvm::Instruction*)> alignOf = [&](llvm::Value* v,
                                                                            llvm::Instruction* at) -> uint64_t {
      std::pair<llvm::Value*, llvm::BasicBlock*> key{v, at->getParent()};
      if (auto it = memo.find(key); it != memo.end()) return it->second;
      memo[key] = 1;  // a cycle through GEPs (not in SSA form without a phi) stays unknown
      uint64_t a = llvm::getKnownAlignment(v, dl, at, &ac, &dt).value();
      if (auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(v))
        a = std::max(a, std::min(alignOf(gep->getPointerOperand(), at), offsetAlign(gep, at, ac, dt)));
      return memo[key] = a;
    };
    bool changed = false;
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& i : bb) {
        llvm::Value* p = llvm::getLoadStorePointerOperand(&i);
        if (!p || !isBufferSpace(p->getType()->getPointerAddressSpace())) continue;
        uint64_t a = std::min<uint64_t>(alignOf(p, &i), 1u << 12);
        if (a <= llvm::getLoadStoreAlignment(&i).value()) continue;
        if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(&i))
          ld->setAlignment(llvm::Align(a));
        else
          llvm::cast<llvm::StoreInst>(&i)->setAlignment(llvm::Align(a));
        changed = true;
      }
    return changed;
  }

  // Known bits do not follow a pointer around a loop (`p = phi [start, p + 256]`): a pointer phi whose other incoming
  // values are aligned to A and whose own steps are constant multiples of A is aligned to A (by induction over the
  // iterations). Assumes that for each such phi, so that the accesses through it are realigned too.
  bool alignRecurrences(llvm::Function& f, std::vector<llvm::CallInst*>& assumes) {
    const llvm::DataLayout& dl = f.getDataLayout();
    bool changed = false;
    llvm::SmallPtrSet<llvm::PHINode*, 16> done;
    for (int round = 0; round < 3; ++round) {
      bool progress = false;
      auto& ac = fam_.getResult<llvm::AssumptionAnalysis>(f);
      auto& dt = fam_.getResult<llvm::DominatorTreeAnalysis>(f);
      for (llvm::BasicBlock& bb : f)
        for (llvm::PHINode& phi : bb.phis()) {
          if (!phi.getType()->isPointerTy() || !isBufferSpace(phi.getType()->getPointerAddressSpace()) ||
              done.count(&phi))
            continue;
          uint64_t align = kFactAlign;
          for (unsigned k = 0; k < phi.getNumIncomingValues() && align > 1; ++k) {
            llvm::Value* v = phi.getIncomingValue(k);
            llvm::APInt offset(dl.getIndexTypeSizeInBits(v->getType()), 0);
            if (v->stripAndAccumulateConstantOffsets(dl, offset, /*AllowNonInbounds=*/true) == &phi) {
              if (!offset.isZero()) align = std::min<uint64_t>(align, uint64_t(1) << offset.countr_zero());
              continue;
            }
            // A step of GEPs from the phi, each offset a multiple of what its indices' known bits show.
            uint64_t step = kFactAlign;
            llvm::Value* base = v;
            while (auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(base)) {
              step = std::min(step, offsetAlign(gep, gep, ac, dt));
              base = gep->getPointerOperand();
            }
            if (base == &phi) {
              align = std::min(align, step);
              continue;
            }
            llvm::Instruction* at = phi.getIncomingBlock(k)->getTerminator();
            align = std::min<uint64_t>(align, llvm::getKnownAlignment(v, dl, at, &ac, &dt).value());
          }
          if (align <= 1) continue;
          llvm::IRBuilder<> b(&*bb.getFirstInsertionPt());
          llvm::Value* args[] = {&phi, b.getInt64(align)};
          llvm::CallInst* a = b.CreateAssumption(b.getTrue(), {llvm::OperandBundleDef("align", args)});
          ac.registerAssumption(llvm::cast<llvm::AssumeInst>(a));
          assumes.push_back(a);
          done.insert(&phi);
          progress = changed = true;
        }
      if (!progress) break;
    }
    return changed;
  }

 public:
 private:
  llvm::LoopAnalysisManager lam_;
  llvm::FunctionAnalysisManager fam_;

 public:
  llvm::DenseSet<RootPair> pairs;                  // distance facts of the copy being widened, both orders
  llvm::DenseSet<const llvm::BasicBlock*> region;  // where they hold, when not the whole copy

  // The threadgroup-uniform values of `f` (its analyses are dropped again).
  template <class Use>
  void withUniformity(llvm::Function& f, Use use) {
    use(fam_.getResult<llvm::UniformityInfoAnalysis>(f), fam_.getResult<llvm::LoopAnalysis>(f),
        fam_.getResult<llvm::DominatorTreeAnalysis>(f));
    fam_.clear(f, f.getName());
  }

 private:
  llvm::CGSCCAnalysisManager cgam_;
  llvm::ModuleAnalysisManager mam_;
};

// Where the fast path starts and the facts it checks there.
struct Plan {
  llvm::Instruction* after = nullptr;  // the checked region starts after this value's definition (null: the entry)
  llvm::SetVector<llvm::Value*> facts;
  size_t elements = 0;  // the elements of the vector accesses it serves (in the trial copy)
};

// The plan that serves most of a trial copy's realigned vector accesses, counted in elements (`wide`: each with the
// facts its address comes from): at the entry for those that need only entry facts, or after the last definition of the
// later facts one of them needs, for the accesses that definition precedes and whose later facts are all defined by
// then. `late` holds the later facts (values of `f`), `vmap` maps `f` to the copy.
Plan choosePlan(llvm::Function& copy, llvm::ValueToValueMapTy& vmap, const llvm::DenseSet<llvm::Value*>& late,
                const std::vector<std::pair<llvm::Instruction*, llvm::SetVector<llvm::Value*>>>& wide) {
  llvm::DominatorTree dt(copy);
  auto before = [&](llvm::Instruction* a, llvm::Instruction* b) {  // `a` is computed when `b` executes
    if (a->getParent() == b->getParent()) return a == b || a->comesBefore(b);
    return dt.dominates(a->getParent(), b->getParent());
  };
  auto start = [](llvm::Instruction* d) {  // the first instruction after definition `d`
    return llvm::isa<llvm::PHINode>(d) ? &*d->getParent()->getFirstInsertionPt() : d->getNextNode();
  };
  // Candidate starts: the last later fact of each access (facts of `f` and their copies).
  std::vector<llvm::Value*> candidates = {nullptr};
  for (auto& [access, facts] : wide) {
    llvm::Value* last = nullptr;
    bool chain = true;
    for (llvm::Value* fact : facts) {
      if (!late.count(fact)) continue;
      auto* d = llvm::cast<llvm::Instruction>(vmap[fact]);
      if (!last || before(llvm::cast<llvm::Instruction>(vmap[last]), d))
        last = fact;
      else if (!before(d, llvm::cast<llvm::Instruction>(vmap[last])))
        chain = false;
    }
    if (chain && last && !llvm::is_contained(candidates, last)) candidates.push_back(last);
  }
  Plan best;
  size_t bestCount = 0;
  for (llvm::Value* c : candidates) {
    llvm::Instruction* at = c ? start(llvm::cast<llvm::Instruction>(vmap[c])) : nullptr;
    llvm::SetVector<llvm::Value*> facts;
    size_t count = 0;
    for (auto& [access, own] : wide) {
      bool covered = !at || before(at, access);
      for (llvm::Value* fact : own)
        if (late.count(fact) &&
            (!c || !before(llvm::cast<llvm::Instruction>(vmap[fact]), llvm::cast<llvm::Instruction>(vmap[c]))))
          covered = false;
      if (!covered) continue;
      count += llvm::cast<llvm::FixedVectorType>(llvm::getLoadStoreType(access))->getNumElements();
      facts.insert(own.begin(), own.end());
    }
    if (count > bestCount) {
      bestCount = count;
      best.after = c ? llvm::cast<llvm::Instruction>(c) : nullptr;
      best.facts = std::move(facts);
      best.elements = count;
    }
  }
  return best;
}

// A copy of `f` assuming `facts`, widened; null when it has no fewer buffer accesses than `f` or holds an access
// the emitter cannot express. `plan` receives where to check which facts for the realigned accesses (`late`: the
// facts that are not entry facts).
llvm::Function* widenedCopy(llvm::Function& f, const std::vector<llvm::Value*>& facts,
                            const std::vector<std::pair<llvm::Value*, llvm::Value*>>& distant, Widener& widener,
                            Plan* plan, const llvm::DenseSet<llvm::Value*>& late = {}) {
  llvm::ValueToValueMapTy vmap;
  llvm::Function* copy = llvm::CloneFunction(&f, vmap);
  copy->setLinkage(llvm::GlobalValue::InternalLinkage);
  std::vector<llvm::CallInst*> assumes = assumeFacts(facts, vmap);
  widener.pairs.clear();
  for (auto [p, q] : distant) {
    widener.pairs.insert({vmap[p], vmap[q]});
    widener.pairs.insert({vmap[q], vmap[p]});
  }
  widener.widen(*copy, assumes);
  widener.pairs.clear();

  bool expressible = true;
  llvm::DenseMap<llvm::Value*, llvm::Value*> factOfCopy;
  for (llvm::Value* fact : facts) factOfCopy[vmap[fact]] = fact;
  std::vector<std::pair<llvm::Instruction*, llvm::SetVector<llvm::Value*>>> wide;
  for (llvm::BasicBlock& bb : *copy)
    for (llvm::Instruction& i : bb) {
      llvm::Value* p = llvm::getLoadStorePointerOperand(&i);
      if (!p || !isBufferSpace(p->getType()->getPointerAddressSpace())) continue;
      llvm::Type* t = llvm::getLoadStoreType(&i);
      if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t); vt && vt->getNumElements() > kMaxLanes)
        expressible = false;
      // A vector access may rely on facts (the trial copy assumed all of them); scalar accesses realigned in the
      // trial do not matter: the fast copy assumes only the facts found here, so whatever it realigns follows from
      // checked facts. Collecting more facts than needed only makes the fast path rarer.
      if (plan && t->isVectorTy() && llvm::getLoadStoreAlignment(&i).value() > 1) {
        llvm::SmallPtrSet<llvm::Value*, 32> seen;
        wide.emplace_back(&i, llvm::SetVector<llvm::Value*>());
        factsUnder(p, factOfCopy, seen, wide.back().second);
      }
    }
  if (plan && expressible) *plan = choosePlan(*copy, vmap, late, wide);
  for (llvm::CallInst* a : assumes) {
    llvm::Value* cond = a->getArgOperand(0);
    a->eraseFromParent();
    llvm::RecursivelyDeleteTriviallyDeadInstructions(cond);
  }
  widener.inexpressible = !expressible;
  if (!expressible || countBufferAccesses(*copy) >= countBufferAccesses(f)) {
    copy->eraseFromParent();
    return nullptr;
  }
  return copy;
}

// Computes `v` (a fact: an address read and casts, or an integer argument load) again before `at`.
llvm::Value* rematerialize(llvm::Value* v, llvm::Instruction* at, llvm::DenseMap<llvm::Value*, llvm::Value*>& done) {
  auto* i = llvm::dyn_cast<llvm::Instruction>(v);
  if (!i) return v;
  if (auto it = done.find(v); it != done.end()) return it->second;
  llvm::Instruction* c = i->clone();
  for (unsigned k = 0; k < c->getNumOperands(); ++k)
    if (!llvm::isa<llvm::Function>(c->getOperand(k))) c->setOperand(k, rematerialize(c->getOperand(k), at, done));
  c->insertBefore(at->getIterator());
  return done[v] = c;
}

// `f`'s blocks become `g`'s (a function without arguments, `f`'s body transformed); `g` is erased.
void replaceBody(llvm::Function& f, llvm::Function* g) {
  for (llvm::BasicBlock& bb : f) bb.dropAllReferences();
  while (!f.empty()) f.begin()->eraseFromParent();
  f.splice(f.end(), g);
  g->eraseFromParent();
}

// The check of `facts` (values available before `at`, or entry facts computed again there) and of the distance
// facts `pairs`: true when every fact is a multiple of kFactAlign and each pair lies kAliasGap bytes apart.
llvm::Value* checkFacts(const std::vector<llvm::Value*>& facts,
                        const std::vector<std::pair<llvm::Value*, llvm::Value*>>& pairs, llvm::Instruction* at,
                        const std::function<llvm::Value*(llvm::Value*)>& valueAt) {
  llvm::IRBuilder<> b(at);
  llvm::Value* bits = nullptr;
  for (llvm::Value* fact : facts) {
    llvm::Value* v = valueAt(fact);
    b.SetInsertPoint(at);
    v = v->getType()->isPointerTy() ? b.CreatePtrToInt(v, b.getInt64Ty()) : b.CreateZExt(v, b.getInt64Ty());
    bits = bits ? b.CreateOr(bits, v) : v;
  }
  llvm::Value* ok = bits ? b.CreateICmpEQ(b.CreateAnd(bits, b.getInt64(kFactAlign - 1)), b.getInt64(0), "widen.aligned")
                         : b.getTrue();
  // |p - q| >= kAliasGap: (p - q + gap - 1) as unsigned > 2 * gap - 2.
  for (auto [p, q] : pairs) {
    llvm::Value* pv = valueAt(p);
    llvm::Value* qv = valueAt(q);
    b.SetInsertPoint(at);
    llvm::Value* pi = b.CreatePtrToInt(pv, b.getInt64Ty());
    llvm::Value* qi = b.CreatePtrToInt(qv, b.getInt64Ty());
    llvm::Value* shifted = b.CreateAdd(b.CreateSub(pi, qi), b.getInt64(kAliasGap - 1));
    ok = b.CreateAnd(ok, b.CreateICmpUGT(shifted, b.getInt64(2 * kAliasGap - 2)), "widen.apart");
  }
  return ok;
}

// Versioning after a definition (`plan.after`) instead of at the entry: the blocks that definition's successor
// instruction dominates (the region; not in a loop) are copied, and `if (facts hold) region copy; else region`
// runs there; the copy assumes the facts and is widened. The facts are threadgroup-uniform (the entry facts and
// laterFacts' values), so barriers and simdgroup functions in the region stay in uniform control flow. Values the
// region defines reach the rest of the kernel only through phis of the blocks it branches to, which get the copy's
// values for the copy's edges. True when `f` was rewritten (the copy has fewer buffer accesses than the region).
bool versionAfter(llvm::Function& f, const Plan& plan, const std::vector<std::pair<llvm::Value*, llvm::Value*>>& pairs,
                  Widener& widener) {
  llvm::ValueToValueMapTy vm;
  llvm::Function* g = llvm::CloneFunction(&f, vm);
  g->setLinkage(llvm::GlobalValue::InternalLinkage);
  auto fail = [&] {
    g->eraseFromParent();
    return false;
  };
  auto* after = llvm::cast<llvm::Instruction>(vm[plan.after]);
  llvm::BasicBlock* head = after->getParent();
  llvm::Instruction* first = llvm::isa<llvm::PHINode>(after) ? &*head->getFirstInsertionPt() : after->getNextNode();
  llvm::BasicBlock* slow = head->splitBasicBlock(first, "widen.region");
  llvm::DominatorTree dt(*g);
  llvm::LoopInfo li(dt);
  if (li.getLoopFor(slow)) return fail();
  std::vector<llvm::BasicBlock*> region;
  llvm::DenseSet<llvm::BasicBlock*> inRegion;
  for (llvm::BasicBlock& bb : *g)
    if (dt.dominates(slow, &bb)) {
      region.push_back(&bb);
      inRegion.insert(&bb);
    }
  unsigned slowAccesses = 0;
  for (llvm::BasicBlock* bb : region) {
    for (llvm::Instruction& i : *bb) {
      if (llvm::Value* p = llvm::getLoadStorePointerOperand(&i);
          p && isBufferSpace(p->getType()->getPointerAddressSpace()))
        ++slowAccesses;
      for (llvm::User* u : i.users())
        if (auto* ui = llvm::cast<llvm::Instruction>(u);
            !inRegion.count(ui->getParent()) && !llvm::isa<llvm::PHINode>(ui))
          return fail();
    }
  }
  // The facts' values before the branch: their definitions precede it, or entry facts computed again.
  llvm::Instruction* branch = head->getTerminator();
  llvm::DenseMap<llvm::Value*, llvm::Value*> done;
  auto available = [&](llvm::Value* v) {
    auto* i = llvm::dyn_cast<llvm::Instruction>(v);
    return !i || dt.dominates(i, branch);
  };
  auto valueAt = [&](llvm::Value* fact) -> llvm::Value* {
    llvm::Value* v = vm[fact];
    return available(v) ? v : rematerialize(v, branch, done);
  };
  std::vector<llvm::Value*> facts(plan.facts.begin(), plan.facts.end());
  llvm::Value* ok = checkFacts(facts, pairs, branch, valueAt);

  // The region's copy.
  llvm::ValueToValueMapTy rm;
  std::vector<llvm::BasicBlock*> fastBlocks;
  for (llvm::BasicBlock* bb : region) {
    llvm::BasicBlock* nb = llvm::CloneBasicBlock(bb, rm, ".fast", g);
    rm[bb] = nb;
    fastBlocks.push_back(nb);
  }
  llvm::remapInstructionsInBlocks(fastBlocks, rm);
  for (llvm::BasicBlock* bb : region) {
    llvm::SmallPtrSet<llvm::BasicBlock*, 4> visited;
    for (llvm::BasicBlock* succ : llvm::successors(bb)) {
      if (inRegion.count(succ) || !visited.insert(succ).second) continue;
      for (llvm::PHINode& phi : succ->phis())
        for (unsigned k = 0, n = phi.getNumIncomingValues(); k < n; ++k)
          if (phi.getIncomingBlock(k) == bb) {
            llvm::Value* v = phi.getIncomingValue(k);
            llvm::Value* mapped = rm.lookup(v);
            phi.addIncoming(mapped ? mapped : v, llvm::cast<llvm::BasicBlock>(rm[bb]));
          }
    }
  }
  auto* fastEntry = llvm::cast<llvm::BasicBlock>(rm[slow]);
  branch->eraseFromParent();
  llvm::BranchInst::Create(fastEntry, slow, ok, head);

  // The copy assumes the facts: at its entry, or after a fact's own copy where the region defines it.
  std::vector<llvm::CallInst*> assumes;
  for (llvm::Value* fact : facts) {
    llvm::Value* v = vm[fact];
    llvm::Instruction* at = &*fastEntry->getFirstInsertionPt();
    if (!available(v)) {
      auto* i = llvm::cast<llvm::Instruction>(v);
      if (!inRegion.count(i->getParent())) continue;
      auto* c = llvm::cast<llvm::Instruction>(rm[v]);
      v = c;
      at = llvm::isa<llvm::PHINode>(c) ? &*c->getParent()->getFirstInsertionPt() : c->getNextNode();
    }
    assumes.push_back(assumeMultiple(v, at));
  }
  widener.pairs.clear();
  for (auto [p, q] : pairs) {
    widener.pairs.insert({vm[p], vm[q]});
    widener.pairs.insert({vm[q], vm[p]});
  }
  widener.region.clear();
  widener.region.insert(fastBlocks.begin(), fastBlocks.end());
  widener.widen(*g, assumes);
  widener.pairs.clear();
  widener.region.clear();
  for (llvm::CallInst* a : assumes) {
    llvm::Value* cond = a->getArgOperand(0);
    a->eraseFromParent();
    llvm::RecursivelyDeleteTriviallyDeadInstructions(cond);
  }
  bool expressible = true;
  for (llvm::BasicBlock& bb : *g)
    for (llvm::Instruction& i : bb)
      if (llvm::Value* p = llvm::getLoadStorePointerOperand(&i);
          p && isBufferSpace(p->getType()->getPointerAddressSpace()))
        if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(llvm::getLoadStoreType(&i));
            vt && vt->getNumElements() > kMaxLanes)
          expressible = false;
  widener.inexpressible = !expressible;
  unsigned fastAccesses = 0;
  for (llvm::BasicBlock* bb : fastBlocks)
    for (llvm::Instruction& i : *bb)
      if (llvm::Value* p = llvm::getLoadStorePointerOperand(&i);
          p && isBufferSpace(p->getType()->getPointerAddressSpace()))
        ++fastAccesses;
  if (!expressible || fastAccesses >= slowAccesses) return fail();
  replaceBody(f, g);
  return true;
}

}  // namespace

WidenAccessesPass::WidenAccessesPass(const frontend::EntryFacts& entry, const KernelReflection& reflection) {
  for (const PushArg& a : reflection.args)
    for (const frontend::ParamFacts& p : entry.params)
      if (p.param.kind == ParamKind::Buffer && p.param.index == a.buffer && p.param.functionConstant.empty() &&
          p.param.addressSpace == "constant")
        boundConstants.insert(a.offset);
}

llvm::PreservedAnalyses WidenAccessesPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  llvm::Function* f = m.getFunction("main");
  if (!f || f->isDeclaration()) return llvm::PreservedAnalyses::all();
  bool reused = reuseConstantLoads(*f);
  llvm::PreservedAnalyses unchanged = reused ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
  std::vector<llvm::Value*> facts = collectFacts(*f, boundConstants);

  Widener widener;
  std::vector<llvm::Value*> later;
  widener.withUniformity(*f, [&](const llvm::UniformityInfo& ui, const llvm::LoopInfo& li, const llvm::DominatorTree&) {
    later = collectLaterFacts(*f, facts, ui, li);
  });
  llvm::DenseSet<llvm::Value*> late(later.begin(), later.end());
  std::vector<llvm::Value*> all = facts;
  all.insert(all.end(), later.begin(), later.end());
  if (all.empty()) return unchanged;

  // A trial copy assuming `assumed`: its buffer accesses and the plan for them (nullopt: nothing gained).
  std::vector<std::pair<llvm::Value*, llvm::Value*>> distant = candidatePairs(*f, facts);
  auto trial = [&](const std::vector<llvm::Value*>& assumed, const llvm::DenseSet<llvm::Value*>& lateOnes,
                   Plan& plan) -> std::optional<unsigned> {
    llvm::Function* copy = widenedCopy(*f, assumed, distant, widener, &plan, lateOnes);
    if (!copy && widener.inexpressible && widener.wide) {  // a wide access that could not be legalized: 4 lanes
      widener.wide = false;
      plan = Plan();
      copy = widenedCopy(*f, assumed, distant, widener, &plan, lateOnes);
    }
    if (!copy) {
      plan = Plan();
      return std::nullopt;
    }
    unsigned n = countBufferAccesses(*copy);
    copy->eraseFromParent();
    return n;
  };
  // The entry facts first (where they suffice, the kernel is versioned at its entry); the later facts are used only
  // where the accesses they serve have more elements.
  Plan plan;
  if (!facts.empty()) trial(facts, {}, plan);
  if (!later.empty()) {
    Plan withLater;
    if (trial(all, late, withLater) && withLater.after && withLater.elements > plan.elements)
      plan = std::move(withLater);
  }
  std::vector<llvm::Value*> checked(plan.facts.begin(), plan.facts.end());
  if (checked.empty()) return unchanged;
  // The distance facts kept: pairs of buffers that both hold widened accesses.
  std::vector<std::pair<llvm::Value*, llvm::Value*>> checkedPairs;
  for (auto [p, q] : distant)
    if (plan.facts.count(p) && plan.facts.count(q)) checkedPairs.emplace_back(p, q);
  if (plan.after) {
    if (versionAfter(*f, plan, checkedPairs, widener)) return llvm::PreservedAnalyses::none();
    if (!widener.inexpressible || !widener.wide) return unchanged;
    widener.wide = false;
    return versionAfter(*f, plan, checkedPairs, widener) ? llvm::PreservedAnalyses::none() : unchanged;
  }
  llvm::Function* fast = widenedCopy(*f, checked, checkedPairs, widener, nullptr);
  if (!fast) return unchanged;

  // main: check the facts, then run the fast copy or the kernel as it was.
  llvm::LLVMContext& ctx = m.getContext();
  llvm::BasicBlock* old = &f->getEntryBlock();
  auto* check = llvm::BasicBlock::Create(ctx, "widen.check", f, old);
  auto* fastBB = llvm::BasicBlock::Create(ctx, "widen.fast", f, old);
  llvm::IRBuilder<> b(check);
  llvm::Instruction* anchor = b.CreateUnreachable();
  llvm::DenseMap<llvm::Value*, llvm::Value*> done;
  llvm::Value* ok =
      checkFacts(checked, checkedPairs, anchor, [&](llvm::Value* v) { return rematerialize(v, anchor, done); });
  b.SetInsertPoint(anchor);
  b.CreateCondBr(ok, fastBB, old);
  anchor->eraseFromParent();
  // The fast copy's blocks move into main (it has no arguments; its values are its own).
  llvm::BasicBlock* fastEntry = &fast->getEntryBlock();
  f->splice(f->end(), fast);
  fast->eraseFromParent();
  b.SetInsertPoint(fastBB);
  b.CreateBr(fastEntry);
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
