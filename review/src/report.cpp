// The report, in the seed's sections and order: Scope, Findings, Non-issues, Summary (Markdown or JSON).
#include "report.h"

#include <map>
#include <nlohmann/json.hpp>

namespace m2v::review {
namespace {

std::map<std::string, int> counts(const Review& r) {
  std::map<std::string, int> c{{"high", 0}, {"medium", 0}, {"low", 0}};
  for (auto& f : r.findings) c[f.severity]++;
  return c;
}

std::string verdict(const Review& r) {
  auto c = counts(r);
  // Code the front end could not make sense of was not reviewed; say so instead of calling it friendly.
  if (r.findings.empty() && r.target.functions.empty() && r.recoveredErrors)
    return "Nothing was reviewed: the target defines no function the front end could parse (" +
           std::to_string(r.recoveredErrors) +
           " error diagnostic(s), e.g. a class declared in a header that was not found); pass -I DIR or "
           "--compile-commands FILE.";
  if (r.findings.empty())
    return "No pipeline hazards found on the reviewed paths: pipeline-friendly as far as the reviewer can see.";
  if (c["high"])
    return "Not pipeline-friendly: " + std::to_string(c["high"]) +
           " path(s) sync the host or fall back to the CPU on the GPU path.";
  if (c["medium"]) return "Asynchronous, but with avoidable copies or materialization on the GPU path.";
  return "Asynchronous; only minor fragmentation or allocation overhead.";
}

}  // namespace

void printMarkdown(const Review& r, std::ostream& out) {
  out << "# Vulkan pipeline review\n\n## Scope\n\n";
  out << "- Target reviewed: " << r.target.kind << " `" << r.target.spec << "` -> " << r.target.resolved << "\n";
  for (auto& m : r.target.matches) out << "  - " << m << "\n";
  for (auto& n : r.target.notes) out << "  - " << n << "\n";
  out << "- Rules: " << r.rulesName << "; parsed " << r.parsedUnits << " translation unit(s)";
  if (r.recoveredErrors) out << ", recovered from " << r.recoveredErrors << " error diagnostic(s)";
  out << "\n";
  if (!r.parseStatus.empty()) {
    size_t clean = 0;
    for (auto& p : r.parseStatus) clean += p.errors == 0;
    out << "- Parse status: " << clean << " of " << r.parseStatus.size() << " unit(s) without errors"
        << (r.cachedUnits ? ", " + std::to_string(r.cachedUnits) + " from the cache" : "") << "\n";
    for (auto& p : r.parseStatus)
      if (p.errors)
        out << "  - " << p.file << ": " << p.errors << " error(s), " << p.functions
            << " function(s) extracted; first: " << p.firstError << "\n";
  }
  if (!r.includeDirs.empty()) {
    out << "- Include roots:";
    for (auto& d : r.includeDirs) out << " " << d;
    out << (r.compileCommands.empty() ? "" : "; compile commands: " + r.compileCommands) << "\n";
  }
  out << "- Files inspected:\n";
  for (auto& f : r.files) out << "  - " << f << "\n";
  out << "- Functions inspected:\n";
  for (auto& f : r.functions)
    out << "  - " << f.function << " (" << f.file << ":" << f.line << ") [" << f.role << "]\n";
  out << "\n## Findings\n\n";
  if (r.findings.empty()) out << "No findings.\n";
  int i = 0;
  for (auto& f : r.findings) {
    out << ++i << ". **" << f.severity << "** [" << f.check << "." << f.rule << "]\n";
    out << "   - Severity: " << f.severity << "\n";
    out << "   - Location: " << f.file << ":" << f.line;
    if (!f.alsoLines.empty()) {
      out << " (same path also at line" << (f.alsoLines.size() > 1 ? "s" : "");
      for (size_t k = 0; k < f.alsoLines.size(); ++k) out << (k ? ", " : " ") << f.alsoLines[k];
      out << ")";
    }
    out << " in `" << f.function << "`\n";
    out << "   - Problem: " << f.problem << "\n";
    out << "   - Why it hurts: " << f.why << "\n";
    out << "   - Trigger: " << f.trigger << "\n";
    if (!f.alsoFrom.empty()) {
      out << "   - Also reached from:";
      // a handful names the entries; the rest is a count (the JSON lists them all)
      for (size_t k = 0; k < f.alsoFrom.size() && k < 5; ++k) out << " " << f.alsoFrom[k] << ";";
      if (f.alsoFrom.size() > 5) out << " and " << f.alsoFrom.size() - 5 << " more";
      out << "\n";
    }
    out << "   - Recommended direction: " << f.direction << "\n";
  }
  out << "\n## Non-issues\n\n";
  if (r.nonIssues.empty()) out << "None checked.\n";
  for (auto& n : r.nonIssues)
    out << "- " << n.file << ":" << n.line << " in `" << n.function << "`: " << n.reason << "\n";
  auto c = counts(r);
  out << "\n## Summary\n\n- Findings: high " << c["high"] << ", medium " << c["medium"] << ", low " << c["low"] << "\n";
  out << "- " << verdict(r) << "\n";
}

void printJson(const Review& r, std::ostream& out) {
  using nlohmann::json;
  json j;
  json scope;
  scope["target"] = {{"kind", r.target.kind},
                     {"spec", r.target.spec},
                     {"resolved", r.target.resolved},
                     {"matches", r.target.matches},
                     {"notes", r.target.notes}};
  scope["rules"] = r.rulesName;
  scope["parsed_units"] = r.parsedUnits;
  scope["recovered_errors"] = r.recoveredErrors;
  scope["files"] = r.files;
  json ps = json::array();
  for (auto& p : r.parseStatus)
    ps.push_back({{"file", p.file},
                  {"errors", p.errors},
                  {"first_error", p.firstError},
                  {"functions", p.functions},
                  {"cached", p.cached}});
  scope["parse_status"] = ps;
  scope["include_dirs"] = r.includeDirs;
  scope["compile_commands"] = r.compileCommands;
  json fns = json::array();
  for (auto& f : r.functions)
    fns.push_back({{"function", f.function}, {"file", f.file}, {"line", f.line}, {"role", f.role}});
  scope["functions"] = fns;
  j["scope"] = scope;
  json fs = json::array();
  for (auto& f : r.findings)
    fs.push_back({{"severity", f.severity},
                  {"check", f.check},
                  {"rule", f.rule},
                  {"file", f.file},
                  {"line", f.line},
                  {"location", f.file + ":" + std::to_string(f.line)},
                  {"function", f.function},
                  {"problem", f.problem},
                  {"why", f.why},
                  {"trigger", f.trigger},
                  {"reachability", f.reachability},
                  {"chain", f.chain},
                  {"also_from", f.alsoFrom},
                  {"also_lines", f.alsoLines},
                  {"confidence", f.proven ? "reachable" : "reachability not established"},
                  {"direction", f.direction}});
  j["findings"] = fs;
  json ns = json::array();
  for (auto& n : r.nonIssues)
    ns.push_back(
        {{"check", n.check}, {"file", n.file}, {"line", n.line}, {"function", n.function}, {"reason", n.reason}});
  j["non_issues"] = ns;
  auto c = counts(r);
  j["summary"] = {{"high", c["high"]}, {"medium", c["medium"]}, {"low", c["low"]}, {"verdict", verdict(r)}};
  out << j.dump(2) << "\n";
}

}  // namespace m2v::review
