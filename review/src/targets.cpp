#include "targets.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace m2v::review {

std::string canonical(const std::string& path) {
  std::error_code ec;
  auto p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return p.string();
}

static bool isSource(const fs::path& p) {
  auto e = p.extension().string();
  return e == ".cpp" || e == ".cc" || e == ".cxx" || e == ".c++";
}

static void scan(const fs::path& dir, std::vector<std::string>& out) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const auto& p = it->path();
    auto name = p.filename().string();
    if (it->is_directory()) {
      if ((!name.empty() && name[0] == '.') || fs::exists(p / "CMakeCache.txt")) it.disable_recursion_pending();
      continue;
    }
    if (isSource(p)) out.push_back(canonical(p.string()));
  }
}

// Directories under root (a few levels deep, skipping hidden and build directories) for which pred holds.
static void findDirs(const fs::path& root, int maxDepth, const std::function<bool(const fs::path&)>& pred,
                     std::vector<std::string>& out) {
  std::error_code ec;
  if (pred(root)) out.push_back(canonical(root.string()));
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_directory(ec)) continue;
    auto name = it->path().filename().string();
    if ((!name.empty() && name[0] == '.') || name == "node_modules" || fs::exists(it->path() / "CMakeCache.txt") ||
        it.depth() >= maxDepth) {
      it.disable_recursion_pending();
      if (it.depth() >= maxDepth && pred(it->path())) out.push_back(canonical(it->path().string()));
      continue;
    }
    if (pred(it->path())) out.push_back(canonical(it->path().string()));
  }
}

std::vector<std::string> scopeRoots(const std::string& root, const Rules& rules) {
  std::vector<std::string> out;
  for (auto& d : rules.scopeDirs) {
    if (fs::is_directory(fs::path(root) / d)) {
      out.push_back(canonical((fs::path(root) / d).string()));
      continue;
    }
    // a fork that keeps MLX under a subdirectory (mlx-src/mlx/backend/vulkan, third_party/mlx/...)
    std::string tail = "/" + d;
    findDirs(
        root, 6,
        [&](const fs::path& p) {
          std::string s = p.generic_string();
          return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
        },
        out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> sourceFiles(const std::string& root, const Rules& rules) {
  std::vector<std::string> out;
  for (auto& d : scopeRoots(root, rules)) scan(d, out);
  if (out.empty()) scan(root, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> guessIncludeDirs(const std::string& root, const Rules& rules) {
  std::vector<std::string> out{root};
  // Include roots: directories holding the headers the sources name as `<top>/...` where <top> is the first
  // component of a scope dir (`mlx/array.h` -> the directory that contains `mlx/`), wherever the fork keeps them.
  std::set<std::string> tops;
  for (auto& d : rules.scopeDirs) tops.insert(d.substr(0, d.find('/')));
  auto holdsHeaders = [&](const fs::path& p) {
    for (auto& t : tops) {
      std::error_code ec;
      if (!fs::is_directory(p / t, ec)) continue;
      for (auto& e : fs::directory_iterator(p / t, ec))
        if (e.path().extension() == ".h" || e.path().extension() == ".hpp") return true;
    }
    return false;
  };
  std::vector<std::string> roots;
  findDirs(root, 5, holdsHeaders, roots);
  for (auto& r : roots)
    if (r != canonical(root)) out.push_back(r);
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_directory()) continue;
    auto name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      it.disable_recursion_pending();
      continue;
    }
    if (name == "include") out.push_back(canonical(it->path().string()));
  }
  std::sort(out.begin() + 1, out.end());
  out.erase(std::unique(out.begin() + 1, out.end()), out.end());
  return out;
}

std::string findCompileCommands(const std::string& root) {
  for (auto* d : {"", "build", "build/release", "build/Release", "build/debug", "out/build", "cmake-build-release",
                  "cmake-build-debug"}) {
    fs::path p = fs::path(root) / d / "compile_commands.json";
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return canonical(p.string());
  }
  return "";
}

std::map<std::string, std::set<unsigned>> parseUnifiedDiff(const std::string& diff, const std::string& root,
                                                           const std::string& gitTop) {
  std::map<std::string, std::set<unsigned>> out;
  std::istringstream in(diff);
  std::string line, file;
  unsigned newLine = 0;
  bool inHunk = false;
  while (std::getline(in, line)) {
    if (line.rfind("+++ ", 0) == 0) {
      std::string p = line.substr(4);
      auto tab = p.find('\t');
      if (tab != std::string::npos) p = p.substr(0, tab);
      if (p == "/dev/null") {
        file.clear();
        continue;
      }
      if (p.rfind("b/", 0) == 0) p = p.substr(2);
      std::string cand = canonical((fs::path(root) / p).string());
      if (!fs::exists(cand) && !gitTop.empty()) cand = canonical((fs::path(gitTop) / p).string());
      if (!fs::exists(cand) && fs::path(p).is_absolute()) cand = canonical(p);
      file = cand;
      inHunk = false;
      continue;
    }
    if (line.rfind("--- ", 0) == 0 && !inHunk) continue;
    if (line.rfind("@@", 0) == 0) {
      auto plus = line.find('+');
      if (plus == std::string::npos) continue;
      newLine = static_cast<unsigned>(std::strtoul(line.c_str() + plus + 1, nullptr, 10));
      inHunk = true;
      continue;
    }
    if (!inHunk || file.empty()) continue;
    if (line.empty() || line[0] == ' ')
      ++newLine;
    else if (line[0] == '+')
      out[file].insert(newLine++);
    else if (line[0] == '-')
      out[file].insert(newLine);  // deletion point
  }
  return out;
}

static bool capture(const std::string& cmd, std::string& out) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  return pclose(p) == 0;
}

static std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool runGitDiff(const std::string& root, const std::string& rev, std::string& diff, std::string& err) {
  std::string cmd =
      rev.find("..") != std::string::npos
          ? "git -C " + shellQuote(root) + " diff --no-color --no-ext-diff -U0 " + shellQuote(rev) + " 2>&1"
          : "git -C " + shellQuote(root) + " show --no-color --no-ext-diff --format= -U0 " + shellQuote(rev) + " 2>&1";
  if (!capture(cmd, diff)) {
    err = "git failed: " + cmd + "\n" + diff;
    return false;
  }
  return true;
}

static std::string gitTopLevel(const std::string& root) {
  std::string out;
  if (!capture("git -C " + shellQuote(root) + " rev-parse --show-toplevel 2>/dev/null", out)) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

static std::string rel(const Codebase& cb, const std::string& f) {
  if (f.size() > cb.root.size() && f.compare(0, cb.root.size(), cb.root) == 0) return f.substr(cb.root.size() + 1);
  return f;
}

static bool qualMatches(const std::string& qual, const std::string& want) {
  if (qual == want) return true;
  return qual.size() > want.size() + 2 && qual.compare(qual.size() - want.size(), want.size(), want) == 0 &&
         qual.compare(qual.size() - want.size() - 2, 2, "::") == 0;
}

static void fromChanges(const Codebase& cb, const std::map<std::string, std::set<unsigned>>& changes, Target& t) {
  size_t lines = 0;
  for (auto& [file, ls] : changes) {
    lines += ls.size();
    for (auto& [k, f] : cb.functions)
      if (f.file == file)
        for (unsigned l : ls)
          if (l >= f.line && l <= f.endLine) {
            t.functions.insert(k);
            break;
          }
  }
  t.resolved = std::to_string(changes.size()) + " file(s), " + std::to_string(lines) + " changed line(s), " +
               std::to_string(t.functions.size()) + " function(s) touched";
  for (auto& [file, ls] : changes)
    t.notes.push_back("changed: " + rel(cb, file) + " (" + std::to_string(ls.size()) + " lines)");
}

bool resolveTarget(const Codebase& cb, const Rules& rules, const TargetSpec& spec, Target& t, std::string& err) {
  t.spec = spec.value;
  std::string kind = spec.kind;
  if (kind == "diff" || kind == "commit") {
    std::string diff;
    if (kind == "diff") {
      std::ifstream in(spec.value);
      if (!in) {
        err = "cannot read diff file " + spec.value;
        return false;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      diff = ss.str();
    } else if (!runGitDiff(cb.root, spec.value, diff, err)) {
      return false;
    }
    t.kind = kind;
    fromChanges(cb, parseUnifiedDiff(diff, cb.root, gitTopLevel(cb.root)), t);
    return true;
  }
  if (kind.empty() || kind == "file") {
    std::string p = fs::path(spec.value).is_absolute() ? spec.value : (fs::path(cb.root) / spec.value).string();
    if (!fs::exists(p) && !fs::path(spec.value).is_absolute() && spec.value.find('/') != std::string::npos) {
      // `mlx/backend/vulkan/copy.cpp` in a fork that keeps MLX under mlx-src/: the one parsed path ending with it
      std::set<std::string> hits;
      std::string tail = "/" + fs::path(spec.value).lexically_normal().generic_string();
      while (tail.size() > 1 && tail.back() == '/') tail.pop_back();
      for (auto& f : cb.parsedFiles) {
        if (f.size() > tail.size() && f.compare(f.size() - tail.size(), tail.size(), tail) == 0) hits.insert(f);
        auto pos = f.find(tail + "/");
        if (pos != std::string::npos) hits.insert(f.substr(0, pos + tail.size()));
      }
      if (hits.size() == 1) {
        p = *hits.begin();
        t.notes.push_back("`" + spec.value + "` is not under the root as written; reviewing " + rel(cb, p));
      }
    }
    if (fs::is_regular_file(p)) {
      p = canonical(p);
      t.kind = "file";
      for (auto& [k, f] : cb.functions)
        if (f.file == p) t.functions.insert(k);
      t.resolved = "file " + rel(cb, p) + " (" + std::to_string(t.functions.size()) + " function(s) defined)";
      return true;
    }
    if (fs::is_directory(p)) {  // a code area: every function defined under it
      p = canonical(p);
      t.kind = "area";
      for (auto& [k, f] : cb.functions)
        if (f.file.rfind(p + "/", 0) == 0) t.functions.insert(k);
      t.resolved = "code area " + rel(cb, p) + "/ (" + std::to_string(t.functions.size()) + " function(s) defined)";
      return true;
    }
    if (kind == "file") {
      err = "no such file: " + spec.value;
      return false;
    }
  }
  auto score = [&](const Function& f) {
    int s = 0;
    std::string r = rel(cb, f.file);
    for (auto& d : rules.scopeDirs)
      if (r.rfind(d, 0) == 0) s += 4;
    if (std::find(rules.entryFunctions.begin(), rules.entryFunctions.end(), f.name) != rules.entryFunctions.end())
      s += 2;
    return s;
  };
  if (kind.empty() || kind == "function" || kind == "symbol") {
    std::vector<const Function*> hits;
    for (auto& [k, f] : cb.functions)
      if (qualMatches(f.qualName, spec.value)) hits.push_back(&f);
    // `Reduce` names the class, not just its constructor `Reduce::Reduce`: a target that only matches constructors
    // is resolved as the class (every method, across files) unless a function was asked for.
    bool onlyCtors = !hits.empty() && kind != "function";
    for (auto* f : hits) {
      std::string cls = f->className.substr(f->className.rfind(':') == std::string::npos ? 0 : f->className.rfind(':') + 1);
      onlyCtors = onlyCtors && !f->className.empty() && f->name == cls;
    }
    if (onlyCtors) hits.clear();
    if (!hits.empty()) {
      t.kind = hits.size() > 1 ? "symbol" : "function";
      int best = -1;
      for (auto* f : hits) best = std::max(best, score(*f));
      std::sort(hits.begin(), hits.end(), [&](const Function* a, const Function* b) {
        return std::make_tuple(-score(*a), a->file, a->line) < std::make_tuple(-score(*b), b->file, b->line);
      });
      // same symbol in sources outside the parsed scope (other backends): listed, not reviewed
      std::set<std::string> parsedFiles;
      for (auto& [k, f] : cb.functions) parsedFiles.insert(f.file);
      for (auto& p : cb.parsedFiles) parsedFiles.insert(p);
      std::vector<std::string> outside;
      std::error_code ec;
      for (auto it = fs::recursive_directory_iterator(cb.root, fs::directory_options::skip_permission_denied, ec);
           it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        auto name = it->path().filename().string();
        if (it->is_directory()) {
          if ((!name.empty() && name[0] == '.') || fs::exists(it->path() / "CMakeCache.txt"))
            it.disable_recursion_pending();
          continue;
        }
        if (!isSource(it->path())) continue;
        std::string file = canonical(it->path().string());
        if (parsedFiles.count(file)) continue;
        std::ifstream in(file);
        std::string l;
        for (unsigned n = 1; std::getline(in, l); ++n)
          if (l.find(spec.value + "(") != std::string::npos && l.find(';') == std::string::npos)
            outside.push_back(spec.value + " (" + rel(cb, file) + ":" + std::to_string(n) +
                              ") [not reviewed: outside the scope dirs]");
      }
      std::sort(outside.begin(), outside.end());
      if (hits.size() + outside.size() > 1) t.kind = "symbol";
      for (auto* f : hits) {
        bool reviewed = score(*f) == best;
        if (reviewed) t.functions.insert(f->key);
        t.matches.push_back(f->qualName + " (" + rel(cb, f->file) + ":" + std::to_string(f->line) + ")" +
                            (reviewed ? " [reviewed]" : " [not reviewed: less relevant]"));
      }
      for (auto& o : outside) t.matches.push_back(o);
      t.resolved = hits.size() + outside.size() == 1
                       ? "function " + hits[0]->qualName + " (" + rel(cb, hits[0]->file) + ":" +
                             std::to_string(hits[0]->line) + ")"
                       : "symbol `" + spec.value + "`: " + std::to_string(hits.size() + outside.size()) + " matches, " +
                             std::to_string(t.functions.size()) + " most relevant reviewed";
      return true;
    }
  }
  if (kind.empty() || kind == "class" || kind == "symbol") {
    std::string cls = spec.value;
    for (auto& [k, f] : cb.functions) {
      if (f.className.empty()) continue;
      std::string q = f.qualName.substr(0, f.qualName.rfind("::"));
      if (qualMatches(q, cls)) t.functions.insert(k);
    }
    if (!t.functions.empty()) {
      t.kind = "class";
      t.resolved = "class " + cls + " (" + std::to_string(t.functions.size()) + " method(s) defined)";
      for (auto& k : t.functions) {
        auto& f = cb.functions.at(k);
        t.matches.push_back(f.qualName + " (" + rel(cb, f.file) + ":" + std::to_string(f.line) + ")");
      }
      return true;
    }
  }
  // Not in the model: look for the definition in the text before calling it missing. A definition the front end
  // dropped (a class from a header it did not find) is reported as not reviewed, with the file's parse status.
  {
    std::string last = spec.value.substr(spec.value.rfind("::") == std::string::npos ? 0 : spec.value.rfind("::") + 2);
    std::vector<std::string> files = cb.parsedFiles;
    for (auto& f : files) {
      std::ifstream in(f);
      std::string l;
      for (unsigned n = 1; std::getline(in, l); ++n) {
        auto pos = l.find(spec.value + "(");
        if (pos == std::string::npos || l.find(';') != std::string::npos) continue;
        if (pos > 0 && (std::isalnum(static_cast<unsigned char>(l[pos - 1])) || l[pos - 1] == '_')) continue;
        t.kind = "function";
        std::string why;
        for (auto& ps : cb.parseStatus)
          if (ps.file == f && ps.errors)
            why = " (" + std::to_string(ps.errors) + " parse error(s) in that file, first: " + ps.firstError + ")";
        t.resolved = "function " + spec.value + " is defined at " + rel(cb, f) + ":" + std::to_string(n) +
                     " but the front end could not extract it" + why + "; pass -I DIR or --compile-commands FILE";
        t.notes.push_back("not reviewed: " + spec.value + " (" + rel(cb, f) + ":" + std::to_string(n) + ")");
        (void)last;
        return true;
      }
    }
  }
  err = "target not found: " + spec.value + " (not a file under the root, nor a function or class defined there)";
  return false;
}

}  // namespace m2v::review
