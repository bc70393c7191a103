// Interprocedural walk from each entry (eval_gpu) through the codebase's callees, running the checks at every
// event on the paths that pass through the target, then merging, suppressing and ordering the results.
#include "engine.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "check.h"

namespace m2v::review {

std::string Cond::describe() const {
  auto q = code(text);
  if (kind == "if" || kind == "?:") return q;
  if (kind == "else" || kind == "else ?:") return "not " + q;
  if (kind == "guard") return "not " + q + " (past the early return at line " + std::to_string(line) + ")";
  if (kind == "case") return code("switch (" + owner + ")") + " is case " + q;
  if (kind == "default") return code("switch (" + owner + ")") + " takes the default";
  return q;
}

int severityRank(const std::string& s) { return s == "high" ? 3 : s == "medium" ? 2 : s == "low" ? 1 : 0; }

bool isHazardCall(const Rules& rules, const Event& e) {
  for (auto* l : {&rules.syncCalls, &rules.fenceWaitCalls, &rules.evalCalls, &rules.submitCalls,
                  &rules.queueSwitchCalls, &rules.forcedSubmitCalls})
    if (nameMatches(*l, e.name, e.qualName)) return true;
  return false;
}

bool isFallbackCall(const Rules& rules, const Event& e) {
  return nameMatches(rules.cpuFallbackCalls, e.name, e.qualName) ||
         anyRegex(rules.cpuFallbackPatterns, e.qualName.empty() ? e.name : e.qualName);
}

namespace {

struct Engine {
  const Codebase& cb;
  const Rules& rules;
  const Target& target;
  Review& rv;
  std::map<std::string, std::vector<const Function*>> byName;
  std::map<std::string, std::set<std::string>> callers;  // callee key -> caller keys
  std::set<std::string> inspected, entriesUsed;
  std::map<std::pair<std::string, unsigned>, size_t> findingAt;  // (file, line) -> index
  std::set<std::tuple<std::string, unsigned, std::string>> nonIssueSeen;
  std::string currentEntry;
  std::string currentReach;
  std::map<std::string, std::string>
      hazardImpl;  // function key -> the reported wait/submit call that runs it  // "" when walking from an entry;
                   // otherwise how the root was (not) reached
  size_t steps = 0;
  std::set<std::string> truncated;  // roots whose walk hit the step limit

  std::map<std::string, std::vector<const Function*>> overriders;  // virtual method key -> overriding definitions
  std::map<std::string, bool> dispatches;                          // function key -> reaches a dispatch

  Engine(const Codebase& cb, const Rules& rules, const Target& t, Review& rv)
      : cb(cb), rules(rules), target(t), rv(rv) {
    for (auto& [k, f] : cb.functions) byName[f.name].push_back(&f);
    for (auto& [k, f] : cb.functions)
      for (auto& o : f.overrides) overriders[o].push_back(&f);
    for (auto& [k, f] : cb.functions)
      for (auto& e : f.events)
        for (auto* g : resolveAll(e)) callers[g->key].insert(f.key);
  }

  // Every definition a call (or a function reference) may run: the resolved callee, and for a virtual method every
  // override defined in the codebase (a call through the base class reaches them all).
  std::vector<const Function*> resolveAll(const Event& e) const {
    std::vector<const Function*> out;
    if (e.kind != "call" && e.kind != "ref") return out;
    if (const Function* g = resolve(e)) out.push_back(g);
    auto it = overriders.find(e.calleeKey);
    if (it != overriders.end())
      for (auto* g : it->second)
        if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
    return out;
  }

  // The call is itself the hazard (a wait, a submit, a fallback): report it there, do not also report its insides.
  bool hazardCall(const Event& e) const { return isHazardCall(rules, e); }

  bool reachesDispatch(const Function& f, int depth = 0) {
    auto it = dispatches.find(f.key);
    if (it != dispatches.end()) return it->second;
    dispatches[f.key] = false;  // cycles: assume no until proven
    bool any = false;
    for (auto& e : f.events) {
      if (e.kind != "call" || any) continue;
      if (nameMatches(rules.dispatchCalls, e.name, e.qualName))
        any = true;
      else if (depth < 6)
        for (auto* g : resolveAll(e))
          if (reachesDispatch(*g, depth + 1)) any = true;
    }
    return dispatches[f.key] = any;
  }

  std::string rel(const std::string& file) const {
    if (file.size() > cb.root.size() && file.compare(0, cb.root.size(), cb.root) == 0)
      return file.substr(cb.root.size() + 1);
    return file;
  }
  std::string loc(const Function& f, unsigned line) const { return rel(f.file) + ":" + std::to_string(line); }

  const Function* resolve(const Event& e) const {
    if (e.kind != "call" && e.kind != "ref") return nullptr;
    auto it = cb.functions.find(e.calleeKey);
    if (it != cb.functions.end()) return &it->second;
    if (!e.calleeKey.empty() && !e.qualName.empty()) {
      // declared but defined elsewhere under another spelling: match by qualified name and arity
      const Function* hit = nullptr;
      int n = 0;
      auto bn = byName.find(e.name);
      if (bn != byName.end())
        for (auto* f : bn->second)
          if (f->qualName == e.qualName && f->params.size() == e.args.size()) hit = f, ++n;
      return n == 1 ? hit : nullptr;
    }
    // unresolved (dependent or recovered) call: a unique definition with that name and arity
    auto bn = byName.find(e.name);
    if (bn == byName.end()) return nullptr;
    const Function* hit = nullptr;
    int n = 0;
    for (auto* f : bn->second)
      if (f->params.size() == e.args.size()) hit = f, ++n;
    return n == 1 ? hit : nullptr;
  }

  bool isEntry(const Function& f) const {
    return std::find(rules.entryFunctions.begin(), rules.entryFunctions.end(), f.name) != rules.entryFunctions.end();
  }

  bool fallback(const Event& e) const { return isFallbackCall(rules, e); }

  std::string trigger(const std::vector<Frame>& frames, const Event& ev) const {
    std::string out;
    bool any = false;
    for (size_t k = 0; k < frames.size(); ++k) {
      const Function& f = *frames[k].fn;
      const Event& at = k + 1 < frames.size() ? *frames[k + 1].site : ev;
      std::vector<std::string> parts;
      for (auto& c : at.conds) parts.push_back(c.describe());
      std::string seg = "in `" + f.qualName + "`";
      if (!parts.empty()) {
        any = true;
        seg += " when ";
        for (size_t i = 0; i < parts.size(); ++i) seg += (i ? " and " : "") + parts[i];
      }
      for (auto& l : at.loops) {
        any = true;
        seg += ", inside " + code(l.header) + " (line " + std::to_string(l.line) + ")";
      }
      if (k + 1 < frames.size())
        seg += ", calls " + code(at.text) + " at " + loc(f, at.line);
      else
        seg += ", reaches " + code(at.text) + " at " + loc(f, at.line);
      if (!out.empty()) out += " -> ";
      out += seg;
    }
    if (!any) out = "Unconditionally, whenever the entry runs: " + out;
    return out;
  }

  // The condition calls a switch helper whose value, with the variable unset, is true (`if (env == nullptr) return
  // true;`): the guarded path is the default one, not a debug path.
  bool defaultOn(const Cond& c) const {
    std::string t = c.text;
    size_t paren = t.find('(');
    if (paren == std::string::npos) return false;
    std::string head = t.substr(0, paren);
    size_t start = head.find_last_of("!:. ");
    std::string name = start == std::string::npos ? head : head.substr(start + 1);
    auto bn = byName.find(name);
    if (bn == byName.end()) return false;
    for (auto* g : bn->second)
      for (auto& e : g->events)
        if (e.kind == "return" && e.text == "true")
          for (auto& rc : e.conds)
            if ((rc.kind == "if" && anyRegex({"==\\s*nullptr", "^!\\s*\\w+$"}, rc.text)) ||
                (rc.kind == "else" && anyRegex({"!=\\s*nullptr"}, rc.text)))
              return true;
    return false;
  }

  std::string suppression(const std::vector<Frame>& frames, const Event& ev) const {
    std::vector<const Event*> sites;
    for (size_t k = 1; k < frames.size(); ++k) sites.push_back(frames[k].site);
    sites.push_back(&ev);
    for (auto* s : sites) {
      if (s->inOnce)
        return "one-time warm-up: runs inside a call_once body or a static initializer, not per operation.";
      for (auto& c : s->conds) {
        // an environment switch decides the branch alone (a disjunction can take it for other reasons)
        bool alone = c.text.find("||") == std::string::npos;
        if (c.envGated && defaultOn(c)) continue;  // a feature switch that is on unless the variable says off
        if (c.envGated && alone && (c.kind == "if" || c.kind == "?:"))
          return "debug/trace path behind the environment switch " + code(c.text) + ", off by default.";
        if (c.envGated && alone && c.kind == "guard" && c.text.find('!') != std::string::npos)
          return "debug/trace path: runs only past the early return on the environment switch " + code(c.text) +
                 ", off by default.";
        if (c.onceFlag && (c.kind == "if"))
          return "one-time warm-up behind the static flag " + code(c.text) + ", set inside the branch.";
      }
    }
    return "";
  }

  // A condition on the path that proves the array touched lives in host memory (`!is_vulkan_buffer(...)`, an early
  // return unless `is_host_readable_...`): the read does not wait on the GPU.
  std::string hostResident(const std::vector<Frame>& frames, const Event& ev) const {
    auto polarity = [](const std::string& text, const std::vector<std::string>& pats, bool& pos, bool& neg) {
      pos = neg = false;
      for (auto& p : pats) {
        if (anyRegex({"!\\s*(\\w+::)*" + p}, text))
          neg = true;
        else if (anyRegex({p}, text))
          pos = true;
      }
    };
    (void)frames;
    for (auto* s : {&ev})  // the array is local to the function that touches it: its own conditions decide
      for (auto& c : s->conds) {
        bool hp, hn, dp, dn;
        polarity(c.text, rules.hostResidentPatterns, hp, hn);
        polarity(c.text, rules.deviceResidentPatterns, dp, dn);
        bool positive = (c.kind == "if" || c.kind == "?:") && c.text.find("||") == std::string::npos;
        bool negative = c.kind == "guard" || c.kind == "else" || c.kind == "else ?:";
        if ((positive && (hp || dn)) || (negative && (hn || dp)))
          return code(ev.text) + ": the array is host-resident here (" + c.describe() + "): no GPU work to wait for.";
      }
    return "";
  }

  // The function's name occurs in its own source file only on the lines of its definition header.
  bool unnamedElsewhere(const Function& f) const {
    if (std::find(cb.parsedFiles.begin(), cb.parsedFiles.end(), f.file) == cb.parsedFiles.end())
      return false;  // defined in a header: every unit that includes it may call it
    std::ifstream in(f.file);
    if (!in) return false;
    std::string l;
    for (unsigned n = 1; std::getline(in, l); ++n) {
      if (n >= f.line && n <= f.line + 2) continue;
      for (size_t p = l.find(f.name); p != std::string::npos; p = l.find(f.name, p + 1)) {
        auto word = [&](size_t i) { return std::isalnum(static_cast<unsigned char>(l[i])) || l[i] == '_'; };
        bool left = p == 0 || !word(p - 1), right = p + f.name.size() >= l.size() || !word(p + f.name.size());
        if (left && right) return false;
      }
    }
    return true;
  }

  void addNonIssue(const std::string& check, const Function& f, unsigned line, const std::string& reason) {
    // one entry per spot and reason, whichever check looked at it first
    std::string same = reason;
    if (auto p = same.find(" (" + check + ")"); p != std::string::npos) same.erase(p, check.size() + 3);
    auto key = std::make_tuple(f.file, line, same);
    if (nonIssueSeen.count(key)) return;
    nonIssueSeen.insert(key);
    rv.nonIssues.push_back({check, rel(f.file), f.qualName, reason, line});
  }

  int priority(const std::string& check) const {
    auto it = std::find(rules.priority.begin(), rules.priority.end(), check);
    return it == rules.priority.end() ? 1000 : static_cast<int>(it - rules.priority.begin());
  }

  void record(const std::vector<Frame>& frames, const Event& ev, const Candidate& c) {
    const Function& f = *frames.back().fn;
    unsigned line = c.line ? c.line : ev.line;
    if (c.nonIssue) {
      addNonIssue(c.check, f, line, c.reason);
      return;
    }
    std::string sup = suppression(frames, ev);
    if (sup.empty() && (c.check == "cb-break" || c.check == "host-sync") &&
        nameMatches(rules.graphEndFunctions, f.name, f.qualName))
      sup = "`" + f.qualName +
            "` runs once at the end of a graph evaluation (the scheduler's flush point), not per "
            "operation.";
    if (sup.empty() && (c.check == "cpu-extraction" || c.check == "scalar-fast-path" || c.check == "host-sync"))
      sup = hostResident(frames, ev);
    if (sup.empty() && c.check == "host-sync" && !currentReach.empty() && frames.size() == 1 &&
        anyRegex({"synchroni[sz]e|^wait"}, f.name))
      sup = "`" + f.qualName + "` is itself a synchronize/wait API and no entry was shown to reach it: its callers, "
            "where they are on an operation's path, are the findings.";
    if (!sup.empty()) {
      addNonIssue(c.check, f, line, code(ev.text) + " (" + c.check + "): " + sup);
      return;
    }
    Finding fd;
    fd.check = c.check;
    fd.rule = c.rule;
    fd.severity = rules.severityOf(c.check, c.rule);
    fd.file = rel(f.file);
    fd.line = line;
    fd.function = f.qualName;
    fd.problem = c.problem;
    fd.why = c.why;
    fd.direction = c.direction;
    fd.trigger = trigger(frames, ev);
    if (!c.triggerNote.empty()) fd.trigger += "; taken when " + c.triggerNote;
    if (!currentReach.empty()) {
      fd.reachability = currentReach;
      fd.proven = false;
      // One sentence: where it runs inside the function, and that no entry was shown to reach it.
      std::string local;
      for (auto& cd : ev.conds) local += (local.empty() ? "" : " and ") + cd.describe();
      fd.trigger = "Reachability not established (" + currentReach + "); within `" + f.qualName + "` it runs " +
                   (local.empty() ? std::string("unconditionally") : "when " + local) +
                   (c.triggerNote.empty() ? "" : ", taken when " + c.triggerNote) + ".";
    } else {
      fd.reachability = "reached from `" + frames.front().fn->qualName + "`";
    }
    for (size_t k = 0; k < frames.size(); ++k) {
      const Function& g = *frames[k].fn;
      fd.chain.push_back(g.qualName + " (" + loc(g, g.line) + ")");
    }
    fd.macroGenerated = f.line == f.endLine;
    for (auto& cd : ev.conds)
      fd.pathKey += (cd.kind == "case" || cd.kind == "default" ? "switch " + cd.owner : cd.kind + " " + cd.text) + ";";
    for (auto& l : ev.loops) fd.pathKey += "loop " + l.header + ";";
    auto key = std::make_pair(fd.file, fd.line);
    auto it = findingAt.find(key);
    if (it == findingAt.end()) {
      findingAt[key] = rv.findings.size();
      rv.findings.push_back(fd);
      return;
    }
    Finding& old = rv.findings[it->second];
    if (priority(fd.check) < priority(old.check)) {
      auto also = old.alsoFrom;
      old = fd;
      old.alsoFrom = also;
    } else if (old.check == fd.check && old.chain.front() != fd.chain.front() &&
               std::find(old.alsoFrom.begin(), old.alsoFrom.end(), fd.chain.front()) == old.alsoFrom.end()) {
      old.alsoFrom.push_back(fd.chain.front());
    }
  }

  // The literal a caller passes for a parameter (or the default argument it omits), when it decides a test.
  static bool literal(const std::string& t) {
    static const std::set<std::string> lits = {"nullptr", "NULL", "std::nullopt", "nullopt", "false", "true", "0",
                                               "{}", "std::nullopt_t{}"};
    return lits.count(t) > 0;
  }
  static bool truthy(const std::string& v) { return v == "true"; }

  // The value of one term of a condition under the frame's constants: 1 true, 0 false, -1 unknown.
  static int termValue(std::string t, const std::map<std::string, std::string>& consts) {
    auto trim = [](std::string& x) {
      while (!x.empty() && (x.front() == ' ' || x.front() == '(')) x.erase(0, 1);
      while (!x.empty() && (x.back() == ' ' || x.back() == ')')) x.pop_back();
    };
    trim(t);
    bool neg = false;
    while (!t.empty() && t[0] == '!') neg = !neg, t.erase(0, 1), trim(t);
    std::string var = t;
    bool eqNull = false, neNull = false;
    for (const char* suf : {".has_value(", "->has_value("})
      if (auto p = var.find(suf); p != std::string::npos) var = var.substr(0, p);
    if (auto p = var.find("!= nullptr"); p != std::string::npos) var = var.substr(0, p), neNull = true;
    if (auto p = var.find("== nullptr"); p != std::string::npos) var = var.substr(0, p), eqNull = true;
    trim(var);
    auto it = consts.find(var);
    if (it == consts.end()) return -1;
    bool v = truthy(it->second);
    if (eqNull) v = !v;
    (void)neNull;
    return (neg ? !v : v) ? 1 : 0;
  }

  // A condition on the event that the constants of its frame make impossible (`if (offsets)` when the only caller
  // passes nullptr; the else of `if (!opt)` when opt is left at std::nullopt).
  static bool contradicted(const std::vector<Cond>& conds, const std::map<std::string, std::string>& consts) {
    if (consts.empty()) return false;
    for (auto& c : conds) {
      bool positive = c.kind == "if" || c.kind == "?:";
      bool negative = c.kind == "else" || c.kind == "else ?:" || c.kind == "guard";
      if (!positive && !negative) continue;
      auto split = [](const std::string& t, const std::string& op) {
        std::vector<std::string> out;
        size_t a = 0;
        for (size_t p; (p = t.find(op, a)) != std::string::npos; a = p + op.size()) out.push_back(t.substr(a, p - a));
        out.push_back(t.substr(a));
        return out;
      };
      bool hasOr = c.text.find("||") != std::string::npos, hasAnd = c.text.find("&&") != std::string::npos;
      if (hasOr && hasAnd) continue;
      // the whole condition's value when one term settles it
      int value = -1;
      if (!hasOr) {
        auto terms = split(c.text, "&&");
        bool allTrue = true;
        for (auto& t : terms) {
          int v = termValue(t, consts);
          if (v == 0) value = 0;
          if (v != 1) allTrue = false;
        }
        if (value != 0 && allTrue) value = 1;
      } else {
        auto terms = split(c.text, "||");
        bool allFalse = true;
        for (auto& t : terms) {
          int v = termValue(t, consts);
          if (v == 1) value = 1;
          if (v != 0) allFalse = false;
        }
        if (value != 1 && allFalse) value = 0;
      }
      if ((positive && value == 0) || (negative && value == 1)) return true;
    }
    return false;
  }

  void bindConsts(const Frame& caller, const Event& ev, const Function& g, Frame& nf) const {
    for (size_t i = 0; i < g.params.size(); ++i) {
      std::string v;
      if (i < ev.args.size()) {
        std::string a = ev.args[i];
        if (literal(a))
          v = a;
        else if (auto it = caller.consts.find(a); it != caller.consts.end())
          v = it->second;
      } else if (const Var* p = g.var(g.params[i]); p && literal(p->initText)) {
        v = p->initText;
      }
      if (!v.empty()) nf.consts[g.params[i]] = v;
    }
  }

  void runChecks(const std::vector<Frame>& frames, const Event& ev) {
    if (contradicted(ev.conds, frames.back().consts)) return;  // the callers' constants rule this path out
    Site s(ev, frames, rules, cb);
    // A recursive call in a loop (the walk does not enter it again) that records a dispatch: the dispatch inside
    // is not seen on this path, so judge the call.
    if (ev.kind == "call" && !ev.loops.empty() && !fallback(ev) && !hazardCall(ev))
      for (auto* g : resolveAll(ev)) {
        bool onChain = false;
        for (auto& fr : frames) onChain = onChain || fr.fn == g;
        if (onChain && reachesDispatch(*g)) s.callDispatches = g->qualName;
      }
    Out out;
    for (auto& ch : allChecks())
      if (rules.enabled(ch.id)) ch.run(s, out);
    for (auto& c : out) record(frames, ev, c);
  }

  bool inTarget(const Function& f) const { return target.functions.count(f.key) > 0; }

  void walk(std::vector<Frame>& frames, bool active, std::set<std::string>& visited) {
    if (++steps > 200000) {  // per root: a pathological call graph is cut, and the report says so
      truncated.insert(frames.front().fn->qualName);
      return;
    }
    const Function& fn = *frames.back().fn;
    active = active || inTarget(fn);
    if (active) inspected.insert(fn.key);
    for (auto& ev : fn.events) {
      if (active && ev.kind != "ref") runChecks(frames, ev);
      if (active && ev.kind == "call" && (hazardCall(ev) || fallback(ev)))
        for (auto* g : resolveAll(ev)) hazardImpl.emplace(g->key, code(ev.text) + " at " + loc(fn, ev.line));
      if ((ev.kind != "call" && ev.kind != "ref") || fallback(ev) || hazardCall(ev)) continue;
      if (static_cast<int>(frames.size()) > rules.maxDepth) continue;
      for (const Function* g : resolveAll(ev)) {
        if (isEntry(*g)) continue;  // another primitive's eval_gpu (a virtual call): walked as an entry of its own
        bool onChain = false;
        for (auto& fr : frames) onChain = onChain || fr.fn == g;
        if (onChain) continue;
        if (contradicted(ev.conds, frames.back().consts)) continue;
        Frame nf;
        nf.fn = g;
        nf.site = &ev;
        if (ev.kind == "call") bindConsts(frames.back(), ev, *g, nf);
        Site s(ev, frames, rules, cb);
        if (ev.kind == "call")
          for (size_t i = 0; i < g->params.size() && i < ev.args.size(); ++i) {
            Origin o = s.originOfArg(i);
            if (o.kind != Origin::Unknown) nf.bound[g->params[i]] = o;
          }
        std::string memo = g->key + (active ? "|a|" : "|p|");
        for (auto& [p, o] : nf.bound) memo += p + "=" + std::to_string(o.kind) + o.how + ";";
        for (auto& [p, v] : nf.consts) memo += p + ":" + v + ";";
        if (visited.count(memo)) continue;
        visited.insert(memo);
        frames.push_back(nf);
        walk(frames, active, visited);
        frames.pop_back();
      }
    }
  }

  static bool isSetupFunction(const Function& f) {
    if (f.name == "main" || (!f.name.empty() && f.name[0] == '~')) return true;
    if (f.className.empty()) return false;
    auto p = f.className.rfind("::");
    std::string cls = p == std::string::npos ? f.className : f.className.substr(p + 2);
    return f.name == cls;
  }

  // f is a constructor, destructor or `main`, or every chain of callers above it starts at one: why, else "".
  std::string setupOnly(const Function& f) const {
    if (isSetupFunction(f)) return f.name == "main" ? "is a build-time tool's `main`" : "creates or destroys the device";
    std::set<std::string> seen{f.key};
    std::vector<std::string> todo{f.key};
    std::set<std::string> roots;
    while (!todo.empty() && seen.size() < 4000) {
      std::string k = todo.back();
      todo.pop_back();
      auto cl = callers.find(k);
      if (cl == callers.end() || cl->second.empty()) {
        if (k == f.key) return "";  // no caller at all: unknown, not setup
        roots.insert(k);
        continue;
      }
      for (auto& c : cl->second) {
        const Function& g = cb.functions.at(c);
        if (isEntry(g)) return "";
        if (isSetupFunction(g)) {
          roots.insert(c);
          continue;
        }
        if (seen.insert(c).second) todo.push_back(c);
      }
    }
    if (roots.empty()) return "";
    std::string first;
    for (auto& r : roots) {
      const Function& g = cb.functions.at(r);
      if (!isSetupFunction(g)) return "";
      if (first.empty()) first = g.qualName;
    }
    return "is called only from constructors, destructors or a tool's `main` (e.g. `" + first + "`)";
  }

  // One finding per hazard: the lines of one path in one function are one finding (a wait with the CPU work it
  // guards; the same check repeated per dtype case or per branch of one helper).
  void groupFindings() {
    auto& fs = rv.findings;
    std::vector<bool> gone(fs.size(), false);
    auto absorb = [&](size_t into, size_t from) {
      Finding& a = fs[into];
      const Finding& b = fs[from];
      a.alsoLines.push_back(b.line);
      a.alsoLines.insert(a.alsoLines.end(), b.alsoLines.begin(), b.alsoLines.end());
      for (auto& e : b.alsoFrom)
        if (std::find(a.alsoFrom.begin(), a.alsoFrom.end(), e) == a.alsoFrom.end()) a.alsoFrom.push_back(e);
      if (b.chain.size() < a.chain.size() && b.proven == a.proven) a.chain = b.chain;
      gone[from] = true;
    };
    // a host wait directly followed by the CPU fallback it prepares
    for (size_t i = 0; i < fs.size(); ++i) {
      if (fs[i].check != "cpu-fallback" && fs[i].check != "silent-slow-path") continue;
      for (size_t j = 0; j < fs.size(); ++j)
        if (!gone[j] && fs[j].check == "host-sync" && fs[j].file == fs[i].file && fs[j].function == fs[i].function &&
            fs[j].pathKey.compare(0, fs[i].pathKey.size(), fs[i].pathKey) == 0 && fs[j].line + 16 >= fs[i].line &&
            fs[j].line <= fs[i].line + 3) {
          fs[i].problem += std::string(" The host waits ") + (fs[j].line < fs[i].line ? "before" : "after") +
                           " it at line " + std::to_string(fs[j].line) + ".";
          absorb(i, j);
        }
    }
    for (size_t i = 0; i < fs.size(); ++i) {
      if (gone[i] || (fs[i].check != "cpu-fallback" && fs[i].check != "silent-slow-path")) continue;
      for (size_t j = 0; j < fs.size(); ++j) {
        if (gone[j] || fs[j].check != "host-sync" || fs[j].rule != "synchronize" || fs[j].function == fs[i].function)
          continue;
        bool above = false;  // the wait's function is on the fallback's chain: it syncs, then calls down to it
        for (auto& c : fs[i].chain) above = above || c.rfind(fs[j].function + " (", 0) == 0;
        if (!above) continue;
        fs[i].problem += " The host waits first in `" + fs[j].function + "` (" + fs[j].file + ":" +
                         std::to_string(fs[j].line) + ").";
        gone[j] = true;
        for (auto& e : fs[j].alsoFrom)
          if (std::find(fs[i].alsoFrom.begin(), fs[i].alsoFrom.end(), e) == fs[i].alsoFrom.end())
            fs[i].alsoFrom.push_back(e);
      }
    }
    // the host waits of one function's CPU detour (evaluate, synchronize) are one finding
    std::map<std::tuple<std::string, std::string, std::string, std::string>, size_t> first;
    for (size_t i = 0; i < fs.size(); ++i) {
      if (gone[i]) continue;
      // instances of one macro are one hazard: the body is the same code, only the operation differs
      std::string body = fs[i].problem.substr(0, fs[i].problem.find(" The host waits"));
      bool wait = fs[i].check == "host-sync" && fs[i].proven;
      auto key = std::make_tuple(fs[i].file, fs[i].macroGenerated ? "macro|" + body : fs[i].function,
                                 fs[i].check, wait ? std::string("waits") : fs[i].rule + "|" + fs[i].pathKey);
      auto it = first.find(key);
      if (it == first.end()) {
        first[key] = i;
        continue;
      }
      size_t a = it->second;
      if (fs[i].line < fs[a].line) {  // the earliest line leads
        std::swap(fs[i], fs[a]);
      }
      absorb(a, i);
    }
    std::vector<Finding> keep;
    for (size_t i = 0; i < fs.size(); ++i)
      if (!gone[i]) {
        std::sort(fs[i].alsoLines.begin(), fs[i].alsoLines.end());
        fs[i].alsoLines.erase(std::unique(fs[i].alsoLines.begin(), fs[i].alsoLines.end()), fs[i].alsoLines.end());
        keep.push_back(fs[i]);
      }
    fs = keep;
  }

  // Functions reachable from f (through resolved calls).
  std::set<std::string> reach(const Function& f, bool throughHazards = false) const {
    std::set<std::string> seen{f.key};
    std::vector<const Function*> todo{&f};
    while (!todo.empty()) {
      const Function* x = todo.back();
      todo.pop_back();
      for (auto& e : x->events)
        if (!fallback(e) && (throughHazards || !hazardCall(e)))
          for (auto* g : resolveAll(e))
            if (seen.insert(g->key).second) todo.push_back(g);
    }
    return seen;
  }

  void run() {
    std::vector<const Function*> entries;
    for (auto& [k, f] : cb.functions)
      if (isEntry(f)) entries.push_back(&f);
    for (auto* e : entries) {
      auto r = reach(*e);
      bool hits = false;
      for (auto& t : target.functions) hits = hits || r.count(t);
      if (!hits) continue;
      entriesUsed.insert(e->key);
      std::vector<Frame> frames(1);
      frames[0].fn = e;
      std::set<std::string> visited;
      currentEntry = e->key;
      steps = 0;
      walk(frames, false, visited);
    }
    // Target functions no entry reaches in the parsed code. An unknown path is not a proof of innocence: the caller
    // may sit in a unit that was not parsed, behind a call the model cannot see, or be the scheduler itself. Review
    // them as roots and report what they do, with the reachability stated.
    std::string entryName = rules.entryFunctions.empty() ? std::string("entry") : "`" + rules.entryFunctions[0] + "`";
    std::map<std::string, std::string> implOf;  // functions that implement a reported hazard call (transitively)
    for (auto& [k, how] : hazardImpl) {
      auto it = cb.functions.find(k);
      if (it == cb.functions.end()) continue;
      for (auto& r : reach(it->second, true)) implOf.emplace(r, how);
    }
    for (auto& key : target.functions) {
      if (inspected.count(key)) continue;
      auto it = cb.functions.find(key);
      if (it == cb.functions.end()) continue;
      const Function& f = it->second;
      if (auto im = implOf.find(key); im != implOf.end()) {
        inspected.insert(key);
        addNonIssue("reachability", f, f.line,
                    "`" + f.qualName + "` runs inside " + im->second +
                        ", which is reported there; its own waits and submits are that finding, not separate ones.");
        continue;
      }
      auto cl = callers.find(key);
      bool noCaller = cl == callers.end() || cl->second.empty();
      if (rules.entriesComplete || (noCaller && f.internalLinkage && unnamedElsewhere(f))) {
        // Positive proof: a function with internal linkage can only be called (or named) from its own unit, and
        // its name appears nowhere in that unit's text but at its definition (no call, no address taken, no table).
        inspected.insert(key);
        std::vector<Frame> frames(1);
        frames[0].fn = &f;
        frames[0].entry = false;
        for (auto& ev : f.events) {
          Site s(ev, frames, rules, cb);
          Out out;
          for (auto& ch : allChecks())
            if (rules.enabled(ch.id)) ch.run(s, out);
          for (auto& c : out)
            if (!c.nonIssue)
              addNonIssue(c.check, f, ev.line,
                          code(ev.text) + " (" + c.check + "): `" + f.qualName +
                              (rules.entriesComplete
                                   ? "` is not reached from any entry, and the rules (" + rules.name +
                                         ") declare their entry list complete: not on the pipeline path."
                                   : "` has internal linkage and its name appears nowhere else in its translation "
                                     "unit: dead code, not on a pipeline path."));
        }
        continue;
      }
      if (std::string setup = setupOnly(f); !setup.empty()) {
        // Device creation and teardown, or a build-time tool: runs once per process, not per operation.
        inspected.insert(key);
        addNonIssue("reachability", f, f.line, "`" + f.qualName + "` " + setup + ": not on a per-operation path.");
        continue;
      }
      if (noCaller) {
        currentReach = "no caller found in the parsed code (reachability from " + entryName + " unknown)";
      } else {
        std::string first = cb.functions.at(*cl->second.begin()).qualName;
        bool callerReached = false;
        for (auto& c : cl->second) callerReached = callerReached || inspected.count(c);
        currentReach = "called from `" + first + "`" +
                       (cl->second.size() > 1 ? " and " + std::to_string(cl->second.size() - 1) + " more" : "") +
                       (callerReached ? ", on a path the walk did not follow (depth limit or recursion)"
                                      : ", which no " + entryName + " reaches in the parsed code");
      }
      std::vector<Frame> frames(1);
      frames[0].fn = &f;
      frames[0].entry = false;
      std::set<std::string> visited;
      steps = 0;
      walk(frames, true, visited);
    }
    currentReach.clear();
    for (auto& t : truncated)
      rv.target.notes.push_back("the walk from `" + t +
                                "` stopped at its step limit: paths below it were not all seen");
    // Scope listing.
    std::set<std::string> files;
    for (auto& key : inspected) {
      const Function& f = cb.functions.at(key);
      rv.functions.push_back({f.qualName, rel(f.file), f.line, inTarget(f) ? "target" : "callee"});
      files.insert(rel(f.file));
    }
    for (auto& key : entriesUsed)
      if (!inspected.count(key)) {
        const Function& f = cb.functions.at(key);
        rv.functions.push_back({f.qualName, rel(f.file), f.line, "entry (caller of the target)"});
        files.insert(rel(f.file));
      }
    auto roleRank = [](const std::string& r) { return r == "target" ? 0 : r == "callee" ? 1 : 2; };
    std::sort(rv.functions.begin(), rv.functions.end(), [&](const Inspected& a, const Inspected& b) {
      return std::make_tuple(roleRank(a.role), a.file, a.line) < std::make_tuple(roleRank(b.role), b.file, b.line);
    });
    for (auto& p : cb.parsedFiles) files.insert(rel(p));
    rv.files.assign(files.begin(), files.end());
    groupFindings();
    // Severity, then confidence: findings whose reachability is not established come after all proven ones.
    std::sort(rv.findings.begin(), rv.findings.end(), [](const Finding& a, const Finding& b) {
      if (a.proven != b.proven) return a.proven;
      int ra = severityRank(a.severity), rb = severityRank(b.severity);
      if (ra != rb) return ra > rb;
      return std::tie(a.file, a.line) < std::tie(b.file, b.line);
    });
    // A spot reported as a finding is not also a non-issue.
    std::set<std::pair<std::string, unsigned>> hit;
    for (auto& f : rv.findings) {
      hit.insert({f.file, f.line});
      for (auto l : f.alsoLines) hit.insert({f.file, l});
    }
    std::vector<NonIssue> keep;
    for (auto& n : rv.nonIssues)
      if (!hit.count({n.file, n.line})) keep.push_back(n);
    std::sort(keep.begin(), keep.end(), [](const NonIssue& a, const NonIssue& b) {
      return std::tie(a.file, a.line, a.reason) < std::tie(b.file, b.line, b.reason);
    });
    rv.nonIssues = keep;
  }
};

}  // namespace

Review runReview(const Codebase& cb, const Rules& rules, const Target& target) {
  Review rv;
  rv.target = target;
  rv.parsedUnits = static_cast<unsigned>(cb.parsedFiles.size());
  rv.recoveredErrors = cb.errors;
  rv.rulesName = rules.name;
  auto relTo = [&](const std::string& f) {
    if (f == cb.root) return std::string(".");
    if (f.size() > cb.root.size() && f.compare(0, cb.root.size(), cb.root) == 0) return f.substr(cb.root.size() + 1);
    return f;
  };
  for (auto ps : cb.parseStatus) {
    ps.file = relTo(ps.file);
    rv.cachedUnits += ps.cached;
    rv.parseStatus.push_back(ps);
  }
  for (auto& d : cb.includeDirs) rv.includeDirs.push_back(relTo(d));
  rv.compileCommands = cb.compileCommands.empty() ? "" : relTo(cb.compileCommands);
  Engine e(cb, rules, target, rv);
  e.run();
  return rv;
}

}  // namespace m2v::review
