// host-sync: array eval()/wait() on lazily built arrays, stream/device synchronize, wait-idle, host fence and
// semaphore waits, host polling loops. GPU-side waits are accepted.
#include <regex>

#include "check.h"

namespace m2v::review {

// The standard library's thread synchronisation (a future's wait is its base class's in libstdc++): its waits end
// when another host thread acts (a pipeline built, a task finished), whatever the GPU does.
static bool waitsForHostThread(const Event& ev) {
  static const std::regex kHostPrimitive(
      R"(^(const )?std::(condition_variable(_any)?|(shared_)?future|__basic_future|latch|barrier|)"
      R"(counting_semaphore|binary_semaphore|thread|jthread)\b)");
  static const std::regex kHostWait(R"(^(wait|wait_for|wait_until|arrive_and_wait|acquire|try_acquire_for|join|get)$)");
  return std::regex_match(ev.name, kHostWait) &&
         (std::regex_search(ev.receiverType, kHostPrimitive) || std::regex_search(ev.qualName, kHostPrimitive));
}

void checkHostSync(const Site& s, Out& out) {
  if (s.ev.kind != "call") return;
  const Event& ev = s.ev;
  if (nameMatches(s.rules.hostWaitApiFunctions, s.fn.name, s.fn.qualName) &&
      (s.is(s.rules.evalCalls) || s.is(s.rules.syncCalls) || s.is(s.rules.fenceWaitCalls))) {
    Candidate c{"host-sync"};
    c.nonIssue = true;
    c.reason = code(ev.text) + " is the body of `" + s.fn.qualName +
               "`, the host wait the scheduler or the user asks for when a result is needed; it is not on an "
               "operation's path.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.gpuSideWaits)) {
    Candidate c;
    c.check = "host-sync";
    c.nonIssue = true;
    c.reason =
        code(ev.text) + " waits on the GPU timeline (recorded into the command buffer); the host does not block.";
    out.push_back(c);
    return;
  }
  if (waitsForHostThread(ev)) {
    Candidate c{"host-sync"};
    c.nonIssue = true;
    c.reason = code(ev.text) + " waits for another host thread (`" +
               (ev.receiverType.empty() ? ev.qualName : ev.receiverType) +
               "`), not for the GPU: the stream's recorded work is not drained.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.evalCalls)) {
    std::string var = s.arrayVar();
    bool array = ev.receiver.empty() ? !var.empty() : s.isArrayVar(var);
    if (!array && !ev.receiver.empty() && ev.name == "wait") {
      Candidate c{"host-sync", "blocking-wait"};
      c.problem = code(ev.text) + " blocks the host until the GPU signals the event.";
      c.why = "The CPU stops recording while the GPU drains; the next operations cannot be queued behind this one.";
      c.direction =
          "Express the dependency on the GPU (barrier, timeline semaphore or event recorded in the stream) "
          "and let the host wait once at the end of the graph.";
      out.push_back(c);
      return;
    }
    if (!array) return;
    Origin o = s.originOf(var);
    if (ev.name == "wait" && o.kind == Origin::Input) {
      // A graph input is scheduled, not finished: waiting for it blocks the host until its producer ran on the GPU.
      Candidate c{"host-sync", "wait-input"};
      c.problem = code(ev.text) + " blocks the host until the GPU has produced `" + var + "`, a graph input.";
      c.why = "The host stops recording until the queue drains up to the producer; the next operations cannot be "
              "queued behind this one.";
      c.direction = "Let the stream order the input (barrier or semaphore) and read it on the GPU instead of waiting.";
      out.push_back(c);
      return;
    }
    if (ev.name == "wait") {
      const Cond* unevaluated = s.unevaluatedBranch();
      bool lazy = o.kind == Origin::Lazy;
      if (unevaluated || lazy) {
        Candidate c{"host-sync", "wait"};
        c.problem = code(ev.text) + " blocks the host until `" + var + "` is produced" +
                    (unevaluated ? " (" + code(unevaluated->text) + ": it has no data yet)" : ", " + originText(o)) +
                    ".";
        c.why =
            "The CPU stops recording until other GPU work finishes: the stream drains and the next operations "
            "cannot be queued behind this one.";
        c.direction =
            "Order the producer before this operation on the GPU (event or semaphore in the stream) "
            "instead of waiting on the host; the scheduler already orders graph inputs.";
        out.push_back(c);
        return;
      }
    }
    if (o.kind == Origin::Lazy && o.frame == s.frameIndex()) {
      Candidate c{"host-sync", "eval-lazy"};
      c.problem = code(ev.text) + " evaluates `" + var + "`, " + originText(o) + ", and waits for it on the host.";
      c.why =
          "A nested graph evaluation is submitted and the host blocks until it finishes: the command stream is "
          "broken and the GPU idles while the host catches up.";
      c.direction =
          "Record the op's work directly into the stream (view or strided kernel on the input) instead of "
          "building and evaluating a temporary graph; if unavoidable, NYI is preferable to a hidden sync.";
      out.push_back(c);
    } else if (o.kind == Origin::Input) {
      Candidate c{"host-sync"};
      c.nonIssue = true;
      c.reason = code(ev.text) + ": `" + var + "` is a graph input that arrives evaluated; eval() does nothing.";
      out.push_back(c);
    } else if (o.kind == Origin::Host) {
      Candidate c{"host-sync"};
      c.nonIssue = true;
      c.reason = code(ev.text) + ": `" + var + "` is " + originText(o) + "; evaluating it does no GPU work.";
      out.push_back(c);
    }
    return;
  }
  if (s.is(s.rules.syncCalls)) {
    Candidate c{"host-sync", "synchronize"};
    if (const Cond* rare = s.rareGate()) {
      c.nonIssue = true;
      c.reason = code(ev.text) + " runs only when " + rare->describe() + ": complex or 64-bit input.";
      out.push_back(c);
      return;
    }
    if (Refusal r; s.refusal(r)) {
      const std::string why = r.joinedReasons();
      if (r.rareOnly) {
        c.nonIssue = true;
        c.reason = code(ev.text) + " runs only when " + code(r.call) + " refuses: " + why +
                   ". Every other dtype stays on the GPU without a wait.";
        out.push_back(c);
        return;
      }
      c.triggerNote = code(r.call) + " returns false: " + why;
    }
    c.problem = code(ev.text) + " waits on the host for all queued GPU work.";
    c.why =
        "Every operation on this path drains the queue: the GPU idles between operations and the host cannot "
        "run ahead to record the next ones.";
    c.direction =
        "Remove the synchronize from the operation path; order dependent work with barriers inside the "
        "stream and synchronize once when the caller needs the result.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.fenceWaitCalls)) {
    Candidate c{"host-sync", "fence-wait"};
    c.problem = code(ev.text) + " blocks the host on a fence/semaphore of work just submitted.";
    c.why = "Submit-then-wait per operation serializes CPU and GPU: no overlap, one round trip per op.";
    c.direction =
        "Batch submissions without a host wait; use timeline semaphores or barriers for dependencies and "
        "wait once at the end of the graph.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.pollingCalls)) {
    // A poll spins only when a loop waits on its answer: the call (or the helper that makes it) sits in the loop's
    // condition, or its result decides whether the loop goes on. Reading the results of work already known to be
    // finished inside some loop is not polling.
    auto mentions = [](const std::string& text, const std::string& word) {
      return !word.empty() && std::regex_search(text, std::regex("\\b" + word + "\\b"));
    };
    const Loop* spinning = nullptr;
    if (!ev.loops.empty()) {
      const Loop& l = ev.loops.back();
      std::string var = ev.use.rfind("var:", 0) == 0 ? ev.use.substr(4) : "";
      if (ev.inCondition || ev.use == "cond" || l.header.find(ev.text) != std::string::npos || mentions(l.header, var))
        spinning = &l;
    }
    for (size_t k = s.frames.size(); !spinning && k-- > 1;) {
      const Event* call = s.frames[k].site;  // the call, in the caller, that led here
      if (call && call->inCondition && !call->loops.empty()) spinning = &call->loops.back();
    }
    if (!spinning) return;
    Candidate c{"host-sync", "polling"};
    c.problem =
        code(ev.text) + " is polled in loop " + code(spinning->header) + ": the host spins until the GPU is done.";
    c.why = "A host polling loop is a blocking wait that also burns a CPU core; nothing else is recorded meanwhile.";
    c.direction = "Do not wait inside the operation; chain the dependent work on the GPU timeline.";
    out.push_back(c);
  }
}

}  // namespace m2v::review
