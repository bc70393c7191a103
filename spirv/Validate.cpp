// In-process SPIRV-Tools: validation (vulkan1.3) and disassembly.
#include <spirv-tools/libspirv.hpp>

#include <algorithm>
#include <regex>

#include "Builder.h"
#include "Emitter.h"

namespace m2v::spirv {

std::string validateModule(const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_3);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
    messages += msg;
    messages += " (word " + std::to_string(pos.index) + ")\n";
  });
  spvtools::ValidatorOptions options;
  options.SetScalarBlockLayout(true);
  if (tools.Validate(words.data(), words.size(), options)) return "";
  return messages.empty() ? "invalid module" : messages;
}

namespace {

// SPV_KHR_bfloat16, which this SPIRV-Tools (Debian's 2023.1) predates: its capabilities and the bfloat16 type.
constexpr uint32_t kOpName = 5, kOpCapability = 17, kOpTypeFloat = 22;
constexpr uint32_t kBFloat16Type = 5116, kBFloat16CooperativeMatrix = 5118;

// A copy of `words` this SPIRV-Tools can print: the bfloat16 capabilities dropped (returned in `capabilities`), the
// bfloat16 type (`OpTypeFloat 16 BFloat16KHR`) written as a plain 16-bit float named "bfloat16" by an OpName.
std::vector<uint32_t> withoutBFloat16(const std::vector<uint32_t>& words, std::vector<std::string>& capabilities) {
  std::vector<uint32_t> out(words.begin(), words.begin() + std::min<size_t>(5, words.size()));
  for (size_t at = 5; at < words.size();) {
    uint32_t count = words[at] >> 16, op = words[at] & 0xffff;
    if (count == 0 || at + count > words.size()) return {};
    if (op == kOpCapability && count == 2 &&
        (words[at + 1] == kBFloat16Type || words[at + 1] == kBFloat16CooperativeMatrix)) {
      capabilities.push_back(words[at + 1] == kBFloat16Type ? "BFloat16TypeKHR" : "BFloat16CooperativeMatrixKHR");
    } else if (op == kOpTypeFloat && count == 4 && words[at + 2] == 16 && words[at + 3] == 0) {
      out.insert(out.end(), {(3u << 16) | kOpTypeFloat, words[at + 1], 16});
      std::vector<uint32_t> name{words[at + 1]};
      Builder::appendString(name, "bfloat16");
      out.push_back(static_cast<uint32_t>((name.size() + 1) << 16) | kOpName);
      out.insert(out.end(), name.begin(), name.end());
    } else {
      out.insert(out.end(), words.begin() + at, words.begin() + at + count);
    }
    at += count;
  }
  return out;
}

}  // namespace

std::string disassembleModule(const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_3);
  const uint32_t options = SPV_BINARY_TO_TEXT_OPTION_INDENT | SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES;
  std::string text;
  if (tools.Disassemble(words, &text, options)) return text;
  // Modules with SPV_KHR_bfloat16: printed from a copy without it, its parts put back into the text.
  std::vector<std::string> capabilities;
  std::vector<uint32_t> copy = withoutBFloat16(words, capabilities);
  text.clear();
  if (copy.empty() || !tools.Disassemble(copy, &text, options)) return "";
  // The OpName gave the type no name of its own in friendly names ("half", or "half_0" beside a real half): the
  // OpName line says which, and that name and its vectors' become "bfloat16".
  std::smatch named;
  const std::regex nameLine("\\n *OpName %([A-Za-z0-9_]+) \"bfloat16\"\\n");
  if (std::regex_search(text, named, nameLine)) {
    const std::string friendly = named[1];
    text.erase(size_t(named.position(0)) + 1, size_t(named.length(0)) - 1);
    text = std::regex_replace(text, std::regex("%(v[234])?" + friendly + "(?![A-Za-z0-9_])"), "%$1bfloat16");
    text = std::regex_replace(text, std::regex("(%bfloat16 = OpTypeFloat 16)"), "$1 BFloat16KHR");
  }
  std::string lines;
  const std::regex lastCapability("( *)OpCapability [A-Za-z0-9_]+\\n(?![ ]*OpCapability)");
  if (!capabilities.empty() && std::regex_search(text, named, lastCapability)) {
    for (const std::string& c : capabilities) lines += named[1].str() + "OpCapability " + c + "\n";
    text.insert(size_t(named.position(0) + named.length(0)), lines);
  }
  return text;
}

}  // namespace m2v::spirv
