// libFuzzer: .npy reading (headers, dtypes, shapes, truncation), as `m2v mlx` and the MLX tests use it.
// std::invalid_argument is the documented failure; any other exception, a crash or a sanitizer report is a finding.
#include <cstdint>
#include <stdexcept>

#include "FuzzUtil.h"
#include "metal2vk/mlx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 20) return -1;
  std::string path = m2v::fuzz::writeScratch("in.npy", data, size);
  try {
    m2v::mlx::Array a = m2v::mlx::readNpy(path);
    volatile size_t n = a.nbytes();
    (void)n;
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
