// The metal2vk compiler: Metal Shading Language compute kernels to Vulkan 1.3 SPIR-V, in process.
#pragma once

#include <cstdint>
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
};

struct CompiledKernel {
  KernelReflection reflection;
  std::vector<uint32_t> spirv;
  std::string loweredIR;  // with CompileOptions::keepLoweredIR
};

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
