// hidden-materialization: lazily built arrays (views, broadcasts, reshapes) materialized by copy helpers, or
// evaluated inside a helper the caller passed them to.
#include "check.h"

namespace m2v::review {

void checkHiddenMaterialization(const Site& s, Out& out) {
  if (s.ev.kind != "call") return;
  const Event& ev = s.ev;
  if (s.is(s.rules.copyCalls) && !ev.args.empty() && !s.inCopyHelper()) {
    Origin o = s.originOfArg(0);
    if (o.kind != Origin::Lazy) return;
    // evaluated just before (`eval(x); copy_gpu(x, ...)`): the evaluation is the finding, the copy reads a result
    const std::string& v = ev.argVars.empty() ? std::string() : ev.argVars[0];
    for (auto& e : s.fn.events)
      if (!v.empty() && e.kind == "call" && e.line < ev.line && e.line + 6 >= ev.line &&
          nameMatches(s.rules.evalCalls, e.name, e.qualName) &&
          (e.receiverVar == v || (!e.argVars.empty() && e.argVars[0] == v)))
        return;
    Candidate c{"hidden-materialization", "copy"};
    c.problem = code(ev.text) + " materializes `" + (o.var.empty() ? ev.args[0] : o.var) + "`, " + originText(o) +
                ", into a full contiguous buffer.";
    c.why =
        "The lazy view becomes a real array (extra dispatch, extra memory traffic and allocation); a broadcast is "
        "expanded to its full size.";
    c.direction =
        "Bind the source with its strides (as-strided / strided kernel) or pass the view's shape and "
        "strides to the kernel instead of copying.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.evalCalls) || s.is(s.rules.itemCalls)) {
    if (s.is(s.rules.itemCalls)) return;  // item of a lazy array: cpu-extraction reports it
    if (ev.name == "wait") return;        // a blocking wait: host-sync reports it
    std::string var = s.arrayVar();
    if (!ev.receiver.empty() && !s.isArrayVar(var)) return;
    Origin o = s.originOf(var);
    const Cond* unevaluated = s.unevaluatedBranch();
    if (unevaluated && !(o.kind == Origin::Lazy && o.frame >= 0 && o.frame < s.frameIndex())) {
      // The branch itself says the array is not evaluated yet: whatever the caller passed, this is a nested
      // evaluation inside the GPU path.
      Candidate c{"hidden-materialization", "eval"};
      c.problem = "`" + s.fn.qualName + "` runs a nested evaluation " + code(ev.text) + " of `" + var + "` when " +
                  code(unevaluated->text) + " says it is not evaluated yet (a lazily built input).";
      c.why =
          "The helper schedules (and for eval() waits for) a whole nested graph from inside the GPU path: the "
          "command stream of the current operation is interleaved with another graph and the host may block.";
      c.direction =
          "Have callers pass scheduled arrays or views (shape/strides/offset of the source) so the helper "
          "only records a dispatch; prefer an explicit NYI over evaluating inside eval_gpu.";
      out.push_back(c);
      return;
    }
    if (o.kind != Origin::Lazy || o.frame >= s.frameIndex() || o.frame < 0) return;
    Candidate c{"hidden-materialization", "eval"};
    c.problem = "Helper `" + s.fn.qualName + "` evaluates `" + var + "` with " + code(ev.text) +
                "; the caller built it lazily (" + o.how + ").";
    c.why =
        "The helper hides a nested graph evaluation and a host wait inside the GPU path; every caller that "
        "passes an unscheduled array pays a full pipeline drain.";
    c.direction =
        "Let the helper take the input as a view (shape/strides/offset) and record a dispatch, or require "
        "callers to pass scheduled arrays; do not eval inside the helper.";
    out.push_back(c);
  }
}

}  // namespace m2v::review
