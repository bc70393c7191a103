#include "config.h"

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

namespace m2v::review {
namespace {
const char* kDefaultJson =
#include "mlx_config.inc"
    ;

void applyJson(const nlohmann::json& j, Rules& r) {
  auto list = [&](const char* key, std::vector<std::string>& dst) {
    if (j.contains(key)) dst = j.at(key).get<std::vector<std::string>>();
  };
  if (j.contains("name")) r.name = j.at("name").get<std::string>();
  list("scope_dirs", r.scopeDirs);
  list("entry_functions", r.entryFunctions);
  list("array_types", r.arrayTypes);
  list("output_params", r.outputParams);
  list("lazy_ops", r.lazyOps);
  list("eval_calls", r.evalCalls);
  list("sync_calls", r.syncCalls);
  list("fence_wait_calls", r.fenceWaitCalls);
  list("polling_calls", r.pollingCalls);
  list("gpu_side_waits", r.gpuSideWaits);
  list("item_calls", r.itemCalls);
  list("data_calls", r.dataCalls);
  list("host_read_calls", r.hostReadCalls);
  list("cpu_fallback_calls", r.cpuFallbackCalls);
  list("cpu_fallback_patterns", r.cpuFallbackPatterns);
  list("copy_calls", r.copyCalls);
  list("layout_cond_patterns", r.layoutCondPatterns);
  list("staging_calls", r.stagingCalls);
  list("cast_calls", r.castCalls);
  if (j.contains("wide_cast_pattern")) r.wideCastPattern = j.at("wide_cast_pattern").get<std::string>();
  list("submit_calls", r.submitCalls);
  list("queue_switch_calls", r.queueSwitchCalls);
  list("batched_submit_patterns", r.batchedSubmitPatterns);
  list("dispatch_calls", r.dispatchCalls);
  if (j.contains("small_pass_bound")) r.smallPassBound = j.at("small_pass_bound").get<long>();
  list("small_loop_patterns", r.smallLoopPatterns);
  list("grid_split_loop_patterns", r.gridSplitLoopPatterns);
  list("alloc_calls", r.allocCalls);
  list("set_data_calls", r.setDataCalls);
  list("small_tensor_patterns", r.smallTensorPatterns);
  list("unsupported_patterns", r.unsupportedPatterns);
  list("env_functions", r.envFunctions);
  list("once_functions", r.onceFunctions);
  list("unevaluated_cond_patterns", r.unevaluatedCondPatterns);
  list("host_resident_patterns", r.hostResidentPatterns);
  list("device_resident_patterns", r.deviceResidentPatterns);
  list("forced_submit_calls", r.forcedSubmitCalls);
  list("queue_switch_cond_patterns", r.queueSwitchCondPatterns);
  list("per_dispatch_alloc_calls", r.perDispatchAllocCalls);
  list("graph_end_functions", r.graphEndFunctions);
  list("rare_refusal_patterns", r.rareRefusalPatterns);
  list("cache_cond_patterns", r.cacheCondPatterns);
  list("inference_dtype_patterns", r.inferenceDtypePatterns);
  list("dtype_name_patterns", r.dtypeNamePatterns);
  list("constant_functions", r.constantFunctions);
  list("host_wait_api_functions", r.hostWaitApiFunctions);
  if (j.contains("loop_frames")) r.loopFrames = j.at("loop_frames").get<int>();
  if (j.contains("severity"))
    for (auto& [k, v] : j.at("severity").items()) r.severity[k] = v.get<std::string>();
  list("priority", r.priority);
  list("disabled_checks", r.disabledChecks);
  if (j.contains("max_depth")) r.maxDepth = j.at("max_depth").get<int>();
  if (j.contains("entries_complete")) r.entriesComplete = j.at("entries_complete").get<bool>();
}
}  // namespace

Rules defaultRules() {
  Rules r;
  applyJson(nlohmann::json::parse(kDefaultJson), r);
  return r;
}

bool loadRules(const std::string& path, Rules& rules, std::string& err) {
  std::ifstream in(path);
  if (!in) {
    err = "cannot read config file " + path;
    return false;
  }
  try {
    applyJson(nlohmann::json::parse(in), rules);
  } catch (const std::exception& e) {
    err = "bad config file " + path + ": " + e.what();
    return false;
  }
  for (auto& [k, v] : rules.severity)
    if (v != "high" && v != "medium" && v != "low") {
      err = "bad severity '" + v + "' for " + k + " in " + path;
      return false;
    }
  return true;
}

std::string Rules::severityOf(const std::string& check, const std::string& rule) const {
  auto it = severity.find(check + "." + rule);
  if (it != severity.end()) return it->second;
  it = severity.find(check);
  if (it != severity.end()) return it->second;
  return "medium";
}

bool Rules::enabled(const std::string& check) const {
  for (auto& d : disabledChecks)
    if (d == check) return false;
  return true;
}

bool nameMatches(const std::vector<std::string>& patterns, const std::string& name, const std::string& qualName) {
  for (auto& p : patterns) {
    if (p.rfind("re:", 0) == 0) {
      if (anyRegex({p.substr(3)}, qualName.empty() ? name : qualName)) return true;
      continue;
    }
    if (p.find("::") != std::string::npos) {
      const std::string& q = qualName;
      if (q == p || (q.size() > p.size() && q.compare(q.size() - p.size(), p.size(), p) == 0 &&
                     q[q.size() - p.size() - 1] == ':'))
        return true;
      continue;
    }
    if (name == p) return true;
  }
  return false;
}

// Compiled once per pattern: the engine matches the same few patterns against thousands of events.
static const std::regex* compiled(const std::string& p) {
  static std::map<std::string, std::unique_ptr<std::regex>> cache;
  auto it = cache.find(p);
  if (it != cache.end()) return it->second.get();
  std::unique_ptr<std::regex> re;
  try {
    re = std::make_unique<std::regex>(p);
  } catch (const std::regex_error&) {
  }
  return cache.emplace(p, std::move(re)).first->second.get();
}

bool anyRegex(const std::vector<std::string>& patterns, const std::string& text) {
  for (auto& p : patterns)
    if (auto* re = compiled(p))
      if (std::regex_search(text, *re)) return true;
  return false;
}

}  // namespace m2v::review
