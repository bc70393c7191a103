// The emitter's internal state, shared by Emitter.cpp (values, memory, control flow) and EmitCalls.cpp (intrinsics).
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/PostDominators.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>

#include <array>
#include <map>
#include <string>
#include <tuple>

#include "Builder.h"
#include "Emitter.h"

namespace m2v::spirv {

// GLSL.std.450 instruction numbers the emitter uses.
namespace GLSL {
enum : uint32_t {
  RoundEven = 2,
  Trunc = 3,
  FAbs = 4,
  SAbs = 5,
  FSign = 6,
  Floor = 8,
  Ceil = 9,
  Fract = 10,
  Sin = 13,
  Cos = 14,
  Tan = 15,
  Asin = 16,
  Acos = 17,
  Atan = 18,
  Sinh = 19,
  Cosh = 20,
  Tanh = 21,
  Asinh = 22,
  Acosh = 23,
  Atanh = 24,
  Atan2 = 25,
  Pow = 26,
  Exp = 27,
  Log = 28,
  Exp2 = 29,
  Log2 = 30,
  Sqrt = 31,
  InverseSqrt = 32,
  FMin = 37,
  UMin = 38,
  SMin = 39,
  FMax = 40,
  UMax = 41,
  SMax = 42,
  Fma = 50,
  FrexpStruct = 52,
  Ldexp = 53,
  FindILsb = 73,
  FindUMsb = 75,
  NMin = 79,
  NMax = 80,
};
// The instruction of a min/max reduction kind ("fmin", "fmax", "smin", "smax", "umin", else "umax").
inline uint32_t minMax(const std::string& kind) {
  return kind == "fmin"   ? NMin
         : kind == "fmax" ? NMax
         : kind == "smin" ? SMin
         : kind == "smax" ? SMax
         : kind == "umin" ? UMin
                          : UMax;
}
}  // namespace GLSL

// What the emulated simdgroup functions' exchange array holds within the block being emitted (every thread of the
// workgroup runs the same sequence of them, so the slots hold the same words for all): the word in each slot (an
// LLVM value, its component, its word, whether it is a 0/1 predicate word), and whether a slot was read since the
// last barrier (it may be overwritten only after another one).
struct SimdExchangeState {
  static constexpr uint32_t kSlots = 4;
  using Key = std::tuple<const llvm::Value*, unsigned, unsigned, bool>;
  const llvm::BasicBlock* block = nullptr;
  std::array<Key, kSlots> held{};
  std::array<bool, kSlots> readSinceBarrier{true, true, true, true};  // unknown on entering a block
  uint32_t next = 0;
};

// Thrown to abandon a module after a diagnostic was reported.
struct EmitError {};

// Memory without device addresses (threadgroup, thread, and constant tables) is a typed SPIR-V variable; a pointer into
// it is the variable (known statically) plus a byte offset (a u32 value).
struct LogicalVariable {
  Id variable = 0;
  Id elementType = 0;  // the SPIR-V type of one element of the array the variable holds
  llvm::Type* elementLLVM = nullptr;
  unsigned elementBytes = 0;
  spv::StorageClass storage = spv::StorageClass::Function;
  bool atomic = false;
  // Typed as 32-bit words though narrower accesses exist: narrower loads shift, narrower stores are atomic
  // read-modify-writes of their word (Emitter::logicalVariable says when).
  bool subword = false;
};

class Emitter {
 public:
  Emitter(llvm::Module& m, KernelReflection& r, const frontend::SourceMap& s, Diagnostics& d, const EmitOptions& o)
      : module_(m), dl_(m.getDataLayout()), reflection_(r), sources_(s), diags_(d), options_(o) {}

  const EmitStats& stats() const { return stats_; }

  std::vector<uint32_t> run();

  // --- diagnostics
  [[noreturn]] void unsupported(const llvm::Instruction* at, const std::string& what);
  [[noreturn]] void internalError(const llvm::Instruction* at, const std::string& what);

  // --- types and values
  Id typeOf(llvm::Type* t);
  Id u32() { return b_.typeInt(32); }
  Id u64() { return b_.typeInt(64); }
  Id f32() { return b_.typeFloat(32); }
  Id boolType() { return b_.typeBool(); }
  Id constU32(uint32_t v) { return b_.constant(u32(), v); }
  Id value(const llvm::Value* v);
  Id constantValue(const llvm::Constant* c);
  void define(const llvm::Value* v, Id id);  // binds an emitted result to an LLVM value
  Id resultId(const llvm::Value* v);         // the id an instruction's result must use
  bool isLogicalPointer(const llvm::Value* v);
  const llvm::Value* baseOf(const llvm::Value* v);
  const llvm::Value* baseOfStep(const llvm::Value* v, llvm::SmallPtrSetImpl<const llvm::Value*>& pendingOn);
  Id emitOp(const llvm::Instruction& i);
  Id signedOp(const llvm::Instruction& i, spv::Op op);
  bool isNarrowingView(const llvm::Instruction& i);
  bool isBoolMask(const llvm::Instruction& i);
  Id extractFromView(const llvm::BitCastInst& view, uint64_t lane, const llvm::Instruction* result);

  // --- numeric helpers
  Id splatLike(llvm::Type* like, Id scalar);  // a constant of `like`'s shape
  Id intConst(llvm::Type* t, uint64_t v);
  Id bfloatToFloat(Id v, llvm::Type* bfType);
  // neverNaN: the float is known not to be a NaN (knownNeverNaN), so the rounding skips quieting one
  Id floatToBfloat(Id v, llvm::Type* bfType, bool neverNaN = false);
  Id nativeBfloatNarrowing(Id v, llvm::Type* bitsType);
  Id roundedBfloatWord(Id v, llvm::Type* wordType, bool neverNaN = false);
  bool knownNeverNaN(const llvm::Value* v);  // LLVM's floating-point class analysis
  llvm::Type* withElement(llvm::Type* t, llvm::Type* elem);
  Id glsl(Id type, uint32_t inst, const std::vector<Id>& args);
  Id glslFloat(llvm::Type* t, uint32_t inst, std::vector<Id> args, bool doubleOk);

  // --- memory
  Id load(const llvm::Instruction* at, llvm::Type* t, const llvm::Value* ptr, Id ptrId, uint64_t align);
  std::pair<Id, Id> subwordPlace(const LogicalVariable& var, const llvm::Value* ptr, Id ptrId);
  Id loadSubword(llvm::Type* t, const LogicalVariable& var, const llvm::Value* ptr, Id ptrId, uint64_t size);
  void storeSubword(llvm::Type* t, const LogicalVariable& var, const llvm::Value* ptr, Id ptrId, uint64_t size, Id v);
  void store(const llvm::Instruction* at, llvm::Type* t, const llvm::Value* ptr, Id ptrId, Id valueId, uint64_t align);
  // An access of `size` bytes to a variable of narrower elements, as 32-bit words (more than 4 elements).
  std::vector<Id> packUnits(const llvm::Instruction* at, const LogicalVariable& var, const std::vector<Id>& units,
                            uint64_t size);
  std::vector<Id> unpackUnits(const llvm::Instruction* at, const LogicalVariable& var, Id v, uint64_t size);
  Id physicalPointer(Id address, Id pointeeType);
  std::vector<std::pair<llvm::Type*, uint64_t>> aggregateMembers(llvm::Type* t);
  Id elementIndex(Id offset, llvm::Type* ptrType, unsigned elementBytes);
  Id offsetPointer(const llvm::Value* ptr, Id ptrId, uint64_t bytes);
  Id logicalElementPointer(const LogicalVariable& var, Id elementIndex);
  LogicalVariable& logicalVariable(const llvm::Instruction* at, const llvm::Value* base);
  Id atomicPointer(const llvm::Instruction* at, const llvm::Value* ptr, llvm::Type* t, uint32_t* scope, Id* pointee);

  // --- calls
  Id emitCall(const llvm::CallInst& call);
  Id emitLLVMIntrinsic(const llvm::CallInst& call, llvm::Intrinsic::ID id);
  Id emitStdlibIntrinsic(const llvm::CallInst& call, const std::string& name);
  Id emitPseudoIntrinsic(const llvm::CallInst& call, llvm::StringRef name);
  Id emitMatrixIntrinsic(const llvm::CallInst& call, llvm::StringRef name);  // EmitMatrix.cpp
  void noteCooperativeShape(const std::string& shape);                       // EmitMatrix.cpp
  Id cooperativeMatrix(const llvm::CallInst& call, Id component, uint32_t rows, uint32_t columns, khr::MatrixUse use,
                       std::initializer_list<std::pair<unsigned, uint32_t>> slots);
  Id accumulatorPairs(Id d, llvm::Type* t, std::initializer_list<uint32_t> slots);
  Id emitMultiplyOnBFloat16x16x16(const llvm::CallInst& call, bool twoKSteps, bool twoColumnBlocks);
  Id builtinInput(spv::BuiltIn builtin, Id type);
  Id pushConstant(uint32_t offset, Id type);
  Id laneId();
  Id subgroupSize();
  Id emitEmulatedSimd(const llvm::CallInst& call, const std::string& name);  // EmitSimdEmulation.cpp
  Id simdExchange();
  void simdExchangeBarrier();
  void storeSimdWord(uint32_t slot, Id index, Id word);
  void publishSimdOperands(const llvm::CallInst& call);
  std::vector<Id> simdWords(llvm::Type* scalar, Id v);
  void useSubgroups(spv::Capability c);

  // state
  llvm::Module& module_;
  const llvm::DataLayout& dl_;
  KernelReflection& reflection_;
  const frontend::SourceMap& sources_;
  Diagnostics& diags_;
  const EmitOptions options_;
  EmitStats stats_;
  Builder b_;
  llvm::DenseMap<const llvm::Value*, Id> ids_;
  llvm::DenseMap<const llvm::Value*, bool> defined_;
  llvm::DenseMap<const llvm::BasicBlock*, Id> labels_;
  llvm::DenseMap<const llvm::Value*, const llvm::Value*> bases_;  // logical pointer -> its variable (or null)
  llvm::SmallPtrSet<const llvm::Value*, 8> basesInProgress_;      // baseOf's walk: the values it is inside of
  std::map<const llvm::Value*, LogicalVariable> logicalVars_;
  // The loads, stores and atomics of each logical variable, found in one walk of the module at the first
  // logicalVariable() (a walk per variable made large unrolled kernels quadratic).
  llvm::DenseMap<const llvm::Value*, std::vector<const llvm::Instruction*>> accessesOf_;
  bool accessesIndexed_ = false;
  std::map<const llvm::Type*, Id> types_;
  std::map<spv::BuiltIn, Id> builtins_;
  std::map<uint32_t, Id> specConstants_;
  std::vector<Id> interface_;
  Id pushBlock_ = 0;
  std::map<uint32_t, uint32_t> pushMembers_;  // offset -> member index
  Id workgroupSize_ = 0;
  Id workgroupSizeParts_[3] = {0, 0, 0};  // the x, y, z specialization constants
  Id simdExchange_ = 0;                   // the workgroup array emulated simdgroup functions exchange words through
  Id simdExchangeStride_ = 0;             // words per slot: the threadgroup rounded up to whole simdgroups
  SimdExchangeState simdExchangeState_;
  Id nominalSize_ = 0;
  Id threadgroupShape_ = 0;
  bool usesSubgroups_ = false;
  const llvm::Instruction* current_ = nullptr;
};

}  // namespace m2v::spirv
