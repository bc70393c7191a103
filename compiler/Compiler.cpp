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
#include <llvm/Transforms/Utils/Cloning.h>

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

bool buildsNativeBfloat16(const CompileOptions& options) {
  const char* env = std::getenv("M2V_NATIVE_BFLOAT16");
  return options.nativeBfloat16 || (env && std::string(env) == "1");
}

bool buildsAbortChecks(const CompileOptions& options) {
  const char* env = std::getenv("M2V_ABORT_CHECKS");
  return options.abortChecks && !(env && std::string(env) == "0");
}

const char* compilerVersion() { return "metal2vk-0.1.0-abi2"; }

namespace {

// What lowering one entry point produced.
struct EntryResult {
  std::optional<CompiledKernel> kernel;
  Diagnostics diags;
};

// One module of an entry: lowered along `path`, emitted and (optionally) validated. Diagnostics go to `diags`.
std::optional<CompiledModule> buildModule(llvm::Module& m, const frontend::EntryFacts& entry,
                                          const std::vector<frontend::FunctionConstantFacts>& fcs,
                                          const frontend::SourceMap& sources, const CompileOptions& options,
                                          lower::MatrixPath path, Diagnostics& diags) {
  CompiledModule out;
  out.reflection.entry = entry.entryName;
  out.reflection.source = entry.file;
  out.reflection.line = entry.line;
  for (const frontend::ParamFacts& p : entry.params) out.reflection.params.push_back(p.param);
  if (!lower::lowerEntry(m, entry, fcs, out.reflection, diags, path, buildsAbortChecks(options))) return std::nullopt;
  if (options.keepLoweredIR || std::getenv("M2V_DUMP_LOWERED_IR")) {
    llvm::raw_string_ostream os(out.loweredIR);
    m.print(os, nullptr);
    if (std::getenv("M2V_DUMP_LOWERED_IR")) llvm::errs() << out.loweredIR;  // a debugging aid for compiler work
  }
  const KernelReflection lowered = out.reflection;  // before emission adds its parts
  spirv::EmitStats stats;
  out.spirv = spirv::emitModule(m, out.reflection, sources, diags, {}, &stats);
  // SPIRV-Tools here predates SPV_KHR_cooperative_matrix: such modules are checked by the driver that runs them
  // (docs/SIMDGROUP_MATRIX.md).
  if (!out.spirv.empty() && options.validate && path == lower::MatrixPath::Shuffle) {
    std::string problem = spirv::validateModule(out.spirv);
    if (!problem.empty()) {
      diags.internal("the SPIR-V generated for '" + entry.entryName + "' failed validation:\n" + problem);
      out.spirv.clear();
    }
  }
  if (out.spirv.empty() || diags.hasErrors()) return std::nullopt;
  // The portable build again, from the same lowered module, with float -> bfloat narrowed by VK_KHR_shader_bfloat16
  // conversions (docs/BFLOAT16.md, M2V_NATIVE_BFLOAT16). Like the cooperative build it is checked by the driver: this
  // SPIRV-Tools predates SPV_KHR_bfloat16. A failure here is a compiler bug in the variant; the kernel keeps its
  // portable build.
  if (path == lower::MatrixPath::Shuffle && buildsNativeBfloat16(options) && stats.bfloatNarrowings > 0) {
    CompiledModule native;
    native.reflection = lowered;
    Diagnostics variantDiags;
    spirv::EmitOptions emitOptions;
    emitOptions.nativeBfloat16 = true;
    native.spirv = spirv::emitModule(m, native.reflection, sources, variantDiags, emitOptions);
    if (!native.spirv.empty() && !variantDiags.hasErrors())
      out.nativeBfloat16 = std::make_shared<const CompiledModule>(std::move(native));
    for (const Diagnostic& d : variantDiags.all()) {
      Diagnostic note = d;
      note.severity = Severity::Warning;
      note.message = "native-bfloat16 build: " + note.message;
      diags.report(note);
    }
  }
  return out;
}

EntryResult compileEntry(const llvm::Module& module, const frontend::EntryFacts& entry,
                         const std::vector<frontend::FunctionConstantFacts>& fcs, const frontend::SourceMap& sources,
                         const CompileOptions& options) {
  EntryResult result;
  Diagnostics entryDiags;
  std::unique_ptr<llvm::Module> m = lower::extractEntry(module, entry.mangledName);
  if (!m) entryDiags.internal("the front end emitted no function for kernel '" + entry.entryName + "'");
  std::unique_ptr<llvm::Module> cooperativeCopy;
  if (m && options.cooperativeMatrix && lower::mayMultiply16BitMatrices(*m)) cooperativeCopy = llvm::CloneModule(*m);
  std::optional<CompiledModule> main;
  if (m) main = buildModule(*m, entry, fcs, sources, options, lower::MatrixPath::Shuffle, entryDiags);
  if (main && cooperativeCopy) {
    // A failure here is a compiler bug in the variant; the kernel still runs on the shuffle path.
    Diagnostics variantDiags;
    auto variant =
        buildModule(*cooperativeCopy, entry, fcs, sources, options, lower::MatrixPath::Cooperative, variantDiags);
    if (variant && variant->reflection.cooperativeMatrixMultiplies > 0)
      main->cooperative = std::make_shared<const CompiledModule>(std::move(*variant));
    for (const Diagnostic& d : variantDiags.all()) {
      Diagnostic note = d;
      note.severity = Severity::Warning;
      note.message = "cooperative-matrix build: " + note.message;
      entryDiags.report(note);
    }
  }
  for (const Diagnostic& d : entryDiags.all()) {
    Diagnostic copy = d;
    if (copy.file.empty() && copy.severity != Severity::Note)
      copy.message = "in kernel '" + entry.entryName + "': " + copy.message;
    result.diags.report(copy);
  }
  if (main && !entryDiags.hasErrors()) result.kernel = std::move(main);
  return result;
}

// Entries lowered in one LLVM context before a thread starts a fresh one: a context keeps every constant and type
// its modules ever made, so a library file's entries would otherwise pile up in memory (uzu's gemv.metal, 800
// entries in two contexts: 4.7 GB).
constexpr size_t kEntriesPerContext = 32;

// Lowers `selected` entries on `threads` threads; results in the order of `selected`. A handful of entries is
// lowered straight from the front end's module; more, from copies read back from bitcode, a fresh one (in a fresh
// context) every kEntriesPerContext entries.
std::vector<EntryResult> compileEntries(const llvm::Module& module, const std::vector<const frontend::EntryFacts*>& selected,
                                        const std::vector<frontend::FunctionConstantFacts>& fcs,
                                        const frontend::SourceMap& sources, const CompileOptions& options,
                                        unsigned threads) {
  std::vector<EntryResult> results(selected.size());
  std::atomic<size_t> next{0};
  if (threads <= 1 && selected.size() <= kEntriesPerContext) {
    for (size_t i = 0; i < selected.size(); ++i) results[i] = compileEntry(module, *selected[i], fcs, sources, options);
    return results;
  }
  llvm::SmallVector<char, 0> bitcode;
  {
    llvm::raw_svector_ostream os(bitcode);
    llvm::WriteBitcodeToFile(module, os);
  }
  auto work = [&] {
    std::unique_ptr<llvm::LLVMContext> context;
    std::unique_ptr<llvm::Module> copy;
    size_t lowered = 0;
    for (size_t i = next++; i < selected.size(); i = next++) {
      if (!copy || lowered == kEntriesPerContext) {
        copy.reset();
        context = std::make_unique<llvm::LLVMContext>();
        auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), "m2v"),
                                        *context);
        if (!m) {  // cannot happen for a module just written
          llvm::consumeError(m.takeError());
          results[i].diags.internal("the front end's module could not be read back for kernel '" +
                                    selected[i]->entryName + "'");
          continue;
        }
        copy = std::move(*m);
        lowered = 0;
      }
      results[i] = compileEntry(*copy, *selected[i], fcs, sources, options);
      ++lowered;
    }
  };
  // (a large stack, as the command's own thread has: clang and LLVM recurse deeply on big kernels)
  constexpr unsigned kStackBytes = 512u << 20;
  std::vector<llvm::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(std::optional<unsigned>(kStackBytes), work);
  work();
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
