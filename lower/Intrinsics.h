// Names of the compiler's own intrinsics: the `__m2v::` functions metal_stdlib declares (docs/STDLIB.md) and the
// `m2v.*` pseudo-intrinsics the lowering passes create for the SPIR-V emitter.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace llvm {
class CallInst;
class Function;
class FunctionType;
class IRBuilderBase;
class Instruction;
class Module;
class StoreInst;
class Type;
class Value;
}

namespace m2v::lower {

// LLVM address spaces of Metal's memory (clang's NVPTX numbering, whose generic space 0 contains the others, so C++
// copies and member calls work on objects in any of them; docs/STDLIB.md).
inline constexpr unsigned kGenericAS = 0;  // `thread` memory and pointers not yet resolved
inline constexpr unsigned kDeviceAS = 1;
inline constexpr unsigned kThreadgroupAS = 3;
inline constexpr unsigned kConstantAS = 4;

// The base name of a `__m2v::NAME(...)` declaration ("simd_reduce_add"), or nullopt for any other function.
std::optional<std::string> stdlibIntrinsicName(const llvm::Function& f);

// `v` when it is a call to a function whose name starts with `prefix` (the m2v.* pseudo-intrinsics), else null.
llvm::CallInst* callToPseudo(llvm::Value* v, llvm::StringRef prefix);

// True for intrinsics that communicate between threads (must stay convergent and in uniform control flow).
bool isCrossLaneIntrinsic(llvm::StringRef name);

// `from`'s memory metadata (TBAA, alias scopes, invariance, non-temporality) on `to`: an access rewritten as another
// access of the same memory.
void copyAccessMetadata(llvm::Instruction& to, const llvm::Instruction& from);

// Replaces store `st` by a store of `value` to the same address with the same alignment and metadata, then deletes
// what computed the old stored value where nothing else uses it.
void replaceStoredValue(llvm::StoreInst* st, llvm::Value* value);

// "file.metal:LINE" of the kernel's own code that leads to `i` (the outermost call site when `i` was inlined from a
// header or helper); "?" without a location.
std::string kernelLocation(const llvm::Instruction& i);

// Whether a lowering or emission rule is on: the environment variable `variable` set to 0 turns it off, to measure
// what the rule does. Callers read it once (a function-local static).
bool ruleEnabled(const char* variable);

// Declares (or finds) the pseudo-intrinsic `name` of a whole-subgroup operation (the cooperative-matrix ones):
// convergent, no unwinding, returns; reads its pointer arguments when `readsArgMemory`, no memory otherwise.
llvm::Function* declareSubgroupPseudo(llvm::Module& m, llvm::StringRef name, llvm::FunctionType* type,
                                      bool readsArgMemory = false);

// A call of the pseudo-intrinsic `name` (declared on first use: no memory access, never merged with another call,
// since the emitter reads its constant operands).
llvm::CallInst* callPseudo(llvm::IRBuilderBase& b, const std::string& name, llvm::Type* type,
                           llvm::ArrayRef<llvm::Value*> args = {});

// Pseudo-intrinsics created by the lowering (all start with "m2v.").
namespace pseudo {
inline constexpr const char* kPushI64 = "m2v.push.i64";                                 // i64 (i32 offset)
inline constexpr const char* kPushGrid = "m2v.push.grid";                               // <3 x i32> ()
inline constexpr const char* kWorkgroupSize = "m2v.workgroup_size";                     // <3 x i32> ()
inline constexpr const char* kNominalThreadgroupSize = "m2v.nominal_threadgroup_size";  // <3 x i32> ()
inline constexpr const char* kThreadgroupShape = "m2v.threadgroup_shape";  // <3 x i32> (): 0s unless relaid out
inline constexpr const char* kSpecPrefix = "m2v.spec.";                                 // T (i32 spec id), one per type
inline constexpr const char* kBuiltinPrefix = "m2v.builtin.";  // workgroup_id, local_invocation_id, ...
inline constexpr const char* kNever = "m2v.never";                                       // i1 (): false
// A simdgroup or quadgroup function of a kernel's emulated body (lower/EmulateSimdgroups.cpp): the name continues
// with the metal_stdlib intrinsic's name and a '.' ("m2v.emulated.simd_reduce_add.<callee>"); the operands are the
// intrinsic's, then an i1 saying whether this thread takes part (Metal's active lanes).
inline constexpr const char* kEmulatedSimdPrefix = "m2v.emulated.";
// i32 (float), or vectors of them (name suffix .f32/.v2f32/.v4f32): the word whose high half is the float rounded to
// bfloat as a narrowing rounds it (lower/BFloatWords.cpp)
inline constexpr const char* kBfloatRoundedWord = "m2v.bfloat.rounded_word";
// simdgroup_matrix fragments between Apple's lane layout and the device's matrix layout (type suffix .v2f16/.v2bf16/
// .v2f32; lower/CooperativeMatrix.cpp), and the multiplies on the device's matrices. A multiply's name is a shape
// prefix below plus its element type, "f16" or "bf16"; operands are per-lane pairs (<2 x half> or <2 x bfloat>, and
// <2 x float> accumulators), the result the accumulator pairs:
inline constexpr const char* kSgmToNvAC = "m2v.sgm.to_nv_ac";
inline constexpr const char* kSgmToNvB = "m2v.sgm.to_nv_b";
inline constexpr const char* kSgmToApple = "m2v.sgm.to_apple";
// <4 x float> (a top, a bottom, b, c top, c bottom)
inline constexpr const char* kCoopMatMulAdd = "m2v.coopmat.muladd.16x8x8.";
// Two k steps: <4 x float> (a top, a bottom of k 0..7, the same of k 8..15, b of k 0..7, b of k 8..15, c top,
// c bottom)
inline constexpr const char* kCoopMatMulAddK16 = "m2v.coopmat.muladd.16x8x16.";
// Two k steps of two column blocks that share A: {<4 x float>, <4 x float>} (one 16x8x16 result per column block) (the
// four a pairs as for 16x8x16; b of k 0..7 and of k 8..15 for columns 0..7, the same for columns 8..15; c top,
// c bottom of columns 0..7, the same of columns 8..15)
inline constexpr const char* kCoopMatMulAddN16 = "m2v.coopmat.muladd.16x16x16.";
// An 8x8 B fragment in the device's layout straight from threadgroup memory: <2 x half> (ptr addrspace(3) first
// element, i32 row or column stride in bytes, i1 column major); the address and stride are 16-byte aligned.
inline constexpr const char* kCoopMatLoadB = "m2v.coopmat.load_b.8x8.f16";
inline constexpr const char* kDynamicThreadgroupMD = "m2v.dynamic_threadgroup";  // !{i32 index} on AS3 globals
}  // namespace pseudo

}  // namespace m2v::lower
