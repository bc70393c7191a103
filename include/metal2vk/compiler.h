// The metal2vk compiler: Metal Shading Language compute kernels to Vulkan 1.3 SPIR-V, in process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "metal2vk/diagnostics.h"
#include "metal2vk/reflection.h"

namespace m2v {

struct CompileOptions {
  std::vector<std::string> includeDirs;
  std::vector<std::pair<std::string, std::string>> defines;  // -D NAME=VALUE
  std::vector<std::string> entries;                          // only these entry points; empty = all
  bool validate = true;                                      // run the SPIR-V validator (always on in the CLI)
  bool keepLoweredIR = false;  // keep the LLVM IR the SPIR-V emitter saw (for tests and debugging)
  bool syntaxOnly = false;     // stop after the front end (-fsyntax-only): diagnostics only, no modules
  // Apple's compiler defaults to fast math; metal2vk defaults to Metal's precise ("safe") math, as MLX builds
  // its library (-fno-fast-math). -ffast-math selects the fast variants where Metal code asks for "maybe fast".
  bool fastMath = false;
  uint32_t metalVersion = 320;         // -std=metal3.2 -> __METAL_VERSION__ 320
  std::vector<std::string> warnings;   // -W flags, passed to the front end as given (-Wall, -Wno-foo, ...)
  uint32_t errorLimit = 20;            // -ferror-limit=N (0: no limit)
  unsigned jobs = 0;                   // threads lowering entry points (-j N); 0: one per core
  // Also build each kernel that multiplies simdgroup matrices with its multiplies on cooperative matrices
  // (CompiledModule::cooperative); the runtime chooses per device (docs/SIMDGROUP_MATRIX.md).
  bool cooperativeMatrix = true;
  // Also build each kernel whose portable build narrows float to bfloat with those narrowings on
  // VK_KHR_shader_bfloat16 conversions (CompiledModule::nativeBfloat16). Off unless asked for, here or by
  // M2V_NATIVE_BFLOAT16=1 (buildsNativeBfloat16): on the H200 that conversion truncates where Metal's bfloat
  // rounds to nearest even (docs/BFLOAT16.md).
  bool nativeBfloat16 = false;
  // Loops check the submission's abort word now and then, so that the runtime can stop a kernel that never ends
  // (docs/ABI.md, "Abort word"). Off here (--no-abort-checks) or for the whole process with M2V_ABORT_CHECKS=0
  // (buildsAbortChecks).
  bool abortChecks = true;
};

// Whether a compile with `options` gives loops abort checks: options.abortChecks, unless M2V_ABORT_CHECKS=0.
bool buildsAbortChecks(const CompileOptions& options);

// Whether a compile with `options` makes native-bfloat16 builds: options.nativeBfloat16, or M2V_NATIVE_BFLOAT16=1
// (which also runs them where the device has the bfloat16 type).
bool buildsNativeBfloat16(const CompileOptions& options);

// One SPIR-V module of a kernel and its reflection.
struct CompiledModule {
  KernelReflection reflection;
  std::vector<uint32_t> spirv;  // portable: simdgroup_matrix multiplies on subgroup shuffles
  // The kernel with its simdgroup_matrix multiplies (those with half or bfloat operands) on
  // VK_KHR_cooperative_matrix; null when it has none. Needs a device whose matrix layouts the runtime has verified.
  std::shared_ptr<const CompiledModule> cooperative;
  std::string loweredIR;  // with CompileOptions::keepLoweredIR
  // The portable module emitted again with its float -> bfloat narrowings as OpFConvert to SPV_KHR_bfloat16's
  // bfloat16 type (one conversion instead of an integer rounding sequence); the same reflection but for the
  // capability BFloat16TypeKHR and extension SPV_KHR_bfloat16. Null when the kernel narrows to bfloat nowhere.
  // Needs VK_KHR_shader_bfloat16's shaderBFloat16Type (DeviceInfo::bfloat16Type; selection: M2V_NATIVE_BFLOAT16).
  std::shared_ptr<const CompiledModule> nativeBfloat16;
};

// A compiled kernel entry point: its portable module, with its cooperative-matrix and native-bfloat16 builds where
// it has them.
using CompiledKernel = CompiledModule;

struct CompileResult {
  Status status = Status::Ok;
  std::vector<CompiledKernel> kernels;
  Diagnostics diagnostics;
};

// Compiles every kernel entry point of a .metal file.
CompileResult compileFile(const std::string& path, const CompileOptions& options = {});
// Compiles source text; `name` is the file name used in diagnostics (and for relative includes).
CompileResult compileSource(const std::string& source, const std::string& name, const CompileOptions& options = {});

// A version string that changes whenever generated code may change (used in cache keys).
const char* compilerVersion();

}  // namespace m2v
