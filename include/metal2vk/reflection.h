// Kernel reflection: everything a runtime needs to run a compiled module (see docs/ABI.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace m2v {

// Specialization-constant ids fixed by the ABI.
inline constexpr uint32_t kFunctionConstantDefinedSpecBase = 65536;
inline constexpr uint32_t kWorkgroupSizeSpecBase = 131072;       // this dispatch's workgroup size
inline constexpr uint32_t kNominalThreadgroupSpecBase = 131075;  // the threadgroup size the host asked for
// Metal's shape of this region's threadgroup when the runtime runs it as a one-dimensional workgroup of the same
// size (a shape past the device's per-axis limits, e.g. z > 64); 0: the workgroup has Metal's shape.
inline constexpr uint32_t kThreadgroupShapeSpecBase = 131078;
inline constexpr uint32_t kThreadgroupLengthSpecBase = 131088;
// true: the kernel runs its body with 32-lane simdgroups emulated over any subgroup size (docs/ABI.md, "Subgroups").
inline constexpr uint32_t kEmulateSimdgroupsSpecId = 131120;
inline constexpr uint32_t kPushConstantLimit = 128;
inline constexpr uint32_t kPushGridOffset = 0;
inline constexpr uint32_t kPushArgsOffset = 16;
// Metal's limits on a kernel's signature: [[buffer(0..30)]], [[threadgroup(0..30)]], [[function_constant(0..65535)]].
inline constexpr uint32_t kMaxBufferArguments = 31;
inline constexpr uint32_t kMaxThreadgroupArguments = 31;
inline constexpr uint32_t kMaxFunctionConstantIndex = 65535;

enum class ParamKind { Buffer, Threadgroup, Builtin };

struct KernelParam {
  std::string name;
  std::string type;          // Metal spelling, e.g. "const device float*"
  std::string addressSpace;  // "device", "constant", "threadgroup", "thread" or ""
  ParamKind kind = ParamKind::Buffer;
  uint32_t index = 0;            // [[buffer(n)]] / [[threadgroup(n)]]
  std::string builtin;           // Metal attribute name for builtins
  std::string functionConstant;  // [[function_constant(name)]] guard, if any
};

struct PushArg {
  uint32_t buffer = 0;  // [[buffer(n)]] index
  uint32_t offset = 0;  // byte offset in the push block, or in the argument buffer
  // False when the module never reads the address (a parameter only a disabled template branch uses): Metal lets
  // the host leave such a buffer unbound.
  bool used = true;
};

struct FunctionConstant {
  std::string name;
  std::string type;  // "bool", "int", "uint", "float", "half", "short", "ushort", ...
  uint32_t index = 0;
  uint32_t specId = 0;
  uint32_t definedSpecId = 0;
};

struct DynamicThreadgroupMemory {
  uint32_t index = 0;
  uint32_t specId = 0;
};

struct KernelReflection {
  std::string entry;
  std::string spirvEntry = "main";
  std::string source;
  uint32_t line = 0;
  std::vector<KernelParam> params;
  uint32_t pushConstantSize = 16;
  bool argumentBuffer = false;
  std::vector<PushArg> args;
  // Offset in the push block of the device address of this submission's abort word (docs/ABI.md, "Abort word");
  // 0: the module never reads one (no loops, or built without abort checks).
  uint32_t abortWordOffset = 0;
  // Where the kernel waits for a value another thread stores to device memory (a loop an atomic or volatile load
  // decides to leave; "file.metal:LINE" of the kernel's code that does it): spin-waits, which finish only while the
  // threads they wait for run (lower/FindSpinWaits.cpp). Empty for most kernels.
  std::vector<std::string> spinWaits;
  std::vector<FunctionConstant> functionConstants;
  uint32_t staticThreadgroupBytes = 0;
  std::vector<DynamicThreadgroupMemory> dynamicThreadgroupMemory;
  uint32_t requiredSubgroupSize = 0;
  // The module also has a body with Metal's 32-lane simdgroups emulated over any subgroup size, chosen by
  // specialization constant kEmulateSimdgroupsSpecId = true (then no subgroup size is required).
  bool emulatedSimdgroups = false;
  // Why a kernel that uses simdgroup functions has no emulated body ("file.metal:LINE: ..."); empty otherwise.
  std::string simdgroupEmulationRefused;
  // simdgroup_matrix multiplies this module runs on cooperative matrices (16x8x8 f16 -> f32); 0: none, all on
  // subgroup shuffles.
  uint32_t cooperativeMatrixMultiplies = 0;
  // The cooperative matrix shapes those multiplies use ("16x8x8 f16*f16+f32", "16x8x16 f16*f16+f32"), as
  // DeviceInfo::cooperativeMatrixShapes names them.
  std::vector<std::string> cooperativeMatrixShapes;
  std::vector<std::string> capabilities;
  std::vector<std::string> extensions;

  const PushArg* argForBuffer(uint32_t index) const;
};

std::string toJson(const KernelReflection& r, int indent = 2);
// Returns std::nullopt and sets `error` when the text is not a valid reflection document.
std::optional<KernelReflection> reflectionFromJson(const std::string& text, std::string* error = nullptr);

}  // namespace m2v
