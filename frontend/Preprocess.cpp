// `m2v metal -E`: clang's preprocessor alone, with the compiler's macros, include rules and headers, and the header
// list of -H (MLX's build expands its kernel headers this way and orders them by that list).
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <llvm/Support/VirtualFileSystem.h>

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

bool preprocessFile(const std::string& path, const CompileOptions& options, const PreprocessOptions& pp,
                    std::vector<std::string>* headers) {
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  std::string ownRoot;
  addStdlibOverlay(*overlay, &ownRoot);

  // The compiler's language, target and include rules (ClangFrontend.cpp), without code generation.
  std::vector<std::string> args = {"-E", "-triple", "nvptx64-nvidia-cuda", "-x", "c++", "-std=c++17",
                                   "-nostdsysteminc", "-nobuiltininc", "-nostdinc++", "-fgnuc-version=4.2.1",
                                   "-Wno-unknown-pragmas", "-o", "-"};
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

}  // namespace m2v::frontend
