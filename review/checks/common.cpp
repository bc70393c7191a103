#include <algorithm>
#include <set>

#include "check.h"

namespace m2v::review {

bool Site::is(const std::vector<std::string>& names) const {
  return ev.kind == "call" && nameMatches(names, ev.name, ev.qualName);
}

std::string Site::rel(const std::string& file) const {
  if (file.size() > cb.root.size() && file.compare(0, cb.root.size(), cb.root) == 0)
    return file.substr(cb.root.size() + 1);
  return file;
}

std::string code(const std::string& s) {
  std::string t = s.size() > 90 ? s.substr(0, 87) + "..." : s;
  return "`" + t + "`";
}

std::string originText(const Origin& o) {
  switch (o.kind) {
    case Origin::Lazy:
      return "lazily built by " + o.how;
    case Origin::Input:
      return "a graph input of the primitive";
    case Origin::Output:
      return "the primitive's output";
    case Origin::Host:
      return "built on the host by " + o.how;
    case Origin::Placeholder:
      return "a temporary allocated by " + o.how;
    default:
      return "of unknown origin";
  }
}

static bool startsWithCallTo(const std::string& text, const std::vector<std::string>& names) {
  size_t p = text.find('(');
  if (p == std::string::npos) return false;
  std::string head = text.substr(0, p);
  size_t lt = head.find('<');
  if (lt != std::string::npos) head = head.substr(0, lt);
  size_t colon = head.rfind(':');
  if (colon != std::string::npos) head = head.substr(colon + 1);
  return std::find(names.begin(), names.end(), head) != names.end();
}

static Origin resolve(const Site& s, int frame, const std::string& var, unsigned line, int depth) {
  Origin o;
  o.var = var;
  if (var.empty() || depth > 8 || frame < 0) return o;
  const Frame& fr = s.frames[frame];
  const Function& fn = *fr.fn;
  auto at = [&](unsigned l) { return s.rel(fn.file) + ":" + std::to_string(l); };
  // latest whole-variable reassignment before the line
  const Event* last = nullptr;
  for (auto& e : fn.events)
    if (e.kind == "assign" && e.receiverVar == var && e.line < line) {
      // `x = helper(x)`: the assignment that encloses the event being judged is not where x came from
      if (frame == s.frameIndex() && e.line == s.ev.line && e.text.find(s.ev.text) != std::string::npos) continue;
      last = &e;
    }
  if (last) {
    // `x = contiguous_copy_gpu(x, s)`: a copy recorded on the GPU, scheduled like a graph input (no primitive)
    if (last->qualName == "op" && nameMatches(s.rules.copyCalls, last->templateArgs, last->templateArgs)) {
      o.kind = Origin::Input;
      o.how = code(last->text) + " at " + at(last->line);
      o.frame = frame;
      return o;
    }
    if (last->qualName == "op") {
      if (std::find(s.rules.lazyOps.begin(), s.rules.lazyOps.end(), last->templateArgs) != s.rules.lazyOps.end()) {
        o.kind = Origin::Lazy;
        o.how = code(last->text) + " at " + at(last->line);
        o.frame = frame;
      }
      return o;
    }
    if (last->qualName == "host") {
      o.kind = Origin::Host;
      o.how = code(last->text) + " at " + at(last->line);
      o.frame = frame;
      return o;
    }
    if (last->qualName == "alias" && !last->templateArgs.empty() && last->templateArgs != var)
      return resolve(s, frame, last->templateArgs, last->line, depth + 1);
    return o;
  }
  const Var* v = fn.var(var);
  if (!v) return o;  // a member or a global
  if (v->isParam) {
    auto it = fr.bound.find(var);
    if (it != fr.bound.end()) return it->second;
    if (frame == 0 && s.frames[0].entry) {
      bool isArray = false;
      for (auto& t : s.rules.arrayTypes)
        if (v->type.find(t) != std::string::npos) isArray = true;
      if (!isArray) return o;
      o.frame = 0;
      bool isOut =
          std::find(s.rules.outputParams.begin(), s.rules.outputParams.end(), var) != s.rules.outputParams.end();
      o.kind = isOut ? Origin::Output : Origin::Input;
      return o;
    }
    return o;
  }
  if (v->initKind == "op") {
    // `helper(reshape(x, ...), s)`: a helper handed a lazily built array returns one (or the same) still lazy
    bool lazyArg = false;
    for (auto& op : s.rules.lazyOps)
      if (!lazyArg && v->initText.find(op + "(") != std::string::npos &&
          anyRegex({"(^|[^\\w.>])" + op + "\\("}, v->initText.substr(v->initText.find('(') + 1)))
        lazyArg = true;
    if (lazyArg ||
        std::find(s.rules.lazyOps.begin(), s.rules.lazyOps.end(), v->initCallee) != s.rules.lazyOps.end()) {
      o.kind = Origin::Lazy;
      o.how = code(v->initText) + " at " + at(v->line);
      o.frame = frame;
    }
    return o;
  }
  if (v->initKind == "host" || v->initKind == "placeholder") {
    o.kind = v->initKind == "host" ? Origin::Host : Origin::Placeholder;
    o.how =
        code(v->name + (v->initText.empty() || v->initText[0] == '(' || v->initText[0] == '{' ? v->initText
                                                                                              : " = " + v->initText)) +
        " at " + at(v->line);
    o.frame = frame;
    return o;
  }
  if (v->initKind == "alias" && !v->initVars.empty() && v->initVars[0] != var)
    return resolve(s, frame, v->initVars[0], v->line + 1, depth + 1);
  return o;
}

Origin Site::originOf(const std::string& var) const { return resolve(*this, frameIndex(), var, ev.line + 1, 0); }

Origin Site::originOfArg(size_t i) const {
  if (i < ev.argVars.size() && !ev.argVars[i].empty()) return originOf(ev.argVars[i]);
  Origin o;
  if (i < ev.args.size() && startsWithCallTo(ev.args[i], rules.lazyOps)) {
    o.kind = Origin::Lazy;
    o.how = code(ev.args[i]) + " at " + at(ev.line);
    o.frame = frameIndex();
  }
  return o;
}

std::string Site::arrayVar() const {
  if (!ev.receiver.empty()) return ev.receiverVar;
  if (!ev.argVars.empty()) return ev.argVars[0];
  return "";
}

bool Site::isArrayVar(const std::string& var) const {
  const Var* v = fn.var(var);
  std::string type = v ? v->type : "";
  if (type.empty() && var == arrayVar() && !ev.receiverType.empty()) type = ev.receiverType;
  for (auto& t : rules.arrayTypes)
    if (type.find(t) != std::string::npos) return true;
  if (v && v->type == "auto") return true;
  if (v && (v->initKind == "op") &&
      std::find(rules.lazyOps.begin(), rules.lazyOps.end(), v->initCallee) != rules.lazyOps.end())
    return true;
  return false;
}

std::vector<const Cond*> Site::conds() const {
  std::vector<const Cond*> out;
  for (size_t k = 1; k < frames.size(); ++k)
    for (auto& c : frames[k].site->conds) out.push_back(&c);
  for (auto& c : ev.conds) out.push_back(&c);
  return out;
}

std::vector<const Loop*> Site::loops() const {
  std::vector<const Loop*> out;
  for (size_t k = 1; k < frames.size(); ++k)
    for (auto& l : frames[k].site->loops) out.push_back(&l);
  for (auto& l : ev.loops) out.push_back(&l);
  return out;
}

const Cond* Site::condMatching(const std::vector<std::string>& regexes) const {
  for (auto* c : conds())
    if (anyRegex(regexes, c->text) || (!c->owner.empty() && anyRegex(regexes, c->owner))) return c;
  return nullptr;
}

static bool negatedMatch(const std::string& text, const std::string& pat) {
  return anyRegex({"!\\s*[\\w.>()\\-]*" + pat, "!=\\s*(\\w+::)*" + pat}, text);
}

const Cond* Site::unevaluatedBranch() const {
  for (auto& c : ev.conds)
    for (auto& p : rules.unevaluatedCondPatterns) {
      if (!anyRegex({p}, c.text)) continue;
      bool neg = negatedMatch(c.text, p);
      bool positive = c.kind == "if" || c.kind == "?:";
      if (positive ? !neg : neg) return &c;
    }
  return nullptr;
}

const Cond* Site::positiveCondMatching(const std::vector<std::string>& regexes) const {
  for (auto* c : conds())
    if ((c->kind == "if" || c->kind == "?:" || c->kind == "case") && anyRegex(regexes, c->text)) return c;
  return nullptr;
}

bool Site::inCopyHelper() const { return nameMatches(rules.copyCalls, fn.name, fn.qualName); }

const Event* Site::laterDerefOf(const std::string& var) const {
  for (auto& e : fn.events)
    if (e.kind == "deref" && e.receiverVar == var && e.line >= ev.line) return &e;
  return nullptr;
}

const Cond* Site::branchOn(const std::string& var) const {
  for (auto& e : fn.events)
    for (auto& c : e.conds)
      if (c.line >= ev.line && std::find(c.vars.begin(), c.vars.end(), var) != c.vars.end()) return &c;
  return nullptr;
}

DataAccess classifyData(const Site& s) {
  DataAccess d;
  const Event& ev = s.ev;
  auto loopText = [&](const std::vector<Loop>& loops) {
    return loops.empty() ? std::string() : " in loop " + code(loops.back().header) + " at " + s.at(loops.back().line);
  };
  if (ev.use == "subscript" || ev.use == "deref" || ev.use == "cond") {
    d.hostAccess = true;
    d.accessLine = ev.line;
    d.write = ev.isWrite;  // `x.data<T>()[i] = v`: the subscript is an assignment target
    d.inLoop = !ev.loops.empty();
    d.how = "read directly at " + s.at(ev.line) + loopText(ev.loops);
    return d;
  }
  if (ev.use.rfind("var:", 0) == 0) {
    std::string p = ev.use.substr(4);
    if (const Event* r = s.laterDerefOf(p)) {
      d.hostAccess = true;
      d.accessLine = r->line;
      d.inLoop = !r->loops.empty();
      d.write = r->isWrite;
      d.how = std::string(r->isWrite ? "written" : "read") + " through `" + p + "` at " + s.at(r->line) +
              loopText(r->loops);
      return d;
    }
    for (auto& e : s.fn.events)
      if (e.kind == "call" && e.line >= ev.line && nameMatches(s.rules.hostReadCalls, e.name, e.qualName) &&
          std::find(e.argVars.begin(), e.argVars.end(), p) != e.argVars.end()) {
        d.hostAccess = true;
        d.accessLine = e.line;
        d.inLoop = !e.loops.empty();
        d.how = "copied on the host by " + code(e.text) + " at " + s.at(e.line);
        return d;
      }
    return d;
  }
  if (ev.use.rfind("arg:", 0) == 0) {
    std::string callee = ev.use.substr(4);
    std::string plain = callee.substr(callee.rfind(':') == std::string::npos ? 0 : callee.rfind(':') + 1);
    if (nameMatches(s.rules.hostReadCalls, plain, callee)) {
      d.hostAccess = true;
      d.accessLine = ev.line;
      d.inLoop = !ev.loops.empty();
      d.how = "copied on the host by `" + callee + "` at " + s.at(ev.line);
    }
  }
  return d;
}

bool isCpuFallback(const Site& s) {
  if (s.ev.kind != "call") return false;
  if (nameMatches(s.rules.cpuFallbackCalls, s.ev.name, s.ev.qualName)) return true;
  bool named = anyRegex(s.rules.cpuFallbackPatterns, s.ev.qualName.empty() ? s.ev.name : s.ev.qualName) ||
               anyRegex(s.rules.cpuFallbackPatterns, s.ev.name);
  if (!named) return false;
  // A CPU kernel works on arrays: a `cpu_*` helper given none (an allocator header, a settings query) is not one.
  for (size_t i = 0; i < s.ev.args.size(); ++i) {
    const std::string& v = i < s.ev.argVars.size() ? s.ev.argVars[i] : std::string();
    if ((!v.empty() && s.isArrayVar(v)) || anyRegex({"\\b(inputs|outputs|out|in)\\b"}, s.ev.args[i])) return true;
  }
  return false;
}

std::string Site::expandedCond(const Function& f, const Cond& c) const {
  std::string out = c.text;
  std::vector<std::string> todo = c.vars;
  std::set<std::string> seen;
  for (int level = 0; level < 2 && !todo.empty(); ++level) {
    std::vector<std::string> next;
    for (auto& name : todo) {
      if (!seen.insert(name).second) continue;
      const Var* v = f.var(name);
      if (!v || v->isParam || v->initText.empty() || v->initText.size() > 400) continue;
      out += " [" + name + " = " + v->initText + "]";
      next.insert(next.end(), v->initVars.begin(), v->initVars.end());
    }
    todo = next;
  }
  return out;
}

const Function& Site::condOwner(const Cond* c) const {
  for (size_t k = 1; k < frames.size(); ++k)
    for (auto& x : frames[k].site->conds)
      if (&x == c) return *frames[k - 1].fn;
  return fn;
}

const Cond* Site::condMatchingExpanded(const std::vector<std::string>& regexes) const {
  for (auto* c : conds())
    if (anyRegex(regexes, expandedCond(condOwner(c), *c)) || (!c->owner.empty() && anyRegex(regexes, c->owner)))
      return c;
  return nullptr;
}

std::vector<const Loop*> Site::nearLoops() const {
  std::vector<const Loop*> out;
  int here = frameIndex();
  for (size_t k = 1; k < frames.size(); ++k)
    if (here - (static_cast<int>(k) - 1) < rules.loopFrames)
      for (auto& l : frames[k].site->loops) out.push_back(&l);
  for (auto& l : ev.loops) out.push_back(&l);
  return out;
}

const Cond* Site::rareGate() const {
  for (auto& c : ev.conds) {
    if (c.kind != "if" && c.kind != "?:") continue;
    if (c.text.find("&&") != std::string::npos) continue;  // a conjunction may hold for common inputs too
    bool all = true;
    size_t a = 0;
    for (;;) {
      size_t p = c.text.find("||", a);
      std::string term = c.text.substr(a, p == std::string::npos ? std::string::npos : p - a);
      if (!anyRegex(rules.rareRefusalPatterns, term)) all = false;
      if (p == std::string::npos) break;
      a = p + 2;
    }
    if (all) return &c;
  }
  return nullptr;
}

static const Function* resolveIn(const Codebase& cb, const Event& e) {
  if (auto it = cb.functions.find(e.calleeKey); it != cb.functions.end()) return &it->second;
  const Function* hit = nullptr;
  int n = 0;
  for (auto& [k, f] : cb.functions)
    if (f.name == e.name && f.params.size() >= e.args.size() && (e.qualName.empty() || f.qualName == e.qualName))
      hit = &f, ++n;
  return n == 1 ? hit : nullptr;
}

bool Site::refusal(Refusal& r) const {
  for (auto& c : ev.conds) {
    std::string t = c.text;
    bool negated = !t.empty() && t[0] == '!';
    // `if (!f(...)) { fallback }`, `if (f(...)) return; fallback`, `if (f(...)) {...} else { fallback }`
    bool refused = (c.kind == "if" && negated) || ((c.kind == "guard" || c.kind == "else") && !negated);
    if (!refused) continue;
    std::string callText = negated ? t.substr(1) : t;
    while (!callText.empty() && callText[0] == ' ') callText.erase(0, 1);
    if (callText.size() > 2 && callText.front() == '(' && callText.back() == ')')
      callText = callText.substr(1, callText.size() - 2);
    for (auto& e : fn.events) {
      // the condition is exactly this call (not a comparison or a conjunction that contains it)
      if (e.kind != "call" || e.line < c.line || e.line > c.line + 4 || e.text != callText) continue;
      const Function* g = resolveIn(cb, e);
      if (!g) continue;
      bool backend = false;  // a dispatcher of the backend, not a library accessor (`v.empty()`, `x.flags()`)
      for (auto& d : rules.scopeDirs) backend = backend || g->file.find(d) != std::string::npos;
      if (!backend) continue;
      r.gate = g;
      r.call = e.text;
      bool rare = true;
      for (auto& ret : g->events) {
        if (ret.kind != "return" || ret.text == "true") continue;
        if (ret.text != "false") {
          r.reasons.push_back(code("return " + ret.text) + " (" + rel(g->file) + ":" + std::to_string(ret.line) + ")");
          rare = false;
          continue;
        }
        if (ret.conds.empty()) {
          r.reasons.push_back("unconditionally (" + rel(g->file) + ":" + std::to_string(ret.line) + ")");
          rare = false;
          continue;
        }
        const Cond& inner = ret.conds.back();
        r.reasons.push_back(inner.describe() + " (" + rel(g->file) + ":" + std::to_string(ret.line) + ")");
        if (!anyRegex(rules.rareRefusalPatterns, expandedCond(*g, inner))) rare = false;
      }
      r.rareOnly = rare && !r.reasons.empty();
      return true;
    }
  }
  return false;
}

const std::vector<CheckInfo>& allChecks() {
  static const std::vector<CheckInfo> checks = {
      {"host-sync", checkHostSync,
       "eval()/wait() of lazily built arrays, synchronize, wait-idle, fence waits, polling"},
      {"cpu-extraction", checkCpuExtraction,
       "item<T>(), host reads through data<T>()/raw_ptr(), host loops, read-back branches"},
      {"cpu-fallback", checkCpuFallback, "eval_cpu or CPU kernels called from the GPU path"},
      {"avoidable-copy", checkAvoidableCopy, "unconditional contiguous copies, staging, cast round trips, copy-back"},
      {"scalar-fast-path", checkScalarFastPath, "host-side scalar or small-tensor fast paths"},
      {"hidden-materialization", checkHiddenMaterialization, "lazily built arrays materialized by helpers or copies"},
      {"cb-break", checkCbBreak, "forced submits, flushes, queue switches on the operation path"},
      {"dispatch-fragmentation", checkDispatchFragmentation, "dispatches inside loops"},
      {"redundant-allocation", checkRedundantAllocation, "allocations in loops, double allocation"},
      {"silent-slow-path", checkSilentSlowPath, "unsupported cases handled by a silent slow fallback instead of NYI"},
  };
  return checks;
}

}  // namespace m2v::review
