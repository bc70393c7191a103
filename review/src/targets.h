#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config.h"
#include "engine.h"
#include "model.h"

namespace m2v::review {

struct TargetSpec {
  std::string kind;   // "", file, function, class, diff, commit ("" = guess from the text)
  std::string value;
};

// Source files to parse: every C++ source under the rules' scope dirs (or the whole root when none exists),
// plus the target file itself.
std::vector<std::string> sourceFiles(const std::string& root, const Rules& rules);
// Include dirs guessed from the tree: every directory named include/ plus the root.
std::vector<std::string> guessIncludeDirs(const std::string& root);
// Changed lines per absolute file from a unified diff.
std::map<std::string, std::set<unsigned>> parseUnifiedDiff(const std::string& diff, const std::string& root,
                                                           const std::string& gitTop);
bool runGitDiff(const std::string& root, const std::string& rev, std::string& diff, std::string& err);
bool resolveTarget(const Codebase& cb, const Rules& rules, const TargetSpec& spec, Target& out, std::string& err);
std::string canonical(const std::string& path);

}  // namespace m2v::review
