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
  std::vector<std::string> smallLoopPatterns;
  // Loops that split one grid over the device's dispatch limits (a chunk base advanced by the maximum): one logical
  // dispatch, not one per element.
  std::vector<std::string> gridSplitLoopPatterns;  // loop headers bounded by the op's arity (inputs, axes, ndim)
  std::vector<std::string> allocCalls, setDataCalls;
  std::vector<std::string> smallTensorPatterns, unsupportedPatterns;
  std::vector<std::string> envFunctions, onceFunctions;
  // Conditions under which an array is known to be unevaluated (it still has a primitive / no buffer).
  std::vector<std::string> unevaluatedCondPatterns;
  // Conditions that prove an array lives in host memory (host_resident) or in a device buffer (device_resident).
  std::vector<std::string> hostResidentPatterns, deviceResidentPatterns;
  std::vector<std::string> forcedSubmitCalls;        // calls that make the next end of recording submit at once
  std::vector<std::string> queueSwitchCondPatterns;  // a submit under such a condition hands over to another queue
  std::vector<std::string> perDispatchAllocCalls;
  std::vector<std::string> graphEndFunctions;   // called once per graph (finalize): their submit is the flush    //
                                                // staging/pool/fence creation that should not run per dispatch
  // A CPU fallback behind `!f(...)` runs only when f refuses; refusals whose conditions all match these (complex or
  // 64-bit dtypes, a missing pipeline) keep every inference dtype on the GPU.
  std::vector<std::string> rareRefusalPatterns;
  // Conditions that consult a cache or pool before creating (a lookup miss, a lazily set handle, an empty free list).
  std::vector<std::string> cacheCondPatterns;
  // Dtypes whose casts matter for inference (a cast staged only for other dtypes is off the common path).
  std::vector<std::string> inferenceDtypePatterns;
  std::vector<std::string> dtypeNamePatterns;  // a dtype named in code (float32, int32, ...)
  // Loops this many frames above a dispatch or allocation are followed; farther ones are not attributed to it.
  int loopFrames = 3;
  // Functions that embed compile-time constants (their item<T>() reads scalars built on the host).
  std::vector<std::string> constantFunctions;
  // Host waits by contract: the scheduler's or the user's wait for a result (MLX's Event::wait()), not per operation.
  std::vector<std::string> hostWaitApiFunctions;
  std::map<std::string, std::string> severity;  // check or check.rule -> high|medium|low
  std::vector<std::string> priority;            // which check wins when several flag one line
  std::vector<std::string> disabledChecks;
  int maxDepth = 8;
  // The entry list names every way into the pipeline (our own runtime): code no entry reaches is off the pipeline.
  bool entriesComplete = false;

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
