// m2v review: deterministic static reviewer of Vulkan compute backends for async-pipeline hazards.
// The `m2v` CLI forwards `m2v review ARGS...` here (args without the "review" word).
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace m2v {

// m2v review --root PATH [--compile-commands FILE] [-I DIR]... TARGET [--json] [--config FILE] [--fail-on SEVERITY]
//   TARGET: FILE | FUNCTION | CLASS | SYMBOL | --diff FILE | --commit SHA | A..B (git range)
// Returns 0 when the review ran, 1 when --fail-on found a finding at or above the severity, 2 for usage or I/O
// errors.
int runReviewCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace m2v
