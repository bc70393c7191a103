#include "metal2vk/reflection.h"

#include <nlohmann/json.hpp>

namespace m2v {

using nlohmann::json;

const PushArg* KernelReflection::argForBuffer(uint32_t index) const {
  for (const PushArg& a : args)
    if (a.buffer == index) return &a;
  return nullptr;
}

static const char* kindName(ParamKind k) {
  switch (k) {
    case ParamKind::Buffer:
      return "buffer";
    case ParamKind::Threadgroup:
      return "threadgroup";
    case ParamKind::Builtin:
      return "builtin";
  }
  return "buffer";
}

std::string toJson(const KernelReflection& r, int indent) {
  json j;
  j["entry"] = r.entry;
  j["spirv_entry"] = r.spirvEntry;
  j["source"] = r.source;
  j["line"] = r.line;
  json params = json::array();
  for (const KernelParam& p : r.params) {
    json q{{"name", p.name}, {"type", p.type}, {"kind", kindName(p.kind)}};
    if (!p.addressSpace.empty()) q["address_space"] = p.addressSpace;
    if (p.kind == ParamKind::Builtin)
      q["builtin"] = p.builtin;
    else
      q["index"] = p.index;
    if (!p.functionConstant.empty()) q["function_constant"] = p.functionConstant;
    params.push_back(q);
  }
  j["params"] = params;
  json args = json::array();
  for (const PushArg& a : r.args) args.push_back({{"buffer", a.buffer}, {"offset", a.offset}, {"used", a.used}});
  j["push_constants"] = {{"size", r.pushConstantSize},
                         {"argument_buffer", r.argumentBuffer},
                         {"grid_offset", kPushGridOffset},
                         {"args", args}};
  if (r.abortWordOffset) j["push_constants"]["abort_word_offset"] = r.abortWordOffset;
  if (!r.spinWaits.empty()) j["spin_waits"] = r.spinWaits;
  json fcs = json::array();
  for (const FunctionConstant& f : r.functionConstants)
    fcs.push_back({{"name", f.name},
                   {"type", f.type},
                   {"index", f.index},
                   {"spec_id", f.specId},
                   {"defined_spec_id", f.definedSpecId}});
  j["function_constants"] = fcs;
  json dyn = json::array();
  for (const DynamicThreadgroupMemory& d : r.dynamicThreadgroupMemory)
    dyn.push_back({{"index", d.index}, {"spec_id", d.specId}});
  j["threadgroup_memory"] = {{"static_bytes", r.staticThreadgroupBytes}, {"dynamic", dyn}};
  j["workgroup_size_spec_ids"] = {kWorkgroupSizeSpecBase, kWorkgroupSizeSpecBase + 1, kWorkgroupSizeSpecBase + 2};
  j["nominal_threadgroup_size_spec_ids"] = {kNominalThreadgroupSpecBase, kNominalThreadgroupSpecBase + 1,
                                            kNominalThreadgroupSpecBase + 2};
  j["threadgroup_shape_spec_ids"] = {kThreadgroupShapeSpecBase, kThreadgroupShapeSpecBase + 1,
                                     kThreadgroupShapeSpecBase + 2};
  j["required_subgroup_size"] = r.requiredSubgroupSize;
  if (r.emulatedSimdgroups) j["emulated_simdgroups_spec_id"] = kEmulateSimdgroupsSpecId;
  if (!r.simdgroupEmulationRefused.empty()) j["simdgroup_emulation_refused"] = r.simdgroupEmulationRefused;
  if (r.cooperativeMatrixMultiplies) j["cooperative_matrix_multiplies"] = r.cooperativeMatrixMultiplies;
  if (!r.cooperativeMatrixShapes.empty()) j["cooperative_matrix_shapes"] = r.cooperativeMatrixShapes;
  j["capabilities"] = r.capabilities;
  j["extensions"] = r.extensions;
  return j.dump(indent);
}

namespace {

// A JSON number that must be an integer in 0..2^32-1 (a float or a negative number would convert with undefined
// behaviour in get<uint32_t>()).
uint32_t u32(const json& v, const char* what) {
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0) || v.get<uint64_t>() > UINT32_MAX)
    throw std::runtime_error(std::string(what) + " must be an integer from 0 to 4294967295, not " + v.dump());
  return uint32_t(v.get<uint64_t>());
}

uint32_t u32(const json& object, const char* key, uint32_t fallback) {
  if (!object.is_object()) throw std::runtime_error(std::string("expected an object holding '") + key + "'");
  auto it = object.find(key);
  return it == object.end() ? fallback : u32(*it, key);
}

}  // namespace

std::optional<KernelReflection> reflectionFromJson(const std::string& text, std::string* error) {
  try {
    json j = json::parse(text);
    KernelReflection r;
    r.entry = j.at("entry").get<std::string>();
    r.spirvEntry = j.value("spirv_entry", "main");
    r.source = j.value("source", "");
    r.line = u32(j, "line", 0);
    for (const json& q : j.at("params")) {
      KernelParam p;
      p.name = q.at("name").get<std::string>();
      p.type = q.value("type", "");
      p.addressSpace = q.value("address_space", "");
      std::string kind = q.at("kind").get<std::string>();
      if (kind == "buffer")
        p.kind = ParamKind::Buffer;
      else if (kind == "threadgroup")
        p.kind = ParamKind::Threadgroup;
      else if (kind == "builtin")
        p.kind = ParamKind::Builtin;
      else
        throw std::runtime_error("unknown parameter kind '" + kind + "'");
      p.index = u32(q, "index", 0);
      p.builtin = q.value("builtin", "");
      p.functionConstant = q.value("function_constant", "");
      r.params.push_back(p);
    }
    const json& pc = j.at("push_constants");
    r.pushConstantSize = u32(pc.at("size"), "size");
    r.argumentBuffer = pc.value("argument_buffer", false);
    r.abortWordOffset = u32(pc, "abort_word_offset", 0);
    for (const json& at : j.value("spin_waits", json::array())) r.spinWaits.push_back(at.get<std::string>());
    for (const json& a : pc.at("args"))
      r.args.push_back({u32(a.at("buffer"), "buffer"), u32(a.at("offset"), "offset"), a.value("used", true)});
    for (const json& f : j.value("function_constants", json::array()))
      r.functionConstants.push_back({f.at("name").get<std::string>(), f.at("type").get<std::string>(),
                                     u32(f.at("index"), "index"), u32(f.at("spec_id"), "spec_id"),
                                     u32(f.at("defined_spec_id"), "defined_spec_id")});
    const json& tg = j.at("threadgroup_memory");
    r.staticThreadgroupBytes = u32(tg, "static_bytes", 0);
    for (const json& d : tg.value("dynamic", json::array()))
      r.dynamicThreadgroupMemory.push_back({u32(d.at("index"), "index"), u32(d.at("spec_id"), "spec_id")});
    r.requiredSubgroupSize = u32(j, "required_subgroup_size", 0);
    r.emulatedSimdgroups = j.contains("emulated_simdgroups_spec_id");
    r.simdgroupEmulationRefused = j.value("simdgroup_emulation_refused", std::string());
    r.cooperativeMatrixMultiplies = u32(j, "cooperative_matrix_multiplies", 0);
    r.cooperativeMatrixShapes = j.value("cooperative_matrix_shapes", std::vector<std::string>{});
    r.capabilities = j.value("capabilities", std::vector<std::string>{});
    r.extensions = j.value("extensions", std::vector<std::string>{});
    return r;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

}  // namespace m2v
