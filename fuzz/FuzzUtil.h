// Shared by the libFuzzer harnesses: a private scratch directory for inputs that the code under test reads from files.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace m2v::fuzz {

inline const std::string& scratchDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/m2v-fuzz-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) std::abort();
    return std::string(d);
  }();
  return dir;
}

inline std::string writeScratch(const std::string& name, const uint8_t* data, size_t size) {
  std::string path = scratchDir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

}  // namespace m2v::fuzz
