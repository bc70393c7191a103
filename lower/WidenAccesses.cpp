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
// Every alignment the fast copy states and every reordering it makes follows from checked facts, so both paths
// compute exactly what the kernel computed.
#include <llvm/ADT/SetVector.h>
#include <llvm/Analysis/AliasAnalysis.h>
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/Analysis/TargetTransformInfoImpl.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/Scalar/AlignmentFromAssumptions.h>
#include <llvm/Transforms/Scalar/InferAlignment.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/Local.h>
#include <llvm/Transforms/Vectorize/LoadStoreVectorizer.h>

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
  wide->copyMetadata(*ld, {llvm::LLVMContext::MD_tbaa, llvm::LLVMContext::MD_alias_scope, llvm::LLVMContext::MD_noalias,
                           llvm::LLVMContext::MD_invariant_load, llvm::LLVMContext::MD_nontemporal});
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
  llvm::StoreInst* ns = b.CreateAlignedStore(wide, st->getPointerOperand(), st->getAlign());
  ns->copyMetadata(*st, {llvm::LLVMContext::MD_tbaa, llvm::LLVMContext::MD_alias_scope, llvm::LLVMContext::MD_noalias,
                         llvm::LLVMContext::MD_nontemporal});
  st->eraseFromParent();
  llvm::RecursivelyDeleteTriviallyDeadInstructions(v);
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

// Assumes, in `copy`, that each of `facts` (values of the original function, mapped through `vmap`) is a multiple
// of kFactAlign. Returns the assumption calls.
std::vector<llvm::CallInst*> assumeFacts(const std::vector<llvm::Value*>& facts, llvm::ValueToValueMapTy& vmap) {
  std::vector<llvm::CallInst*> assumes;
  for (llvm::Value* fact : facts) {
    auto* v = llvm::cast<llvm::Instruction>(vmap[fact]);
    llvm::IRBuilder<> b(v->getNextNode());
    if (v->getType()->isPointerTy()) {
      llvm::Value* args[] = {v, b.getInt64(kFactAlign)};
      assumes.push_back(b.CreateAssumption(b.getTrue(), {llvm::OperandBundleDef("align", args)}));
    } else {
      llvm::Value* low = b.CreateAnd(v, llvm::ConstantInt::get(v->getType(), kFactAlign - 1));
      assumes.push_back(b.CreateAssumption(b.CreateICmpEQ(low, llvm::ConstantInt::get(v->getType(), 0))));
    }
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
  DistantRootsAAResult(const llvm::DenseSet<RootPair>* pairs, llvm::ScalarEvolution* se) : pairs_(pairs), se_(se) {}
  bool invalidate(llvm::Function&, const llvm::PreservedAnalyses&, llvm::FunctionAnalysisManager::Invalidator&) {
    return false;
  }
  llvm::AliasResult alias(const llvm::MemoryLocation& a, const llvm::MemoryLocation& b, llvm::AAQueryInfo& q,
                          const llvm::Instruction* at) {
    if (!pairs_ || pairs_->empty() || !small(a) || !small(b)) return AAResultBase::alias(a, b, q, at);
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
  llvm::ScalarEvolution* se_;
};

struct DistantRootsAA : llvm::AnalysisInfoMixin<DistantRootsAA> {
  using Result = DistantRootsAAResult;
  explicit DistantRootsAA(const llvm::DenseSet<RootPair>* p) : pairs(p) {}
  Result run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
    return Result(pairs, &am.getResult<llvm::ScalarEvolutionAnalysis>(f));
  }
  const llvm::DenseSet<RootPair>* pairs;
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
    fam_.registerPass([this] { return DistantRootsAA(&pairs); });
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
    llvm::FunctionPassManager vectorize;
    vectorize.addPass(llvm::LoadStoreVectorizerPass());
    vectorize.run(f, fam_);
    fam_.clear(f, f.getName());
    if (wide) legalizeWideAccesses(f);
  }

  bool wide = true;            // 16-byte accesses of 8- and 16-bit elements (more than 4 lanes, legalized as words)
  bool inexpressible = false;  // the last copy held an access the emitter cannot express

 private:
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
            llvm::Value* base = v->stripAndAccumulateConstantOffsets(dl, offset, /*AllowNonInbounds=*/true);
            if (base == &phi) {
              if (!offset.isZero()) align = std::min<uint64_t>(align, uint64_t(1) << offset.countr_zero());
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
  llvm::DenseSet<RootPair> pairs;  // distance facts of the copy being widened, both orders

 private:
  llvm::CGSCCAnalysisManager cgam_;
  llvm::ModuleAnalysisManager mam_;
};

// A copy of `f` assuming `facts`, widened; null when it has no fewer buffer accesses than `f` or holds an access
// the emitter cannot express. `needed` receives the facts the realigned accesses' addresses come from.
llvm::Function* widenedCopy(llvm::Function& f, const std::vector<llvm::Value*>& facts,
                            const std::vector<std::pair<llvm::Value*, llvm::Value*>>& distant, Widener& widener,
                            llvm::SetVector<llvm::Value*>* needed) {
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
  llvm::SmallPtrSet<llvm::Value*, 32> seen;
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
      if (needed && t->isVectorTy() && llvm::getLoadStoreAlignment(&i).value() > 1)
        factsUnder(p, factOfCopy, seen, *needed);
    }
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
  std::vector<llvm::Value*> facts = collectFacts(*f, boundConstants);
  if (facts.empty()) return llvm::PreservedAnalyses::all();

  Widener widener;
  llvm::SetVector<llvm::Value*> needed;
  std::vector<std::pair<llvm::Value*, llvm::Value*>> distant = candidatePairs(*f, facts);
  llvm::Function* trial = widenedCopy(*f, facts, distant, widener, &needed);
  if (!trial && widener.inexpressible) {  // a wide access that could not be legalized: 4 lanes at most
    widener.wide = false;
    needed.clear();
    trial = widenedCopy(*f, facts, distant, widener, &needed);
  }
  if (!trial) return llvm::PreservedAnalyses::all();
  trial->eraseFromParent();
  std::vector<llvm::Value*> checked(needed.begin(), needed.end());
  if (checked.empty()) return llvm::PreservedAnalyses::all();
  // The distance facts kept: pairs of buffers that both hold widened accesses.
  std::vector<std::pair<llvm::Value*, llvm::Value*>> checkedPairs;
  for (auto [p, q] : distant)
    if (needed.count(p) && needed.count(q)) checkedPairs.emplace_back(p, q);
  llvm::Function* fast = widenedCopy(*f, checked, checkedPairs, widener, nullptr);
  if (!fast) return llvm::PreservedAnalyses::all();

  // main: check the facts, then run the fast copy or the kernel as it was.
  llvm::LLVMContext& ctx = m.getContext();
  llvm::BasicBlock* old = &f->getEntryBlock();
  auto* check = llvm::BasicBlock::Create(ctx, "widen.check", f, old);
  auto* fastBB = llvm::BasicBlock::Create(ctx, "widen.fast", f, old);
  llvm::IRBuilder<> b(check);
  llvm::Instruction* anchor = b.CreateUnreachable();
  llvm::DenseMap<llvm::Value*, llvm::Value*> done;
  llvm::Value* bits = nullptr;
  for (llvm::Value* fact : checked) {
    b.SetInsertPoint(anchor);
    llvm::Value* v = rematerialize(fact, anchor, done);
    v = v->getType()->isPointerTy() ? b.CreatePtrToInt(v, b.getInt64Ty()) : b.CreateZExt(v, b.getInt64Ty());
    bits = bits ? b.CreateOr(bits, v) : v;
  }
  b.SetInsertPoint(anchor);
  llvm::Value* aligned = b.CreateICmpEQ(b.CreateAnd(bits, b.getInt64(kFactAlign - 1)), b.getInt64(0), "widen.aligned");
  // |p - q| >= kAliasGap: (p - q + gap - 1) as unsigned > 2 * gap - 2.
  for (auto [p, q] : checkedPairs) {
    llvm::Value* pi = b.CreatePtrToInt(rematerialize(p, anchor, done), b.getInt64Ty());
    llvm::Value* qi = b.CreatePtrToInt(rematerialize(q, anchor, done), b.getInt64Ty());
    llvm::Value* shifted = b.CreateAdd(b.CreateSub(pi, qi), b.getInt64(kAliasGap - 1));
    aligned = b.CreateAnd(aligned, b.CreateICmpUGT(shifted, b.getInt64(2 * kAliasGap - 2)), "widen.apart");
  }
  b.CreateCondBr(aligned, fastBB, old);
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
