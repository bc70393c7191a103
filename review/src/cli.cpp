// `m2v review` command line: parse arguments, parse the codebase, resolve the target, review, print.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "cache.h"
#include "check.h"
#include "config.h"
#include "engine.h"
#include "frontend.h"
#include "metal2vk/review.h"
#include "prefix.h"
#include "report.h"
#include "select.h"
#include "targets.h"

namespace fs = std::filesystem;
using namespace m2v::review;

namespace m2v {

static const char* kUsage =
    "usage: m2v review --root PATH [--compile-commands FILE] [-I DIR]... TARGET [--json] [--config FILE]\n"
    "                  [--fail-on high|medium|low] [--disable CHECK]... [--no-cache] [--cache-dir DIR] [-j N] "
    "[--full-parse] [--no-prefix]\n"
    "  TARGET: FILE | FUNCTION | CLASS | SYMBOL | --file F | --function F | --class C | --diff FILE |\n"
    "          --commit SHA | A..B (git range of the repository at PATH)\n"
    "  --list-checks: print the checks and exit\n";

int runReviewCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string root, compileCommands, config, failOn;
  std::vector<std::string> includes, disabled;
  TargetSpec spec;
  CacheOptions cacheOpts;
  bool json = false, dump = false, fullParse = false, prefix = true;
  auto need = [&](size_t& i, const std::string& flag, std::string& dst) {
    if (i + 1 >= args.size()) {
      err << "m2v review: " << flag << " needs a value\n" << kUsage;
      return false;
    }
    dst = args[++i];
    return true;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    if (a == "-h" || a == "--help") {
      out << kUsage;
      return 0;
    } else if (a == "--list-checks") {
      for (auto& c : allChecks()) out << c.id << ": " << c.summary << "\n";
      return 0;
    } else if (a == "--root") {
      if (!need(i, a, root)) return 2;
    } else if (a == "--compile-commands" || a == "-p") {
      if (!need(i, a, compileCommands)) return 2;
    } else if (a == "-I") {
      if (!need(i, a, v)) return 2;
      includes.push_back(v);
    } else if (a.rfind("-I", 0) == 0 && a.size() > 2) {
      includes.push_back(a.substr(2));
    } else if (a == "-j" || a == "--jobs") {
      if (!need(i, a, v)) return 2;
      cacheOpts.jobs = static_cast<unsigned>(std::max(1, std::atoi(v.c_str())));
    } else if (a.rfind("-j", 0) == 0 && a.size() > 2 && std::isdigit(static_cast<unsigned char>(a[2]))) {
      cacheOpts.jobs = static_cast<unsigned>(std::max(1, std::atoi(a.c_str() + 2)));
    } else if (a == "--full-parse") {
      fullParse = true;
    } else if (a == "--no-prefix") {  // every unit parses its outside headers itself (no precompiled prefix)
      prefix = false;
    } else if (a == "--no-cache") {
      cacheOpts.enabled = false;
    } else if (a == "--cache-dir") {
      if (!need(i, a, cacheOpts.dir)) return 2;
    } else if (a == "--dump-model") {
      dump = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--config") {
      if (!need(i, a, config)) return 2;
    } else if (a == "--fail-on") {
      if (!need(i, a, failOn)) return 2;
      if (severityRank(failOn) == 0) {
        err << "m2v review: --fail-on takes high, medium or low\n";
        return 2;
      }
    } else if (a == "--disable") {
      if (!need(i, a, v)) return 2;
      disabled.push_back(v);
    } else if (a == "--diff" || a == "--commit" || a == "--file" || a == "--function" || a == "--class") {
      if (!spec.value.empty()) {
        err << "m2v review: only one target\n" << kUsage;
        return 2;
      }
      spec.kind = a.substr(2);
      if (!need(i, a, spec.value)) return 2;
    } else if (!a.empty() && a[0] == '-') {
      err << "m2v review: unknown option " << a << "\n" << kUsage;
      return 2;
    } else {
      if (!spec.value.empty()) {
        err << "m2v review: only one target\n" << kUsage;
        return 2;
      }
      spec.value = a;
      if (a.find("..") != std::string::npos && !fs::exists(a)) spec.kind = "commit";
    }
  }
  if (root.empty() || spec.value.empty()) {
    err << "m2v review: --root and a target are required\n" << kUsage;
    return 2;
  }
  if (!fs::is_directory(root)) {
    err << "m2v review: root is not a directory: " << root << "\n";
    return 2;
  }
  root = canonical(root);
  Rules rules = defaultRules();
  std::string e;
  if (!config.empty() && !loadRules(config, rules, e)) {
    err << "m2v review: " << e << "\n";
    return 2;
  }
  for (auto& d : disabled) rules.disabledChecks.push_back(d);

  ParseOptions po;
  po.root = root;
  po.files = sourceFiles(root, rules);
  if (spec.kind.empty() || spec.kind == "file") {  // a target source outside the scope dirs is parsed too
    fs::path p = fs::path(spec.value).is_absolute() ? fs::path(spec.value) : fs::path(root) / spec.value;
    if (fs::is_regular_file(p) && (p.extension() == ".cpp" || p.extension() == ".cc" || p.extension() == ".cxx")) {
      std::string c = canonical(p.string());
      if (std::find(po.files.begin(), po.files.end(), c) == po.files.end()) po.files.push_back(c);
    }
  }
  if (compileCommands.empty()) compileCommands = findCompileCommands(root);
  po.compileCommands = compileCommands;
  po.includeDirs = includes;
  for (auto& d : guessIncludeDirs(root, rules))  // also with a compile database: its paths may be another machine's
    if (std::find(po.includeDirs.begin(), po.includeDirs.end(), d) == po.includeDirs.end()) po.includeDirs.push_back(d);
  po.envFunctions = rules.envFunctions;
  po.onceFunctions = rules.onceFunctions;
  po.arrayTypes = rules.arrayTypes;
  if (prefix && compileCommands.empty()) po.prefix = scanPrefix(po);
  if (po.files.empty()) {
    err << "m2v review: no C++ sources under " << root << "\n";
    return 2;
  }
  Codebase cb;
  Target target;
  // Parse only the units the target needs. An entry target (a primitive's eval_gpu) needs no caller: the units
  // defining it and, transitively, what it calls. Any other function, class or file target also needs the units on
  // the paths from the entries to it. A code area, a diff or a commit parses the whole backend, as does a target the
  // text cannot be trusted to find (then Scope says why).
  std::string partial, whyAll;
  fs::path asPath = fs::path(spec.value).is_absolute() ? fs::path(spec.value) : fs::path(root) / spec.value;
  bool nameTarget = (spec.kind.empty() || spec.kind == "function" || spec.kind == "symbol" || spec.kind == "class") &&
                    spec.value.find('/') == std::string::npos && !fs::exists(asPath);
  bool fileTarget = (spec.kind.empty() || spec.kind == "file") && !fs::is_directory(asPath) && !nameTarget;
  if (!fullParse && (nameTarget || fileTarget)) {
    Selection sel = selectUnits(po, cacheOpts, rules, spec, cb, target);
    if (sel.partial)
      partial = sel.note;
    else
      whyAll = sel.note;
  }
  if (partial.empty()) {
    if (!parseWithCache(po, cacheOpts, cb, e)) {
      err << "m2v review: " << e << "\n";
      return 2;
    }
    if (!resolveTarget(cb, rules, spec, target, e)) {
      err << "m2v review: " << e << "\n";
      return 2;
    }
    if (!whyAll.empty()) target.notes.push_back(whyAll);
  } else {
    target.notes.push_back(partial);
  }
  cb.includeDirs = po.includeDirs;
  cb.compileCommands = po.compileCommands;
  if (dump)  // debugging aid: what the front end extracted for the target functions
    for (auto& k : target.functions) {
      auto& f = cb.functions.at(k);
      out << "function " << f.qualName << " " << f.file << ":" << f.line << "-" << f.endLine << "\n";
      for (auto& v : f.vars)
        out << "  var " << v.name << " : " << v.type << " init=" << v.initKind << " " << v.initCallee << "\n";
      for (auto& ev : f.events)
        out << "  " << ev.line << " " << ev.kind << " " << ev.name << " [" << ev.qualName << "] recv=" << ev.receiverVar
            << " use=" << ev.use << " conds=" << ev.conds.size() << " loops=" << ev.loops.size() << " : " << ev.text
            << "\n";
    }
  Review rv = runReview(cb, rules, target);
  if (json)
    printJson(rv, out);
  else
    printMarkdown(rv, out);
  if (!failOn.empty())
    for (auto& f : rv.findings)
      if (severityRank(f.severity) >= severityRank(failOn)) return 1;
  return 0;
}

}  // namespace m2v
