// The compiler driver: front end once per file, then lowering, SPIR-V emission and validation per entry point.
// Each entry point is lowered in a module of its own holding only what it reaches (lower::extractEntry); a file
// with many entry points is lowered on several threads, each with its own LLVM context and a copy of the front
// end's module read back from bitcode.
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Support/thread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <thread>

#include "Emitter.h"
#include "Frontend.h"
#include "Passes.h"
#include "metal2vk/compiler.h"

namespace m2v {

const char* compilerVersion() { return "metal2vk-0.1.0-abi1"; }

namespace {

// What lowering one entry point produced.
struct EntryResult {
  std::optional<CompiledKernel> kernel;
  Diagnostics diags;
};

EntryResult compileEntry(const llvm::Module& module, const frontend::EntryFacts& entry,
                         const std::vector<frontend::FunctionConstantFacts>& fcs, const frontend::SourceMap& sources,
                         const CompileOptions& options) {
  EntryResult result;
  KernelReflection reflection;
  reflection.entry = entry.entryName;
  reflection.source = entry.file;
  reflection.line = entry.line;
  for (const frontend::ParamFacts& p : entry.params) reflection.params.push_back(p.param);

  Diagnostics entryDiags;
  std::unique_ptr<llvm::Module> m = lower::extractEntry(module, entry.mangledName);
  bool ok = m && lower::lowerEntry(*m, entry, fcs, reflection, entryDiags);
  if (!m) entryDiags.internal("the front end emitted no function for kernel '" + entry.entryName + "'");
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
    result.diags.report(copy);
  }
  if (!words.empty() && !entryDiags.hasErrors())
    result.kernel = CompiledKernel{std::move(reflection), std::move(words), std::move(loweredIR)};
  return result;
}

// Lowers `selected` entries on `threads` threads; results in the order of `selected`.
std::vector<EntryResult> compileEntries(const llvm::Module& module, const std::vector<const frontend::EntryFacts*>& selected,
                                        const std::vector<frontend::FunctionConstantFacts>& fcs,
                                        const frontend::SourceMap& sources, const CompileOptions& options,
                                        unsigned threads) {
  std::vector<EntryResult> results(selected.size());
  std::atomic<size_t> next{0};
  auto work = [&](const llvm::Module& m) {
    for (size_t i = next++; i < selected.size(); i = next++)
      results[i] = compileEntry(m, *selected[i], fcs, sources, options);
  };
  if (threads <= 1) {
    work(module);
    return results;
  }
  llvm::SmallVector<char, 0> bitcode;
  {
    llvm::raw_svector_ostream os(bitcode);
    llvm::WriteBitcodeToFile(module, os);
  }
  // (a large stack, as the command's own thread has: clang and LLVM recurse deeply on big kernels)
  constexpr unsigned kStackBytes = 512u << 20;
  std::vector<llvm::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) {
    helpers.emplace_back(std::optional<unsigned>(kStackBytes), [&] {
      llvm::LLVMContext context;
      auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), "m2v"),
                                      context);
      if (!m) {
        llvm::consumeError(m.takeError());
        return;  // cannot happen for a module we just wrote; the other threads take its share
      }
      work(**m);
    });
  }
  work(module);
  for (llvm::thread& h : helpers) h.join();
  return results;
}

}  // namespace

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
  std::vector<const frontend::EntryFacts*> selected;
  for (const frontend::EntryFacts& entry : fe.entries)
    if (options.entries.empty() ||
        std::find(options.entries.begin(), options.entries.end(), entry.entryName) != options.entries.end())
      selected.push_back(&entry);

  // Threads pay for a copy of the module each: worth it for library files, not for a handful of kernels.
  unsigned threads = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  if (selected.size() < 8) threads = 1;
  threads = std::min<unsigned>(threads, static_cast<unsigned>(selected.size()));
  for (EntryResult& r : compileEntries(*fe.module, selected, fe.functionConstants, sources, options, threads)) {
    for (const Diagnostic& d : r.diags.all()) diags.report(d);
    if (r.kernel) result.kernels.push_back(std::move(*r.kernel));
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
