// Interprocedural walk from each entry (eval_gpu) through the codebase's callees, running the checks at every
// event on the paths that pass through the target, then merging, suppressing and ordering the results.
#include "engine.h"

#include <algorithm>
#include <functional>
#include <map>

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
  size_t steps = 0;

  Engine(const Codebase& cb, const Rules& rules, const Target& t, Review& rv) : cb(cb), rules(rules), target(t), rv(rv) {
    for (auto& [k, f] : cb.functions) byName[f.name].push_back(&f);
    for (auto& [k, f] : cb.functions)
      for (auto& e : f.events)
        if (auto* g = resolve(e)) callers[g->key].insert(f.key);
  }

  std::string rel(const std::string& file) const {
    if (file.size() > cb.root.size() && file.compare(0, cb.root.size(), cb.root) == 0) return file.substr(cb.root.size() + 1);
    return file;
  }
  std::string loc(const Function& f, unsigned line) const { return rel(f.file) + ":" + std::to_string(line); }

  const Function* resolve(const Event& e) const {
    if (e.kind != "call") return nullptr;
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

  bool fallback(const Event& e) const {
    return nameMatches(rules.cpuFallbackCalls, e.name, e.qualName) ||
           anyRegex(rules.cpuFallbackPatterns, e.qualName.empty() ? e.name : e.qualName);
  }

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
      if (k + 1 < frames.size()) seg += ", calls " + code(at.text) + " at " + loc(f, at.line);
      else seg += ", reaches " + code(at.text) + " at " + loc(f, at.line);
      if (!out.empty()) out += " -> ";
      out += seg;
    }
    if (!any) out = "Unconditionally, whenever the entry runs: " + out;
    return out;
  }

  std::string suppression(const std::vector<Frame>& frames, const Event& ev) const {
    std::vector<const Event*> sites;
    for (size_t k = 1; k < frames.size(); ++k) sites.push_back(frames[k].site);
    sites.push_back(&ev);
    for (auto* s : sites) {
      if (s->inOnce) return "one-time warm-up: runs inside a call_once body or a static initializer, not per operation.";
      for (auto& c : s->conds) {
        if (c.envGated && (c.kind == "if" || c.kind == "?:"))
          return "debug/trace path behind the environment switch " + code(c.text) + ", off by default.";
        if (c.onceFlag && (c.kind == "if"))
          return "one-time warm-up behind the static flag " + code(c.text) + ", set inside the branch.";
      }
    }
    return "";
  }

  void addNonIssue(const std::string& check, const Function& f, unsigned line, const std::string& reason) {
    auto key = std::make_tuple(f.file, line, reason);
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
    for (size_t k = 0; k < frames.size(); ++k) {
      const Function& g = *frames[k].fn;
      fd.chain.push_back(g.qualName + " (" + loc(g, g.line) + ")");
    }
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

  void runChecks(const std::vector<Frame>& frames, const Event& ev) {
    Site s(ev, frames, rules, cb);
    Out out;
    for (auto& ch : allChecks())
      if (rules.enabled(ch.id)) ch.run(s, out);
    for (auto& c : out) record(frames, ev, c);
  }

  bool inTarget(const Function& f) const { return target.functions.count(f.key) > 0; }

  void walk(std::vector<Frame>& frames, bool active, std::set<std::string>& visited) {
    if (++steps > 200000) return;
    const Function& fn = *frames.back().fn;
    active = active || inTarget(fn);
    if (active) inspected.insert(fn.key);
    for (auto& ev : fn.events) {
      if (active) runChecks(frames, ev);
      if (ev.kind != "call" || fallback(ev)) continue;
      const Function* g = resolve(ev);
      if (!g || static_cast<int>(frames.size()) > rules.maxDepth) continue;
      bool onChain = false;
      for (auto& fr : frames) onChain = onChain || fr.fn == g;
      if (onChain) continue;
      Frame nf;
      nf.fn = g;
      nf.site = &ev;
      Site s(ev, frames, rules, cb);
      for (size_t i = 0; i < g->params.size() && i < ev.args.size(); ++i) {
        Origin o = s.originOfArg(i);
        if (o.kind != Origin::Unknown) nf.bound[g->params[i]] = o;
      }
      std::string memo = g->key + (active ? "|a|" : "|p|");
      for (auto& [p, o] : nf.bound) memo += p + "=" + std::to_string(o.kind) + o.how + ";";
      if (visited.count(memo)) continue;
      visited.insert(memo);
      frames.push_back(nf);
      walk(frames, active, visited);
      frames.pop_back();
    }
  }

  // Functions reachable from f (through resolved calls).
  std::set<std::string> reach(const Function& f) const {
    std::set<std::string> seen{f.key};
    std::vector<const Function*> todo{&f};
    while (!todo.empty()) {
      const Function* x = todo.back();
      todo.pop_back();
      for (auto& e : x->events)
        if (!fallback(e))
          if (auto* g = resolve(e))
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
      walk(frames, false, visited);
    }
    // Target functions no entry reaches: look, but accept (not on a pipeline path).
    for (auto& key : target.functions) {
      if (inspected.count(key)) continue;
      auto it = cb.functions.find(key);
      if (it == cb.functions.end()) continue;
      const Function& f = it->second;
      inspected.insert(key);
      std::vector<Frame> frames(1);
      frames[0].fn = &f;
      std::string why;
      auto cl = callers.find(key);
      if (cl == callers.end() || cl->second.empty()) why = "helper with no caller in the codebase";
      else why = "not reached from any " + (rules.entryFunctions.empty() ? std::string("entry") : "`" + rules.entryFunctions[0] + "`") + " (called only from `" + cb.functions.at(*cl->second.begin()).qualName + "`)";
      for (auto& ev : f.events) {
        Site s(ev, frames, rules, cb);
        Out out;
        for (auto& ch : allChecks())
          if (rules.enabled(ch.id)) ch.run(s, out);
        for (auto& c : out)
          if (!c.nonIssue) addNonIssue(c.check, f, ev.line, code(ev.text) + " (" + c.check + "): " + why + "; not on a pipeline path.");
      }
    }
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
    std::sort(rv.findings.begin(), rv.findings.end(), [](const Finding& a, const Finding& b) {
      int ra = severityRank(a.severity), rb = severityRank(b.severity);
      if (ra != rb) return ra > rb;
      return std::tie(a.file, a.line) < std::tie(b.file, b.line);
    });
    // A spot reported as a finding is not also a non-issue.
    std::set<std::pair<std::string, unsigned>> hit;
    for (auto& f : rv.findings) hit.insert({f.file, f.line});
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
  Engine e(cb, rules, target, rv);
  e.run();
  return rv;
}

}  // namespace m2v::review
