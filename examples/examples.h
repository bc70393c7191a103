// The bundled example kernels (examples/*.metal): compile each with the metal2vk compiler, run it on a device,
// compare with a CPU reference written from the kernel's meaning, and report a table (`m2v examples`).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace m2v::examples {

struct Options {
  std::string dir;       // where the .metal files are; empty: env M2V_EXAMPLES_DIR, else the source tree's examples/
  std::string device;    // device selector (index or name substring); empty: M2V_DEVICE or device 0
  std::string filter;    // run only examples whose name contains this
  unsigned seed = 0;     // 0: random
};

struct Result {
  std::string name;
  double compileMs = 0;
  double gpuUs = -1;     // sum over the example's dispatches; -1: no timestamps
  double maxError = -1;  // max |gpu - cpu| / max(1, |cpu|); -1: not run
  double tolerance = 0;
  std::string status;    // "ok", "MISMATCH", "refused: <reason>", "FAILED: <reason>"
  bool failed = false;   // a mismatch or an error (not a refusal)
};

std::vector<std::string> names();
// Runs the examples; prints the device line to `log` and returns one result per example.
std::vector<Result> runAll(const Options& options, std::ostream& log);
void printTable(const std::vector<Result>& results, std::ostream& out);

}  // namespace m2v::examples
