// LLVM IR (after the lowering passes) to a SPIR-V module for Vulkan 1.3 compute.
#pragma once

#include <cstdint>
#include <vector>

#include "Frontend.h"

namespace llvm {
class Module;
}

namespace m2v::spirv {

struct EmitOptions {
  // Narrow float to bfloat with OpFConvert to `OpTypeFloat 16 BFloat16KHR` (VK_KHR_shader_bfloat16's
  // shaderBFloat16Type) instead of the integer round-to-nearest-even sequence core Vulkan needs.
  bool nativeBfloat16 = false;
};

// What an emission saw, for the driver to choose variants.
struct EmitStats {
  unsigned bfloatNarrowings = 0;  // float -> bfloat conversions emitted
};

// Emits the module's `main` as the entry point. Fills the capability, extension, threadgroup-memory and
// subgroup-size parts of `reflection`. Returns an empty vector after reporting to `diags`. Reads `m` without
// changing it, so one lowered module may be emitted several times (with different options).
std::vector<uint32_t> emitModule(llvm::Module& m, KernelReflection& reflection, const frontend::SourceMap& sources,
                                 Diagnostics& diags, const EmitOptions& options = {}, EmitStats* stats = nullptr);

// Runs SPIRV-Tools' validator (target vulkan1.3). Returns the validator's message, or "" when the module is valid.
std::string validateModule(const std::vector<uint32_t>& words);

// The textual disassembly, for tests and `m2v compile --asm`.
std::string disassembleModule(const std::vector<uint32_t>& words);

}  // namespace m2v::spirv
