// `m2v metal -E`: clang's preprocessor alone, with the compiler's macros, include rules and headers, and the header
// list of -H (MLX's build expands its kernel headers this way and orders them by that list).
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <cctype>
#include <cstdlib>
#include <optional>

#include "Frontend.h"

namespace m2v::frontend {

namespace {

// The headers entered, as clang's -H lists them: one "." per include depth (the main file's own includes have one),
// a space and the path; what the predefines buffer includes, and our own headers, are left out.
class HeaderLister : public clang::PPCallbacks {
 public:
  HeaderLister(const clang::SourceManager& sm, std::string ownRoot, std::vector<std::string>& headers)
      : sm_(sm), ownRoot_(std::move(ownRoot)), headers_(headers) {}

  void FileChanged(clang::SourceLocation loc, FileChangeReason reason, clang::SrcMgr::CharacteristicKind,
                   clang::FileID) override {
    clang::PresumedLoc where = sm_.getPresumedLoc(loc);
    if (where.isInvalid()) return;
    if (reason == ExitFile) {
      if (depth_ > 0) --depth_;
      if (depth_ == 1) pastPredefines_ = true;  // back in the main file: the predefines buffer is done
      return;
    }
    if (reason != EnterFile) return;
    ++depth_;
    if (!pastPredefines_) return;
    llvm::StringRef path = where.getFilename();
    if (path.starts_with(ownRoot_)) return;
    headers_.push_back(std::string(depth_ - 1, '.') + " " + path.str());
  }

 private:
  const clang::SourceManager& sm_;
  std::string ownRoot_;
  std::vector<std::string>& headers_;
  unsigned depth_ = 0;
  bool pastPredefines_ = false;
};

class ListingPreprocessAction : public clang::PrintPreprocessedAction {
 public:
  ListingPreprocessAction(std::string ownRoot, std::vector<std::string>* headers)
      : ownRoot_(std::move(ownRoot)), headers_(headers) {}

 protected:
  bool BeginSourceFileAction(clang::CompilerInstance& ci) override {
    if (headers_)
      ci.getPreprocessor().addPPCallbacks(
          std::make_unique<HeaderLister>(ci.getSourceManager(), ownRoot_, *headers_));
    return clang::PrintPreprocessedAction::BeginSourceFileAction(ci);
  }

 private:
  std::string ownRoot_;
  std::vector<std::string>* headers_;
};

}  // namespace

namespace {

// Runs the preprocessor over `path` into `outputPath` ("-": standard output) with the compiler's language, target and
// include rules (ClangFrontend.cpp), without code generation.
bool runPreprocessor(const std::string& path, const CompileOptions& options, const PreprocessOptions& pp,
                     std::vector<std::string>* headers, const std::string& outputPath, std::string* ownRootOut) {
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  std::string ownRoot;
  addStdlibOverlay(*overlay, &ownRoot);
  if (ownRootOut) *ownRootOut = ownRoot;

  std::vector<std::string> args = {"-E", "-triple", "nvptx64-nvidia-cuda", "-x", "c++", "-std=c++17",
                                   "-nostdsysteminc", "-nobuiltininc", "-nostdinc++", "-fgnuc-version=4.2.1",
                                   "-Wno-unknown-pragmas", "-o", outputPath};
  for (std::string& macro : metalMacroArguments(options)) args.push_back(std::move(macro));
  for (const std::string& w : options.warnings) args.push_back(w);
  if (!pp.warnings) args.push_back("-w");
  if (pp.keepComments) args.push_back("-C");
  if (pp.keepCommentsInMacros) args.push_back("-CC");
  if (!pp.lineMarkers) args.push_back("-P");
  args.insert(args.end(), {"-isystem", ownRoot, "-include", "__m2v/base.h"});
  for (const std::string& inc : options.includeDirs) args.insert(args.end(), {"-I", inc});
  for (const auto& [k, v] : options.defines) args.push_back("-D" + k + (v.empty() ? "" : "=" + v));
  args.push_back(path);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  auto invocation = std::make_shared<clang::CompilerInvocation>();
  clang::DiagnosticOptions diagOpts;
  clang::DiagnosticsEngine argDiags(llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(), diagOpts);
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, argv, argDiags)) return false;
  clang::CompilerInstance ci(invocation);
  ci.setVirtualFileSystem(overlay);
  ci.createDiagnostics();
  ci.createFileManager();
  ListingPreprocessAction action(ownRoot, headers);
  return ci.ExecuteAction(action) && !ci.getDiagnostics().hasErrorOccurred();
}

// A line marker of preprocessed output (`# LINE "FILE" FLAGS...`): the file it names and the line, or nothing for
// another line.
std::optional<std::pair<std::string, long>> lineMarker(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line[i] != '#') return std::nullopt;
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string_view::npos || !std::isdigit(static_cast<unsigned char>(line[i]))) return std::nullopt;
  long number = std::strtol(line.data() + i, nullptr, 10);
  size_t open = line.find('"', i), close = open == std::string_view::npos ? open : line.find('"', open + 1);
  if (close == std::string_view::npos) return std::nullopt;
  return std::make_pair(std::string(line.substr(open + 1, close - open - 1)), number);
}

}  // namespace

bool preprocessFile(const std::string& path, const CompileOptions& options, const PreprocessOptions& pp,
                    std::vector<std::string>* headers) {
  return runPreprocessor(path, options, pp, headers, "-", nullptr);
}

std::optional<std::string> preprocessForDeferral(const std::string& path, const CompileOptions& options) {
  llvm::SmallString<128> tmp;
  if (llvm::sys::fs::createTemporaryFile("m2v-preprocessed", "metal", tmp)) return std::nullopt;
  std::string ownRoot;
  CompileOptions keepKeywords = options;
  keepKeywords.defines.emplace_back("__M2V_KEEP_METAL_KEYWORDS", "1");
  PreprocessOptions quiet;  // the compile of the result reports the warnings, at the same places
  quiet.warnings = false;
  bool ok = runPreprocessor(path, keepKeywords, quiet, nullptr, std::string(tmp), &ownRoot);
  auto buffer = llvm::MemoryBuffer::getFile(tmp);
  llvm::sys::fs::remove(tmp);
  if (!ok || !buffer) return std::nullopt;

  // Keep the user's files; our headers become #include lines again (the compile that reads this text adds them as
  // it adds them to any source), the predefines go. Line markers keep their file and line but drop the include
  // flags, which clang checks against an include stack this text no longer has; a marker that only skips lines of
  // the same file becomes those line breaks (the Metal rewriter reads a statement's previous token, and a marker
  // between two statements would be that token).
  std::string out;
  bool inUserFile = false;
  std::string currentFile;
  long currentLine = 0;  // the line the next line of text has in currentFile
  llvm::StringRef text = (*buffer)->getBuffer();
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    std::optional<std::pair<std::string, long>> marker = lineMarker(std::string_view(line.data(), line.size()));
    if (!marker) {
      if (inUserFile) (out += std::string_view(line.data(), line.size())) += '\n';
      ++currentLine;
      continue;
    }
    const auto& [file, number] = *marker;
    const bool ours = llvm::StringRef(file).starts_with(ownRoot + "/");
    if (ours && inUserFile) out += "#include <" + file.substr(ownRoot.size() + 1) + ">\n";
    inUserFile = !ours && file != "<built-in>" && file != "<command line>";
    if (inUserFile && file == currentFile && number >= currentLine) {
      out.append(size_t(number - currentLine), '\n');
    } else if (inUserFile) {
      out += "# " + std::to_string(number) + " \"" + file + "\"\n";
    }
    currentFile = inUserFile ? file : std::string();
    currentLine = number;
  }
  return out;
}

}  // namespace m2v::frontend
