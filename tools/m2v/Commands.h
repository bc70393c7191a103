// `m2v` subcommands. Each takes the arguments after its name and returns the process exit code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace m2v::cli {

using Args = std::vector<std::string>;

int compileCommand(const Args& args);
int benchCommand(const Args& args);     // BenchCommand.cpp
int runCommand(const Args& args);       // RunCommand.cpp
int examplesCommand(const Args& args);  // RunCommand.cpp (bundled examples/, CPU-checked)
int mlxCommand(const Args& args);       // MlxCommand.cpp (one mx.fast.metal_kernel call from JSON)
int sweepCommand(const Args& args);     // SweepCommand.cpp (corpus/ conformance sweep)
int metalCommand(const Args& args);     // MetalToolCommand.cpp (Apple's `metal` driver, as MLX's build calls it)
int metallibCommand(const Args& args);  // MetalToolCommand.cpp (Apple's `metallib`)

// The language version of a -std= value (`metal3.1`, `macos-metal2.4` -> 310, 240); nullopt if it names none.
std::optional<uint32_t> parseMetalStd(const std::string& value);

// The file name (without extension) of an entry point's module and reflection in an output directory.
std::string moduleFileStem(const std::string& entry);

// Each command's usage ("NAME ARGS...\n    description\n"), defined beside the command; `m2v CMD --help` prints it.
extern const char kCompileUsage[];
extern const char kBenchUsage[];
extern const char kRunUsage[];
extern const char kExamplesUsage[];
extern const char kMlxUsage[];
extern const char kSweepUsage[];
extern const char kMetalUsage[];
extern const char kMetallibUsage[];

// Usage errors share one format and exit code (2).
int usageError(const std::string& command, const std::string& message);

}  // namespace m2v::cli
