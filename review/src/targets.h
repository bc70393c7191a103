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
  std::string kind;  // "", file, function, class, diff, commit ("" = guess from the text)
  std::string value;
};

// Source files to parse: every C++ source under the rules' scope dirs (or the whole root when none exists),
// plus the target file itself.
std::vector<std::string> sourceFiles(const std::string& root, const Rules& rules);
// The scope dirs as they sit in this tree (root/mlx/backend/vulkan, or mlx-src/mlx/backend/vulkan in a fork that
// keeps MLX under a subdirectory).
std::vector<std::string> scopeRoots(const std::string& root, const Rules& rules);
// Include dirs guessed from the tree: the root, every directory holding the scope's top-level headers (the parent of
// `mlx/` with `mlx/*.h`), and every directory named include/.
std::vector<std::string> guessIncludeDirs(const std::string& root, const Rules& rules);
// compile_commands.json at the root or in a usual build directory ("" if none).
std::string findCompileCommands(const std::string& root);
// Changed lines per absolute file from a unified diff.
std::map<std::string, std::set<unsigned>> parseUnifiedDiff(const std::string& diff, const std::string& root,
                                                           const std::string& gitTop);
bool runGitDiff(const std::string& root, const std::string& rev, std::string& diff, std::string& err);
bool resolveTarget(const Codebase& cb, const Rules& rules, const TargetSpec& spec, Target& out, std::string& err);
std::string canonical(const std::string& path);

}  // namespace m2v::review
