// cpu-extraction: item<T>() on device arrays, host reads/writes through data<T>()/raw_ptr() of GPU-written buffers,
// host loops over tensor data, branches on read-back values. Arrays built on the host are accepted.
#include "check.h"

namespace m2v::review {

void checkCpuExtraction(const Site& s, Out& out) {
  if (s.ev.kind != "call") return;
  const Event& ev = s.ev;
  if (nameMatches(s.rules.constantFunctions, s.fn.name, s.fn.qualName) && s.is(s.rules.itemCalls)) {
    Candidate c{"cpu-extraction"};
    c.nonIssue = true;
    c.reason = code(ev.text) + " in `" + s.fn.qualName +
               "` reads a compile-time constant (a scalar built on the host) to embed it in the kernel source.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.itemCalls)) {
    std::string var = s.arrayVar();
    Origin o = s.originOf(var);
    if (o.kind == Origin::Host) {
      Candidate c{"cpu-extraction"};
      c.nonIssue = true;
      c.reason = code(ev.text) + " reads `" + var + "`, " + originText(o) + ": no GPU work to wait for.";
      out.push_back(c);
      return;
    }
    Candidate c{"cpu-extraction", "item"};
    c.problem = code(ev.text) + " evaluates `" + var + "` (" + originText(o) + ") and copies it to the host";
    if (ev.inCondition)
      c.problem += ", and the branch depends on the value";
    else if (ev.use.rfind("var:", 0) == 0)
      if (const Cond* b = s.branchOn(ev.use.substr(4)))
        c.problem += "; the value drives the branch " + code(b->text) + " at " + s.at(b->line);
    c.problem += ".";
    c.why = "item() is eval plus a host read: the host waits for the GPU to finish everything that produces `" + var +
            "`, breaking the asynchronous pipeline on every call.";
    c.direction =
        "Keep the value on the device: pass it to the kernel as a buffer binding and branch on the GPU "
        "(or specialize on a host-known quantity such as shape or dtype).";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.dataCalls)) {
    std::string var = s.arrayVar();
    Origin o = s.originOf(var);
    DataAccess d = classifyData(s);
    if (o.kind == Origin::Host) {
      Candidate c{"cpu-extraction"};
      c.nonIssue = true;
      c.reason = code(ev.text) + " touches `" + var + "`, " + originText(o) + ": host memory, no GPU wait.";
      out.push_back(c);
      return;
    }
    if (!d.hostAccess) {
      if (ev.use.rfind("arg:", 0) == 0 || ev.use.rfind("var:", 0) == 0) {
        Candidate c{"cpu-extraction"};
        c.nonIssue = true;
        c.reason = code(ev.text) + " only takes the buffer's address; no host read or write of its contents was found.";
        out.push_back(c);
      }
      return;
    }
    if (o.kind == Origin::Placeholder && o.frame == s.frameIndex() && d.write && !d.inLoop) {
      Candidate c{"cpu-extraction"};
      c.nonIssue = true;
      c.reason = code(ev.text) + " fills `" + var + "` (" + originText(o) +
                 ") on the host before any GPU work uses it: nothing to wait for.";
      out.push_back(c);
      return;
    }
    Candidate c{"cpu-extraction", d.inLoop ? "host-loop" : "host-read"};
    c.problem = std::string(d.inLoop ? "Host loop over tensor data: " : "Host access to GPU buffer: ") + code(ev.text) +
                " of `" + var + "` (" + originText(o) + ") is " + d.how + ".";
    c.why =
        "The host can touch the buffer only after the GPU work writing it has finished: an implicit wait and a "
        "flush per operation" +
        std::string(d.inLoop ? ", then element-by-element work on the CPU." : ".");
    c.direction =
        "Do the work in a compute dispatch on the device buffer (or a device fill/copy); keep host access "
        "to arrays built on the host.";
    out.push_back(c);
  }
}

}  // namespace m2v::review
