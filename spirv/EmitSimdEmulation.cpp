// Emulated simdgroup and quadgroup functions (lower/EmulateSimdgroups.cpp makes the calls): Metal's 32-lane
// simdgroup is threads 32k..32k+31 of the threadgroup, whatever the device's subgroup size. Each thread stores a
// 32-bit word of its operand in a workgroup array, a barrier makes the words visible, each thread reads the words
// of the lanes it needs and computes the result itself, and a second barrier frees the array for the next word.
// The lowering guarantees that every thread of the workgroup reaches every emulated call (the barriers need it);
// the call's last operand says whether the thread is one of Metal's active lanes there.
#include <algorithm>
#include <cstring>
#include <functional>

#include "EmitterImpl.h"
#include "Intrinsics.h"

namespace m2v::spirv {

using spv::Op;

namespace {
constexpr uint32_t kSimdWidth = 32;
constexpr uint32_t kQuadWidth = 4;
constexpr uint32_t kExchangeSlots = SimdExchangeState::kSlots;

// The operation an emulated call performs ("shuffle_xor", "reduce_add", ...; "" for a call that is not one).
std::string emulatedOperation(const llvm::CallInst& call) {
  const llvm::Function* f = call.getCalledFunction();
  if (!f || !f->getName().starts_with(lower::pseudo::kEmulatedSimdPrefix)) return "";
  llvm::StringRef op = f->getName().drop_front(std::strlen(lower::pseudo::kEmulatedSimdPrefix));
  return op.take_until([](char c) { return c == '.'; }).str();
}

// Whether the call exchanges the words of its first operand's components (shuffles, broadcasts, reductions, scans;
// not votes, which exchange predicate bits, nor barriers).
bool exchangesOperandWords(const std::string& name) {
  if (name.rfind("simd_", 0) != 0 && name.rfind("quad_", 0) != 0) return false;
  const std::string op = name.substr(5);
  return op != "ballot" && op != "all" && op != "any" && op != "is_first";
}

// The bit width of the scalar values such a call exchanges, or 0 where emulation cannot exchange them.
unsigned exchangedBits(const llvm::Type* scalar) {
  unsigned bits = scalar->isIntegerTy(1) ? 1 : scalar->getPrimitiveSizeInBits();
  if (scalar->isBFloatTy() || !(bits == 1 || bits == 8 || bits == 16 || bits == 32 || bits == 64)) return 0;
  return bits;
}
}  // namespace

// kExchangeSlots words per thread: slot k of thread i at k * stride + i, the stride being the threadgroup rounded up
// to whole simdgroups (so that reading a lane past the threadgroup's end stays inside the array).
Id Emitter::simdExchange() {
  if (simdExchange_) return simdExchange_;
  Id threads = b_.specConstantOp(u32(), Op::OpIMul, {workgroupSizeParts_[0], workgroupSizeParts_[1]});
  threads = b_.specConstantOp(u32(), Op::OpIMul, {threads, workgroupSizeParts_[2]});
  Id groups = b_.specConstantOp(
      u32(), Op::OpUDiv,
      {b_.specConstantOp(u32(), Op::OpIAdd, {threads, constU32(kSimdWidth - 1)}), constU32(kSimdWidth)});
  simdExchangeStride_ = b_.specConstantOp(u32(), Op::OpIMul, {groups, constU32(kSimdWidth)});
  // and one word after the slots: the count of workgroup_any's vote
  Id length = b_.specConstantOp(
      u32(), Op::OpIAdd,
      {b_.specConstantOp(u32(), Op::OpIMul, {simdExchangeStride_, constU32(kExchangeSlots)}), constU32(1)});
  Id array = b_.typeArray(u32(), length);
  simdExchange_ = b_.variable(b_.typePointer(spv::StorageClass::Workgroup, array), spv::StorageClass::Workgroup);
  b_.name(simdExchange_, "m2v_simd_exchange");
  interface_.push_back(simdExchange_);
  return simdExchange_;
}

// The barrier around exchanges: the whole workgroup waits, and its workgroup (and buffer) memory is ordered.
void Emitter::simdExchangeBarrier() {
  Id scope = constU32(static_cast<uint32_t>(spv::Scope::Workgroup));
  Id semantics = constU32(static_cast<uint32_t>(spv::MemorySemanticsMask::AcquireRelease) |
                          static_cast<uint32_t>(spv::MemorySemanticsMask::WorkgroupMemory) |
                          static_cast<uint32_t>(spv::MemorySemanticsMask::UniformMemory));
  b_.opNoResult(Op::OpControlBarrier, {scope, scope, semantics});
}

// The word of thread `index` (its LocalInvocationIndex) in exchange slot `slot`.
void Emitter::storeSimdWord(uint32_t slot, Id index, Id word) {
  Id at = b_.op(Op::OpIAdd, u32(), {b_.op(Op::OpIMul, u32(), {constU32(slot), simdExchangeStride_}), index});
  Id wordPtr = b_.typePointer(spv::StorageClass::Workgroup, u32());
  b_.opNoResult(Op::OpStore, {b_.op(Op::OpAccessChain, wordPtr, {simdExchange(), at}), word});
}

// Stores, with one barrier for all, the words of `call`'s operand and of the operands of the emulated calls after it
// in its block that are already computed, as many as the free slots hold; each call then finds its words in place
// and only reads. An 8x8 matrix multiply (twelve shuffles of two fragments) costs one publishing barrier instead of
// four. Every thread reaches all the calls of the block (the lowering guarantees it), so all publish the same words.
void Emitter::publishSimdOperands(const llvm::CallInst& call) {
  SimdExchangeState& slots = simdExchangeState_;
  struct Word {
    SimdExchangeState::Key key;
    const llvm::Value* operand;
    unsigned component;
  };
  std::vector<Word> wanted;
  auto isWanted = [&](const SimdExchangeState::Key& key) {
    return std::any_of(wanted.begin(), wanted.end(), [&](const Word& w) { return w.key == key; });
  };
  auto available = [&](const llvm::Value* v) {
    auto* def = llvm::dyn_cast<llvm::Instruction>(v);
    return !def || def->getParent() != call.getParent() || def == &call || def->comesBefore(&call);
  };
  for (const llvm::Instruction* i = &call; i && wanted.size() < kExchangeSlots; i = i->getNextNode()) {
    auto* next = llvm::dyn_cast<llvm::CallInst>(i);
    if (!next || !exchangesOperandWords(emulatedOperation(*next))) continue;
    const llvm::Value* operand = next->getArgOperand(0);
    if (operand == &call || !available(operand)) continue;
    llvm::Type* t = operand->getType();
    unsigned bits = exchangedBits(t->getScalarType());
    if (!bits) continue;
    unsigned components = t->isVectorTy() ? llvm::cast<llvm::FixedVectorType>(t)->getNumElements() : 1;
    for (unsigned c = 0; c < components; ++c)
      for (unsigned k = 0; k < (bits == 64 ? 2u : 1u); ++k) {
        SimdExchangeState::Key key{operand, c, k, false};
        if (!isWanted(key)) wanted.push_back({key, operand, c});
      }
  }
  if (wanted.size() > kExchangeSlots) wanted.resize(kExchangeSlots);
  // Slots to fill: round robin from `next`, past those that hold a wanted word already.
  struct Store {
    uint32_t slot;
    const Word* word;
    SimdExchangeState::Key replaced;
  };
  std::vector<Store> stores;
  bool overwritesRead = false;
  uint32_t slot = slots.next;
  for (const Word& w : wanted) {
    if (std::find(slots.held.begin(), slots.held.end(), w.key) != slots.held.end()) continue;
    for (uint32_t tries = 0; tries < kExchangeSlots && isWanted(slots.held[slot]); ++tries)
      slot = (slot + 1) % kExchangeSlots;
    if (isWanted(slots.held[slot])) break;
    overwritesRead |= slots.readSinceBarrier[slot];
    stores.push_back({slot, &w, slots.held[slot]});
    slots.held[slot] = w.key;  // claimed
    slot = (slot + 1) % kExchangeSlots;
  }
  if (stores.size() < 2) {  // one word: emitEmulatedSimd publishes it as it goes
    for (const Store& st : stores) slots.held[st.slot] = st.replaced;
    return;
  }
  if (overwritesRead) simdExchangeBarrier();
  Id index = builtinInput(spv::BuiltIn::LocalInvocationIndex, u32());
  for (const Store& st : stores) {
    llvm::Type* t = st.word->operand->getType();
    llvm::Type* scalar = t->getScalarType();
    Id v = value(st.word->operand);
    if (t->isVectorTy()) v = b_.op(Op::OpCompositeExtract, typeOf(scalar), {v, st.word->component});
    storeSimdWord(st.slot, index, simdWords(scalar, v)[std::get<2>(st.word->key)]);
  }
  simdExchangeBarrier();
  slots.readSinceBarrier.fill(false);
  slots.next = slot;
}

// The 32-bit words a scalar of type `scalar` travels in: a predicate as 0/1, narrower values widened, 64-bit values
// as low and high words.
std::vector<Id> Emitter::simdWords(llvm::Type* scalar, Id v) {
  unsigned bits = exchangedBits(scalar);
  if (bits == 1) return {b_.op(Op::OpSelect, u32(), {v, constU32(1), constU32(0)})};
  Id intType = b_.typeInt(bits);
  Id asInt = scalar->isFloatingPointTy() ? b_.op(Op::OpBitcast, intType, {v}) : v;
  if (bits < 32) return {b_.op(Op::OpUConvert, u32(), {asInt})};
  if (bits == 32) return {asInt};
  Id lo = b_.op(Op::OpUConvert, u32(), {asInt});
  Id hi = b_.op(Op::OpUConvert, u32(), {b_.op(Op::OpShiftRightLogical, intType, {asInt, b_.constant(intType, 32)})});
  return {lo, hi};
}

Id Emitter::emitEmulatedSimd(const llvm::CallInst& call, const std::string& name) {
  llvm::Type* t = call.getType();
  unsigned operands = call.arg_size() - 1;
  const llvm::Value* activeValue = call.getArgOperand(operands);
  bool allActive = llvm::isa<llvm::ConstantInt>(activeValue) && llvm::cast<llvm::ConstantInt>(activeValue)->isOne();
  if (name == "simdgroup_barrier") {  // the whole threadgroup waits: a superset of the simdgroup
    simdExchangeBarrier();
    return 0;
  }
  if (name == "workgroup_any") {
    // Whether the operand holds for any thread of the workgroup (a loop's vote to go around again): thread 0 clears
    // the count, each thread whose operand holds adds one, all read it; the barrier before the clear keeps the
    // previous vote's reads ahead of it.
    Id exchange = simdExchange();
    Id wordPtr = b_.typePointer(spv::StorageClass::Workgroup, u32());
    Id count = b_.op(Op::OpAccessChain, wordPtr,
                     {exchange, b_.op(Op::OpIMul, u32(), {constU32(kExchangeSlots), simdExchangeStride_})});
    Id index = builtinInput(spv::BuiltIn::LocalInvocationIndex, u32());
    Id first = b_.op(Op::OpIEqual, boolType(), {index, constU32(0)});
    Id one = b_.op(Op::OpSelect, u32(), {value(call.getArgOperand(0)), constU32(1), constU32(0)});
    // The clear is an atomic AND (with 0 from thread 0, all ones from the others): a plain store from every thread
    // would race with it, and workgroup memory starts undefined.
    Id wgScope = constU32(static_cast<uint32_t>(spv::Scope::Workgroup));
    Id relaxed = constU32(0);
    simdExchangeBarrier();
    b_.op(Op::OpAtomicAnd, u32(),
          {count, wgScope, relaxed, b_.op(Op::OpSelect, u32(), {first, constU32(0), constU32(~0u)})});
    simdExchangeBarrier();
    b_.op(Op::OpAtomicIAdd, u32(), {count, wgScope, relaxed, one});
    simdExchangeBarrier();
    return b_.op(Op::OpINotEqual, boolType(), {b_.op(Op::OpLoad, u32(), {count}), constU32(0)});
  }
  bool isQuad = name.rfind("quad_", 0) == 0;
  if (!isQuad && name.rfind("simd_", 0) != 0) internalError(&call, "emulated call of '" + name + "'");
  const std::string op = name.substr(5);
  const uint32_t width = isQuad ? kQuadWidth : kSimdWidth;

  Id index = builtinInput(spv::BuiltIn::LocalInvocationIndex, u32());
  Id me = b_.op(Op::OpBitwiseAnd, u32(), {index, constU32(width - 1)});
  Id base = b_.op(Op::OpBitwiseAnd, u32(), {index, constU32(~(width - 1))});
  Id wgSize = workgroupSize_;
  auto part = [&](uint32_t k) { return b_.op(Op::OpCompositeExtract, u32(), {wgSize, k}); };
  Id threads = b_.op(Op::OpIMul, u32(), {b_.op(Op::OpIMul, u32(), {part(0), part(1)}), part(2)});
  Id exchange = simdExchange();
  Id wordPtr = b_.typePointer(spv::StorageClass::Workgroup, u32());
  auto laneConst = [&](uint32_t j) { return constU32(j); };
  // Every thread publishes a word (`key` names it: an LLVM value, its component and word), then reads the words of
  // the group's lanes `lanes` (u32 ids, 0..width-1). A word still in a slot from earlier in this block is read
  // again without being published; a slot is overwritten only after a barrier since its last reads.
  SimdExchangeState& slots = simdExchangeState_;
  if (slots.block != call.getParent()) {
    slots = SimdExchangeState{};
    slots.block = call.getParent();
  }
  if (exchangesOperandWords(name)) publishSimdOperands(call);
  auto exchangeWord = [&](const SimdExchangeState::Key& key, const std::function<Id()>& word,
                          const std::vector<Id>& lanes) {
    uint32_t slot = kExchangeSlots;
    for (uint32_t k = 0; k < kExchangeSlots; ++k)
      if (slots.held[k] == key) slot = k;
    if (slot == kExchangeSlots) {
      slot = slots.next;
      slots.next = (slots.next + 1) % kExchangeSlots;
      if (slots.readSinceBarrier[slot]) simdExchangeBarrier();
      storeSimdWord(slot, index, word());
      simdExchangeBarrier();
      slots.readSinceBarrier.fill(false);
      slots.held[slot] = key;
    }
    Id slotBase = b_.op(Op::OpIAdd, u32(), {b_.op(Op::OpIMul, u32(), {constU32(slot), simdExchangeStride_}), base});
    std::vector<Id> words;
    for (Id lane : lanes) {
      Id at = b_.op(Op::OpIAdd, u32(), {slotBase, lane});
      words.push_back(b_.op(Op::OpLoad, u32(), {b_.op(Op::OpAccessChain, wordPtr, {exchange, at})}));
    }
    slots.readSinceBarrier[slot] = true;
    return words;
  };
  std::vector<Id> allLanes;
  for (uint32_t j = 0; j < width; ++j) allLanes.push_back(laneConst(j));
  auto boolWord = [&](Id pred) { return b_.op(Op::OpSelect, u32(), {pred, constU32(1), constU32(0)}); };
  // The bits of the group's lanes for which `pred` holds, among the lanes that exist (a threadgroup whose size is
  // not a multiple of the width has a short last group).
  Id present = 0;
  auto presentLanes = [&] {
    if (present) return present;
    Id left = b_.op(Op::OpISub, u32(), {threads, base});
    Id full = b_.op(Op::OpUGreaterThanEqual, boolType(), {left, constU32(32)});
    Id some = b_.op(
        Op::OpISub, u32(),
        {b_.op(Op::OpShiftLeftLogical, u32(), {constU32(1), b_.op(Op::OpBitwiseAnd, u32(), {left, constU32(31)})}),
         constU32(1)});
    present = b_.op(Op::OpSelect, u32(), {full, constU32(~0u), some});
    if (width < 32) present = b_.op(Op::OpBitwiseAnd, u32(), {present, constU32((1u << width) - 1)});
    return present;
  };
  auto laneBits = [&](const llvm::Value* pred) {
    std::vector<Id> words = exchangeWord(
        {pred, 0, 0, true}, [&] { return boolWord(value(pred)); }, allLanes);
    Id bits = constU32(0);
    for (uint32_t j = 0; j < width; ++j)
      bits = b_.op(Op::OpBitwiseOr, u32(), {bits, b_.op(Op::OpShiftLeftLogical, u32(), {words[j], constU32(j)})});
    return b_.op(Op::OpBitwiseAnd, u32(), {bits, presentLanes()});
  };
  Id activeBitsCache = 0;
  auto activeBits = [&] {
    if (!activeBitsCache) activeBitsCache = allActive ? presentLanes() : laneBits(activeValue);
    return activeBitsCache;
  };
  auto bitOf = [&](Id bits, Id lane) {
    Id bit = b_.op(Op::OpBitwiseAnd, u32(), {b_.op(Op::OpShiftRightLogical, u32(), {bits, lane}), constU32(1)});
    return b_.op(Op::OpINotEqual, boolType(), {bit, constU32(0)});
  };
  auto firstActive = [&] { return glsl(u32(), GLSL::FindILsb, {activeBits()}); };

  // Votes.
  if (op == "ballot" || op == "all" || op == "any" || op == "is_first") {
    if (op == "is_first") return b_.op(Op::OpIEqual, boolType(), {me, firstActive()});
    Id bits = b_.op(Op::OpBitwiseAnd, u32(), {laneBits(call.getArgOperand(0)), activeBits()});
    if (op == "any") return b_.op(Op::OpINotEqual, boolType(), {bits, constU32(0)});
    if (op == "all") return b_.op(Op::OpIEqual, boolType(), {bits, activeBits()});
    unsigned w = t->getIntegerBitWidth();
    if (w == 32) return bits;
    return b_.op(Op::OpUConvert, typeOf(t), {bits});
  }

  // Operations on values, one scalar component at a time, each through one or two words.
  llvm::Type* st = t->getScalarType();
  unsigned components = t->isVectorTy() ? llvm::cast<llvm::FixedVectorType>(t)->getNumElements() : 1;
  unsigned bits = exchangedBits(st);
  if (!bits)
    unsupported(&call,
                "an emulated simdgroup function of " + std::to_string(st->getPrimitiveSizeInBits()) + "-bit values");
  bool isFloat = st->isFloatingPointTy();
  bool isBool = bits == 1;
  Id scalarType = typeOf(st);
  Id intType = isBool ? u32() : b_.typeInt(bits);
  auto toWords = [&](Id v) { return simdWords(st, v); };
  auto fromWords = [&](const std::vector<Id>& words) -> Id {
    if (isBool) return b_.op(Op::OpINotEqual, boolType(), {words[0], constU32(0)});
    Id asInt;
    if (bits < 32) {
      asInt = b_.op(Op::OpUConvert, intType, {words[0]});
    } else if (bits == 32) {
      asInt = words[0];
    } else {
      Id lo = b_.op(Op::OpUConvert, intType, {words[0]});
      Id hi = b_.op(Op::OpShiftLeftLogical, intType,
                    {b_.op(Op::OpUConvert, intType, {words[1]}), b_.constant(intType, 32)});
      asInt = b_.op(Op::OpBitwiseOr, intType, {lo, hi});
    }
    return isFloat ? b_.op(Op::OpBitcast, scalarType, {asInt}) : asInt;
  };
  // The component's value in each lane of `lanes`.
  const llvm::Value* operand = call.getArgOperand(0);
  auto gather = [&](Id v, unsigned component, const std::vector<Id>& lanes) {
    std::vector<Id> words = toWords(v);
    std::vector<std::vector<Id>> perWord;
    for (unsigned k = 0; k < words.size(); ++k)
      perWord.push_back(exchangeWord(
          {operand, component, k, false}, [&] { return words[k]; }, lanes));
    std::vector<Id> values;
    for (size_t j = 0; j < lanes.size(); ++j) {
      std::vector<Id> laneWords;
      for (auto& pw : perWord) laneWords.push_back(pw[j]);
      values.push_back(fromWords(laneWords));
    }
    return values;
  };

  std::function<Id(Id, unsigned)> perComponent;
  if (op.rfind("reduce_", 0) == 0 || op.rfind("scan_", 0) == 0) {
    bool scan = op.rfind("scan_", 0) == 0;
    bool inclusive = op.rfind("scan_incl_", 0) == 0;
    std::string kind = op.substr(scan ? 10 : 7);
    // The identity of `kind` and the operation itself, on one component.
    uint64_t allOnes = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
    uint64_t signBit = uint64_t(1) << (bits - 1);
    auto infinity = [&](bool negative) {
      uint64_t inf = bits == 16 ? 0x7C00 : bits == 32 ? 0x7F800000u : 0x7FF0000000000000ull;
      return b_.constant(scalarType, negative ? inf | signBit : inf);
    };
    Id identity;
    if (isBool)
      identity = b_.constantBool(kind == "and");
    else if (kind == "add" || kind == "or" || kind == "xor" || kind == "umax")
      identity = b_.constantNull(scalarType);
    else if (kind == "mul")
      identity = isFloat ? b_.constant(scalarType, bits == 16   ? 0x3C00
                                                   : bits == 32 ? 0x3F800000u
                                                                : 0x3FF0000000000000ull)
                         : b_.constant(scalarType, 1);
    else if (kind == "and" || kind == "umin")
      identity = b_.constant(scalarType, allOnes);
    else if (kind == "fmin")
      identity = infinity(false);
    else if (kind == "fmax")
      identity = infinity(true);
    else if (kind == "smin")
      identity = b_.constant(scalarType, allOnes >> 1);
    else if (kind == "smax")
      identity = b_.constant(scalarType, signBit);
    else
      unsupported(&call, "metal_stdlib intrinsic '" + name + "'");
    auto combine = [&, kind](Id a, Id b) -> Id {  // kind by value: perComponent outlives this block
      if (kind == "add") return b_.op(isFloat ? Op::OpFAdd : Op::OpIAdd, scalarType, {a, b});
      if (kind == "mul") return b_.op(isFloat ? Op::OpFMul : Op::OpIMul, scalarType, {a, b});
      if (kind == "and") return b_.op(isBool ? Op::OpLogicalAnd : Op::OpBitwiseAnd, scalarType, {a, b});
      if (kind == "or") return b_.op(isBool ? Op::OpLogicalOr : Op::OpBitwiseOr, scalarType, {a, b});
      if (kind == "xor") return b_.op(isBool ? Op::OpLogicalNotEqual : Op::OpBitwiseXor, scalarType, {a, b});
      return glsl(scalarType, GLSL::minMax(kind), {a, b});
    };
    perComponent = [&, scan, inclusive, identity, combine](Id v, unsigned component) {
      std::vector<Id> values = gather(v, component, allLanes);
      Id acc = identity;
      for (uint32_t j = 0; j < width; ++j) {
        Id takes = bitOf(activeBits(), laneConst(j));
        if (scan) {
          Id before = b_.op(inclusive ? Op::OpULessThanEqual : Op::OpULessThan, boolType(), {laneConst(j), me});
          takes = b_.op(Op::OpLogicalAnd, boolType(), {takes, before});
        }
        acc = b_.op(Op::OpSelect, scalarType, {takes, combine(acc, values[j]), acc});
      }
      return acc;
    };
  } else {
    // Shuffles and the broadcast read one lane: `valid` false keeps the thread's own value (Metal's rule for
    // shuffle_up/down past the group's edge).
    Id src = 0, valid = 0;
    auto asU32 = [&](unsigned k) {
      Id v = value(call.getArgOperand(k));
      unsigned w = call.getArgOperand(k)->getType()->getIntegerBitWidth();
      return w == 32 ? v : b_.op(Op::OpUConvert, u32(), {v});
    };
    Id mask = constU32(width - 1);
    if (op == "shuffle") {
      src = b_.op(Op::OpBitwiseAnd, u32(), {asU32(1), mask});
    } else if (op == "shuffle_xor") {
      src = b_.op(Op::OpBitwiseAnd, u32(), {b_.op(Op::OpBitwiseXor, u32(), {me, asU32(1)}), mask});
    } else if (op == "shuffle_up" || op == "shuffle_down") {
      bool up = op == "shuffle_up";
      Id d = asU32(1);
      Id pos = up ? b_.op(Op::OpISub, u32(), {me, d}) : b_.op(Op::OpIAdd, u32(), {me, d});
      valid = up ? b_.op(Op::OpUGreaterThanEqual, boolType(), {me, d})
                 : b_.op(Op::OpULessThan, boolType(), {pos, constU32(width)});
      src = b_.op(Op::OpBitwiseAnd, u32(), {pos, mask});
    } else if (op == "shuffle_rotate_up" || op == "shuffle_rotate_down") {
      Id d = b_.op(Op::OpBitwiseAnd, u32(), {asU32(1), mask});
      Id pos = op == "shuffle_rotate_up"
                   ? b_.op(Op::OpISub, u32(), {b_.op(Op::OpIAdd, u32(), {me, constU32(width)}), d})
                   : b_.op(Op::OpIAdd, u32(), {me, d});
      src = b_.op(Op::OpBitwiseAnd, u32(), {pos, mask});
    } else if (op == "broadcast_first") {
      src = firstActive();
    } else {
      unsupported(&call, "metal_stdlib intrinsic '" + name + "' in a kernel whose simdgroups are emulated");
    }
    perComponent = [&, src, valid](Id v, unsigned component) {
      Id r = gather(v, component, {src})[0];
      return valid ? b_.op(Op::OpSelect, scalarType, {valid, r, v}) : r;
    };
  }
  Id whole = value(call.getArgOperand(0));
  if (components == 1) return perComponent(whole, 0);
  std::vector<Id> parts;
  for (unsigned c = 0; c < components; ++c)
    parts.push_back(perComponent(b_.op(Op::OpCompositeExtract, scalarType, {whole, c}), c));
  return b_.op(Op::OpCompositeConstruct, typeOf(t), parts);
}

}  // namespace m2v::spirv
