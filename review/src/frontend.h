#pragma once
#include "model.h"

namespace m2v::review {

struct ParseOptions {
  std::string root;                      // absolute, canonical
  std::vector<std::string> files;        // translation units to parse (absolute)
  std::string compileCommands;           // compile_commands.json (file or its directory), optional
  std::vector<std::string> includeDirs;  // extra -I
  std::vector<std::string> envFunctions; // getenv-like functions (env-gated conditions)
  std::vector<std::string> onceFunctions;// call_once-like functions
  std::vector<std::string> arrayTypes;   // "array"
};

// Parses the files with clang (recovering from errors) and extracts every function defined under root.
// Returns false only when nothing could be run at all (err says why).
bool parseCodebase(const ParseOptions& opts, Codebase& out, std::string& err);

}  // namespace m2v::review
