#include "prefix.h"

#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

#include "cache.h"
#include "frontend.h"

namespace fs = std::filesystem;

namespace m2v::review {

namespace {

bool under(const std::string& f, const std::string& dir) {
  return f.size() > dir.size() && f.compare(0, dir.size(), dir) == 0 && f[dir.size()] == '/';
}

std::string normal(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal().string() : c.string();
}

// The identifiers of a preprocessor line, without the operators that look like identifiers.
void identifiers(const std::string& text, std::set<std::string>& out) {
  std::set<std::string> found;
  identifiersIn(text, found);
  for (const std::string& id : found)
    if (id != "defined" && id != "__has_include" && id != "__has_include_next") out.insert(id);
}

}  // namespace

namespace {

struct Directive {
  enum Kind { Condition, Define, Include } kind;
  std::set<std::string> ids;  // Condition: identifiers tested; Define: the macro
  std::string include;        // Include: as spelled
  bool quoted = false;
};

// The directives of a file that matter here, in order: tests (not the include guard's), definitions (not the
// guard's), and includes outside any #if block.
std::vector<Directive> directivesOf(const std::string& text) {
  static const std::regex directive(R"(^\s*#\s*(\w+)\s*(.*)$)");
  static const std::regex include(R"(^[<"]([^>"]+)([>"]))");
  std::vector<Directive> out;
  std::istringstream in(text);
  std::vector<bool> guards;  // one per open #if: is it the include guard
  bool firstDirective = true;
  std::string guardName;
  size_t depth = 0;  // open #if blocks other than the guard
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && line.back() == '\\') {  // continued directive
      std::string next;
      if (!std::getline(in, next)) break;
      line.pop_back();
      line += next;
    }
    if (line.find('#') == std::string::npos) continue;
    std::smatch m;
    if (!std::regex_search(line, m, directive)) continue;
    std::string kw = m[1], rest = m[2];
    if (kw == "pragma") continue;
    bool wasFirst = firstDirective;
    firstDirective = false;
    if (kw == "if" || kw == "ifdef" || kw == "ifndef" || kw == "elif" || kw == "elifdef" || kw == "elifndef") {
      Directive d{Directive::Condition, {}, "", false};
      identifiers(rest, d.ids);
      bool open = kw[0] == 'i';
      bool guard = open && wasFirst && kw == "ifndef" && d.ids.size() == 1;
      if (guard) guardName = *d.ids.begin();
      if (open) {
        guards.push_back(guard);
        if (!guard) ++depth;
      }
      if (!guard) out.push_back(std::move(d));
    } else if (kw == "endif") {
      if (!guards.empty()) {
        if (!guards.back() && depth > 0) --depth;
        guards.pop_back();
      }
    } else if (kw == "define") {
      std::string name;
      for (size_t i = 0; i < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[i])) || rest[i] == '_'); ++i)
        name += rest[i];
      if (!name.empty() && name != guardName) out.push_back({Directive::Define, {name}, "", false});
    } else if (kw == "include" && depth == 0) {
      std::smatch im;
      if (std::regex_search(rest, im, include)) out.push_back({Directive::Include, {}, im[1], im[2] == "\""});
    }
  }
  return out;
}

}  // namespace

PrefixScan scanPrefix(const ParseOptions& opts) {
  PrefixScan out;
  std::set<std::string> seenHeaders;
  std::map<std::string, std::vector<Directive>> files;
  auto inTree = [&](const std::string& f) {
    if (under(f, opts.root)) return true;
    for (auto& d : opts.includeDirs)
      if (under(f, d)) return true;
    return false;
  };
  // `#include "x"` or `<x>` from `from`: the file of the tree it names, or "" when it names none.
  auto resolve = [&](const std::string& from, const std::string& inc, bool quoted) -> std::string {
    std::error_code ec;
    if (quoted) {
      fs::path p = fs::path(from).parent_path() / inc;
      if (fs::is_regular_file(p, ec)) return normal(p);
    }
    std::vector<std::string> dirs = opts.includeDirs;
    if (dirs.empty()) dirs.push_back(opts.root);
    for (auto& d : dirs) {
      fs::path p = fs::path(d) / inc;
      if (fs::is_regular_file(p, ec)) return normal(p);
    }
    return "";
  };
  // Each unit as the preprocessor reads it: includes in order, each file once. A test the tree makes before the
  // unit has included any outside header could change meaning if an outside macro were defined ahead of it.
  std::function<void(const std::string&, std::set<std::string>&, bool&)> visit =
      [&](const std::string& file, std::set<std::string>& seen, bool& outsideSeen) {
        if (!seen.insert(file).second) return;
        auto it = files.find(file);
        if (it == files.end()) {
          std::string text;
          readFile(file, text);
          it = files.emplace(file, directivesOf(text)).first;
        }
        for (const Directive& d : it->second) {
          if (d.kind == Directive::Condition) {
            if (!outsideSeen) out.treeConditions.insert(d.ids.begin(), d.ids.end());
          } else if (d.kind == Directive::Define) {
            out.treeMacros.insert(d.ids.begin(), d.ids.end());
          } else {
            std::string hit = resolve(file, d.include, d.quoted);
            if (!hit.empty()) {
              if (inTree(hit)) visit(hit, seen, outsideSeen);
            } else if (!d.quoted) {
              outsideSeen = true;
              if (seenHeaders.insert(d.include).second) out.headers.push_back(d.include);
            }
          }
        }
      };
  for (auto& u : opts.files) {
    std::set<std::string> seen;
    bool outsideSeen = false;
    visit(u, seen, outsideSeen);
  }
  return out;
}

void identifiersIn(const std::string& text, std::set<std::string>& out) {
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (!(std::isalpha(c) || c == '_')) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
    out.insert(text.substr(i, j - i));
    i = j;
  }
}

}  // namespace m2v::review
