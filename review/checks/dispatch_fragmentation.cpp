// dispatch-fragmentation: dispatches recorded inside loops over elements, indices or groups.
#include "check.h"

namespace m2v::review {

void checkDispatchFragmentation(const Site& s, Out& out) {
  if (!s.is(s.rules.dispatchCalls) && s.callDispatches.empty()) return;
  auto loops = s.nearLoops();
  if (loops.empty()) return;
  const Loop* bad = nullptr;
  for (auto* l : loops)
    if ((l->constBound < 0 || l->constBound > s.rules.smallPassBound) &&
        !anyRegex(s.rules.smallLoopPatterns, l->header))
      bad = l;
  if (bad && s.is(s.rules.dispatchCalls) && anyRegex(s.rules.gridSplitLoopPatterns, bad->header)) {
    Candidate c{"dispatch-fragmentation"};
    c.nonIssue = true;
    c.reason = code(s.ev.text) + " runs per chunk of " + code(bad->header) +
               ": one grid split over the device's dispatch limits, not one dispatch per element.";
    out.push_back(c);
    return;
  }
  if (!bad) {
    Candidate c{"dispatch-fragmentation"};
    c.nonIssue = true;
    c.reason = code(s.ev.text) + " runs in " + code(loops.back()->header) +
               ": a fixed, small number of passes, not one dispatch per element.";
    out.push_back(c);
    return;
  }
  Candidate c{"dispatch-fragmentation", "loop"};
  c.problem = code(s.ev.text) +
              (s.callDispatches.empty() ? "" : " (which records a dispatch in `" + s.callDispatches + "`)") +
              " is recorded once per iteration of " + code(bad->header) + ".";
  c.why = "Many tiny dispatches: per-dispatch overhead and barriers dominate and the GPU is underoccupied.";
  c.direction =
      "Fold the loop into the grid (one dispatch with the loop index as a grid dimension) or batch the "
      "indices into one kernel.";
  out.push_back(c);
}

}  // namespace m2v::review
