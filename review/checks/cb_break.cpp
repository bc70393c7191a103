// cb-break: forced submits/flushes and queue switches on the operation path. Batched submits are accepted.
#include "check.h"

namespace m2v::review {

void checkCbBreak(const Site& s, Out& out) {
  if (s.ev.kind != "call") return;
  const Event& ev = s.ev;
  // The submit inside `synchronize` is how the synchronize works; host-sync reports the synchronize where called.
  if (nameMatches(s.rules.syncCalls, s.fn.name, s.fn.qualName) && s.is(s.rules.submitCalls)) {
    Candidate c{"cb-break"};
    c.nonIssue = true;
    c.reason = code(ev.text) + " is the submission that `" + s.fn.qualName +
               "` performs by definition; its callers' synchronize is the finding.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.forcedSubmitCalls)) {
    Candidate c{"cb-break", "forced-submit"};
    c.problem = code(ev.text) + " forces the recording to be submitted as soon as this operation ends.";
    c.why =
        "The command buffer is cut after this dispatch every time: the next operations start a new submission "
        "instead of chaining behind a barrier, and batching across operations is lost.";
    c.direction =
        "Express the dependency with a barrier (or a scratch-lane hazard check) and let the stream's "
        "batching policy decide when to submit.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.submitCalls)) {
    if (const Cond* b = s.condMatching(s.rules.batchedSubmitPatterns)) {
      Candidate c{"cb-break"};
      c.nonIssue = true;
      c.reason = code(ev.text) + " submits only when " + code(b->text) + ": batched submission, not per operation.";
      out.push_back(c);
      return;
    }
    std::string wait;
    for (auto& e : s.fn.events)
      if (e.kind == "call" && e.line > ev.line && nameMatches(s.rules.fenceWaitCalls, e.name, e.qualName)) {
        wait = " and " + code(e.text) + " at " + s.at(e.line) + " waits for it";
        break;
      }
    const Cond* sw = nullptr;  // submitted because the next work goes to another queue
    for (auto& cd : ev.conds)
      if ((cd.kind == "if" || cd.kind == "?:") && anyRegex(s.rules.queueSwitchCondPatterns, cd.text) &&
          cd.text.find("!=") != std::string::npos)
        sw = &cd;
    if (sw) {
      Candidate c{"cb-break", "queue-switch"};
      c.problem =
          code(ev.text) + " submits the open recording when the stream switches queues (" + code(sw->text) + ").";
      c.why =
          "Every switch between the compute and the transfer queue cuts the command buffer: the compute work "
          "recorded so far is submitted early and the transfer needs a semaphore hand-off back.";
      c.direction =
          "Record copies on the compute queue (vkCmdCopyBuffer or a copy kernel) inside the current "
          "recording; keep the transfer queue for batched uploads outside the operation chain.";
      out.push_back(c);
      return;
    }
    Candidate c{"cb-break", "submit"};
    c.problem = code(ev.text) + " forces a submission per operation" + wait + ".";
    c.why =
        "Each submit ends the command buffer: dependent dispatches that needed only a barrier now pay submission "
        "overhead and lose overlap.";
    c.direction =
        "Keep recording into the stream's command buffer and submit every N operations or at graph end "
        "(ggml-vulkan style); use barriers for dependencies.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.queueSwitchCalls)) {
    Candidate c{"cb-break", "queue-switch"};
    c.problem = code(ev.text) + " moves the operation to another queue/stream.";
    c.why = "Cross-queue work needs a submit and a semaphore hand-off; the chain on the original stream is broken.";
    c.direction = "Record the work on the primitive's stream; use a dedicated queue only for batched transfers.";
    out.push_back(c);
  }
}

}  // namespace m2v::review
