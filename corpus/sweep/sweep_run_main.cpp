// m2v-sweep-run: runs a corpus from precompiled modules (`m2v sweep DIR --emit-modules MODDIR`) and writes the same
// report as `m2v sweep`. Links only the runtime and the references: no LLVM/clang, so it can be carried to a
// machine that has nothing but a Vulkan loader and driver.
//   m2v-sweep-run --modules MODDIR CORPUS_DIR [--report PREFIX] [--floor FILE] [--device SEL] [--repeat N] ...
#include <iostream>

#include "Corpus.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") {
      std::cout
          << "usage: m2v-sweep-run --modules MODDIR CORPUS_DIR [--report PREFIX] [--floor FILE] [--device SEL]\n"
             "         [--filter SUBSTR] [--seed S] [--repeat N] [--ceiling-gbs GBS]\n"
             "Runs a corpus from modules precompiled by `m2v sweep DIR --compile-only --emit-modules MODDIR` and\n"
             "writes the same report as `m2v sweep` (no compiler in this binary).\n";
      return 0;
    }
  return m2v::corpus::sweepMain("m2v-sweep-run", args, nullptr);
}
