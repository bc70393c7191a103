// Portable builds only (M2V_PORTABLE): Debian builds clang with Polly linked in, so clang's code generator
// (BackendUtil.cpp) registers Polly's passes through getPollyPluginInfo(). Polly ships only as a loadable plugin, not
// as an archive; this definition registers no passes (metal2vk runs clang with -disable-llvm-passes and its own
// pipeline, lower/Pipeline.cpp, which uses no Polly pass).
#include <llvm/Plugins/PassPlugin.h>

llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "Polly", "none (metal2vk portable build)", [](llvm::PassBuilder&) {}};
}
