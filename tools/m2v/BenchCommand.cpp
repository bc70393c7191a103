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

double bestOf(int runs, const std::string& source, const std::string& name, const CompileOptions& options,
              size_t* entries, bool* ok) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    CompileResult result = compileSource(source, name, options);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ms);
    *entries = result.kernels.size();
    *ok = result.status == Status::Ok;
  }
  return best;
}

}  // namespace

extern const char kBenchUsage[] =
    R"(bench compile FILE.metal... [--runs N] [-I DIR]... [-D NAME[=VALUE]]... [-j N] [--native-bfloat16]
    Compile time per kernel file, in process, best of N runs (default 5), as a Markdown table with entry points
    per second. --native-bfloat16: with the native-bfloat16 builds (docs/BFLOAT16.md), to see their cost.
)";

int benchCommand(const Args& args) {
  if (args.empty() || args[0] != "compile")
    return usageError("bench", "expected 'compile FILE.metal...' [--runs N] [-I DIR]... [-D NAME[=VALUE]]... [-j N]");
  int runs = 5;
  std::vector<std::string> files;
  CompileOptions options;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool hasValue = i + 1 < args.size();
    if (a == "--runs" && hasValue) {
      runs = std::max(1, std::atoi(args[++i].c_str()));
    } else if (a == "-I" && hasValue) {
      options.includeDirs.push_back(args[++i]);
    } else if (a == "-j" && hasValue) {
      options.jobs = static_cast<unsigned>(std::max(0, std::atoi(args[++i].c_str())));
    } else if (a == "--native-bfloat16") {
      options.nativeBfloat16 = true;
    } else if (a == "-D" && hasValue) {
      const std::string& d = args[++i];
      size_t eq = d.find('=');
      options.defines.emplace_back(d.substr(0, eq), eq == std::string::npos ? "" : d.substr(eq + 1));
    } else if (!a.empty() && a[0] == '-') {
      return usageError("bench", "unknown option '" + a + "'");
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) return usageError("bench", "no input files");

  // The floor: parsing metal_stdlib and nothing else.
  size_t entries = 0;
  bool ok = false;
  double floor = bestOf(runs, "#include <metal_stdlib>\n", "floor.metal", options, &entries, &ok);
  std::printf("| file | entry points | seconds (best of %d, in process) | ms per entry point | entry points/s |\n"
              "|---|---|---|---|---|\n",
              runs);
  std::printf("| (metal_stdlib alone) | 0 | %.3f | - | - |\n", floor / 1000.0);
  int failures = 0;
  for (const std::string& path : files) {
    std::ifstream in(path);
    if (!in) {
      std::cerr << "m2v bench: cannot read " << path << "\n";
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    double ms = bestOf(runs, text.str(), path, options, &entries, &ok);
    failures += !ok;
    std::printf("| %s | %zu | %.3f | %.1f | %.1f |%s\n", path.c_str(), entries, ms / 1000.0,
                entries ? ms / double(entries) : ms, entries ? double(entries) / (ms / 1000.0) : 0.0,
                ok ? "" : " (failed to compile)");
  }
  return failures ? 1 : 0;
}

}  // namespace m2v::cli
