// cpu-fallback: eval_cpu or CPU kernels called from the GPU path.
#include "check.h"

namespace m2v::review {

void checkCpuFallback(const Site& s, Out& out) {
  if (!isCpuFallback(s)) return;
  Candidate c{"cpu-fallback", "call"};
  if (const Cond* rare = s.rareGate()) {
    c.nonIssue = true;
    c.reason = code(s.ev.text) + " runs only when " + rare->describe() +
               ": complex or 64-bit input, which no inference path gives this operation.";
    out.push_back(c);
    return;
  }
  if (Refusal r; s.refusal(r)) {
    const std::string why = r.joinedReasons();
    if (r.rareOnly) {
      c.nonIssue = true;
      c.reason = code(s.ev.text) + " runs only when " + code(r.call) + " refuses: " + why +
                 ". Every other dtype is dispatched on the GPU; no inference path reaches the CPU here.";
      out.push_back(c);
      return;
    }
    c.triggerNote = code(r.call) + " returns false: " + why;
  }
  c.problem = code(s.ev.text) + " runs the CPU implementation from the GPU path.";
  c.why = "The inputs must be finished and visible to the host before the CPU runs, and the result must go back to "
          "the device: the GPU chain breaks into submit, wait, CPU work, upload.";
  c.direction = "Implement the case with a compute dispatch; where no GPU implementation exists, throw NYI instead "
                "of falling back silently.";
  out.push_back(c);
}

}  // namespace m2v::review
