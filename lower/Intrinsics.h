// Names of the compiler's own intrinsics: the `__m2v::` functions metal_stdlib declares (docs/STDLIB.md) and the
// `m2v.*` pseudo-intrinsics the lowering passes create for the SPIR-V emitter.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace llvm {
class CallInst;
class Function;
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
// simdgroup_matrix fragments between Apple's lane layout and the device's matrix layout (type suffix .v2f16/.v2f32;
// lower/CooperativeMatrix.cpp), and the 16x8x8 multiply:
// <4 x float> (<2 x half> a top, a bottom, b, <2 x float> c top, c bottom)
inline constexpr const char* kSgmToNvAC = "m2v.sgm.to_nv_ac";
inline constexpr const char* kSgmToNvB = "m2v.sgm.to_nv_b";
inline constexpr const char* kSgmToApple = "m2v.sgm.to_apple";
inline constexpr const char* kCoopMatMulAddF16 = "m2v.coopmat.muladd.16x8x8.f16";
inline constexpr const char* kDynamicThreadgroupMD = "m2v.dynamic_threadgroup";  // !{i32 index} on AS3 globals
}  // namespace pseudo

}  // namespace m2v::lower
