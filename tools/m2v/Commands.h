// `m2v` subcommands. Each takes the arguments after its name and returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace m2v::cli {

using Args = std::vector<std::string>;

int compileCommand(const Args& args);

// Usage errors share one format and exit code (2).
int usageError(const std::string& command, const std::string& message);

}  // namespace m2v::cli
