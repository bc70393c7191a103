// Turns the Metal dialect into C++ that clang accepts, keeping every line where it was.
//
// Metal's `[[...]]` attributes, the `kernel` keyword, threadgroup variables declared in function bodies, address-space
// method qualifiers and vector constructors have no C++17 spelling; docs/STDLIB.md lists what each becomes. The rewrite
// works on raw tokens (so it also reaches `#define` bodies such as MLX's `instantiate_kernel`) and never adds or
// removes a line break, so line numbers stay exact; `originalColumn` maps columns back for diagnostics.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace m2v::frontend {

class RewrittenSource {
 public:
  std::string text;

  // Maps a byte offset in `text` to the byte offset of the same token in the original source.
  size_t originalOffset(size_t rewrittenOffset) const;

  struct Edit {
    size_t rewrittenBegin, rewrittenEnd, originalBegin, originalEnd;
  };
  std::vector<Edit> edits;  // sorted, non-overlapping
};

// `isVectorTypeName` decides what counts as a vector type for constructor rewriting (float4, half2, ...).
RewrittenSource rewriteMetalSource(std::string_view source);

bool isMetalVectorTypeName(std::string_view name);

}  // namespace m2v::frontend
