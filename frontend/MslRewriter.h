// Turns the Metal dialect into C++ that clang accepts, keeping every line where it was.
//
// Metal's `[[...]]` attributes, the `kernel` keyword, threadgroup variables declared in function bodies, address-space
// method qualifiers and vector constructors have no C++17 spelling; docs/STDLIB.md lists what each becomes. The rewrite
// works on the tokens of clang's raw lexer (so it also reaches `#define` bodies such as MLX's `instantiate_kernel`),
// with one bracket table for the whole file, and never adds or removes a line break, so line numbers stay exact;
// `originalColumn` maps columns back for diagnostics.
#pragma once

#include <cstddef>
#include <map>
#include <set>
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

// What the files of one translation unit tell the rewriting of the files after them.
struct RewriteContext {
  // Names declared as aliases of vector types (`using complex_T = vec<T, 2>;`, `typedef float2 cplx;`): their
  // functional casts `complex_T(a, b)` are vector constructors too.
  std::set<std::string, std::less<>> vectorAliases;
  // Component names of bool vectors (`b.xy`), by file and offset of the name in the original text: clang rejects
  // them, so the front end learns where they are from its first attempt and parses again with these rewritten to
  // __m2v::swizzle<0, 1>(b).
  std::map<std::string, std::set<size_t>, std::less<>> boolSwizzles;
};

// Rewrites one file. Vector aliases declared in it are added to `context` (when given) before the rewrite, so
// they count in the whole file and in every file rewritten after it.
RewrittenSource rewriteMetalSource(std::string_view source, RewriteContext* context = nullptr,
                                   std::string_view path = {});

// Adds what `source` declares to `context` without rewriting it (for the headers a file includes, which clang
// opens only after the file itself is rewritten).
void collectRewriteContext(std::string_view source, RewriteContext& context);

// The targets of `source`'s #include directives, in order, with whether each was quoted ("...") or angled (<...>).
std::vector<std::pair<std::string, bool>> includeDirectives(std::string_view source);

bool isMetalVectorTypeName(std::string_view name);

}  // namespace m2v::frontend
