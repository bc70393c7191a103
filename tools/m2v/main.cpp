// m2v: the metal2vk command line.
#include <cstring>
#include <functional>
#include <iostream>
#include <map>

#include "Commands.h"

namespace m2v::cli {

int usageError(const std::string& command, const std::string& message) {
  std::cerr << "m2v " << command << ": " << message << "\n(run 'm2v help' for usage)\n";
  return 2;
}

}  // namespace m2v::cli

namespace {

const char* kUsage = R"(usage: m2v <command> [options]

commands:
  compile FILE.metal [-o DIR] [--entry NAME]... [-I DIR]... [-D NAME[=VALUE]]... [--json] [--asm] [--ir]
      Compile every kernel entry point to a SPIR-V module (NAME.spv) and its reflection (NAME.json).
  help
      Show this text.

exit codes: 0 success, 1 error in the input, 2 usage error, 3 unsupported construct, 4 internal error,
            5 device failure
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace m2v::cli;
  std::map<std::string, std::function<int(const Args&)>> commands = {
      {"compile", compileCommand},
  };
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  auto it = commands.find(argv[1]);
  if (it == commands.end()) return usageError(argv[1], "unknown command");
  Args args(argv + 2, argv + argc);
  return it->second(args);
}
