// In-process SPIRV-Tools: validation (vulkan1.3) and disassembly.
#include <spirv-tools/libspirv.hpp>

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

std::string disassembleModule(const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_3);
  std::string text;
  tools.Disassemble(words, &text, SPV_BINARY_TO_TEXT_OPTION_INDENT | SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES);
  return text;
}

}  // namespace m2v::spirv
