// LLVM IR to SPIR-V: types, values, memory and structured control flow. Calls are in EmitCalls.cpp.
//
// Pointer model (docs: DESIGN.md): device and constant pointers are 64-bit buffer device addresses (u64 values;
// every access converts the address to a PhysicalStorageBuffer pointer), so pointer arithmetic, casts, selects, phis
// and pointer tables in memory are plain integer operations. Threadgroup and thread memory have no addresses: each
// variable is a typed SPIR-V array, and a pointer into it is (variable, byte offset) with the variable known
// statically.
#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/Analysis/SimplifyQuery.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GetElementPtrTypeIterator.h>
#include <llvm/IR/Operator.h>
#include <llvm/Transforms/Utils/LoopUtils.h>

#include <numeric>

#include "EmitterImpl.h"
#include "Intrinsics.h"

namespace m2v::spirv {

using spv::Op;

// ---------------------------------------------------------------------------------------------------------------
// Diagnostics

void Emitter::unsupported(const llvm::Instruction* at, const std::string& what) {
  frontend::reportAt(diags_, sources_, at ? at : current_, Severity::Unsupported, what);
  throw EmitError{};
}

void Emitter::internalError(const llvm::Instruction* at, const std::string& what) {
  frontend::reportAt(diags_, sources_, at ? at : current_, Severity::Internal, what);
  throw EmitError{};
}

static std::string describe(const llvm::Type* t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t->print(os);
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Types

Id Emitter::typeOf(llvm::Type* t) {
  auto it = types_.find(t);
  if (it != types_.end()) return it->second;
  Id id = 0;
  if (t->isVoidTy()) {
    id = b_.typeVoid();
  } else if (t->isIntegerTy(1)) {
    id = b_.typeBool();
  } else if (t->isIntegerTy()) {
    unsigned w = t->getIntegerBitWidth();
    if (w != 8 && w != 16 && w != 32 && w != 64) unsupported(nullptr, "integer type " + describe(t));
    id = b_.typeInt(w);
  } else if (t->isHalfTy()) {
    id = b_.typeFloat(16);
  } else if (t->isBFloatTy()) {
    id = b_.typeInt(16);  // bfloat is stored as its bits; arithmetic goes through float
  } else if (t->isFloatTy()) {
    id = b_.typeFloat(32);
  } else if (t->isDoubleTy()) {
    id = b_.typeFloat(64);
  } else if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t); vt && vt->getNumElements() == 1) {
    id = typeOf(vt->getElementType());  // InstCombine's one-element vectors are scalars here
  } else if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t)) {
    unsigned n = vt->getNumElements();
    if (n < 2 || n > 4) unsupported(nullptr, "vector type " + describe(t) + " (SPIR-V vectors have 2 to 4 elements)");
    id = b_.typeVector(typeOf(vt->getElementType()), n);
  } else if (t->isPointerTy()) {
    // A 64-bit address (or byte offset into a thread-memory variable); threadgroup offsets are 32-bit.
    id = t->getPointerAddressSpace() == lower::kThreadgroupAS ? u32() : u64();
  } else if (auto* st = llvm::dyn_cast<llvm::StructType>(t)) {
    std::vector<Id> members;
    for (llvm::Type* e : st->elements()) members.push_back(typeOf(e));
    id = b_.typeStruct(members);
  } else if (auto* at = llvm::dyn_cast<llvm::ArrayType>(t)) {
    if (at->getNumElements() == 0) unsupported(nullptr, "zero-length array value");
    id = b_.typeArray(typeOf(at->getElementType()), constU32(static_cast<uint32_t>(at->getNumElements())));
  } else {
    unsupported(nullptr, "type " + describe(t));
  }
  types_[t] = id;
  return id;
}

llvm::Type* Emitter::withElement(llvm::Type* t, llvm::Type* elem) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t))
    return llvm::FixedVectorType::get(elem, vt->getNumElements());
  return elem;
}

Id Emitter::intConst(llvm::Type* t, uint64_t v) { return constantValue(llvm::ConstantInt::get(t, v)); }

Id Emitter::splatLike(llvm::Type* like, Id scalar) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(like); vt && vt->getNumElements() > 1)
    return b_.constantComposite(typeOf(like), std::vector<Id>(vt->getNumElements(), scalar));
  return scalar;
}

Id Emitter::glsl(Id type, uint32_t inst, const std::vector<Id>& args) {
  std::vector<uint32_t> ops{b_.glslStd450(), inst};
  ops.insert(ops.end(), args.begin(), args.end());
  return b_.op(Op::OpExtInst, type, ops);
}

// bfloat <-> float: bfloat is the top half of a float, so widening is a shift. Narrowing rounds to nearest even and
// keeps NaNs NaN (quiet): with EmitOptions::nativeBfloat16 one OpFConvert to the bfloat16 type (SPV_KHR_bfloat16),
// bitcast to the 16-bit integers bfloat values are everywhere else; otherwise an integer sequence. The Vulkan
// specification leaves the rounding of a narrowing OpFConvert to the implementation ("fundamentals-fp-conversion":
// a value between two representable values becomes one or the other), so the native build also asks for
// RoundingModeRTE on 16-bit results; python/tests/test_native_bfloat16.py checks on a device that it rounds to
// nearest even, bit for bit like the integer sequence.
Id Emitter::bfloatToFloat(Id v, llvm::Type* bfType) {
  llvm::Type* i32 = withElement(bfType, llvm::Type::getInt32Ty(module_.getContext()));
  llvm::Type* f = withElement(bfType, llvm::Type::getFloatTy(module_.getContext()));
  Id wide = b_.op(Op::OpUConvert, typeOf(i32), {v});
  Id shifted = b_.op(Op::OpShiftLeftLogical, typeOf(i32), {wide, intConst(i32, 16)});
  return b_.op(Op::OpBitcast, typeOf(f), {shifted});
}

Id Emitter::floatToBfloat(Id v, llvm::Type* bfType, bool neverNaN) {
  if (options_.nativeBfloat16) return nativeBfloatNarrowing(v, bfType);
  llvm::Type* i32 = withElement(bfType, llvm::Type::getInt32Ty(module_.getContext()));
  Id top = b_.op(Op::OpShiftRightLogical, typeOf(i32), {roundedBfloatWord(v, i32, neverNaN), intConst(i32, 16)});
  return b_.op(Op::OpUConvert, typeOf(bfType), {top});
}

// OpFConvert to SPV_KHR_bfloat16's type, as the 16-bit integers of `bitsType` (bfloat or i16, scalar or vector).
Id Emitter::nativeBfloatNarrowing(Id v, llvm::Type* bitsType) {
  stats_.bfloatNarrowings += 1;
  Id bf = b_.typeBFloat16();
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(bitsType); vt && vt->getNumElements() > 1)
    bf = b_.typeVector(bf, vt->getNumElements());
  return b_.op(Op::OpBitcast, typeOf(bitsType), {b_.op(Op::OpFConvert, bf, {v})});
}

// The 32-bit word whose high half is float `v` rounded to bfloat (the low half is left over): the narrowing before
// its final shift, which lower/BFloatWords.cpp's `m2v.bfloat.rounded_word` asks for to pack two lanes into one word.
// Adding to a NaN's bits could carry it into inf, so a NaN is kept (made quiet) by a select unless none can occur.
Id Emitter::roundedBfloatWord(Id v, llvm::Type* wordType, bool neverNaN) {
  llvm::LLVMContext& ctx = module_.getContext();
  if (options_.nativeBfloat16) {
    Id bits = nativeBfloatNarrowing(v, withElement(wordType, llvm::Type::getInt16Ty(ctx)));
    return b_.op(Op::OpShiftLeftLogical, typeOf(wordType),
                 {b_.op(Op::OpUConvert, typeOf(wordType), {bits}), intConst(wordType, 16)});
  }
  stats_.bfloatNarrowings += 1;
  llvm::Type* i32 = wordType;
  llvm::Type* i1 = withElement(wordType, llvm::Type::getInt1Ty(ctx));
  Id bits = b_.op(Op::OpBitcast, typeOf(i32), {v});
  Id lsb = b_.op(Op::OpBitwiseAnd, typeOf(i32),
                 {b_.op(Op::OpShiftRightLogical, typeOf(i32), {bits, intConst(i32, 16)}), intConst(i32, 1)});
  Id rounded = b_.op(Op::OpIAdd, typeOf(i32), {bits, b_.op(Op::OpIAdd, typeOf(i32), {lsb, intConst(i32, 0x7fff)})});
  if (neverNaN) return rounded;
  Id isNan = b_.op(Op::OpIsNan, typeOf(i1), {v});
  Id quiet = b_.op(Op::OpBitwiseOr, typeOf(i32), {bits, intConst(i32, 0x00400000)});
  return b_.op(Op::OpSelect, typeOf(i32), {isNan, quiet, rounded});
}

bool Emitter::knownNeverNaN(const llvm::Value* v) {
  return llvm::isKnownNeverNaN(v, llvm::SimplifyQuery(module_.getDataLayout()));
}

// ---------------------------------------------------------------------------------------------------------------
// Values

static void appendBytes(const llvm::DataLayout& dl, const llvm::Constant* c, std::vector<uint8_t>& out) {
  size_t start = out.size();
  uint64_t size = dl.getTypeAllocSize(c->getType());
  out.resize(start + size, 0);
  if (llvm::isa<llvm::ConstantAggregateZero>(c) || llvm::isa<llvm::UndefValue>(c) ||
      llvm::isa<llvm::ConstantPointerNull>(c))
    return;
  if (auto* ci = llvm::dyn_cast<llvm::ConstantInt>(c)) {
    uint64_t v = ci->getZExtValue();
    for (uint64_t i = 0; i < size && i < 8; ++i) out[start + i] = static_cast<uint8_t>(v >> (8 * i));
  } else if (auto* cf = llvm::dyn_cast<llvm::ConstantFP>(c)) {
    uint64_t v = cf->getValueAPF().bitcastToAPInt().getZExtValue();
    for (uint64_t i = 0; i < size && i < 8; ++i) out[start + i] = static_cast<uint8_t>(v >> (8 * i));
  } else if (auto* cds = llvm::dyn_cast<llvm::ConstantDataSequential>(c)) {
    llvm::StringRef raw = cds->getRawDataValues();
    uint64_t elemSize = dl.getTypeAllocSize(cds->getElementType());
    uint64_t rawElem = cds->getElementByteSize();
    for (unsigned i = 0; i < cds->getNumElements(); ++i)
      std::copy_n(raw.data() + i * rawElem, rawElem, out.begin() + static_cast<ptrdiff_t>(start + i * elemSize));
  } else if (auto* st = llvm::dyn_cast<llvm::ConstantStruct>(c)) {
    const llvm::StructLayout* sl = dl.getStructLayout(st->getType());
    for (unsigned i = 0; i < st->getNumOperands(); ++i) {
      std::vector<uint8_t> part;
      appendBytes(dl, st->getOperand(i), part);
      std::copy(part.begin(), part.end(), out.begin() + static_cast<ptrdiff_t>(start + sl->getElementOffset(i)));
    }
  } else if (auto* ca = llvm::dyn_cast<llvm::ConstantAggregate>(c)) {
    uint64_t off = 0;
    for (unsigned i = 0; i < ca->getNumOperands(); ++i) {
      std::vector<uint8_t> part;
      appendBytes(dl, ca->getOperand(i), part);
      uint64_t stride = dl.getTypeAllocSize(ca->getOperand(i)->getType());
      std::copy(part.begin(), part.end(), out.begin() + static_cast<ptrdiff_t>(start + off));
      off += stride;
    }
  } else {
    throw EmitError{};
  }
}

Id Emitter::constantValue(const llvm::Constant* c) {
  llvm::Type* t = c->getType();
  if (llvm::isa<llvm::PoisonValue>(c) || llvm::isa<llvm::UndefValue>(c)) {
    if (t->isPointerTy() && isLogicalPointer(c)) return b_.constant(typeOf(t), 0);
    return b_.undef(typeOf(t));
  }
  if (auto* ci = llvm::dyn_cast<llvm::ConstantInt>(c)) {
    if (t->isIntegerTy(1)) return b_.constantBool(ci->isOne());
    return b_.constant(typeOf(t), ci->getZExtValue());
  }
  if (auto* cf = llvm::dyn_cast<llvm::ConstantFP>(c))
    return b_.constant(typeOf(t), cf->getValueAPF().bitcastToAPInt().getZExtValue());
  if (llvm::isa<llvm::ConstantPointerNull>(c)) return b_.constant(typeOf(t), 0);
  if (llvm::isa<llvm::GlobalVariable>(c)) return b_.constant(typeOf(t), 0);  // offset 0 into the variable
  if (llvm::isa<llvm::ConstantAggregateZero>(c)) return b_.constantNull(typeOf(t));
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t); vt && vt->getNumElements() == 1)
    return constantValue(c->getAggregateElement(0u));
  if (auto* cds = llvm::dyn_cast<llvm::ConstantDataSequential>(c)) {
    std::vector<Id> parts;
    for (unsigned i = 0; i < cds->getNumElements(); ++i) parts.push_back(constantValue(cds->getElementAsConstant(i)));
    return b_.constantComposite(typeOf(t), parts);
  }
  if (auto* ca = llvm::dyn_cast<llvm::ConstantAggregate>(c)) {
    std::vector<Id> parts;
    for (const llvm::Use& u : ca->operands()) parts.push_back(constantValue(llvm::cast<llvm::Constant>(u.get())));
    return b_.constantComposite(typeOf(t), parts);
  }
  unsupported(nullptr, "constant expression in generated code");
}

Id Emitter::value(const llvm::Value* v) {
  if (auto* c = llvm::dyn_cast<llvm::Constant>(v)) {
    if (!llvm::isa<llvm::GlobalValue>(c) || llvm::isa<llvm::GlobalVariable>(c)) return constantValue(c);
    unsupported(nullptr, "use of function '" + llvm::demangle(c->getName().str()) +
                             "' as a value (function pointers are not supported)");
  }
  if (llvm::isa<llvm::AllocaInst>(v)) return b_.constant(typeOf(v->getType()), 0);
  auto it = ids_.find(v);
  if (it != ids_.end()) return it->second;
  Id id = b_.newId();  // a forward reference (from a phi); the definition will use this id
  ids_[v] = id;
  return id;
}

Id Emitter::resultId(const llvm::Value* v) {
  auto it = ids_.find(v);
  if (it != ids_.end()) return it->second;
  Id id = b_.newId();
  ids_[v] = id;
  return id;
}

void Emitter::define(const llvm::Value* v, Id id) {
  auto it = ids_.find(v);
  if (it == ids_.end()) {
    ids_[v] = id;
  } else if (it->second != id) {
    // Referenced before it was defined (by a phi): give the pre-allocated id the value.
    b_.op(Op::OpCopyObject, typeOf(v->getType()), {id}, it->second);
  }
}

// The variable a pointer points into, when it is one of ours (threadgroup, thread, constant table); null for
// device addresses.
// The variable a logical pointer points into: through GEPs, casts, selects and phis, also loop-carried ones
// (`p += 8` in a loop is a phi of the pointer before the loop and a GEP of the phi itself). A value met again while
// its own base is being determined adds nothing (the cycle can only carry the base it started from); the results
// that depended on such a value are kept only once the value that closes the cycle has its base.
const llvm::Value* Emitter::baseOf(const llvm::Value* v) {
  llvm::SmallPtrSet<const llvm::Value*, 4> pendingOn;
  return baseOfStep(v, pendingOn);
}

const llvm::Value* Emitter::baseOfStep(const llvm::Value* v, llvm::SmallPtrSetImpl<const llvm::Value*>& pendingOn) {
  if (auto it = bases_.find(v); it != bases_.end()) return it->second;
  if (basesInProgress_.contains(v)) {
    pendingOn.insert(v);
    return nullptr;
  }
  basesInProgress_.insert(v);
  llvm::SmallPtrSet<const llvm::Value*, 4> pending;
  // Of several possible values (a phi's or select's): the one variable they share. A value whose base is only
  // pending (it leads back into the cycle being walked) or undefined adds nothing; one with no variable at all makes
  // the whole a device address.
  auto merge = [&](llvm::ArrayRef<const llvm::Value*> values, const llvm::Instruction* at) -> const llvm::Value* {
    const llvm::Value* base = nullptr;
    for (const llvm::Value* in : values) {
      if (llvm::isa<llvm::UndefValue>(in)) continue;
      llvm::SmallPtrSet<const llvm::Value*, 4> inPending;
      const llvm::Value* b = baseOfStep(in, inPending);
      pending.insert(inPending.begin(), inPending.end());
      if (!b) {
        if (!inPending.empty()) continue;
        return nullptr;
      }
      if (base && b != base) unsupported(at, "a pointer that may point into different threadgroup or thread arrays");
      base = b;
    }
    return base;
  };
  const llvm::Value* base = nullptr;
  if (auto* g = llvm::dyn_cast<llvm::GlobalVariable>(v)) {
    base = g;
  } else if (llvm::isa<llvm::AllocaInst>(v)) {
    base = v;
  } else if (auto* gep = llvm::dyn_cast<llvm::GEPOperator>(v)) {
    base = baseOfStep(gep->getPointerOperand(), pending);
  } else if (auto* phi = llvm::dyn_cast<llvm::PHINode>(v)) {
    llvm::SmallVector<const llvm::Value*, 4> incoming(phi->incoming_values().begin(), phi->incoming_values().end());
    base = merge(incoming, phi);
  } else if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(v)) {
    base = merge({sel->getTrueValue(), sel->getFalseValue()}, sel);
  } else if (auto* fr = llvm::dyn_cast<llvm::FreezeInst>(v)) {
    base = baseOfStep(fr->getOperand(0), pending);
  } else if (auto* cast = llvm::dyn_cast<llvm::AddrSpaceCastOperator>(v)) {
    base = baseOfStep(cast->getPointerOperand(), pending);
  } else if (auto* call = llvm::dyn_cast<llvm::CallInst>(v); call && call->getType()->isPointerTy()) {
    if (auto* ii = llvm::dyn_cast<llvm::IntrinsicInst>(call);
        ii && (ii->getIntrinsicID() == llvm::Intrinsic::ptr_annotation ||
               ii->getIntrinsicID() == llvm::Intrinsic::launder_invariant_group ||
               ii->getIntrinsicID() == llvm::Intrinsic::strip_invariant_group))
      base = baseOfStep(call->getArgOperand(0), pending);
  }
  basesInProgress_.erase(v);
  pending.erase(v);  // the cycle through `v` is closed: its base is what the rest gave
  if (pending.empty()) {
    bases_[v] = base;
  } else {
    pendingOn.insert(pending.begin(), pending.end());
  }
  return base;
}

// Threadgroup pointers always point into a variable; other pointers do when they derive from a thread-memory variable
// or a constant table, and are device addresses otherwise.
bool Emitter::isLogicalPointer(const llvm::Value* v) {
  if (!v->getType()->isPointerTy()) return false;
  if (v->getType()->getPointerAddressSpace() == lower::kThreadgroupAS) return true;
  return baseOf(v) != nullptr;
}

// The index of the element at byte `offset` of a logical pointer of type `ptrType`.
Id Emitter::elementIndex(Id offset, llvm::Type* ptrType, unsigned elementBytes) {
  if (typeOf(ptrType) != u32()) offset = b_.op(Op::OpUConvert, u32(), {offset});
  return b_.op(Op::OpUDiv, u32(), {offset, constU32(elementBytes)});
}

// `ptr + bytes`, in the pointer's own representation.
Id Emitter::offsetPointer(const llvm::Value* ptr, Id ptrId, uint64_t bytes) {
  Id t = typeOf(ptr->getType());
  return bytes ? b_.op(Op::OpIAdd, t, {ptrId, b_.constant(t, bytes)}) : ptrId;
}

// ---------------------------------------------------------------------------------------------------------------
// Logical variables

namespace {
struct AccessFacts {
  llvm::Type* single = nullptr;  // the one scalar type every access uses, if there is one
  bool mixed = false;
  uint64_t unit = 0;       // gcd of access sizes and alignments
  bool wideStore = false;  // some store writes whole 4-byte-aligned words
  llvm::Type* atomicType = nullptr;
  bool atomicFloat = false, atomicMixed = false, compareExchange = false;
};

// The pointer an atomic read-modify-write or compare-exchange accesses (loads and stores: getLoadStorePointerOperand).
const llvm::Value* accessedPointer(const llvm::Instruction& i) {
  if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&i)) return rmw->getPointerOperand();
  if (auto* cx = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&i)) return cx->getPointerOperand();
  return nullptr;
}

void scalarLeaves(llvm::Type* t, std::vector<llvm::Type*>& out) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t)) {
    for (unsigned i = 0; i < vt->getNumElements(); ++i) out.push_back(vt->getElementType());
  } else if (auto* st = llvm::dyn_cast<llvm::StructType>(t)) {
    for (llvm::Type* e : st->elements()) scalarLeaves(e, out);
  } else if (auto* at = llvm::dyn_cast<llvm::ArrayType>(t)) {
    for (uint64_t i = 0; i < at->getNumElements(); ++i) scalarLeaves(at->getElementType(), out);
  } else {
    out.push_back(t);
  }
}
}  // namespace

LogicalVariable& Emitter::logicalVariable(const llvm::Instruction* at, const llvm::Value* base) {
  auto it = logicalVars_.find(base);
  if (it != logicalVars_.end()) return it->second;

  // How the program accesses this variable decides its element type.
  AccessFacts facts;
  llvm::LLVMContext& ctx = module_.getContext();
  auto note = [&](llvm::Type* t, uint64_t align, bool atomic) {
    std::vector<llvm::Type*> leaves;
    scalarLeaves(t, leaves);
    for (llvm::Type* leaf : leaves) {
      if (leaf->isPointerTy()) leaf = llvm::Type::getInt64Ty(ctx);
      if (leaf->isIntegerTy(1)) leaf = llvm::Type::getInt8Ty(ctx);
      uint64_t size = dl_.getTypeStoreSize(leaf);
      uint64_t u = std::gcd(size, align ? align : size);
      facts.unit = facts.unit ? std::gcd(facts.unit, u) : u;
      if (!facts.single)
        facts.single = leaf;
      else if (facts.single != leaf)
        facts.mixed = true;
      if (align && align < size) facts.mixed = true;
    }
    if (atomic) {
      // An atomic float may also be read, written or exchanged through its bits: one element type serves all.
      if (facts.atomicType && facts.atomicType != t) facts.atomicMixed = true;
      if (!facts.atomicType || t->isFloatingPointTy()) facts.atomicType = t;
      facts.atomicFloat |= t->isFloatingPointTy();
    }
  };
  if (!accessesIndexed_) {
    accessesIndexed_ = true;
    for (const llvm::Function& f : module_)
      for (const llvm::BasicBlock& bb : f)
        for (const llvm::Instruction& i : bb) {
          const llvm::Value* p = llvm::getLoadStorePointerOperand(&i);
          if (!p) p = accessedPointer(i);
          if (const llvm::Value* b = p ? baseOf(p) : nullptr) accessesOf_[b].push_back(&i);
        }
  }
  for (const llvm::Instruction* i : accessesOf_.lookup(base)) {
    if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(i))
      note(ld->getType(), ld->getAlign().value(), ld->isAtomic());
    else if (auto* st = llvm::dyn_cast<llvm::StoreInst>(i)) {
      note(st->getValueOperand()->getType(), st->getAlign().value(), st->isAtomic());
      uint64_t size = dl_.getTypeStoreSize(st->getValueOperand()->getType());
      facts.wideStore |= size % 4 == 0 && st->getAlign().value() >= 4;
    } else if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(i))
      note(rmw->getType(), rmw->getAlign().value(), true);
    else if (auto* cx = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(i)) {
      note(cx->getNewValOperand()->getType(), cx->getAlign().value(), true);
      facts.compareExchange = true;
    }
  }

  LogicalVariable var;
  llvm::Type* elem = nullptr;
  if (facts.atomicType) {
    elem = facts.atomicType;
    if (dl_.getTypeStoreSize(elem) != facts.unit)
      unsupported(at, "threadgroup memory used both atomically and as another type");
    if (facts.atomicFloat && facts.compareExchange)
      unsupported(at, "compare-exchange on a float atomic in threadgroup memory");
    var.atomic = true;
  } else if (!facts.single) {
    elem = llvm::Type::getInt32Ty(ctx);  // never accessed
  } else if (!facts.mixed) {
    elem = facts.single;
  } else {
    elem = llvm::Type::getIntNTy(ctx, static_cast<unsigned>(std::min<uint64_t>(facts.unit, 8) * 8));
  }
  // In a cooperative-matrix build (tile-loading kernels), threadgroup memory that is also written in whole words is
  // typed as words: the tile copies store 4 bytes at a time and fragment pairs load 4, where typing by the narrowest
  // access would split every access into 16-bit ones. Narrower stores (edge tiles) become atomic read-modify-writes.
  auto* global = llvm::dyn_cast<llvm::GlobalVariable>(base);
  if (global && global->getAddressSpace() == 3 && reflection_.cooperativeMatrixMultiplies && !facts.atomicType &&
      facts.wideStore && facts.unit < 4) {
    elem = llvm::Type::getInt32Ty(ctx);
    var.subword = true;
  }
  var.elementLLVM = elem;
  var.elementType = typeOf(elem);
  var.elementBytes = static_cast<unsigned>(dl_.getTypeStoreSize(elem));

  uint64_t bytes = 0;
  const llvm::Constant* init = nullptr;
  bool dynamic = false;
  uint32_t dynamicIndex = 0;
  if (auto* g = llvm::dyn_cast<llvm::GlobalVariable>(base)) {
    unsigned as = g->getAddressSpace();
    if (llvm::MDNode* md = g->getMetadata(lower::pseudo::kDynamicThreadgroupMD)) {
      dynamic = true;
      dynamicIndex =
          static_cast<uint32_t>(llvm::mdconst::extract<llvm::ConstantInt>(md->getOperand(0))->getZExtValue());
    }
    bytes = dl_.getTypeAllocSize(g->getValueType());
    if (as == 3) {
      var.storage = spv::StorageClass::Workgroup;
    } else {
      var.storage = spv::StorageClass::Private;
      if (g->hasInitializer() && !llvm::isa<llvm::UndefValue>(g->getInitializer())) init = g->getInitializer();
    }
  } else {
    auto* alloca = llvm::cast<llvm::AllocaInst>(base);
    auto size = alloca->getAllocationSize(dl_);
    if (!size) unsupported(alloca, "a variable-length array in thread memory");
    bytes = size->getFixedValue();
    var.storage = spv::StorageClass::Function;
  }

  Id lengthId;
  if (dynamic) {
    Id specLen = b_.specConstant(u32(), 16, kThreadgroupLengthSpecBase + dynamicIndex);
    Id elemBytes = constU32(var.elementBytes);
    lengthId = b_.specConstantOp(u32(), Op::OpUDiv, {specLen, elemBytes});
  } else {
    uint64_t count = std::max<uint64_t>(1, (bytes + var.elementBytes - 1) / var.elementBytes);
    lengthId = constU32(static_cast<uint32_t>(count));
    if (var.storage == spv::StorageClass::Workgroup) reflection_.staticThreadgroupBytes += static_cast<uint32_t>(bytes);
  }
  Id arrayType = b_.typeArray(var.elementType, lengthId);
  Id ptrType = b_.typePointer(var.storage, arrayType);
  Id initializer = 0;
  if (init) {
    std::vector<uint8_t> raw;
    try {
      appendBytes(dl_, init, raw);
    } catch (EmitError&) {
      unsupported(at, "initializer of '" + base->getName().str() + "'");
    }
    uint64_t count = std::max<uint64_t>(1, (bytes + var.elementBytes - 1) / var.elementBytes);
    raw.resize(count * var.elementBytes, 0);
    std::vector<Id> elems;
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t bits = 0;
      for (unsigned k = 0; k < var.elementBytes; ++k) bits |= uint64_t(raw[i * var.elementBytes + k]) << (8 * k);
      elems.push_back(elem->isIntegerTy(1) ? b_.constantBool(bits != 0) : b_.constant(var.elementType, bits));
    }
    initializer = b_.constantComposite(arrayType, elems);
  }
  if (var.storage == spv::StorageClass::Function) {
    var.variable = b_.functionVariable(ptrType);
  } else {
    var.variable = b_.variable(ptrType, var.storage, initializer);
    interface_.push_back(var.variable);
  }
  if (!base->getName().empty()) b_.name(var.variable, base->getName().str());
  return logicalVars_[base] = var;
}

Id Emitter::logicalElementPointer(const LogicalVariable& var, Id index) {
  return b_.op(Op::OpAccessChain, b_.typePointer(var.storage, var.elementType), {var.variable, index});
}

Id Emitter::physicalPointer(Id address, Id pointeeType) {
  return b_.op(Op::OpConvertUToPtr, b_.typePointer(spv::StorageClass::PhysicalStorageBuffer, pointeeType), {address});
}

// ---------------------------------------------------------------------------------------------------------------
// Loads and stores

namespace {
uint32_t alignOperand(uint64_t align) { return static_cast<uint32_t>(align ? align : 1); }
}  // namespace

// The members of a struct or array as (type, byte offset): aggregates are loaded and stored member by member.
std::vector<std::pair<llvm::Type*, uint64_t>> Emitter::aggregateMembers(llvm::Type* t) {
  std::vector<std::pair<llvm::Type*, uint64_t>> members;
  if (auto* st = llvm::dyn_cast<llvm::StructType>(t)) {
    const llvm::StructLayout* sl = dl_.getStructLayout(st);
    for (unsigned i = 0; i < st->getNumElements(); ++i)
      members.emplace_back(st->getElementType(i), sl->getElementOffset(i));
  } else if (auto* arr = llvm::dyn_cast<llvm::ArrayType>(t)) {
    uint64_t stride = dl_.getTypeAllocSize(arr->getElementType());
    for (uint64_t i = 0; i < arr->getNumElements(); ++i) members.emplace_back(arr->getElementType(), i * stride);
  }
  return members;
}

Id Emitter::load(const llvm::Instruction* at, llvm::Type* t, const llvm::Value* ptr, Id ptrId, uint64_t align) {
  llvm::LLVMContext& ctx = module_.getContext();
  if (auto members = aggregateMembers(t); !members.empty()) {
    std::vector<Id> parts;
    for (const auto& [type, offset] : members)
      parts.push_back(load(at, type, ptr, offsetPointer(ptr, ptrId, offset), std::gcd(align, offset ? offset : align)));
    return b_.op(Op::OpCompositeConstruct, typeOf(t), parts);
  }
  if (t->isIntegerTy(1)) {  // bools live in memory as bytes
    Id byte = load(at, llvm::Type::getInt8Ty(ctx), ptr, ptrId, align);
    return b_.op(Op::OpINotEqual, boolType(), {byte, b_.constant(b_.typeInt(8), 0)});
  }
  if (t->isPointerTy() && (t->getPointerAddressSpace() == 0 || t->getPointerAddressSpace() == 3))
    unsupported(at, "a threadgroup or thread pointer stored in memory");

  if (!isLogicalPointer(ptr)) {
    Id type = typeOf(t);
    unsigned scalarBits = t->getScalarSizeInBits();
    if (t->isPointerTy()) scalarBits = 64;
    if (scalarBits == 8) b_.capability(spv::Capability::StorageBuffer8BitAccess);
    if (scalarBits == 16) b_.capability(spv::Capability::StorageBuffer16BitAccess);
    Id p = physicalPointer(ptrId, type);
    return b_.op(Op::OpLoad, type, {p, static_cast<uint32_t>(spv::MemoryAccessMask::Aligned), alignOperand(align)});
  }

  const llvm::Value* base = baseOf(ptr);
  if (!base) unsupported(at, "a threadgroup pointer whose array cannot be determined");
  LogicalVariable& var = logicalVariable(at, base);
  uint64_t size = dl_.getTypeStoreSize(t);
  if (t->isPointerTy()) size = 8;
  if (var.subword && size < var.elementBytes) return loadSubword(t, var, ptr, ptrId, size);
  Id index = elementIndex(ptrId, ptr->getType(), var.elementBytes);
  if (size == var.elementBytes) {
    Id v = b_.op(Op::OpLoad, var.elementType, {logicalElementPointer(var, index)});
    if (typeOf(t) == var.elementType) return v;
    return b_.op(Op::OpBitcast, typeOf(t), {v});
  }
  if (size % var.elementBytes) internalError(at, "misaligned access to " + base->getName().str());
  unsigned n = static_cast<unsigned>(size / var.elementBytes);
  std::vector<Id> units;
  for (unsigned k = 0; k < n; ++k) {
    Id idx = k ? b_.op(Op::OpIAdd, u32(), {index, constU32(k)}) : index;
    units.push_back(b_.op(Op::OpLoad, var.elementType, {logicalElementPointer(var, idx)}));
  }
  // Same element type as a vector's components: build the vector directly.
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t); vt && typeOf(vt->getElementType()) == var.elementType)
    return b_.op(Op::OpCompositeConstruct, typeOf(t), units);
  if (n > 4) {
    // More units than a vector holds (8 bytes of a byte array): pack them into 32-bit words first.
    std::vector<Id> words = packUnits(at, var, units, size);
    Id packed =
        words.size() == 1 ? words[0] : b_.op(Op::OpCompositeConstruct, b_.typeVector(u32(), words.size()), words);
    return b_.op(Op::OpBitcast, typeOf(t), {packed});
  }
  Id packed = b_.op(Op::OpCompositeConstruct, b_.typeVector(var.elementType, n), units);
  return b_.op(Op::OpBitcast, typeOf(t), {packed});
}

// Where the 1- or 2-byte access at `ptr` (value `ptrId`, a byte offset) into a subword variable lies: a pointer to
// its 32-bit word, and its bit offset in that word.
std::pair<Id, Id> Emitter::subwordPlace(const LogicalVariable& var, const llvm::Value* ptr, Id ptrId) {
  Id byteOffset = typeOf(ptr->getType()) == u32() ? ptrId : b_.op(Op::OpUConvert, u32(), {ptrId});
  Id word = logicalElementPointer(var, b_.op(Op::OpShiftRightLogical, u32(), {byteOffset, constU32(2)}));
  Id shift =
      b_.op(Op::OpShiftLeftLogical, u32(), {b_.op(Op::OpBitwiseAnd, u32(), {byteOffset, constU32(3)}), constU32(3)});
  return {word, shift};
}

// A 1- or 2-byte value inside a 32-bit word of a subword variable: the word, shifted.
Id Emitter::loadSubword(llvm::Type* t, const LogicalVariable& var, const llvm::Value* ptr, Id ptrId, uint64_t size) {
  auto [p, shift] = subwordPlace(var, ptr, ptrId);
  Id bits = b_.op(Op::OpShiftRightLogical, u32(), {b_.op(Op::OpLoad, u32(), {p}), shift});
  Id narrow = b_.op(Op::OpUConvert, b_.typeInt(static_cast<unsigned>(size * 8)), {bits});
  return typeOf(t) == b_.typeInt(static_cast<unsigned>(size * 8)) ? narrow : b_.op(Op::OpBitcast, typeOf(t), {narrow});
}

// Other lanes may write the other bytes of the word at the same time: clear and set this value's bits atomically.
void Emitter::storeSubword(llvm::Type* t, const LogicalVariable& var, const llvm::Value* ptr, Id ptrId, uint64_t size,
                           Id v) {
  auto [p, shift] = subwordPlace(var, ptr, ptrId);
  Id narrowType = b_.typeInt(static_cast<unsigned>(size * 8));
  Id bits = typeOf(t) == narrowType ? v : b_.op(Op::OpBitcast, narrowType, {v});
  Id mask = b_.op(Op::OpShiftLeftLogical, u32(), {constU32(size == 1 ? 0xffu : 0xffffu), shift});
  Id value = b_.op(Op::OpShiftLeftLogical, u32(), {b_.op(Op::OpUConvert, u32(), {bits}), shift});
  Id scope = constU32(uint32_t(spv::Scope::Workgroup)), relaxed = constU32(0);
  b_.op(Op::OpAtomicAnd, u32(), {p, scope, relaxed, b_.op(Op::OpNot, u32(), {mask})});
  b_.op(Op::OpAtomicOr, u32(), {p, scope, relaxed, value});
}

std::vector<Id> Emitter::packUnits(const llvm::Instruction* at, const LogicalVariable& var,
                                   const std::vector<Id>& units, uint64_t size) {
  if (size % 4 || var.elementBytes >= 4 || size / 4 > 4)
    unsupported(at, "a " + std::to_string(size) + "-byte access to memory typed as " + describe(var.elementLLVM));
  unsigned perWord = 4 / var.elementBytes;
  std::vector<Id> words;
  for (size_t k = 0; k < units.size(); k += perWord) {
    std::vector<Id> part(units.begin() + k, units.begin() + k + perWord);
    Id v = b_.op(Op::OpCompositeConstruct, b_.typeVector(var.elementType, perWord), part);
    words.push_back(b_.op(Op::OpBitcast, u32(), {v}));
  }
  return words;
}

std::vector<Id> Emitter::unpackUnits(const llvm::Instruction* at, const LogicalVariable& var, Id v, uint64_t size) {
  if (size % 4 || var.elementBytes >= 4 || size / 4 > 4)
    unsupported(at, "a " + std::to_string(size) + "-byte access to memory typed as " + describe(var.elementLLVM));
  unsigned perWord = 4 / var.elementBytes, nWords = static_cast<unsigned>(size / 4);
  Id words = b_.op(Op::OpBitcast, nWords == 1 ? u32() : b_.typeVector(u32(), nWords), {v});
  std::vector<Id> units;
  for (unsigned w = 0; w < nWords; ++w) {
    Id word = nWords == 1 ? words : b_.op(Op::OpCompositeExtract, u32(), {words, w});
    Id parts = b_.op(Op::OpBitcast, b_.typeVector(var.elementType, perWord), {word});
    for (unsigned k = 0; k < perWord; ++k) units.push_back(b_.op(Op::OpCompositeExtract, var.elementType, {parts, k}));
  }
  return units;
}

void Emitter::store(const llvm::Instruction* at, llvm::Type* t, const llvm::Value* ptr, Id ptrId, Id v,
                    uint64_t align) {
  llvm::LLVMContext& ctx = module_.getContext();
  if (auto members = aggregateMembers(t); !members.empty()) {
    for (uint32_t k = 0; k < members.size(); ++k) {
      auto [type, offset] = members[k];
      Id part = b_.op(Op::OpCompositeExtract, typeOf(type), {v, k});
      store(at, type, ptr, offsetPointer(ptr, ptrId, offset), part, std::gcd(align, offset ? offset : align));
    }
    return;
  }
  if (t->isIntegerTy(1)) {
    llvm::Type* i8 = llvm::Type::getInt8Ty(ctx);
    Id byte = b_.op(Op::OpSelect, typeOf(i8), {v, b_.constant(typeOf(i8), 1), b_.constant(typeOf(i8), 0)});
    store(at, i8, ptr, ptrId, byte, align);
    return;
  }
  if (t->isPointerTy() && (t->getPointerAddressSpace() == 0 || t->getPointerAddressSpace() == 3))
    unsupported(at, "a threadgroup or thread pointer stored in memory");

  if (!isLogicalPointer(ptr)) {
    Id type = typeOf(t);
    unsigned scalarBits = t->isPointerTy() ? 64 : t->getScalarSizeInBits();
    if (scalarBits == 8) b_.capability(spv::Capability::StorageBuffer8BitAccess);
    if (scalarBits == 16) b_.capability(spv::Capability::StorageBuffer16BitAccess);
    Id p = physicalPointer(ptrId, type);
    b_.opNoResult(Op::OpStore, {p, v, static_cast<uint32_t>(spv::MemoryAccessMask::Aligned), alignOperand(align)});
    return;
  }
  const llvm::Value* base = baseOf(ptr);
  if (!base) unsupported(at, "a threadgroup pointer whose array cannot be determined");
  LogicalVariable& var = logicalVariable(at, base);
  uint64_t size = t->isPointerTy() ? 8 : dl_.getTypeStoreSize(t);
  if (var.subword && size < var.elementBytes) return storeSubword(t, var, ptr, ptrId, size, v);
  Id index = elementIndex(ptrId, ptr->getType(), var.elementBytes);
  if (size == var.elementBytes) {
    Id stored = typeOf(t) == var.elementType ? v : b_.op(Op::OpBitcast, var.elementType, {v});
    b_.opNoResult(Op::OpStore, {logicalElementPointer(var, index), stored});
    return;
  }
  if (size % var.elementBytes) internalError(at, "misaligned access to " + base->getName().str());
  unsigned n = static_cast<unsigned>(size / var.elementBytes);
  std::vector<Id> units;
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t); vt && typeOf(vt->getElementType()) == var.elementType) {
    for (unsigned k = 0; k < n; ++k) units.push_back(b_.op(Op::OpCompositeExtract, var.elementType, {v, k}));
  } else if (n > 4) {
    units = unpackUnits(at, var, v, size);
  } else {
    Id packed = b_.op(Op::OpBitcast, b_.typeVector(var.elementType, n), {v});
    for (unsigned k = 0; k < n; ++k) units.push_back(b_.op(Op::OpCompositeExtract, var.elementType, {packed, k}));
  }
  for (unsigned k = 0; k < n; ++k) {
    Id idx = k ? b_.op(Op::OpIAdd, u32(), {index, constU32(k)}) : index;
    b_.opNoResult(Op::OpStore, {logicalElementPointer(var, idx), units[k]});
  }
}

// A pointer an atomic instruction can use, and the scope that goes with the memory it points to.
Id Emitter::atomicPointer(const llvm::Instruction* at, const llvm::Value* ptr, llvm::Type* t, uint32_t* scope,
                          Id* pointee) {
  Id ptrId = value(ptr);
  if (!isLogicalPointer(ptr)) {
    *scope = static_cast<uint32_t>(spv::Scope::Device);
    *pointee = typeOf(t);
    return physicalPointer(ptrId, typeOf(t));
  }
  const llvm::Value* base = baseOf(ptr);
  if (!base) unsupported(at, "a threadgroup pointer whose array cannot be determined");
  LogicalVariable& var = logicalVariable(at, base);
  if (var.storage != spv::StorageClass::Workgroup) unsupported(at, "an atomic operation on thread memory");
  *scope = static_cast<uint32_t>(spv::Scope::Workgroup);
  *pointee = var.elementType;
  return logicalElementPointer(var, elementIndex(ptrId, ptr->getType(), var.elementBytes));
}

// ---------------------------------------------------------------------------------------------------------------
// Instructions

namespace {
uint32_t semanticsFor(llvm::AtomicOrdering o, uint32_t scope) {
  if (o == llvm::AtomicOrdering::Monotonic || o == llvm::AtomicOrdering::Unordered ||
      o == llvm::AtomicOrdering::NotAtomic)
    return 0;
  uint32_t storage = scope == static_cast<uint32_t>(spv::Scope::Workgroup)
                         ? static_cast<uint32_t>(spv::MemorySemanticsMask::WorkgroupMemory)
                         : static_cast<uint32_t>(spv::MemorySemanticsMask::UniformMemory);
  uint32_t order = o == llvm::AtomicOrdering::Acquire ? static_cast<uint32_t>(spv::MemorySemanticsMask::Acquire)
                   : o == llvm::AtomicOrdering::Release
                       ? static_cast<uint32_t>(spv::MemorySemanticsMask::Release)
                       : static_cast<uint32_t>(spv::MemorySemanticsMask::AcquireRelease);
  return storage | order;
}
}  // namespace

// A bitcast from a vector (or scalar) to a vector of narrower integers with more lanes than SPIR-V allows, read only
// by constant-index extracts.
bool Emitter::isNarrowingView(const llvm::Instruction& i) {
  auto* to = llvm::dyn_cast<llvm::FixedVectorType>(i.getType());
  if (!llvm::isa<llvm::BitCastInst>(i) || !to || to->getNumElements() <= 4 || !to->getElementType()->isIntegerTy())
    return false;
  llvm::Type* from = i.getOperand(0)->getType();
  if (!from->getScalarType()->isIntegerTy() || from->getScalarSizeInBits() % to->getScalarSizeInBits()) return false;
  return llvm::all_of(i.users(), [](const llvm::User* u) {
    auto* e = llvm::dyn_cast<llvm::ExtractElementInst>(u);
    return e && llvm::isa<llvm::ConstantInt>(e->getIndexOperand());
  });
}

// `bitcast <N x i1> %v to iN` used only by `icmp eq/ne` with 0 or all ones.
bool Emitter::isBoolMask(const llvm::Instruction& i) {
  auto* from = llvm::dyn_cast<llvm::FixedVectorType>(i.getOperand(0)->getType());
  if (!llvm::isa<llvm::BitCastInst>(i) || !from || !from->getElementType()->isIntegerTy(1) ||
      !i.getType()->isIntegerTy() || from->getNumElements() < 2)
    return false;
  return llvm::all_of(i.users(), [&](const llvm::User* u) {
    auto* c = llvm::dyn_cast<llvm::ICmpInst>(u);
    auto* k = c ? llvm::dyn_cast<llvm::ConstantInt>(c->getOperand(1)) : nullptr;
    return c && c->getOperand(0) == &i && c->isEquality() && k && (k->isZero() || k->isMinusOne());
  });
}

Id Emitter::extractFromView(const llvm::BitCastInst& view, uint64_t lane, const llvm::Instruction* result) {
  llvm::Type* from = view.getOperand(0)->getType();
  unsigned narrow = view.getType()->getScalarSizeInBits(), wide = from->getScalarSizeInBits();
  unsigned perWide = wide / narrow;
  llvm::Type* wideType = from->getScalarType();
  Id v = value(view.getOperand(0));
  if (from->isVectorTy())
    v = b_.op(Op::OpCompositeExtract, typeOf(wideType), {v, static_cast<uint32_t>(lane / perWide)});
  uint64_t shift = (lane % perWide) * narrow;  // little endian: lane 0 is the low bits
  if (shift) v = b_.op(Op::OpShiftRightLogical, typeOf(wideType), {v, intConst(wideType, shift)});
  return b_.op(Op::OpUConvert, typeOf(result->getType()), {v}, resultId(result));
}

// Signed division and remainder on signed-typed operands. SPIR-V lets the opcode alone carry signedness, and our
// integer types are all signedness 0, but NVIDIA's driver (580.159) gave unsigned remainders for OpSRem in MLX's
// Remainder kernel (-43 % -1 = -43, 26 % -26 = 26), on unsigned- and on signed-typed operands alike, while OpSDiv
// is right there: the remainder is computed as a - (a / b) * b, C's definition for truncating division.
Id Emitter::signedOp(const llvm::Instruction& i, spv::Op op) {
  llvm::Type* t = i.getType();
  Id s = b_.typeSignedInt(t->getScalarSizeInBits());
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t)) s = b_.typeVector(s, vt->getNumElements());
  Id a = b_.op(spv::Op::OpBitcast, s, {value(i.getOperand(0))});
  Id c = b_.op(spv::Op::OpBitcast, s, {value(i.getOperand(1))});
  Id q = b_.op(spv::Op::OpSDiv, s, {a, c});
  Id r = op == spv::Op::OpSRem ? b_.op(spv::Op::OpISub, s, {a, b_.op(spv::Op::OpIMul, s, {q, c})}) : q;
  return b_.op(spv::Op::OpBitcast, typeOf(t), {r}, resultId(&i));
}

Id Emitter::emitOp(const llvm::Instruction& i) {
  llvm::Type* t = i.getType();
  auto bin = [&](Op op) {
    return b_.op(op, typeOf(t), {value(i.getOperand(0)), value(i.getOperand(1))}, resultId(&i));
  };
  bool isBf = t->getScalarType()->isBFloatTy();

  switch (i.getOpcode()) {
    case llvm::Instruction::Add:
      return t->isIntOrIntVectorTy(1) ? bin(Op::OpLogicalNotEqual) : bin(Op::OpIAdd);
    case llvm::Instruction::Sub:
      return t->isIntOrIntVectorTy(1) ? bin(Op::OpLogicalNotEqual) : bin(Op::OpISub);
    case llvm::Instruction::Mul:
      return t->isIntOrIntVectorTy(1) ? bin(Op::OpLogicalAnd) : bin(Op::OpIMul);
    case llvm::Instruction::UDiv:
      return bin(Op::OpUDiv);
    case llvm::Instruction::SDiv:
      return signedOp(i, Op::OpSDiv);
    case llvm::Instruction::URem:
      return bin(Op::OpUMod);
    case llvm::Instruction::SRem:
      return signedOp(i, Op::OpSRem);
    case llvm::Instruction::Shl:
      return bin(Op::OpShiftLeftLogical);
    case llvm::Instruction::LShr:
      return bin(Op::OpShiftRightLogical);
    case llvm::Instruction::AShr:
      return bin(Op::OpShiftRightArithmetic);
    case llvm::Instruction::And:
      return t->isIntOrIntVectorTy(1) ? bin(Op::OpLogicalAnd) : bin(Op::OpBitwiseAnd);
    case llvm::Instruction::Or:
      return t->isIntOrIntVectorTy(1) ? bin(Op::OpLogicalOr) : bin(Op::OpBitwiseOr);
    case llvm::Instruction::Xor:
      return t->isIntOrIntVectorTy(1) ? bin(Op::OpLogicalNotEqual) : bin(Op::OpBitwiseXor);
    case llvm::Instruction::FAdd:
    case llvm::Instruction::FSub:
    case llvm::Instruction::FMul:
    case llvm::Instruction::FDiv:
    case llvm::Instruction::FRem: {
      Op op = i.getOpcode() == llvm::Instruction::FAdd   ? Op::OpFAdd
              : i.getOpcode() == llvm::Instruction::FSub ? Op::OpFSub
              : i.getOpcode() == llvm::Instruction::FMul ? Op::OpFMul
              : i.getOpcode() == llvm::Instruction::FDiv ? Op::OpFDiv
                                                         : Op::OpFRem;
      // Without fast-math flags the operation is exactly as written: a driver must neither fuse it with another
      // (SPIR-V allows that unless NoContraction) nor fold (x + K) - K to x, which rounding tricks rely on (MLX's
      // expm1f). A multiply-add written as one expression is llvm.fmuladd, emitted as an Fma.
      const bool exact = !i.hasAllowContract() && !i.hasAllowReassoc();
      if (!isBf) {
        Id r = bin(op);
        if (exact) b_.decorate(r, spv::Decoration::NoContraction);
        return r;
      }
      llvm::Type* ft = withElement(t, llvm::Type::getFloatTy(t->getContext()));
      Id r =
          b_.op(op, typeOf(ft), {bfloatToFloat(value(i.getOperand(0)), t), bfloatToFloat(value(i.getOperand(1)), t)});
      if (exact) b_.decorate(r, spv::Decoration::NoContraction);
      Id out = floatToBfloat(r, t);
      define(&i, out);
      return out;
    }
    case llvm::Instruction::FNeg: {
      if (!isBf) return b_.op(Op::OpFNegate, typeOf(t), {value(i.getOperand(0))}, resultId(&i));
      return b_.op(Op::OpBitwiseXor, typeOf(t),
                   {value(i.getOperand(0)), splatLike(t, b_.constant(b_.typeInt(16), 0x8000))}, resultId(&i));
    }
    case llvm::Instruction::ICmp: {
      auto* c = llvm::cast<llvm::ICmpInst>(&i);
      llvm::Type* ot = c->getOperand(0)->getType();
      bool isBool = ot->isIntOrIntVectorTy(1);
      Op op;
      switch (c->getPredicate()) {
        case llvm::CmpInst::ICMP_EQ:
          op = isBool ? Op::OpLogicalEqual : Op::OpIEqual;
          break;
        case llvm::CmpInst::ICMP_NE:
          op = isBool ? Op::OpLogicalNotEqual : Op::OpINotEqual;
          break;
        case llvm::CmpInst::ICMP_UGT:
          op = Op::OpUGreaterThan;
          break;
        case llvm::CmpInst::ICMP_UGE:
          op = Op::OpUGreaterThanEqual;
          break;
        case llvm::CmpInst::ICMP_ULT:
          op = Op::OpULessThan;
          break;
        case llvm::CmpInst::ICMP_ULE:
          op = Op::OpULessThanEqual;
          break;
        case llvm::CmpInst::ICMP_SGT:
          op = Op::OpSGreaterThan;
          break;
        case llvm::CmpInst::ICMP_SGE:
          op = Op::OpSGreaterThanEqual;
          break;
        case llvm::CmpInst::ICMP_SLT:
          op = Op::OpSLessThan;
          break;
        case llvm::CmpInst::ICMP_SLE:
          op = Op::OpSLessThanEqual;
          break;
        default:
          unsupported(&i, "integer comparison predicate");
      }
      if (isBool && op != Op::OpLogicalEqual && op != Op::OpLogicalNotEqual) {
        // Ordered comparisons of bools: compare them as 0/1 integers.
        llvm::Type* it = withElement(ot, llvm::Type::getInt8Ty(t->getContext()));
        auto asInt = [&](const llvm::Value* v) {
          return b_.op(Op::OpSelect, typeOf(it),
                       {value(v), splatLike(ot, b_.constant(typeOf(it->getScalarType()), 1)),
                        splatLike(ot, b_.constant(typeOf(it->getScalarType()), 0))});
        };
        return b_.op(op, typeOf(t), {asInt(c->getOperand(0)), asInt(c->getOperand(1))}, resultId(&i));
      }
      if (auto* mask = llvm::dyn_cast<llvm::BitCastInst>(c->getOperand(0)); mask && isBoolMask(*mask)) {
        // any()/all() of a bool vector, as InstCombine writes them.
        auto* k = llvm::cast<llvm::ConstantInt>(c->getOperand(1));
        Id bits = value(mask->getOperand(0));
        Id r = k->isZero() ? b_.op(Op::OpAny, boolType(), {bits}) : b_.op(Op::OpAll, boolType(), {bits});
        bool negate = (k->isZero() == (c->getPredicate() == llvm::CmpInst::ICMP_EQ));
        return b_.op(negate ? Op::OpLogicalNot : Op::OpCopyObject, boolType(), {r}, resultId(&i));
      }
      if (ot->isPointerTy() && isLogicalPointer(c->getOperand(0)) != isLogicalPointer(c->getOperand(1)))
        unsupported(&i, "comparison of pointers into different kinds of memory");
      return bin(op);
    }
    case llvm::Instruction::FCmp: {
      auto* c = llvm::cast<llvm::FCmpInst>(&i);
      llvm::Type* ot = c->getOperand(0)->getType();
      Id a = value(c->getOperand(0)), bv = value(c->getOperand(1));
      if (ot->getScalarType()->isBFloatTy()) {
        a = bfloatToFloat(a, ot);
        bv = bfloatToFloat(bv, ot);
      }
      Id rt = typeOf(t);
      auto nanOf = [&](Id x) { return b_.op(Op::OpIsNan, rt, {x}); };
      Op op;
      switch (c->getPredicate()) {
        case llvm::CmpInst::FCMP_OEQ:
          op = Op::OpFOrdEqual;
          break;
        case llvm::CmpInst::FCMP_OGT:
          op = Op::OpFOrdGreaterThan;
          break;
        case llvm::CmpInst::FCMP_OGE:
          op = Op::OpFOrdGreaterThanEqual;
          break;
        case llvm::CmpInst::FCMP_OLT:
          op = Op::OpFOrdLessThan;
          break;
        case llvm::CmpInst::FCMP_OLE:
          op = Op::OpFOrdLessThanEqual;
          break;
        case llvm::CmpInst::FCMP_ONE:
          op = Op::OpFOrdNotEqual;
          break;
        case llvm::CmpInst::FCMP_UEQ:
          op = Op::OpFUnordEqual;
          break;
        case llvm::CmpInst::FCMP_UGT:
          op = Op::OpFUnordGreaterThan;
          break;
        case llvm::CmpInst::FCMP_UGE:
          op = Op::OpFUnordGreaterThanEqual;
          break;
        case llvm::CmpInst::FCMP_ULT:
          op = Op::OpFUnordLessThan;
          break;
        case llvm::CmpInst::FCMP_ULE:
          op = Op::OpFUnordLessThanEqual;
          break;
        case llvm::CmpInst::FCMP_UNE:
          op = Op::OpFUnordNotEqual;
          break;
        case llvm::CmpInst::FCMP_UNO:
          return b_.op(Op::OpLogicalOr, rt, {nanOf(a), nanOf(bv)}, resultId(&i));
        case llvm::CmpInst::FCMP_ORD:
          return b_.op(Op::OpLogicalNot, rt, {b_.op(Op::OpLogicalOr, rt, {nanOf(a), nanOf(bv)})}, resultId(&i));
        case llvm::CmpInst::FCMP_TRUE:
          define(&i, splatLike(t, b_.constantBool(true)));
          return 0;
        case llvm::CmpInst::FCMP_FALSE:
          define(&i, splatLike(t, b_.constantBool(false)));
          return 0;
        default:
          unsupported(&i, "floating-point comparison predicate");
      }
      return b_.op(op, rt, {a, bv}, resultId(&i));
    }
    case llvm::Instruction::Trunc: {
      Id v = value(i.getOperand(0));
      if (t->isIntOrIntVectorTy(1)) {
        llvm::Type* st = i.getOperand(0)->getType();
        Id bit = b_.op(Op::OpBitwiseAnd, typeOf(st), {v, intConst(st, 1)});
        return b_.op(Op::OpINotEqual, typeOf(t), {bit, intConst(st, 0)}, resultId(&i));
      }
      return b_.op(Op::OpUConvert, typeOf(t), {v}, resultId(&i));
    }
    case llvm::Instruction::ZExt:
    case llvm::Instruction::SExt: {
      Id v = value(i.getOperand(0));
      if (i.getOperand(0)->getType()->isIntOrIntVectorTy(1)) {
        uint64_t one = i.getOpcode() == llvm::Instruction::ZExt ? 1 : ~uint64_t(0);
        return b_.op(Op::OpSelect, typeOf(t), {v, intConst(t, one), intConst(t, 0)}, resultId(&i));
      }
      return b_.op(i.getOpcode() == llvm::Instruction::ZExt ? Op::OpUConvert : Op::OpSConvert, typeOf(t), {v},
                   resultId(&i));
    }
    case llvm::Instruction::FPTrunc:
    case llvm::Instruction::FPExt: {
      llvm::Type* from = i.getOperand(0)->getType();
      // float(half(x)) must round; some drivers (NVIDIA 580) fold the conversion pair away, so say it explicitly.
      if (auto* narrow = llvm::dyn_cast<llvm::FPTruncInst>(i.getOperand(0));
          narrow && from->getScalarType()->isHalfTy() && t->getScalarType()->isFloatTy() &&
          narrow->getOperand(0)->getType() == t)
        return b_.op(Op::OpQuantizeToF16, typeOf(t), {value(narrow->getOperand(0))}, resultId(&i));
      Id v = value(i.getOperand(0));
      llvm::Type* f32t = withElement(t, llvm::Type::getFloatTy(t->getContext()));
      if (from->getScalarType()->isBFloatTy()) {
        Id f = bfloatToFloat(v, from);
        Id out = t->getScalarType()->isFloatTy() ? f : b_.op(Op::OpFConvert, typeOf(t), {f});
        define(&i, out);
        return out;
      }
      if (isBf) {
        Id f = from->getScalarType()->isFloatTy() ? v : b_.op(Op::OpFConvert, typeOf(f32t), {v});
        Id out = floatToBfloat(f, t, knownNeverNaN(i.getOperand(0)));
        define(&i, out);
        return out;
      }
      return b_.op(Op::OpFConvert, typeOf(t), {v}, resultId(&i));
    }
    case llvm::Instruction::FPToUI:
    case llvm::Instruction::FPToSI: {
      llvm::Type* from = i.getOperand(0)->getType();
      Id v = value(i.getOperand(0));
      if (from->getScalarType()->isBFloatTy()) v = bfloatToFloat(v, from);
      Op op = i.getOpcode() == llvm::Instruction::FPToUI ? Op::OpConvertFToU : Op::OpConvertFToS;
      if (t->isIntOrIntVectorTy(1)) {
        llvm::Type* i32 = withElement(t, llvm::Type::getInt32Ty(t->getContext()));
        Id n = b_.op(op, typeOf(i32), {v});
        return b_.op(Op::OpINotEqual, typeOf(t), {n, intConst(i32, 0)}, resultId(&i));
      }
      return b_.op(op, typeOf(t), {v}, resultId(&i));
    }
    case llvm::Instruction::UIToFP:
    case llvm::Instruction::SIToFP: {
      llvm::Type* from = i.getOperand(0)->getType();
      Id v = value(i.getOperand(0));
      if (from->isIntOrIntVectorTy(1)) {
        llvm::Type* i32 = withElement(from, llvm::Type::getInt32Ty(t->getContext()));
        uint64_t one = i.getOpcode() == llvm::Instruction::UIToFP ? 1 : ~uint64_t(0);
        v = b_.op(Op::OpSelect, typeOf(i32), {v, intConst(i32, one), intConst(i32, 0)});
      }
      Op op = i.getOpcode() == llvm::Instruction::UIToFP ? Op::OpConvertUToF : Op::OpConvertSToF;
      if (!isBf) return b_.op(op, typeOf(t), {v}, resultId(&i));
      llvm::Type* f32t = withElement(t, llvm::Type::getFloatTy(t->getContext()));
      Id out = floatToBfloat(b_.op(op, typeOf(f32t), {v}), t, /*neverNaN=*/true);
      define(&i, out);
      return out;
    }
    case llvm::Instruction::BitCast: {
      // InstCombine turns `trunc (extractelement <3 x i32> v, k)` into an extract from `bitcast v to <6 x i16>`.
      // Such views wider than SPIR-V's vectors are never materialized; their extracts read the source directly.
      if (isNarrowingView(i) || isBoolMask(i)) return 0;
      Id v = value(i.getOperand(0));
      if (typeOf(t) == typeOf(i.getOperand(0)->getType())) {
        define(&i, v);
        return v;
      }
      return b_.op(Op::OpBitcast, typeOf(t), {v}, resultId(&i));
    }
    case llvm::Instruction::PtrToInt: {
      if (isLogicalPointer(i.getOperand(0))) unsupported(&i, "the address of threadgroup or thread memory");
      Id v = value(i.getOperand(0));
      if (t->getIntegerBitWidth() == 64) {
        define(&i, v);
        return v;
      }
      return b_.op(Op::OpUConvert, typeOf(t), {v}, resultId(&i));
    }
    case llvm::Instruction::IntToPtr: {
      if (isLogicalPointer(&i)) unsupported(&i, "an integer converted to a threadgroup or thread pointer");
      Id v = value(i.getOperand(0));
      if (i.getOperand(0)->getType()->getIntegerBitWidth() == 64) {
        define(&i, v);
        return v;
      }
      return b_.op(Op::OpUConvert, u64(), {v}, resultId(&i));
    }
    case llvm::Instruction::AddrSpaceCast: {
      // Generic pointers that stayed generic: device addresses stay addresses, thread/threadgroup offsets stay offsets.
      if (isLogicalPointer(&i) != isLogicalPointer(i.getOperand(0)))
        unsupported(&i, "a pointer that may point into device or threadgroup memory");
      Id v = value(i.getOperand(0));
      if (typeOf(t) != typeOf(i.getOperand(0)->getType())) return b_.op(Op::OpUConvert, typeOf(t), {v}, resultId(&i));
      define(&i, v);
      return v;
    }
    case llvm::Instruction::Freeze: {
      Id v = value(i.getOperand(0));
      define(&i, v);
      return v;
    }
    case llvm::Instruction::Select: {
      auto* s = llvm::cast<llvm::SelectInst>(&i);
      if (t->isPointerTy()) baseOf(&i);  // diagnoses selects between different variables
      return b_.op(Op::OpSelect, typeOf(t),
                   {value(s->getCondition()), value(s->getTrueValue()), value(s->getFalseValue())}, resultId(&i));
    }
    case llvm::Instruction::ExtractElement: {
      auto* e = llvm::cast<llvm::ExtractElementInst>(&i);
      if (auto* view = llvm::dyn_cast<llvm::BitCastInst>(e->getVectorOperand()); view && isNarrowingView(*view))
        return extractFromView(*view, llvm::cast<llvm::ConstantInt>(e->getIndexOperand())->getZExtValue(), &i);
      if (llvm::cast<llvm::FixedVectorType>(e->getVectorOperandType())->getNumElements() == 1) {
        Id v = value(e->getVectorOperand());
        define(&i, v);
        return v;
      }
      if (auto* ci = llvm::dyn_cast<llvm::ConstantInt>(e->getIndexOperand()))
        return b_.op(Op::OpCompositeExtract, typeOf(t),
                     {value(e->getVectorOperand()), static_cast<uint32_t>(ci->getZExtValue())}, resultId(&i));
      return b_.op(Op::OpVectorExtractDynamic, typeOf(t), {value(e->getVectorOperand()), value(e->getIndexOperand())},
                   resultId(&i));
    }
    case llvm::Instruction::InsertElement: {
      auto* e = llvm::cast<llvm::InsertElementInst>(&i);
      if (llvm::cast<llvm::FixedVectorType>(t)->getNumElements() == 1) {
        Id v = value(e->getOperand(1));
        define(&i, v);
        return v;
      }
      if (auto* ci = llvm::dyn_cast<llvm::ConstantInt>(e->getOperand(2)))
        return b_.op(Op::OpCompositeInsert, typeOf(t),
                     {value(e->getOperand(1)), value(e->getOperand(0)), static_cast<uint32_t>(ci->getZExtValue())},
                     resultId(&i));
      return b_.op(Op::OpVectorInsertDynamic, typeOf(t),
                   {value(e->getOperand(0)), value(e->getOperand(1)), value(e->getOperand(2))}, resultId(&i));
    }
    case llvm::Instruction::ShuffleVector: {
      auto* s = llvm::cast<llvm::ShuffleVectorInst>(&i);
      auto* rt = llvm::dyn_cast<llvm::FixedVectorType>(t);
      if (!rt) unsupported(&i, "scalable vector shuffle");
      unsigned n0 = llvm::cast<llvm::FixedVectorType>(s->getOperand(0)->getType())->getNumElements();
      if (n0 > 1 && rt->getNumElements() > 1) {
        std::vector<uint32_t> ops{value(s->getOperand(0)), value(s->getOperand(1))};
        for (int m : s->getShuffleMask()) ops.push_back(m < 0 ? 0xFFFFFFFFu : static_cast<uint32_t>(m));
        return b_.op(Op::OpVectorShuffle, typeOf(t), ops, resultId(&i));
      }
      // One-element vectors are scalars: pick each lane.
      llvm::Type* et = rt->getElementType();
      std::vector<Id> lanes;
      for (int m : s->getShuffleMask()) {
        if (m < 0) {
          lanes.push_back(b_.undef(typeOf(et)));
          continue;
        }
        const llvm::Value* src = s->getOperand(unsigned(m) < n0 ? 0 : 1);
        unsigned idx = unsigned(m) < n0 ? unsigned(m) : unsigned(m) - n0;
        lanes.push_back(n0 == 1 ? value(src) : b_.op(Op::OpCompositeExtract, typeOf(et), {value(src), idx}));
      }
      if (lanes.size() == 1) {
        define(&i, lanes[0]);
        return lanes[0];
      }
      return b_.op(Op::OpCompositeConstruct, typeOf(t), lanes, resultId(&i));
    }
    case llvm::Instruction::ExtractValue: {
      auto* e = llvm::cast<llvm::ExtractValueInst>(&i);
      std::vector<uint32_t> ops{value(e->getAggregateOperand())};
      for (unsigned idx : e->indices()) ops.push_back(idx);
      return b_.op(Op::OpCompositeExtract, typeOf(t), ops, resultId(&i));
    }
    case llvm::Instruction::InsertValue: {
      auto* e = llvm::cast<llvm::InsertValueInst>(&i);
      std::vector<uint32_t> ops{value(e->getInsertedValueOperand()), value(e->getAggregateOperand())};
      for (unsigned idx : e->indices()) ops.push_back(idx);
      return b_.op(Op::OpCompositeInsert, typeOf(t), ops, resultId(&i));
    }
    case llvm::Instruction::GetElementPtr: {
      auto* gep = llvm::cast<llvm::GetElementPtrInst>(&i);
      if (t->isVectorTy()) unsupported(&i, "a vector of pointers");
      Id intType = typeOf(t);
      unsigned width = b_.scalarWidth(intType);
      Id acc = value(gep->getPointerOperand());
      uint64_t constOff = 0;
      for (auto it = llvm::gep_type_begin(gep); it != llvm::gep_type_end(gep); ++it) {
        const llvm::Value* idx = it.getOperand();
        if (llvm::StructType* st = it.getStructTypeOrNull()) {
          constOff += dl_.getStructLayout(st)->getElementOffset(
              static_cast<unsigned>(llvm::cast<llvm::ConstantInt>(idx)->getZExtValue()));
          continue;
        }
        uint64_t stride = it.getSequentialElementStride(dl_);
        if (auto* ci = llvm::dyn_cast<llvm::ConstantInt>(idx)) {
          constOff += static_cast<uint64_t>(ci->getSExtValue()) * stride;
          continue;
        }
        Id iv = value(idx);
        unsigned w = idx->getType()->getIntegerBitWidth();
        if (w != width) iv = b_.op(w > width ? Op::OpUConvert : Op::OpSConvert, intType, {iv});  // indices are signed
        if (stride != 1) iv = b_.op(Op::OpIMul, intType, {iv, b_.constant(intType, stride)});
        acc = b_.op(Op::OpIAdd, intType, {acc, iv});
      }
      if (constOff) acc = b_.op(Op::OpIAdd, intType, {acc, b_.constant(intType, constOff)});
      define(&i, acc);
      return acc;
    }
    case llvm::Instruction::Load: {
      auto* ld = llvm::cast<llvm::LoadInst>(&i);
      if (ld->isAtomic()) {
        uint32_t scope = 0;
        Id pointee = 0;
        Id p = atomicPointer(&i, ld->getPointerOperand(), t, &scope, &pointee);
        std::vector<uint32_t> ops{p, constU32(scope), constU32(semanticsFor(ld->getOrdering(), scope))};
        if (pointee == typeOf(t)) return b_.op(Op::OpAtomicLoad, typeOf(t), ops, resultId(&i));
        return b_.op(Op::OpBitcast, typeOf(t), {b_.op(Op::OpAtomicLoad, pointee, ops)}, resultId(&i));
      }
      Id v = load(&i, t, ld->getPointerOperand(), value(ld->getPointerOperand()), ld->getAlign().value());
      define(&i, v);
      return v;
    }
    case llvm::Instruction::Store: {
      auto* st = llvm::cast<llvm::StoreInst>(&i);
      llvm::Type* vt = st->getValueOperand()->getType();
      if (st->isAtomic()) {
        uint32_t scope = 0;
        Id pointee = 0;
        Id p = atomicPointer(&i, st->getPointerOperand(), vt, &scope, &pointee);
        Id v = value(st->getValueOperand());
        if (pointee != typeOf(vt)) v = b_.op(Op::OpBitcast, pointee, {v});
        b_.opNoResult(Op::OpAtomicStore, {p, constU32(scope), constU32(semanticsFor(st->getOrdering(), scope)), v});
        return 0;
      }
      store(&i, vt, st->getPointerOperand(), value(st->getPointerOperand()), value(st->getValueOperand()),
            st->getAlign().value());
      return 0;
    }
    case llvm::Instruction::AtomicRMW: {
      auto* rmw = llvm::cast<llvm::AtomicRMWInst>(&i);
      uint32_t scope = 0;
      Id pointee = 0;
      Id p = atomicPointer(&i, rmw->getPointerOperand(), t, &scope, &pointee);
      Id sem = constU32(semanticsFor(rmw->getOrdering(), scope));
      Id v = value(rmw->getValOperand());
      bool viaBits = pointee != typeOf(t);  // an integer exchange of an atomic float's bits
      if (viaBits && rmw->getOperation() != llvm::AtomicRMWInst::Xchg)
        unsupported(&i, "integer atomic arithmetic on an atomic float");
      if (viaBits) v = b_.op(Op::OpBitcast, pointee, {v});
      if (t->getScalarSizeInBits() == 64 && t->isIntegerTy()) b_.capability(spv::Capability::Int64Atomics);
      Op op;
      switch (rmw->getOperation()) {
        case llvm::AtomicRMWInst::Xchg:
          op = Op::OpAtomicExchange;
          break;
        case llvm::AtomicRMWInst::Add:
          op = Op::OpAtomicIAdd;
          break;
        case llvm::AtomicRMWInst::Sub:
          op = Op::OpAtomicISub;
          break;
        case llvm::AtomicRMWInst::And:
          op = Op::OpAtomicAnd;
          break;
        case llvm::AtomicRMWInst::Or:
          op = Op::OpAtomicOr;
          break;
        case llvm::AtomicRMWInst::Xor:
          op = Op::OpAtomicXor;
          break;
        case llvm::AtomicRMWInst::Max:
          op = Op::OpAtomicSMax;
          break;
        case llvm::AtomicRMWInst::Min:
          op = Op::OpAtomicSMin;
          break;
        case llvm::AtomicRMWInst::UMax:
          op = Op::OpAtomicUMax;
          break;
        case llvm::AtomicRMWInst::UMin:
          op = Op::OpAtomicUMin;
          break;
        case llvm::AtomicRMWInst::FAdd:
        case llvm::AtomicRMWInst::FSub:
          b_.extension("SPV_EXT_shader_atomic_float_add");
          b_.capability(t->isHalfTy()     ? spv::Capability::AtomicFloat16AddEXT
                        : t->isDoubleTy() ? spv::Capability::AtomicFloat64AddEXT
                                          : spv::Capability::AtomicFloat32AddEXT);
          if (t->isHalfTy()) b_.extension("SPV_EXT_shader_atomic_float16_add");
          if (rmw->getOperation() == llvm::AtomicRMWInst::FSub) v = b_.op(Op::OpFNegate, typeOf(t), {v});
          op = Op::OpAtomicFAddEXT;
          break;
        case llvm::AtomicRMWInst::FMax:
        case llvm::AtomicRMWInst::FMin:
          b_.extension("SPV_EXT_shader_atomic_float_min_max");
          b_.capability(t->isHalfTy()     ? spv::Capability::AtomicFloat16MinMaxEXT
                        : t->isDoubleTy() ? spv::Capability::AtomicFloat64MinMaxEXT
                                          : spv::Capability::AtomicFloat32MinMaxEXT);
          op = rmw->getOperation() == llvm::AtomicRMWInst::FMax ? Op::OpAtomicFMaxEXT : Op::OpAtomicFMinEXT;
          break;
        default:
          unsupported(&i,
                      "atomic operation " + std::string(llvm::AtomicRMWInst::getOperationName(rmw->getOperation())));
      }
      if (viaBits)
        return b_.op(Op::OpBitcast, typeOf(t), {b_.op(op, pointee, {p, constU32(scope), sem, v})}, resultId(&i));
      return b_.op(op, typeOf(t), {p, constU32(scope), sem, v}, resultId(&i));
    }
    case llvm::Instruction::AtomicCmpXchg: {
      auto* cx = llvm::cast<llvm::AtomicCmpXchgInst>(&i);
      llvm::Type* vt = cx->getNewValOperand()->getType();
      if (!vt->isIntegerTy()) unsupported(&i, "compare-exchange of a non-integer value");
      if (vt->getIntegerBitWidth() == 64) b_.capability(spv::Capability::Int64Atomics);
      uint32_t scope = 0;
      Id pointee = 0;
      Id p = atomicPointer(&i, cx->getPointerOperand(), vt, &scope, &pointee);
      Id expected = value(cx->getCompareOperand());
      Id old =
          b_.op(Op::OpAtomicCompareExchange, typeOf(vt),
                {p, constU32(scope), constU32(semanticsFor(cx->getSuccessOrdering(), scope)),
                 constU32(semanticsFor(cx->getFailureOrdering(), scope)), value(cx->getNewValOperand()), expected});
      Id ok = b_.op(Op::OpIEqual, boolType(), {old, expected});
      return b_.op(Op::OpCompositeConstruct, typeOf(t), {old, ok}, resultId(&i));
    }
    case llvm::Instruction::Fence: {
      auto* f = llvm::cast<llvm::FenceInst>(&i);
      uint32_t scope = static_cast<uint32_t>(spv::Scope::Device);
      b_.opNoResult(Op::OpMemoryBarrier,
                    {constU32(scope), constU32(semanticsFor(f->getOrdering(), scope) |
                                               static_cast<uint32_t>(spv::MemorySemanticsMask::WorkgroupMemory))});
      return 0;
    }
    case llvm::Instruction::Call:
      return emitCall(llvm::cast<llvm::CallInst>(i));
    case llvm::Instruction::Alloca: {
      logicalVariable(&i, &i);
      return 0;
    }
    default:
      break;
  }
  unsupported(&i, std::string("LLVM instruction '") + i.getOpcodeName() + "'");
}

// ---------------------------------------------------------------------------------------------------------------
// Module structure and control flow

Id Emitter::builtinInput(spv::BuiltIn builtin, Id type) {
  auto it = builtins_.find(builtin);
  if (it != builtins_.end()) return b_.op(Op::OpLoad, type, {it->second});
  Id var = b_.variable(b_.typePointer(spv::StorageClass::Input, type), spv::StorageClass::Input);
  b_.decorate(var, spv::Decoration::BuiltIn, {static_cast<uint32_t>(builtin)});
  builtins_[builtin] = var;
  interface_.push_back(var);
  return b_.op(Op::OpLoad, type, {var});
}

Id Emitter::pushConstant(uint32_t offset, Id type) {
  auto it = pushMembers_.find(offset);
  if (it == pushMembers_.end())
    internalError(current_, "push constant at offset " + std::to_string(offset) + " is outside the block");
  Id ptr = b_.op(Op::OpAccessChain, b_.typePointer(spv::StorageClass::PushConstant, type),
                 {pushBlock_, constU32(it->second)});
  return b_.op(Op::OpLoad, type, {ptr});
}

// OpLoopMerge's loop control: DontUnroll where the source asked for no unrolling (`#pragma clang loop
// unroll(disable)`, MLX's STEEL_PRAGMA_NO_UNROLL), which a driver would otherwise be free to ignore; without it a
// driver may unroll a loop whose body is large (the NAX GEMM's K steps) and spend minutes building the pipeline.
// M2V_LOOP_CONTROL=0 leaves every loop's control None (to measure it).
static uint32_t loopControl(const llvm::Loop& loop) {
  static const bool enabled = lower::ruleEnabled("M2V_LOOP_CONTROL");
  constexpr uint32_t kDontUnroll = 0x2;
  return enabled && llvm::findOptionMDForLoop(&loop, "llvm.loop.unroll.disable") ? kDontUnroll : 0;
}

std::vector<uint32_t> Emitter::run() {
  llvm::Function* fn = module_.getFunction("main");
  if (!fn || fn->isDeclaration()) {
    diags_.internal("no entry function after lowering");
    return {};
  }
  try {
    b_.capability(spv::Capability::Shader);
    b_.capability(spv::Capability::PhysicalStorageBufferAddresses);
    b_.capability(spv::Capability::Int64);

    // Push-constant block: the grid, then one address per buffer (docs/ABI.md).
    {
      Id uvec3 = b_.typeVector(u32(), 3);
      std::vector<Id> members{uvec3};
      std::vector<uint32_t> offsets{kPushGridOffset};
      pushMembers_[kPushGridOffset] = 0;
      for (uint32_t off = kPushArgsOffset; off + 8 <= reflection_.pushConstantSize; off += 8) {
        pushMembers_[off] = static_cast<uint32_t>(members.size());
        members.push_back(u64());
        offsets.push_back(off);
      }
      Id block = b_.typeStruct(members);
      b_.decorate(block, spv::Decoration::Block);
      for (uint32_t m = 0; m < offsets.size(); ++m) b_.memberDecorate(block, m, spv::Decoration::Offset, {offsets[m]});
      pushBlock_ = b_.variable(b_.typePointer(spv::StorageClass::PushConstant, block), spv::StorageClass::PushConstant);
      b_.name(pushBlock_, "args");
      interface_.push_back(pushBlock_);
    }
    // Workgroup size: specialization constants set when the pipeline is created.
    std::vector<Id> wgs;
    for (uint32_t k = 0; k < 3; ++k)
      wgs.push_back(workgroupSizeParts_[k] = b_.specConstant(u32(), 1, kWorkgroupSizeSpecBase + k));
    workgroupSize_ = b_.specConstantComposite(b_.typeVector(u32(), 3), wgs);
    std::vector<Id> nominal;
    for (uint32_t k = 0; k < 3; ++k) nominal.push_back(b_.specConstant(u32(), 1, kNominalThreadgroupSpecBase + k));
    nominalSize_ = b_.specConstantComposite(b_.typeVector(u32(), 3), nominal);
    std::vector<Id> shape;
    for (uint32_t k = 0; k < 3; ++k) shape.push_back(b_.specConstant(u32(), 0, kThreadgroupShapeSpecBase + k));
    threadgroupShape_ = b_.specConstantComposite(b_.typeVector(u32(), 3), shape);

    Id voidType = b_.typeVoid();
    Id fnType = b_.typeFunction(voidType, {});
    Id fnId = b_.newId();

    llvm::DominatorTree dt(*fn);
    llvm::PostDominatorTree pdt(*fn);
    llvm::LoopInfo li(dt);
    llvm::ReversePostOrderTraversal<llvm::Function*> rpo(fn);
    for (llvm::BasicBlock* bb : rpo) labels_[bb] = b_.newId();

    b_.beginFunction(fnId, voidType, fnType);
    for (llvm::BasicBlock* bb : rpo) {
      b_.label(labels_[bb]);
      for (llvm::Instruction& inst : *bb) {
        current_ = &inst;
        if (auto* phi = llvm::dyn_cast<llvm::PHINode>(&inst)) {
          if (phi->getType()->isPointerTy()) baseOf(phi);
          std::vector<uint32_t> ops;
          for (unsigned k = 0; k < phi->getNumIncomingValues(); ++k) {
            if (!labels_.count(phi->getIncomingBlock(k))) continue;  // unreachable predecessor
            ops.push_back(value(phi->getIncomingValue(k)));
            ops.push_back(labels_[phi->getIncomingBlock(k)]);
          }
          b_.op(Op::OpPhi, typeOf(phi->getType()), ops, resultId(phi));
          continue;
        }
        if (inst.isTerminator()) {
          if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(&inst)) {
            (void)ret;
            b_.opNoResult(Op::OpReturn, {});
          } else if (auto* br = llvm::dyn_cast<llvm::BranchInst>(&inst)) {
            llvm::Loop* loop = li.getLoopFor(bb);
            bool isHeader = loop && loop->getHeader() == bb;
            if (isHeader) {
              llvm::BasicBlock* latch = loop->getLoopLatch();
              llvm::BasicBlock* exit = loop->getExitBlock();
              if (!latch || !exit) unsupported(&inst, "a loop with several exits or back edges after structurizing");
              b_.opNoResult(Op::OpLoopMerge, {labels_[exit], labels_[latch], loopControl(*loop)});
            }
            if (br->isUnconditional() || br->getSuccessor(0) == br->getSuccessor(1)) {
              b_.opNoResult(Op::OpBranch, {labels_[br->getSuccessor(0)]});
            } else {
              bool isLatch = loop && loop->getLoopLatch() == bb;
              if (!isHeader && !isLatch) {
                llvm::DomTreeNode* node = pdt.getNode(bb);
                llvm::BasicBlock* merge = node && node->getIDom() ? node->getIDom()->getBlock() : nullptr;
                bool isBreak = loop && merge && !loop->contains(merge);
                if (!merge) unsupported(&inst, "a branch whose paths never meet again");
                if (!isBreak) b_.opNoResult(Op::OpSelectionMerge, {labels_[merge], 0});
              }
              b_.opNoResult(Op::OpBranchConditional,
                            {value(br->getCondition()), labels_[br->getSuccessor(0)], labels_[br->getSuccessor(1)]});
            }
          } else if (llvm::isa<llvm::UnreachableInst>(&inst)) {
            b_.opNoResult(Op::OpUnreachable, {});
          } else {
            unsupported(&inst, std::string("terminator '") + inst.getOpcodeName() + "'");
          }
          continue;
        }
        if (llvm::isa<llvm::AllocaInst>(inst)) {
          logicalVariable(&inst, &inst);
          continue;
        }
        Id r = emitOp(inst);
        if (r && !inst.getType()->isVoidTy() && !ids_.count(&inst)) ids_[&inst] = r;
      }
    }
    b_.endFunction();

    b_.entryPoint(spv::ExecutionModel::GLCompute, fnId, "main", interface_);
    b_.executionModeId(fnId, spv::ExecutionMode::LocalSizeId, wgs);
    if (options_.nativeBfloat16 && stats_.bfloatNarrowings > 0) {
      // Metal's narrowing rounds to nearest even; without this a narrowing OpFConvert may truncate (the H200's driver
      // truncates even with it: docs/BFLOAT16.md).
      b_.capability(spv::Capability::RoundingModeRTE);
      b_.executionMode(fnId, spv::ExecutionMode::RoundingModeRTE, {16});
    }
    b_.name(fnId, "main");

    reflection_.requiredSubgroupSize = usesSubgroups_ ? 32 : 0;
  } catch (EmitError&) {
    return {};
  }
  std::vector<uint32_t> words = b_.assemble();
  for (spv::Capability c : b_.capabilities()) reflection_.capabilities.push_back(Builder::capabilityName(c));
  for (const std::string& e : b_.extensions()) reflection_.extensions.push_back(e);
  return words;
}

std::vector<uint32_t> emitModule(llvm::Module& m, KernelReflection& reflection, const frontend::SourceMap& sources,
                                 Diagnostics& diags, const EmitOptions& options, EmitStats* stats) {
  Emitter e(m, reflection, sources, diags, options);
  std::vector<uint32_t> words = e.run();
  if (stats) *stats = e.stats();
  return words;
}

}  // namespace m2v::spirv
