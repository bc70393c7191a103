// m2v bench compile: compile time per kernel file, in process (no process start-up), best of N runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "Commands.h"
#include "metal2vk/compiler.h"

namespace m2v::cli {

namespace {

double bestOf(int runs, const std::string& source, const std::string& name, size_t* entries, bool* ok) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    CompileResult result = compileSource(source, name);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ms);
    *entries = result.kernels.size();
    *ok = result.status == Status::Ok;
  }
  return best;
}

}  // namespace

extern const char kBenchUsage[] =
    R"(bench compile FILE.metal... [--runs N]
    Compile time per kernel file, in process, best of N runs (default 5), as a Markdown table.
)";

int benchCommand(const Args& args) {
  if (args.empty() || args[0] != "compile") return usageError("bench", "expected 'compile FILE.metal...' [--runs N]");
  int runs = 5;
  std::vector<std::string> files;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--runs" && i + 1 < args.size())
      runs = std::max(1, std::atoi(args[++i].c_str()));
    else
      files.push_back(args[i]);
  }
  if (files.empty()) return usageError("bench", "no input files");

  // The floor: parsing metal_stdlib and nothing else.
  size_t entries = 0;
  bool ok = false;
  double floor = bestOf(runs, "#include <metal_stdlib>\n", "floor.metal", &entries, &ok);
  std::printf("| file | entries | ms (best of %d, in process) | ms per entry |\n|---|---|---|---|\n", runs);
  std::printf("| (metal_stdlib alone) | 0 | %.1f | - |\n", floor);
  int failures = 0;
  for (const std::string& path : files) {
    std::ifstream in(path);
    if (!in) {
      std::cerr << "m2v bench: cannot read " << path << "\n";
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    double ms = bestOf(runs, text.str(), path, &entries, &ok);
    failures += !ok;
    std::printf("| %s | %zu | %.1f | %.1f |%s\n", path.c_str(), entries, ms, entries ? ms / double(entries) : ms,
                ok ? "" : " (failed to compile)");
  }
  return failures ? 1 : 0;
}

}  // namespace m2v::cli
