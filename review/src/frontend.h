#pragma once
#include "model.h"
#include "prefix.h"

namespace m2v::review {

struct ParseOptions {
  std::string root;                        // absolute, canonical
  std::vector<std::string> files;          // translation units to parse (absolute)
  std::string compileCommands;             // compile_commands.json (file or its directory), optional
  std::vector<std::string> includeDirs;    // extra -I
  std::vector<std::string> envFunctions;   // getenv-like functions (env-gated conditions)
  std::vector<std::string> onceFunctions;  // call_once-like functions
  std::vector<std::string> arrayTypes;     // "array"
  PrefixScan prefix;                       // outside headers of the units (scanPrefix), empty: none or not scanned
  std::string pch;                         // precompiled prefix every unit loads first ("" = none)
};

// Parses the files with clang (recovering from errors) and extracts every function defined under root.
// Returns false only when nothing could be run at all (err says why).
bool parseCodebase(const ParseOptions& opts, Codebase& out, std::string& err);

// Parses a header made of opts.prefix.headers (each under __has_include) into a precompiled header at pchPath, with
// the options a unit is parsed with and every function body skipped. Fills the outside files it read and the macros
// they define. False (why says it) when it could not be built or the headers had errors.
bool buildPrefixPch(const ParseOptions& opts, const std::string& headerPath, const std::string& pchPath,
                    std::vector<std::string>& inputs, std::set<std::string>& macros, std::string& why);

}  // namespace m2v::review
