// libFuzzer: the whole compile path (rewriter, clang, lowering, SPIR-V emission and validation) on arbitrary text.
// Seeds: the compiler suite's kernels, the corpus and MLX's .metal files; fuzz/metal.dict gives token-level mutations.
// Any diagnostic is fine; a crash, a sanitizer report, an exception or a hang is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "metal2vk/compiler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;  // keeps each execution short; the hostile-input test covers large files
  m2v::CompileOptions options;
  options.validate = true;
  m2v::CompileResult r = m2v::compileSource(std::string(reinterpret_cast<const char*>(data), size), "fuzz.metal",
                                            options);
  (void)r;
  return 0;
}
