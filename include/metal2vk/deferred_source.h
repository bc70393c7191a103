// Deferred sources: a .metal file kept as source in a library file, each of its [[host_name]] explicit
// instantiations compiled to SPIR-V when a program first asks for it (Metal's newFunction), as Apple's AIR is
// compiled for the GPU only when a pipeline needs it.
//
// `m2v metal -c` preprocesses the file (its own headers expanded, ours left as #include lines), takes every
// explicit instantiation that names a [[host_name]] out of the text, and stores the rest (the body) with one record
// per instantiation. The source of one entry point is the body followed by its instantiation: the same templates,
// instantiated once instead of thousands of times, so a kernel of MLX's quantized.metal costs a compile of one
// instantiation, not of the whole file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metal2vk/compiler.h"

namespace m2v {

struct DeferredEntry {
  std::string name;           // the [[host_name]]
  std::string instantiation;  // the explicit instantiation's text, wrapped in its namespaces
};

struct DeferredSource {
  std::string name;  // the .metal file, for diagnostics
  std::string body;  // preprocessed text without the entries' instantiations
  std::vector<DeferredEntry> entries;
  // The compile options of `m2v metal -c` that change code (include directories and macros are already applied).
  bool fastMath = false;
  bool cooperativeMatrix = true;
  bool nativeBfloat16 = false;
  bool abortChecks = true;
  uint32_t metalVersion = 320;
  std::vector<std::string> warnings;

  // The source that compiles `entry` alone, and the options to compile it with.
  std::string sourceFor(const DeferredEntry& entry) const;
  CompileOptions optionsFor(const DeferredEntry& entry) const;
};

// Splits preprocessed Metal source into a body and its [[host_name]] explicit instantiations (at file scope or in
// namespaces). Preprocessor lines (line markers, #include, #pragma) stay in the body; the line breaks of a removed
// instantiation stay too, so the body's line numbers are the text's.
DeferredSource splitInstantiations(std::string_view preprocessed, std::string name);

// A .metal file as `m2v metal -c` keeps it: preprocessed with `options` (its includes and macros applied), split, its
// compile options recorded, and the body compiled: the file's kernels that are no [[host_name]] instantiation, and a
// check of every template as written. Nothing when the preprocessor fails (its diagnostics go to standard error).
struct DeferredFile {
  DeferredSource source;
  CompileResult body;
};
std::optional<DeferredFile> deferFile(const std::string& path, const CompileOptions& options);

}  // namespace m2v
