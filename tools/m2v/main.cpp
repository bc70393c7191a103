// m2v: the metal2vk command line. Each command's usage text lives beside the command (k*Usage in its file).
#include <llvm/Config/llvm-config.h>

#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "Commands.h"
#include "metal2vk/compiler.h"
#include "metal2vk/review.h"

namespace m2v::cli {

int usageError(const std::string& command, const std::string& message) {
  std::cerr << "m2v " << command << ": " << message << "\n(run 'm2v " << command << " --help' for usage)\n";
  return 2;
}

}  // namespace m2v::cli

namespace {

using m2v::cli::Args;

// `m2v review` parses its own options (review/src/cli.cpp prints the full usage for `m2v review --help`).
const char kReviewSummary[] =
    R"(review --root PATH [--compile-commands FILE] [-I DIR]... TARGET [--json] [--config FILE] [--fail-on SEVERITY]
      [-j N] [--full-parse] [--no-cache] [--cache-dir DIR]
    Review a Vulkan compute backend for async-pipeline hazards. TARGET: a file, function, class or symbol,
    --diff FILE, --commit SHA or a git range A..B.
)";

struct Command {
  const char* name;
  int (*run)(const Args&);
  const char* usage;  // "NAME ARGS...\n    description\n"
};

int reviewCommand(const Args& a) { return m2v::runReviewCli(a, std::cout, std::cerr); }

const Command kCommands[] = {
    {"compile", m2v::cli::compileCommand, m2v::cli::kCompileUsage},
    {"run", m2v::cli::runCommand, m2v::cli::kRunUsage},
    {"examples", m2v::cli::examplesCommand, m2v::cli::kExamplesUsage},
    {"mlx", m2v::cli::mlxCommand, m2v::cli::kMlxUsage},
    {"review", reviewCommand, kReviewSummary},
    {"sweep", m2v::cli::sweepCommand, m2v::cli::kSweepUsage},
    {"bench", m2v::cli::benchCommand, m2v::cli::kBenchUsage},
};

const char kExitCodes[] =
    "exit codes: 0 success, 1 error in the input, 2 usage error, 3 unsupported construct, 4 internal error,\n"
    "            5 device failure\n";

void printOverview(std::ostream& os) {
  os << "usage: m2v <command> [options]      (m2v <command> --help: that command's usage; m2v --version)\n\n"
        "commands:\n";
  for (const Command& c : kCommands) {
    std::istringstream lines(c.usage);
    for (std::string line; std::getline(lines, line);) os << "  " << line << "\n";
  }
  os << "  help\n      Show this text.\n\n" << kExitCodes;
}

void printVersion(std::ostream& os) {
  os << "m2v " << M2V_VERSION << " (" << M2V_BUILD_KIND << ")\n"
     << "compiler " << m2v::compilerVersion() << ", built with LLVM and clang " << LLVM_VERSION_STRING << "\n";
}

bool asksForHelp(const Args& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    printOverview(std::cerr);
    return 2;
  }
  if (!std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    printOverview(std::cout);
    return 0;
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
    printVersion(std::cout);
    return 0;
  }
  Args args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name)) continue;
    if (c.run != reviewCommand && asksForHelp(args)) {
      std::cout << "usage: m2v " << c.usage << "\n" << kExitCodes;
      return 0;
    }
    return c.run(args);
  }
  return m2v::cli::usageError(argv[1], "unknown command");
}
