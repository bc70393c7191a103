// The compiler driver: front end once per file, then lowering, SPIR-V emission and validation per entry point.
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <cstdlib>

#include "Emitter.h"
#include "Frontend.h"
#include "Passes.h"
#include "metal2vk/compiler.h"

namespace m2v {

const char* compilerVersion() { return "metal2vk-0.1.0-abi1"; }

CompileResult compileSource(const std::string& source, const std::string& name, const CompileOptions& options) {
  CompileResult result;
  Diagnostics& diags = result.diagnostics;
  frontend::SourceMap sources;
  frontend::FrontendOutput fe = frontend::runFrontend(source, name, options, sources, diags);
  if (options.syntaxOnly) {
    result.status = diags.status();
    return result;
  }
  if (!fe.module) {
    if (!diags.hasErrors()) diags.error(name + ": compilation failed");
    result.status = diags.status();
    return result;
  }
  if (fe.entries.empty()) diags.report({Severity::Warning, name, 0, 0, "no kernel entry points found", {}});
  for (const std::string& wanted : options.entries) {
    bool found = std::any_of(fe.entries.begin(), fe.entries.end(),
                             [&](const frontend::EntryFacts& e) { return e.entryName == wanted; });
    if (!found) diags.error(name + ": no kernel entry point named '" + wanted + "'");
  }
  for (const frontend::EntryFacts& entry : fe.entries) {
    if (!options.entries.empty() &&
        std::find(options.entries.begin(), options.entries.end(), entry.entryName) == options.entries.end())
      continue;
    KernelReflection reflection;
    reflection.entry = entry.entryName;
    reflection.source = entry.file;
    reflection.line = entry.line;
    for (const frontend::ParamFacts& p : entry.params) reflection.params.push_back(p.param);

    std::unique_ptr<llvm::Module> m = llvm::CloneModule(*fe.module);
    Diagnostics entryDiags;
    bool ok = lower::lowerEntry(*m, entry, fe.functionConstants, reflection, entryDiags);
    std::vector<uint32_t> words;
    std::string loweredIR;
    if (ok && (options.keepLoweredIR || std::getenv("M2V_DUMP_LOWERED_IR"))) {
      llvm::raw_string_ostream os(loweredIR);
      m->print(os, nullptr);
    }
    if (ok && std::getenv("M2V_DUMP_LOWERED_IR")) llvm::errs() << loweredIR;  // a debugging aid for compiler work
    if (ok) words = spirv::emitModule(*m, reflection, sources, entryDiags);
    if (!words.empty() && options.validate) {
      std::string problem = spirv::validateModule(words);
      if (!problem.empty()) {
        entryDiags.internal("the SPIR-V generated for '" + entry.entryName + "' failed validation:\n" + problem);
        words.clear();
      }
    }
    for (const Diagnostic& d : entryDiags.all()) {
      Diagnostic copy = d;
      if (copy.file.empty() && copy.severity != Severity::Note)
        copy.message = "in kernel '" + entry.entryName + "': " + copy.message;
      diags.report(copy);
    }
    if (!words.empty() && !entryDiags.hasErrors())
      result.kernels.push_back({std::move(reflection), std::move(words), std::move(loweredIR)});
  }
  result.status = diags.status();
  return result;
}

CompileResult compileFile(const std::string& path, const CompileOptions& options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    CompileResult r;
    r.diagnostics.error(path + ": cannot read file: " + buffer.getError().message());
    r.status = Status::UserError;
    return r;
  }
  return compileSource((*buffer)->getBuffer().str(), path, options);
}

}  // namespace m2v
