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
  for (const PushArg& a : r.args) args.push_back({{"buffer", a.buffer}, {"offset", a.offset}});
  j["push_constants"] = {{"size", r.pushConstantSize},
                         {"argument_buffer", r.argumentBuffer},
                         {"grid_offset", kPushGridOffset},
                         {"args", args}};
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
  j["required_subgroup_size"] = r.requiredSubgroupSize;
  j["capabilities"] = r.capabilities;
  j["extensions"] = r.extensions;
  return j.dump(indent);
}

std::optional<KernelReflection> reflectionFromJson(const std::string& text, std::string* error) {
  try {
    json j = json::parse(text);
    KernelReflection r;
    r.entry = j.at("entry").get<std::string>();
    r.spirvEntry = j.value("spirv_entry", "main");
    r.source = j.value("source", "");
    r.line = j.value("line", 0u);
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
      p.index = q.value("index", 0u);
      p.builtin = q.value("builtin", "");
      p.functionConstant = q.value("function_constant", "");
      r.params.push_back(p);
    }
    const json& pc = j.at("push_constants");
    r.pushConstantSize = pc.at("size").get<uint32_t>();
    r.argumentBuffer = pc.value("argument_buffer", false);
    for (const json& a : pc.at("args"))
      r.args.push_back({a.at("buffer").get<uint32_t>(), a.at("offset").get<uint32_t>()});
    for (const json& f : j.value("function_constants", json::array()))
      r.functionConstants.push_back({f.at("name").get<std::string>(), f.at("type").get<std::string>(),
                                     f.at("index").get<uint32_t>(), f.at("spec_id").get<uint32_t>(),
                                     f.at("defined_spec_id").get<uint32_t>()});
    const json& tg = j.at("threadgroup_memory");
    r.staticThreadgroupBytes = tg.value("static_bytes", 0u);
    for (const json& d : tg.value("dynamic", json::array()))
      r.dynamicThreadgroupMemory.push_back({d.at("index").get<uint32_t>(), d.at("spec_id").get<uint32_t>()});
    r.requiredSubgroupSize = j.value("required_subgroup_size", 0u);
    r.capabilities = j.value("capabilities", std::vector<std::string>{});
    r.extensions = j.value("extensions", std::vector<std::string>{});
    return r;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

}  // namespace m2v
