#include "select.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_set>

namespace fs = std::filesystem;

namespace m2v::review {

namespace {

bool identChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `name(` at p is preceded by a type on its line (or on the line before): a definition or declaration header, not a
// call statement. Only the text around each occurrence is matched, so large files cost little.
bool definesAt(const std::string& text, size_t p, const std::string& name, const std::regex& head) {
  size_t q = p + name.size();
  while (q < text.size() && std::isspace(static_cast<unsigned char>(text[q]))) ++q;
  if (q >= text.size() || text[q] != '(') return false;
  size_t lineStart = text.rfind('\n', p == 0 ? 0 : p - 1);
  lineStart = lineStart == std::string::npos ? 0 : lineStart;
  size_t from = lineStart == 0 ? 0 : text.rfind('\n', lineStart - 1);
  from = from == std::string::npos ? 0 : from;
  return std::regex_search(text.substr(from, p + name.size() - from), head);
}

}  // namespace

bool definesName(const std::string& text, const std::string& name) {
  // One pattern per name, built once: a selection asks about the same names in many files.
  static thread_local std::map<std::string, std::regex> heads;
  auto it = heads.find(name);
  if (it == heads.end())
    it = heads
             .emplace(name, std::regex("(^|\\n)[ \\t]*(?!return\\b|else\\b|case\\b|new\\b|delete\\b|throw\\b)"
                                       "[A-Za-z_][\\w:<>,\\*& ]*[\\s\\*&]([A-Za-z_]\\w*::)*" +
                                       name + "$"))
             .first;
  for (size_t p = text.find(name); p != std::string::npos; p = text.find(name, p + 1)) {
    bool left = p == 0 || !identChar(text[p - 1]);
    bool right = p + name.size() >= text.size() || !identChar(text[p + name.size()]);
    if (left && right && definesAt(text, p, name, it->second)) return true;
  }
  return false;
}

namespace {

std::vector<std::string> identifierList(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (!identChar(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && identChar(text[j])) ++j;
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

// The identifier a function is named by in source text: `operator()` is spelled with `operator`, `~Foo` with `Foo`.
std::string spelling(const std::string& name) {
  auto ids = identifierList(name);
  return ids.empty() ? name : ids.front();
}

// A macro of the tree. Its body can call or define a function by name; a body that pastes tokens (`##`) can form
// names its text does not hold, so the literal pieces around `##` are kept, and a paste of parameters only can form
// any name.
struct Macro {
  std::string name;
  std::unordered_set<std::string> body;
  std::vector<std::string> pieces;
  bool opaquePaste = false;
  std::string text;  // the body

  bool canName(const std::string& fn) const {
    if (opaquePaste || body.count(fn)) return true;
    for (auto& p : pieces)
      if (fn.find(p) != std::string::npos) return true;
    return false;
  }
  // Using the macro may define a function called `fn`: the body defines it by name, or pastes a name.
  bool canDefine(const std::string& fn) const {
    if (opaquePaste) return true;
    for (auto& p : pieces)
      if (fn.find(p) != std::string::npos) return true;
    return body.count(fn) && definesName(text, fn);
  }
};

struct SourceFile {
  std::string path, text;
  bool unit = false;
  std::unordered_set<std::string> idents;
  std::vector<Macro> macros;
  struct {
    std::vector<std::string> names;  // as spelled between the quotes or brackets
    std::set<std::string> quoted;    // those spelled with quotes
  } includes;
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void scanDirectives(SourceFile& f) {
  static const std::regex define(R"(^\s*#\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?(.*)$)");
  static const std::regex include(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  auto ls = lines(f.text);
  for (size_t i = 0; i < ls.size(); ++i) {
    const std::string& l = ls[i];
    if (l.find('#') == std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(l, m, include)) {
      f.includes.names.push_back(m[2]);
      if (m[1] == "\"") f.includes.quoted.insert(m[2]);
      continue;
    }
    if (!std::regex_search(l, m, define)) continue;
    Macro mac;
    mac.name = m[1];
    std::set<std::string> params;
    for (auto& p : identifierList(m[3])) params.insert(p);
    params.insert("__VA_ARGS__");
    std::string body = m[4];
    while (!body.empty() && body.back() == '\\' && i + 1 < ls.size()) body += "\n" + ls[++i];
    for (auto& id : identifierList(body)) mac.body.insert(id);
    mac.text = body;
    for (size_t p = body.find("##"); p != std::string::npos; p = body.find("##", p + 2)) {
      size_t a = p;
      while (a > 0 && std::isspace(static_cast<unsigned char>(body[a - 1]))) --a;
      size_t as = a;
      while (as > 0 && identChar(body[as - 1])) --as;
      size_t b = p + 2;
      while (b < body.size() && std::isspace(static_cast<unsigned char>(body[b]))) ++b;
      size_t be = b;
      while (be < body.size() && identChar(body[be])) ++be;
      std::string left = body.substr(as, a - as), right = body.substr(b, be - b);
      bool literal = false;
      for (auto* side : {&left, &right})
        if (!side->empty() && !params.count(*side)) {
          mac.pieces.push_back(*side);
          literal = true;
        }
      if (!literal) mac.opaquePaste = true;
    }
    f.macros.push_back(std::move(mac));
  }
}

bool isHeader(const fs::path& p) {
  static const std::set<std::string> exts{".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp", ".tpp"};
  return exts.count(p.extension().string()) > 0;
}

// The text of every unit and of every header under the root, read once.
struct TreeIndex {
  std::vector<SourceFile> files;  // the units, in their order, then the headers
  size_t units = 0;
  std::map<std::string, size_t> byPath;
  std::vector<std::vector<size_t>> includedBy;  // file -> files that include it (matched by path suffix)
  std::map<std::string, std::vector<std::string>> tokenCache;

  void add(const std::string& path, bool unit) {
    if (byPath.count(path)) return;
    SourceFile f;
    f.path = path;
    f.unit = unit;
    readFile(path, f.text);
    for (auto& id : identifierList(f.text)) f.idents.insert(id);
    scanDirectives(f);
    byPath[path] = files.size();
    files.push_back(std::move(f));
  }

  void build(const ParseOptions& po) {
    for (auto& u : po.files) add(u, true);
    units = files.size();
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(po.root, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      auto name = it->path().filename().string();
      if (it->is_directory(ec)) {
        if ((!name.empty() && name[0] == '.') || name == "node_modules" || fs::exists(it->path() / "CMakeCache.txt"))
          it.disable_recursion_pending();
        continue;
      }
      if (isHeader(it->path())) add(canonical(it->path().string()), false);
    }
    std::map<std::string, std::vector<size_t>> byName;
    for (size_t i = 0; i < files.size(); ++i) byName[fs::path(files[i].path).filename().string()].push_back(i);
    includedBy.assign(files.size(), {});
    // Without a compile database the units are parsed with the include dirs as the only -I: an include names the
    // header beside the including file (quoted) or under an include dir, as clang resolves it (so `<io.h>` of a
    // Windows-only branch is not `mlx/io.h`). A compile database may name dirs of its own: any header whose path
    // ends with the include is taken then.
    std::set<std::string> dirs{canonical(po.root)};
    for (auto& d : po.includeDirs) dirs.insert(canonical(d));
    for (size_t i = 0; i < files.size(); ++i)
      for (auto& inc : files[i].includes.names) {
        std::string tail = "/" + fs::path(inc).lexically_normal().generic_string();
        auto it = byName.find(fs::path(inc).filename().string());
        if (it == byName.end()) continue;
        for (size_t h : it->second) {
          const std::string& p = files[h].path;
          if (!(p.size() > tail.size() && p.compare(p.size() - tail.size(), tail.size(), tail) == 0)) continue;
          std::string dir = p.substr(0, p.size() - tail.size());
          bool named = !po.compileCommands.empty();
          if (files[i].includes.quoted.count(inc)) named = named || fs::path(files[i].path).parent_path() == dir;
          named = named || dirs.count(dir);
          if (named) includedBy[h].push_back(i);
        }
      }
  }

  // Units that include the file, directly or through other headers, in unit order.
  std::vector<size_t> includers(size_t file) const {
    std::set<size_t> seen{file}, out;
    std::vector<size_t> todo{file};
    while (!todo.empty()) {
      size_t f = todo.back();
      todo.pop_back();
      for (size_t by : includedBy[f])
        if (seen.insert(by).second) {
          if (files[by].unit) out.insert(by);
          todo.push_back(by);
        }
    }
    return {out.begin(), out.end()};
  }

  // The identifiers whose presence in a file means it may call `name`: the name and every macro whose body may name
  // it (a macro naming such a macro, and so on).
  const std::vector<std::string>& tokensFor(const std::string& name) {
    auto hit = tokenCache.find(name);
    if (hit != tokenCache.end()) return hit->second;
    std::vector<std::string> out{name};
    std::set<std::string> have{name};
    for (size_t k = 0; k < out.size(); ++k)
      for (auto& f : files)
        for (auto& m : f.macros)
          if (!have.count(m.name) && m.canName(out[k])) {
            have.insert(m.name);
            out.push_back(m.name);
          }
    return tokenCache[name] = out;
  }

  // Macros whose use may define a function called `name`.
  std::vector<std::string> definingMacros(const std::string& name) const {
    std::vector<std::string> out;
    for (auto& f : files)
      for (auto& m : f.macros)
        if (m.canDefine(name)) out.push_back(m.name);
    return out;
  }
};

// A line that calls `entry` (`p.eval_gpu(...)`, `Base::eval_gpu(...)` in a body) rather than defining it.
bool callsByName(const std::string& text, const std::string& entry) {
  std::regex use("(^|[^\\w])" + entry + "\\s*\\(");
  std::regex def(
      "^[ \\t]*(?!return\\b|else\\b|case\\b|new\\b|delete\\b|throw\\b)[A-Za-z_][\\w:<>,\\*& ]*[\\s\\*&]"
      "([A-Za-z_]\\w*::)*" +
      entry + "\\s*\\(");
  for (auto& l : lines(text))
    if (l.find(entry) != std::string::npos && std::regex_search(l, use) && !std::regex_search(l, def)) return true;
  return false;
}

// What is known to lie on a path to the target: the functions, and how a call may name them. The test is a superset
// of the engine's call resolution (Engine::resolveAll): a call resolved to the key, a call to a virtual method they
// override, a call by their qualified name, or an unresolved call by their name.
struct Toward {
  std::set<std::string> keys, overridden, qualNames, names;

  void add(const Function& f) {
    keys.insert(f.key);
    for (auto& o : f.overrides) overridden.insert(o);
    qualNames.insert(f.qualName);
    names.insert(f.name);
  }
  bool mayCall(const Event& e) const {
    if (e.kind != "call" && e.kind != "ref") return false;
    if (keys.count(e.calleeKey) || overridden.count(e.calleeKey)) return true;
    if (!e.qualName.empty() && qualNames.count(e.qualName)) return true;
    return (e.calleeKey.empty() || e.qualName.empty()) && names.count(e.name);
  }
};

class Selector {
 public:
  Selector(const ParseOptions& po, const CacheOptions& cache, const Rules& rules, const TargetSpec& spec)
      : po_(po), cache_(cache), rules_(rules), spec_(spec) {
    tree_.build(po);
  }

  Selection run(Codebase& cb, Target& target) {
    if (!seed()) return everything(why_);
    bool settled = false;
    for (int round = 0; round < 32 && !settled; ++round) {
      coverHeaders();
      if (round > 0 && chosen_.size() == parsedBefore_) {
        settled = true;  // the last round's model already holds every unit chosen
        break;
      }
      if (!parseChosen()) return everything(why_);
      parsedBefore_ = chosen_.size();
      assemble(cb);
      target = Target();
      std::string e;
      if (!resolveTarget(cb, rules_, spec_, target, e) || target.functions.empty())
        return everything("the target resolves to no function in the units that name it");
      towardCallers(cb, target);
      towardCallees(cb, target);
    }
    if (!settled) return everything("the unit selection did not settle");
    Selection s;
    s.partial = true;
    s.note = "parsed " + std::to_string(models_.size()) + " of " + std::to_string(tree_.units) +
             " unit(s): those defining the target, those naming a function on a path from an entry to it, and those "
             "defining what it calls; --full-parse reads every unit";
    return s;
  }

 private:
  Selection everything(const std::string& why) {
    Selection s;
    s.note = "parsed every unit: " + why;
    return s;
  }

  // M2V_REVIEW_TRACE_SELECTION=1 prints why each unit was chosen (to stderr), to see what a selection costs.
  void choose(size_t unit, const std::string& why) {
    if (!chosen_.insert(unit).second) return;
    static const bool trace = std::getenv("M2V_REVIEW_TRACE_SELECTION") != nullptr;
    if (trace) std::fprintf(stderr, "m2v review: parse %s: %s\n", tree_.files[unit].path.c_str(), why.c_str());
  }

  // A unit is parsed; a header is read through some unit that includes it (see coverHeaders).
  void need(size_t file, const std::string& why) {
    if (tree_.files[file].unit)
      choose(file, why);
    else
      needHeaders_.insert(file);
  }

  bool isEntry(const std::string& name) const {
    return std::find(rules_.entryFunctions.begin(), rules_.entryFunctions.end(), name) != rules_.entryFunctions.end();
  }

  // The units the target's own definitions can be in.
  bool seed() {
    fs::path p = fs::path(spec_.value).is_absolute() ? fs::path(spec_.value) : fs::path(po_.root) / spec_.value;
    bool pathLike = spec_.kind == "file" || spec_.value.find('/') != std::string::npos;
    if (pathLike) {
      std::string tail = "/" + fs::path(spec_.value).lexically_normal().generic_string();
      std::vector<size_t> hits;
      for (size_t i = 0; i < tree_.units; ++i) {
        const std::string& u = tree_.files[i].path;
        if (u == canonical(p.string()) ||
            (!fs::exists(p) && u.size() > tail.size() && u.compare(u.size() - tail.size(), tail.size(), tail) == 0))
          hits.push_back(i);
      }
      if (hits.size() == 1) {
        choose(hits[0], "the target file");
        return true;
      }
      auto h = tree_.byPath.find(canonical(p.string()));
      if (h != tree_.byPath.end() && !tree_.files[h->second].unit) {  // a header: read through a unit including it
        needHeaders_.insert(h->second);
        if (!tree_.includers(h->second).empty()) return true;
      }
      why_ = "the target file is not a translation unit nor a header that one includes";
      return false;
    }
    std::string last =
        spec_.value.substr(spec_.value.rfind("::") == std::string::npos ? 0 : spec_.value.rfind("::") + 2);
    if (isEntry(last) && spec_.kind != "class") {
      // Every unit defines an entry: the target's own are those that spell its class and name (`Gather::eval_gpu`,
      // also for `fast::Attention::eval_gpu` written inside `namespace fast`). One defined through a macro
      // (`VULKAN_UNARY_GPU(Exp, ...)`) is spelled nowhere, and every unit is parsed.
      size_t cls = spec_.value.size() > last.size() + 2 ? spec_.value.rfind("::", spec_.value.size() - last.size() - 3)
                                                        : std::string::npos;
      std::string spelled = cls == std::string::npos ? spec_.value : spec_.value.substr(cls + 2);
      for (size_t i = 0; i < tree_.files.size(); ++i)
        if (tree_.files[i].text.find(spelled) != std::string::npos) need(i, "spells `" + spelled + "`");
    } else {
      mention(spelling(last));
    }
    if (chosen_.empty() && needHeaders_.empty()) {
      why_ = "`" + spec_.value + "` is spelled nowhere in the sources and headers of the tree (a macro may define it)";
      return false;
    }
    return true;
  }

  // Units and headers that name `name` or a macro that may: they may call it (or define it).
  void mention(const std::string& name) {
    if (!mentioned_.insert(name).second) return;
    for (auto& tok : tree_.tokensFor(name))
      for (size_t i = 0; i < tree_.files.size(); ++i)
        if (tree_.files[i].idents.count(tok)) need(i, "names `" + tok + "`");
  }

  // Units and headers that may define `name` (directly or through a macro with a body).
  void definitions(const std::string& name) {
    if (isEntry(name) || !chased_.insert(name).second) return;
    for (size_t i = 0; i < tree_.files.size(); ++i)
      if (tree_.files[i].idents.count(name) && definesName(tree_.files[i].text, name))
        need(i, "defines `" + name + "`");
    for (auto& m : tree_.definingMacros(name))
      for (size_t i = 0; i < tree_.files.size(); ++i)
        if (tree_.files[i].idents.count(m)) need(i, "may define `" + name + "` through `" + m + "`");
  }

  // Each header holding something the review needs must be read by a parsed unit: add a unit that includes it.
  void coverHeaders() {
    std::set<std::string> read;
    for (auto& [i, m] : models_)
      for (auto& d : m.status.deps) read.insert(d);
    for (size_t h : needHeaders_) {
      if (read.count(tree_.files[h].path)) continue;
      bool pending = false;
      for (size_t u : tree_.includers(h)) pending = pending || (chosen_.count(u) && !models_.count(u));
      if (pending) continue;
      for (size_t u : tree_.includers(h))
        if (!chosen_.count(u)) {
          choose(u, "includes " + tree_.files[h].path);
          break;
        }
      // no includer left: no unit reads it as far as the text shows, and a full parse would not see it either
    }
  }

  bool parseChosen() {
    ParseOptions sub = po_;
    sub.files.clear();
    for (size_t i : chosen_)
      if (!models_.count(i)) sub.files.push_back(tree_.files[i].path);
    if (sub.files.empty()) return true;
    std::vector<UnitModel> got;
    std::string e;
    if (!parseUnits(sub, cache_, got, e)) {
      why_ = e;
      return false;
    }
    for (auto& m : got) models_[tree_.byPath.at(m.status.file)] = std::move(m);
    return true;
  }

  void assemble(Codebase& cb) const {
    std::vector<const UnitModel*> order;
    for (auto& [i, m] : models_) order.push_back(&m);  // unit order, as a full parse merges them
    assembleUnits(po_.root, order, cb);
  }

  // A function with internal linkage defined in a unit can only be called from that unit, which is parsed already.
  bool callableElsewhere(const Function& f) const {
    auto it = tree_.byPath.find(f.file);
    return !(f.internalLinkage && it != tree_.byPath.end() && tree_.files[it->second].unit);
  }

  // Callers of the target, and their callers, up to the entries: each caller found is then looked for by name in the
  // text of the tree. The units naming the target hold its direct callers (the engine reports them). Beyond those,
  // only the calls a walk from an entry follows matter (not into a hazard call or a CPU fallback), since they decide
  // which entries reach the target. Entries are roots, so their names are not looked for (every unit defines one);
  // but an entry can reach the target through another entry (`inner.eval_gpu(...)`), so once an entry is on a path,
  // the units that call entries by name are added, and their callers followed like any other.
  void towardCallers(const Codebase& cb, const Target& target) {
    Toward t;
    std::vector<const Function*> found;
    bool entryReached = false;
    auto take = [&](const Function& f) {
      t.add(f);
      found.push_back(&f);
      entryReached = entryReached || isEntry(f.name);
    };
    for (auto& k : target.functions) take(cb.functions.at(k));
    for (bool grew = true; grew;) {
      grew = false;
      for (auto& [k, f] : cb.functions) {
        if (t.keys.count(k)) continue;
        if (std::any_of(f.events.begin(), f.events.end(), [&](const Event& e) {
              return t.mayCall(e) && !isHazardCall(rules_, e) && !isFallbackCall(rules_, e);
            })) {
          take(f);
          grew = true;
        }
      }
    }
    for (auto* f : found)
      if (!isEntry(f->name) && callableElsewhere(*f)) mention(spelling(f->name));
    if (entryReached && !entryCallsAdded_) {
      entryCallsAdded_ = true;
      for (auto& e : rules_.entryFunctions)
        for (size_t i = 0; i < tree_.units; ++i)
          if (tree_.files[i].idents.count(e) && callsByName(tree_.files[i].text, e)) choose(i, "calls an entry");
    }
  }

  // What the target calls, transitively: every definition a call may resolve to (Engine::resolveAll). A call whose
  // callee is defined in the units parsed so far, and is not virtual, runs that definition whatever else is parsed
  // (the engine resolves it by key first, and nothing overrides it): it is followed into, not looked for. Any other
  // call (unresolved, defined elsewhere, virtual) is looked for by name in the text of the tree.
  void towardCallees(const Codebase& cb, const Target& target) {
    std::set<std::string> names, keys, walked;
    for (bool grew = true; grew;) {
      grew = false;
      for (auto& [k, f] : cb.functions) {
        if (walked.count(k) || !(target.functions.count(k) || keys.count(k) || names.count(f.name))) continue;
        walked.insert(k);
        grew = true;
        for (auto& e : f.events) {
          if ((e.kind != "call" && e.kind != "ref") || e.name.empty()) continue;
          auto known = cb.functions.find(e.calleeKey);
          if (known != cb.functions.end() && !known->second.isVirtual)
            keys.insert(e.calleeKey);
          else
            names.insert(e.name);
        }
      }
    }
    for (auto& n : names) definitions(spelling(n));
  }

  const ParseOptions& po_;
  const CacheOptions& cache_;
  const Rules& rules_;
  const TargetSpec& spec_;
  TreeIndex tree_;
  std::set<size_t> chosen_, needHeaders_;
  std::map<size_t, UnitModel> models_;
  std::set<std::string> mentioned_, chased_;
  size_t parsedBefore_ = 0;
  bool entryCallsAdded_ = false;
  std::string why_;
};

}  // namespace

Selection selectUnits(const ParseOptions& po, const CacheOptions& cache, const Rules& rules, const TargetSpec& spec,
                      Codebase& cb, Target& target) {
  Selector s(po, cache, rules, spec);
  Codebase part;
  Target t;
  Selection sel = s.run(part, t);
  if (sel.partial) {
    cb = std::move(part);
    target = std::move(t);
  }
  return sel;
}

}  // namespace m2v::review
