// The narrow interface between the engine and the checks: a Site is one event (call, pointer read) reached on one
// path from an entry (eval_gpu), with the origins of the arrays it touches and the conditions and loops on the path.
// Checks emit Candidates (findings or accepted non-issues). No clang headers.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "model.h"

namespace m2v::review {

struct Origin {
  enum Kind { Unknown, Input, Output, Lazy, Host, Placeholder };
  Kind kind = Unknown;
  std::string var;  // variable as named where it was built
  std::string how;  // "`reshape(x, {n})` at a.cpp:12"
  int frame = -1;   // frame index where it was built (-1: unknown)
};

struct Frame {
  const Function* fn = nullptr;
  const Event* site = nullptr;          // the call in the previous frame that entered this one
  std::map<std::string, Origin> bound;  // parameter -> origin of the argument
  bool entry = true;                    // frame 0 is a pipeline entry (its array parameters are graph inputs)
  std::map<std::string, std::string> consts;  // parameter -> literal the caller passes (or the default it omits)
};

// Why a CPU fallback guarded by `!f(...)` (or reached past `if (f(...)) return;`) runs: the conditions of f's
// `return false`. rareOnly: every one is a case no inference dtype takes (complex input, a missing pipeline).
struct Refusal {
  const Function* gate = nullptr;
  std::string call;                  // `f(...)` as written at the fallback
  std::vector<std::string> reasons;  // "`cond` (path:line)" per refusing return
  bool rareOnly = false;
  // The reasons as one phrase: "a; b; c".
  std::string joinedReasons() const {
    std::string why;
    for (const std::string& reason : reasons) why += (why.empty() ? "" : "; ") + reason;
    return why;
  }
};

class Site {
 public:
  Site(const Event& ev, const std::vector<Frame>& frames, const Rules& rules, const Codebase& cb)
      : ev(ev), frames(frames), rules(rules), cb(cb), fn(*frames.back().fn) {}
  const Event& ev;
  const std::vector<Frame>& frames;
  const Rules& rules;
  const Codebase& cb;
  const Function& fn;
  std::string callDispatches;  // for a call inside a loop: the callee (qualified) when it records a dispatch

  int frameIndex() const { return static_cast<int>(frames.size()) - 1; }
  bool is(const std::vector<std::string>& names) const;  // callee matches (calls only)
  Origin originOf(const std::string& var) const;         // in this frame, at the event
  Origin originOfArg(size_t i) const;
  std::string arrayVar() const;  // receiver variable, or first argument for free calls eval(x)
  bool isArrayVar(const std::string& var) const;
  std::vector<const Cond*> conds() const;  // along the whole path, outermost first
  std::vector<const Loop*> loops() const;
  const Cond* condMatching(const std::vector<std::string>& regexes) const;
  std::string rel(const std::string& file) const;
  std::string at(unsigned line) const { return rel(fn.file) + ":" + std::to_string(line); }
  const Event* laterDerefOf(const std::string& var) const;  // first pointer read of var after the event
  const Cond* branchOn(const std::string& var) const;       // a condition in fn that reads var
  // A condition of this function that holds only for unevaluated arrays (still has a primitive, no buffer yet).
  const Cond* unevaluatedBranch() const;
  // A condition on the path that matches and holds in the positive sense (if / case, not else / early return).
  const Cond* positiveCondMatching(const std::vector<std::string>& regexes) const;
  bool inCopyHelper() const;  // the current function is itself a copy helper (its own internals are not findings)
  // A condition's text with the initializers of the local flags it tests (`staged` -> `staged = dt == bfloat16`).
  std::string expandedCond(const Function& f, const Cond& c) const;
  // Like condMatching, on the expanded texts.
  const Cond* condMatchingExpanded(const std::vector<std::string>& regexes) const;
  // The function owning the k-th condition of conds() (the caller for conditions on the call sites above).
  const Function& condOwner(const Cond* c) const;
  // Loops on the path at most rules.loopFrames frames above the event (farther ones are not this event's loop).
  std::vector<const Loop*> nearLoops() const;
  // The refusing helper gating this event, if the event runs only when a helper returns false.
  bool refusal(Refusal& r) const;
  // A condition of the event's own branch that holds only for rare inputs (every `||` term complex or 64-bit).
  const Cond* rareGate() const;
};

struct Candidate {
  Candidate() = default;
  explicit Candidate(std::string c, std::string r = "") : check(std::move(c)), rule(std::move(r)) {}
  std::string check, rule;
  std::string problem, why, direction;
  unsigned line = 0;  // 0: the event's line
  bool nonIssue = false;
  std::string reason;       // for non-issues
  std::string triggerNote;  // appended to the trigger: the condition that really leads here (a helper's refusal)
};
using Out = std::vector<Candidate>;

// Shared classification used by several checks.
struct DataAccess {
  bool hostAccess = false;  // the pointer is read or written on the host
  bool inLoop = false;
  bool write = false;
  unsigned accessLine = 0;
  std::string how;  // "read at a.cpp:20 in loop `for (...)`"
};
DataAccess classifyData(const Site& s);
bool isCpuFallback(const Site& s);
std::string originText(const Origin& o);
std::string code(const std::string& s);  // `s`, shortened

// The checks (one file each).
void checkHostSync(const Site&, Out&);
void checkCpuExtraction(const Site&, Out&);
void checkCpuFallback(const Site&, Out&);
void checkAvoidableCopy(const Site&, Out&);
void checkScalarFastPath(const Site&, Out&);
void checkHiddenMaterialization(const Site&, Out&);
void checkCbBreak(const Site&, Out&);
void checkDispatchFragmentation(const Site&, Out&);
void checkRedundantAllocation(const Site&, Out&);
void checkSilentSlowPath(const Site&, Out&);

struct CheckInfo {
  const char* id;
  void (*run)(const Site&, Out&);
  const char* summary;
};
const std::vector<CheckInfo>& allChecks();

}  // namespace m2v::review
