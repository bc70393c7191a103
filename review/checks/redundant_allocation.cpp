// redundant-allocation: allocations inside loops, and the same array allocated twice on one path.
#include "check.h"

namespace m2v::review {

static bool prefixOf(const std::vector<Cond>& a, const std::vector<Cond>& b) {
  if (a.size() > b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].text != b[i].text || a[i].kind != b[i].kind || a[i].line != b[i].line) return false;
  return true;
}

void checkRedundantAllocation(const Site& s, Out& out) {
  if (s.ev.kind != "call") return;
  const Event& ev = s.ev;
  if (s.is(s.rules.perDispatchAllocCalls) && s.nearLoops().empty()) {
    Candidate c{"redundant-allocation", "per-dispatch"};
    // Created on a cache miss, a lazily set handle or an empty free list: reused afterwards, not per operation.
    if (const Cond* cached = s.condMatchingExpanded(s.rules.cacheCondPatterns)) {
      c.nonIssue = true;
      c.reason = code(ev.text) + " runs only when " + cached->describe() + " (in `" + s.condOwner(cached).qualName +
                 "`): the object is cached or pooled and reused, not created per operation.";
      out.push_back(c);
      return;
    }
    c.problem = code(ev.text) + " creates a buffer (or pool, fence) for this one operation on every call.";
    c.why =
        "Allocation and release per dispatch: allocator or driver work on the recording path for data that "
        "could live in push constants or a preallocated ring.";
    c.direction =
        "Pass small parameters as push constants, or suballocate from a per-stream ring/pool that is "
        "recycled when the submission completes.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.allocCalls)) {
    const Loop* bad = nullptr;
    for (auto* l : s.nearLoops())
      if ((l->constBound < 0 || l->constBound > s.rules.smallPassBound) &&
          !anyRegex(s.rules.smallLoopPatterns, l->header))
        bad = l;
    if (!bad) return;
    Candidate c{"redundant-allocation", "in-loop"};
    c.problem = code(ev.text) + " allocates on every iteration of " + code(bad->header) + ".";
    c.why = "Allocator traffic (and possibly device memory allocation) per iteration; buffers could be reused.";
    c.direction = "Allocate once before the loop (or from a preallocated pool) and reuse it.";
    out.push_back(c);
    return;
  }
  if (s.is(s.rules.setDataCalls) && !ev.receiverVar.empty()) {
    for (auto& e : s.fn.events) {
      if (&e == &ev || e.line >= ev.line) break;
      if (e.kind == "call" && nameMatches(s.rules.setDataCalls, e.name, e.qualName) &&
          e.receiverVar == ev.receiverVar && e.receiver == ev.receiver && prefixOf(e.conds, ev.conds) && e.loops.size() == ev.loops.size()) {
        Candidate c{"redundant-allocation", "double"};
        c.problem = "`" + ev.receiverVar + "` is allocated again by " + code(ev.text) + " after " + code(e.text) +
                    " at " + s.at(e.line) + " on the same path.";
        c.why = "The first allocation is wasted (allocator traffic, possibly a device allocation) on every call.";
        c.direction = "Allocate once, after the branch that decides the size or layout.";
        out.push_back(c);
        return;
      }
    }
  }
}

}  // namespace m2v::review
