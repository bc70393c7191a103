#pragma once
#include <set>
#include <string>
#include <vector>

#include "config.h"
#include "model.h"

namespace m2v::review {

struct Target {
  std::string kind;                  // file, function, class, symbol, diff, commit
  std::string spec;                  // as given
  std::string resolved;              // one line: what it resolved to
  std::set<std::string> functions;   // keys of the functions reviewed
  std::vector<std::string> matches;  // for several matches: "qualName (path:line)" with [reviewed] marks
  std::vector<std::string> notes;
};

struct Finding {
  std::string check, rule, severity;
  std::string file;  // relative to root
  unsigned line = 0;
  std::string function;
  std::string problem, why, trigger, direction;
  std::string reachability;           // "reached from `X`", or why reachability could not be established
  std::vector<std::string> chain;     // "fn (path:line)" from the entry down to the hazard
  std::vector<std::string> alsoFrom;  // other entries reaching the same spot
  std::vector<unsigned> alsoLines;    // other lines of the same hazard in this function (one path, one finding)
  bool proven = true;                 // reachability from an entry established
  bool macroGenerated = false;        // the function is one line: an instance of a macro (UNARY_GPU(Cos, Cos))
  std::string pathKey;                // the conditions in the function that lead to the line (cases of one switch
                                      // count as one path): lines with the same key are one finding
};

struct NonIssue {
  std::string check, file, function, reason;
  unsigned line = 0;
};

struct Inspected {
  std::string function, file;  // relative
  unsigned line = 0;
  std::string role;  // target, callee, entry (caller above the target)
};

struct Review {
  Target target;
  std::vector<std::string> files;  // relative
  std::vector<Inspected> functions;
  std::vector<Finding> findings;
  std::vector<NonIssue> nonIssues;
  unsigned parsedUnits = 0, recoveredErrors = 0, cachedUnits = 0;
  std::vector<ParseStatus> parseStatus;  // per translation unit, paths relative to the root
  std::vector<std::string> includeDirs;  // relative to the root where under it
  std::string compileCommands;
  std::string rulesName;
};

Review runReview(const Codebase& cb, const Rules& rules, const Target& target);
int severityRank(const std::string& s);  // high 3, medium 2, low 1
// The call is itself a hazard the checks report (a wait, a submit, an eval, a queue switch): walks from an entry do
// not continue into it.
bool isHazardCall(const Rules& rules, const Event& e);
// The call is a CPU fallback (reported where it is called): walks do not continue into it either.
bool isFallbackCall(const Rules& rules, const Event& e);

}  // namespace m2v::review
