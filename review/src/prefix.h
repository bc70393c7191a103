// The headers from outside the tree (the C++ library, vulkan.hpp) that the units include: most of the parse time of
// a unit, the same for every unit, and never reviewed (their function bodies are skipped). They are parsed once into
// a precompiled header that every unit of a run loads instead (see prefixPch in frontend.h). Including them ahead
// of a unit's own code is safe only when neither side can see the other's macros: the scan records what the tree
// defines and tests, and the build refuses the prefix when the outside headers name one of the tree's macros or
// define a macro the tree tests.
#pragma once
#include <set>
#include <string>
#include <vector>

namespace m2v::review {

struct ParseOptions;

struct PrefixScan {
  std::vector<std::string> headers;      // outside headers, as spelled in `#include <...>`, first use first
  std::set<std::string> treeMacros;      // macros the tree's files define (include guards left out)
  std::set<std::string> treeConditions;  // identifiers the tree tests (#if, #ifdef ...) before a unit has included
                                         // any outside header
};

// Reads the units and the headers of the tree they include (as text, in the order the preprocessor would), and lists
// the outside headers they include unconditionally: not inside #if blocks other than an include guard.
PrefixScan scanPrefix(const ParseOptions& opts);

// Adds every C identifier of `text` to `out` (a cheap textual scan: comments and strings are not told apart).
void identifiersIn(const std::string& text, std::set<std::string>& out);

}  // namespace m2v::review
