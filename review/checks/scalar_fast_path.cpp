// scalar-fast-path: a host-side branch for scalar or small tensors that reads or writes device data on the host.
#include "check.h"

namespace m2v::review {

void checkScalarFastPath(const Site& s, Out& out) {
  if (s.ev.kind != "call") return;
  const Cond* small = s.positiveCondMatching(s.rules.smallTensorPatterns);
  if (!small) return;
  std::string var = s.arrayVar();
  bool host = false;
  std::string what;
  if (s.is(s.rules.itemCalls)) {
    Origin o = s.originOf(var);
    host = o.kind != Origin::Host;
    what = "reads " + code(s.ev.text) + " on the host";
  } else if (s.is(s.rules.dataCalls)) {
    Origin o = s.originOf(var);
    DataAccess d = classifyData(s);
    host = o.kind != Origin::Host && d.hostAccess;
    what = "touches `" + var + "` on the host (" + code(s.ev.text) + ", " + d.how + ")";
  }
  if (!host) return;
  Candidate c{"scalar-fast-path", "host"};
  c.problem = "Host-side small-tensor fast path under " + code(small->text) + " " + what + ".";
  c.why =
      "Small tensors are common in decoding (scalars, single tokens): the fast path syncs the host with the GPU "
      "on exactly the shapes that run every step, which costs far more than the dispatch it avoids.";
  c.direction =
      "Drop the host fast path and use the regular kernel (or a tiny dispatch / push-constant variant) so "
      "small shapes stay on the device.";
  out.push_back(c);
}

}  // namespace m2v::review
