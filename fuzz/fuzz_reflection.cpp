// libFuzzer: reflection JSON parsing (what m2v-sweep-run and runtime users read beside each .spv), and the
// round trip: what parses must print and parse again to the same text.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "metal2vk/reflection.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;
  std::string error;
  auto r = m2v::reflectionFromJson(std::string(reinterpret_cast<const char*>(data), size), &error);
  if (!r) return 0;
  std::string text = m2v::toJson(*r);
  auto again = m2v::reflectionFromJson(text, &error);
  if (!again || m2v::toJson(*again) != text) std::abort();
  return 0;
}
