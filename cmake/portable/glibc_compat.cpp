// Portable builds only (M2V_PORTABLE, linked with -Wl,--wrap=arc4random): LLVMSupport and libstdc++ were configured
// on glibc 2.36 and call arc4random, the only symbol that would make the binaries need glibc 2.36. getrandom(2)
// (glibc 2.25) gives the same kernel randomness, so the binaries run on glibc 2.35 (Ubuntu 22.04) as well.
#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

extern "C" uint32_t __wrap_arc4random() {
  uint32_t value = 0;
  for (;;) {
    ssize_t got = getrandom(&value, sizeof value, 0);
    if (got == static_cast<ssize_t>(sizeof value)) return value;
    if (got < 0 && errno != EINTR) std::abort();  // no kernel randomness (pre-3.17 kernel): nothing to fall back on
  }
}
