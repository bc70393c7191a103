#pragma once
#include <map>
#include <string>
#include <vector>

namespace m2v::review {

// Review rules: API names, patterns, severities. Defaults for MLX in config/mlx.json (compiled in as a fallback).
struct Rules {
  std::string name;
  std::vector<std::string> scopeDirs, entryFunctions, arrayTypes, outputParams;
  std::vector<std::string> lazyOps, evalCalls, syncCalls, fenceWaitCalls, pollingCalls, gpuSideWaits;
  std::vector<std::string> itemCalls, dataCalls, hostReadCalls;
  std::vector<std::string> cpuFallbackCalls, cpuFallbackPatterns;
  std::vector<std::string> copyCalls, layoutCondPatterns, stagingCalls, castCalls;
  std::string wideCastPattern;
  std::vector<std::string> submitCalls, queueSwitchCalls, batchedSubmitPatterns;
  std::vector<std::string> dispatchCalls;
  long smallPassBound = 4;
  std::vector<std::string> allocCalls, setDataCalls;
  std::vector<std::string> smallTensorPatterns, unsupportedPatterns;
  std::vector<std::string> envFunctions, onceFunctions;
  std::map<std::string, std::string> severity;  // check or check.rule -> high|medium|low
  std::vector<std::string> priority;             // which check wins when several flag one line
  std::vector<std::string> disabledChecks;
  int maxDepth = 8;

  std::string severityOf(const std::string& check, const std::string& rule) const;
  bool enabled(const std::string& check) const;
};

// Loads rules from a JSON file (fields missing from it keep the built-in MLX defaults).
bool loadRules(const std::string& path, Rules& rules, std::string& err);
Rules defaultRules();

// Name matching used by all checks: a pattern with "::" matches the qualified name's tail, otherwise the
// unqualified name; "re:" prefixes a regular expression matched against the qualified (or plain) name.
bool nameMatches(const std::vector<std::string>& patterns, const std::string& name, const std::string& qualName);
bool anyRegex(const std::vector<std::string>& patterns, const std::string& text);

}  // namespace m2v::review
