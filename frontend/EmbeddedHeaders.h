// The metal_stdlib headers, compiled into the binary so the compiler needs no files at run time.
#pragma once

#include <string_view>
#include <vector>

namespace m2v::frontend {

struct EmbeddedFile {
  std::string_view path;  // relative to the include root, e.g. "metal_stdlib"
  std::string_view contents;
};

const std::vector<EmbeddedFile>& embeddedHeaders();

}  // namespace m2v::frontend
