// Front end: Metal source to LLVM IR with clang 22, plus the kernel facts read from the AST.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "MslRewriter.h"
#include "metal2vk/compiler.h"

namespace llvm {
namespace vfs {
class OverlayFileSystem;
}
class LLVMContext;
class Module;
class Instruction;
class Function;
}  // namespace llvm

namespace m2v::frontend {

// A kernel parameter as the AST describes it.
struct ParamFacts {
  KernelParam param;
  std::string valueType;  // Metal spelling of the pointee / value type, e.g. "float", "uint3"
};

// One entry point: a `[[kernel]]` function or a `[[host_name]]` explicit instantiation.
struct EntryFacts {
  std::string entryName;    // what the host calls it
  std::string mangledName;  // the LLVM function clang emitted
  std::string file;
  uint32_t line = 0, column = 0;
  std::vector<ParamFacts> params;
};

struct FunctionConstantFacts {
  std::string name;
  std::string mangledName;  // the LLVM global variable
  std::string type;         // Metal spelling
  uint32_t index = 0;
};

// Original text of every file the front end read, for diagnostics after rewriting.
class SourceMap {
 public:
  void add(const std::string& path, std::string original, RewrittenSource rewritten);
  // Fills file/line/column/sourceLine of `d` from a position in the rewritten buffer of `path`.
  void locate(Diagnostic& d, const std::string& path, uint32_t line, uint32_t rewrittenColumn) const;
  const RewrittenSource* rewritten(const std::string& path) const;
  // Diagnostics for `path` name it `shown` (the main file as the user named it).
  void setDisplayName(const std::string& path, const std::string& shown);
  // Forgets the files (not the rewrite context), for another parse.
  void clearFiles() { files_.clear(); }
  // Shared by the rewriting of every file of the translation unit, in the order they are read.
  RewriteContext& rewriteContext() { return context_; }

 private:
  struct File {
    std::string original;
    RewrittenSource rewritten;
  };
  std::map<std::string, File> files_;
  std::map<std::string, std::string> displayNames_;
  RewriteContext context_;
};

struct FrontendOutput {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::vector<EntryFacts> entries;
  std::vector<FunctionConstantFacts> functionConstants;
};

// Parses `source` (named `name`) and emits LLVM IR for the whole translation unit. Returns no module on errors
// (reported to `diags`).
FrontendOutput runFrontend(const std::string& source, const std::string& name, const CompileOptions& options,
                           SourceMap& sources, Diagnostics& diags);

// The macros Metal code sees (__METAL_VERSION__, __METAL__, ...) as clang -D arguments.
std::vector<std::string> metalMacroArguments(const CompileOptions& options);
// Adds our headers (metal_stdlib and the rest, embedded in the binary) to `fs`; `root` receives the folder they
// appear in (for -isystem, and to tell them from the user's files).
void addStdlibOverlay(llvm::vfs::OverlayFileSystem& fs, std::string* root);

// Runs clang's preprocessor alone over the file at `path` as the compiler would see it (macros, include rules, our
// headers) and writes the result to standard output: `m2v metal -E`. With `headers`, lists the headers it entered as
// clang's -H does ("." per include depth, a space, the path), leaving out our own headers, as Apple's SDK headers are
// not part of a user's sources. Diagnostics go to standard error. Returns false on errors.
struct PreprocessOptions {
  bool keepComments = false;          // -C
  bool keepCommentsInMacros = false;  // -CC
  bool lineMarkers = true;            // -P turns them off
  bool warnings = true;               // -w turns them off
};
bool preprocessFile(const std::string& path, const CompileOptions& options, const PreprocessOptions& pp,
                    std::vector<std::string>* headers);
// The file preprocessed for a deferred source (deferred_source.h): the user's own headers expanded, ours left as
// the #include lines that entered them, line markers without include flags. Diagnostics go to standard error;
// nothing on errors.
std::optional<std::string> preprocessForDeferral(const std::string& path, const CompileOptions& options);

// Reports `message` at the source position of `inst` (from its debug location), or without one.
void reportAt(Diagnostics& diags, const SourceMap& sources, const llvm::Instruction* inst, Severity severity,
              std::string message);

}  // namespace m2v::frontend
