// libFuzzer: `m2v mlx SPEC.json --print-source` on arbitrary bytes: JSON parsing, the spec's fields, inline, random and
// .npy inputs (the harness also writes the input as x.npy beside the spec), MLX's kernel assembly. No device is used.
// Every outcome must be an exit code 0..5; a crash, a sanitizer report or an escaping exception is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "../tools/m2v/Commands.h"
#include "FuzzUtil.h"

namespace m2v::cli {
int usageError(const std::string&, const std::string&) { return 2; }  // main.cpp's, without the printing
}  // namespace m2v::cli

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16 * 1024) return -1;
  std::string spec = m2v::fuzz::writeScratch("spec.json", data, size);
  m2v::fuzz::writeScratch("x.npy", data, size);
  static std::ostream* silence = [] {
    std::cout.setstate(std::ios::failbit);  // --print-source output is not interesting here
    std::cerr.setstate(std::ios::failbit);
    return &std::cout;
  }();
  (void)silence;
  int rc = m2v::cli::mlxCommand({spec, "--print-source"});
  if (rc < 0 || rc > 5) std::abort();
  return 0;
}
