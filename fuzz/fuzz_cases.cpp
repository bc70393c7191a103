// libFuzzer: the corpus's .cases manifests (corpus/README.md): every problem must come back as an error line.
#include <cstdint>
#include <string>
#include <vector>

#include "Corpus.h"
#include "FuzzUtil.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;
  m2v::fuzz::writeScratch("k.cases", data, size);
  std::vector<std::string> errors;
  std::vector<m2v::corpus::Case> cases = m2v::corpus::loadCorpus(m2v::fuzz::scratchDir(), "", errors);
  (void)cases;
  return 0;
}
