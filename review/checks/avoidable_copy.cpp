// avoidable-copy: contiguous copies taken even when the layout is fine, staging through host memory, casts through
// float32 and back, compute-into-temporary-then-copy-back.
#include <algorithm>
#include <set>

#include "check.h"

namespace m2v::review {

static bool derivedFrom(const Function& fn, const std::string& var, const std::string& root) {
  std::set<std::string> seen{root};
  bool grew = true;
  while (grew) {
    grew = false;
    for (auto& v : fn.vars)
      if (!seen.count(v.name))
        for (auto& iv : v.initVars)
          if (seen.count(iv)) {
            seen.insert(v.name);
            grew = true;
            break;
          }
  }
  return seen.count(var) > 0;
}

void checkAvoidableCopy(const Site& s, Out& out) {
  if (s.ev.kind != "call") return;
  const Event& ev = s.ev;
  if (s.is(s.rules.stagingCalls)) {
    Candidate c{"avoidable-copy", "staging"};
    c.problem = code(ev.text) + " stages tensor data through host-visible memory on the operation path.";
    c.why = "Staging adds a copy and a host round trip per operation and needs the GPU work to be finished first.";
    c.direction = "Use a device-local buffer with a GPU copy (vkCmdCopyBuffer) or bind the data directly.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.copyCalls) && ev.args.size() >= 1 && !s.inCopyHelper()) {
    for (auto& cd : ev.conds)
      if ((cd.kind == "if" || cd.kind == "?:") && anyRegex({"size\\(\\)\\s*==\\s*0\\b"}, cd.text) &&
          cd.text.find("||") == std::string::npos) {
        Candidate c{"avoidable-copy"};
        c.nonIssue = true;
        c.reason = code(ev.text) + " runs only when " + cd.describe() + ": an empty array, nothing is copied.";
        out.push_back(c);
        return;
      }
    Origin src = s.originOfArg(0), dst = ev.args.size() >= 2 ? s.originOfArg(1) : Origin();
    if (src.kind == Origin::Lazy) return;  // hidden-materialization reports it
    if (dst.kind == Origin::Output && src.kind == Origin::Placeholder) {
      Candidate c{"avoidable-copy", "copy-back"};
      c.problem = code(ev.text) + " copies the temporary `" + src.var + "` (" + src.how +
                  ") back into the output after computing into it.";
      c.why =
          "An extra full-size copy dispatch and a second buffer for every call; the kernel could write the "
          "output directly.";
      c.direction = "Dispatch the kernel on the output buffer (with output strides if needed) and drop the temporary.";
      out.push_back(c);
      return;
    }
    if (dst.kind == Origin::Output && (src.kind == Origin::Input || src.kind == Origin::Unknown) && s.frameIndex() == 0)
      return;  // the primitive's own copy into its output
    // A copy between arrays of different dtypes is a cast (a staging conversion), not a layout copy: a strided
    // kernel would not remove it, reading the dtype in the shader would.
    for (size_t i = 0; i < 2 && i < ev.argVars.size(); ++i) {
      const Var* v = ev.argVars[i].empty() ? nullptr : s.fn.var(ev.argVars[i]);
      if (!v || v->isParam || !anyRegex(s.rules.dtypeNamePatterns, v->initText)) continue;
      Candidate c{"avoidable-copy", "cast-staging"};
      // The branch must positively select a half-precision dtype (`if (staged)` with `staged = dt == bfloat16`); a
      // test that excludes the common dtypes (`!f16_io && !bf16_io`) selects the rare ones.
      const Cond* dt = nullptr;
      for (auto* cd : s.conds())
        if (!dt && (cd->kind == "if" || cd->kind == "?:") && cd->text.find('!') == std::string::npos &&
            anyRegex(s.rules.inferenceDtypePatterns, s.expandedCond(s.condOwner(cd), *cd)))
          dt = cd;
      bool anyCond = false;
      for (auto* cd : s.conds()) anyCond = anyCond || cd->kind != "guard";
      if (anyCond && !dt) {
        c.nonIssue = true;
        c.reason = code(ev.text) + " converts dtypes only for inputs off the inference dtypes (" +
                   s.conds().back()->describe() + "): a rare path, not a layout copy.";
        out.push_back(c);
        return;
      }
      c.problem = code(ev.text) + " converts `" + ev.args[0] + "` to another dtype through a full copy (" +
                  (i == 0 ? "the cast back of a staged result" : "a dtype staging cast, not a layout copy") + ").";
      c.why = "An extra full-tensor read and write and a wider temporary on every call of an inference dtype.";
      c.direction = "Read and write the tensor's own dtype in the shader (convert on load and store, accumulate in "
                    "float32) so the staging casts disappear.";
      if (dt) c.triggerNote = "the dtype test " + dt->describe() + " selects the staging cast";
      out.push_back(c);
      return;
    }
    // A scalar copy (an upload of one value, a fill) or a copy into the output or a view of it (concatenate writing
    // each input into its slice) is the operation's own work, not staging.
    if (ev.text.find("CopyType::Scalar") != std::string::npos) {
      Candidate c{"avoidable-copy"};
      c.nonIssue = true;
      c.reason = code(ev.text) + " copies a single value (CopyType::Scalar): a fill or a scalar upload.";
      out.push_back(c);
      return;
    }
    if (ev.argVars.size() >= 2 && !ev.argVars[1].empty()) {
      const std::string& d = ev.argVars[1];
      const Var* dv = s.fn.var(d);
      bool intoOutput = false;
      for (auto& o : s.rules.outputParams) {
        intoOutput = intoOutput || d == o || (dv && !dv->isParam && std::find(dv->initVars.begin(), dv->initVars.end(),
                                                                               o) != dv->initVars.end());
        intoOutput = intoOutput || (dv && dv->isParam && d == o);
      }
      if (intoOutput && src.kind != Origin::Placeholder) {
        Candidate c{"avoidable-copy"};
        c.nonIssue = true;
        c.reason = code(ev.text) + " writes the operation's result into `" + d + "` (the output or a view of it).";
        out.push_back(c);
        return;
      }
    }
    const Cond* layout = s.condMatchingExpanded(s.rules.layoutCondPatterns);
    if (layout) {
      Candidate c{"avoidable-copy"};
      c.nonIssue = true;
      c.reason = code(ev.text) + " is taken only under the layout check " + code(layout->text) +
                 " (the kernel cannot read that layout).";
      out.push_back(c);
      return;
    }
    // "Unconditionally" must hold in the function that copies: a branch there the rules cannot read (a staging
    // flag, a helper's verdict) may well be the layout test, so the claim would not be substantiated.
    for (auto& cd : ev.conds)
      if (cd.kind != "guard") {
        Candidate c{"avoidable-copy"};
        c.nonIssue = true;
        c.reason = code(ev.text) + " is taken only when " + cd.describe() +
                   ", a branch the reviewer cannot tie to the layout: not reported as an unconditional copy.";
        out.push_back(c);
        return;
      }
    Candidate c{"avoidable-copy", "contiguous"};
    c.problem = code(ev.text) + " copies `" + ev.args[0] +
                "` into contiguous memory unconditionally, even when it is "
                "already contiguous.";
    c.why =
        "A full extra read and write of the tensor plus an allocation on every call, on the common contiguous "
        "case where it buys nothing.";
    c.direction =
        "Copy only when the layout requires it (check flags().row_contiguous / strides), or give the kernel "
        "strides so no copy is needed.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.castCalls) && !s.rules.wideCastPattern.empty() && ev.use.rfind("var:", 0) == 0) {
    bool wide = false;
    for (size_t i = 1; i < ev.args.size(); ++i)
      if (anyRegex({s.rules.wideCastPattern}, ev.args[i])) wide = true;
    if (!wide) return;
    std::string v = ev.use.substr(4);
    for (auto& e : s.fn.events) {
      if (e.kind != "call" || e.line <= ev.line || !nameMatches(s.rules.castCalls, e.name, e.qualName)) continue;
      if (e.argVars.empty() || e.argVars[0].empty() || !derivedFrom(s.fn, e.argVars[0], v)) continue;
      bool backWide = false;
      for (size_t i = 1; i < e.args.size(); ++i)
        if (anyRegex({s.rules.wideCastPattern}, e.args[i])) backWide = true;
      if (backWide) continue;
      Candidate c{"avoidable-copy", "cast-roundtrip"};
      c.problem =
          code(ev.text) + " widens to float32 and " + code(e.text) + " at " + s.at(e.line) + " casts the result back.";
      c.why = "Two extra full-tensor cast passes and a float32 temporary of twice the size on every call.";
      c.direction = "Compute in the input precision with float32 accumulation inside the kernel.";
      out.push_back(c);
      return;
    }
  }
}

}  // namespace m2v::review
