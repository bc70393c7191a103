// silent-slow-path: an unsupported case (dtype, feature) handled by a silent CPU fallback instead of an explicit NYI.
#include "check.h"

namespace m2v::review {

void checkSilentSlowPath(const Site& s, Out& out) {
  if (!isCpuFallback(s)) return;
  // The case must be decided where the fallback is taken (a caller's layout or feature test is another matter).
  const Cond* c0 = nullptr;
  for (auto& c : s.ev.conds)
    // only a branch that selects the case (an early return or an else past it has excluded it)
    if (!c0 && c.kind != "guard" && c.kind != "else" && c.kind != "else ?:" && (anyRegex(s.rules.unsupportedPatterns, c.text) ||
                (!c.owner.empty() && anyRegex(s.rules.unsupportedPatterns, c.owner))))
      c0 = &c;
  if (!c0)  // the default case of a switch over the dtype: every dtype not listed
    for (auto& c : s.ev.conds)
      if (c.kind == "default" && c.owner.find("dtype") != std::string::npos) c0 = &c;
  Refusal r;
  if (!c0 && s.refusal(r) && r.rareOnly) {
    // `if (!dispatch_unary(...)) eval_cpu(...)`: the dispatcher refuses only unsupported dtypes or a missing shader
    const std::string why = r.joinedReasons();
    Candidate c{"silent-slow-path", "fallback"};
    c.problem = "Unsupported case (" + code(r.call) + " refuses: " + why + ") silently falls back to " +
                code(s.ev.text) + ".";
    c.why = "Rare inputs get a correct but far slower, host-synchronizing path with no signal.";
    c.direction = "Throw a not-yet-implemented error for the refused dtypes (or implement them on the GPU).";
    c.triggerNote = code(r.call) + " returns false: " + why;
    out.push_back(c);
    return;
  }
  if (!c0) return;
  Candidate c{"silent-slow-path", "fallback"};
  c.problem = "Unsupported case " +
              (c0->kind == "default" ? code("default:") + " of " + code("switch (" + c0->owner + ")")
                                     : code(c0->kind == "case" ? c0->owner + " == " + c0->text : c0->text)) +
              " silently falls back to " + code(s.ev.text) + ".";
  c.why =
      "The user gets a correct but far slower, host-synchronizing path with no signal; the GPU chain breaks "
      "every time the case is hit.";
  c.direction =
      "Throw a not-yet-implemented error for the unsupported case (or implement it on the GPU) so the "
      "slow path is visible.";
  out.push_back(c);
}

}  // namespace m2v::review
