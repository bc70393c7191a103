// Runs clang 22 in process on rewritten Metal source and reads kernel facts from the AST.
#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Mangle.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/Stack.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/MultiplexConsumer.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instruction.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <cctype>
#include <mutex>
#include <optional>
#include <set>

#include "EmbeddedHeaders.h"
#include "Frontend.h"
#include "MetalAttributes.h"

namespace m2v::frontend {

static constexpr const char* kStdlibRoot = "/__m2v/include";

// ---------------------------------------------------------------------------------------------------------------
// SourceMap

void SourceMap::add(const std::string& path, std::string original, RewrittenSource rewritten) {
  files_[path] = File{std::move(original), std::move(rewritten)};
}

const RewrittenSource* SourceMap::rewritten(const std::string& path) const {
  auto it = files_.find(path);
  return it == files_.end() ? nullptr : &it->second.rewritten;
}

void SourceMap::setDisplayName(const std::string& path, const std::string& shown) { displayNames_[path] = shown; }

void SourceMap::locate(Diagnostic& d, const std::string& path, uint32_t line, uint32_t column) const {
  auto shown = displayNames_.find(path);
  d.file = shown == displayNames_.end() ? path : shown->second;
  d.line = line;
  d.column = column;
  auto it = files_.find(path);
  if (it == files_.end() || line == 0) return;
  const File& f = it->second;
  // Offset of the line start in the rewritten text (lines are identical in number in both texts).
  auto lineStart = [](const std::string& text, uint32_t ln) -> size_t {
    size_t off = 0;
    for (uint32_t i = 1; i < ln && off != std::string::npos; ++i) {
      off = text.find('\n', off);
      if (off != std::string::npos) ++off;
    }
    return off == std::string::npos ? text.size() : off;
  };
  size_t rw = lineStart(f.rewritten.text, line) + (column ? column - 1 : 0);
  size_t orig = f.rewritten.originalOffset(rw);
  size_t origLine = lineStart(f.original, line);
  if (orig >= origLine) d.column = static_cast<uint32_t>(orig - origLine + 1);
  size_t end = f.original.find('\n', origLine);
  d.sourceLine = f.original.substr(origLine, end == std::string::npos ? std::string::npos : end - origLine);
}

void reportAt(Diagnostics& diags, const SourceMap& sources, const llvm::Instruction* inst, Severity severity,
              std::string message) {
  Diagnostic d{severity, {}, 0, 0, std::move(message), {}};
  if (inst) {
    if (const llvm::DebugLoc& loc = inst->getDebugLoc()) {
      const llvm::DILocation* di = loc.get();
      // Report where the user wrote it: the outermost location that is not in our own headers.
      while (di->getInlinedAt() && llvm::StringRef(di->getFilename()).starts_with(kStdlibRoot)) di = di->getInlinedAt();
      std::string path = di->getFilename().str();
      if (!di->getDirectory().empty() && !llvm::sys::path::is_absolute(path) && !sources.rewritten(path))
        path = (di->getDirectory() + "/" + di->getFilename()).str();
      sources.locate(d, path, di->getLine(), di->getColumn());
    }
  }
  diags.report(std::move(d));
}

// ---------------------------------------------------------------------------------------------------------------
// File system: user files are read through the Metal rewriter; our headers come from memory.

namespace {

class RewrittenFile : public llvm::vfs::File {
 public:
  RewrittenFile(llvm::vfs::Status status, std::string text) : status_(std::move(status)), text_(std::move(text)) {}
  llvm::ErrorOr<llvm::vfs::Status> status() override { return status_; }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> getBuffer(const llvm::Twine& name, int64_t, bool, bool) override {
    return llvm::MemoryBuffer::getMemBufferCopy(text_, name.str());
  }
  std::error_code close() override { return {}; }

 private:
  llvm::vfs::Status status_;
  std::string text_;
};

class RewritingFileSystem : public llvm::vfs::ProxyFileSystem {
 public:
  RewritingFileSystem(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> base, SourceMap& sources)
      : ProxyFileSystem(std::move(base)), sources_(sources) {}

  llvm::ErrorOr<llvm::vfs::Status> status(const llvm::Twine& path) override {
    auto st = ProxyFileSystem::status(path);
    if (!st || !st->isRegularFile()) return st;
    const std::string* text = rewrite(path.str());
    if (!text) return st;
    return llvm::vfs::Status::copyWithNewSize(*st, text->size());
  }

  llvm::ErrorOr<std::unique_ptr<llvm::vfs::File>> openFileForRead(const llvm::Twine& path) override {
    auto st = ProxyFileSystem::status(path);
    if (!st) return st.getError();
    const std::string* text = rewrite(path.str());
    if (!text) return ProxyFileSystem::openFileForRead(path);
    return std::unique_ptr<llvm::vfs::File>(
        new RewrittenFile(llvm::vfs::Status::copyWithNewSize(*st, text->size()), *text));
  }

 private:
  const std::string* rewrite(const std::string& path) {
    if (const RewrittenSource* r = sources_.rewritten(path)) return &r->text;
    // Read through the underlying file system: our own getBufferForFile would come back here through
    // openFileForRead.
    auto buf = getUnderlyingFS().getBufferForFile(path);
    if (!buf) return nullptr;
    std::string original = (*buf)->getBuffer().str();
    RewrittenSource rw = rewriteMetalSource(original, &sources_.rewriteContext(), path);
    sources_.add(path, std::move(original), std::move(rw));
    return &sources_.rewritten(path)->text;
  }
  SourceMap& sources_;
};

// Turns clang's diagnostics into ours, with locations in the original (un-rewritten) source.
class DiagnosticForwarder : public clang::DiagnosticConsumer {
 public:
  DiagnosticForwarder(Diagnostics& diags, const SourceMap& sources) : diags_(diags), sources_(sources) {}

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    Severity sev = Severity::Error;
    switch (level) {
      case clang::DiagnosticsEngine::Ignored:
        return;
      case clang::DiagnosticsEngine::Note:
        sev = Severity::Note;
        break;
      case clang::DiagnosticsEngine::Remark:
      case clang::DiagnosticsEngine::Warning:
        sev = Severity::Warning;
        break;
      default:
        sev = Severity::Error;
        break;
    }
    if (stopped_) {  // what follows an unsupported construct are its consequences
      if (held_ && level == clang::DiagnosticsEngine::Note && info.hasSourceManager() && info.getLocation().isValid())
        placeAtUse(info.getSourceManager(), info.getSourceManager().getFileLoc(info.getLocation()));
      else if (level != clang::DiagnosticsEngine::Note)
        flush();
      return;
    }
    std::string message = text.str().str();
    static constexpr llvm::StringLiteral kUnsupported = "metal2vk unsupported: ";
    // Our headers say so with #error or, inside templates, static_assert ("static assertion failed: metal2vk ...")
    size_t at = sev == Severity::Error ? llvm::StringRef(message).find(kUnsupported) : llvm::StringRef::npos;
    bool unsupported = at != llvm::StringRef::npos;
    if (unsupported) {
      sev = Severity::Unsupported;
      message = message.substr(at + kUnsupported.size()) + " (this construct is not supported by metal2vk yet)";
      stopped_ = true;
    }
    Diagnostic d{sev, {}, 0, 0, std::move(message), {}};
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      const clang::SourceManager& sm = info.getSourceManager();
      clang::SourceLocation loc = sm.getFileLoc(info.getLocation());
      if (llvm::StringRef(d.message).starts_with("illegal vector component name") && rememberSwizzle(sm, loc)) return;
      // A diagnostic of our own headers' making is reported where the user's code included them, unless the notes
      // after it (a template's "in instantiation of ... requested here") name a place in the user's code: it is held
      // until then (placeAtUse).
      bool inHeaders = unsupported && loc.isValid() && sm.getFilename(loc).starts_with(kStdlibRoot);
      while (unsupported && loc.isValid() && sm.getFilename(loc).starts_with(kStdlibRoot))
        loc = sm.getIncludeLoc(sm.getFileID(loc));
      clang::PresumedLoc p = loc.isValid() ? sm.getPresumedLoc(loc) : clang::PresumedLoc();
      if (p.isValid()) sources_.locate(d, p.getFilename(), p.getLine(), p.getColumn());
      if (sev != Severity::Note) reportIncludeStack(sm, loc);
      if (inHeaders) {
        held_ = Held{std::move(d), std::move(pendingNotes_)};
        pendingNotes_.clear();
        return;
      }
    }
    diags_.report(std::move(d));
    for (Diagnostic& note : pendingNotes_) diags_.report(std::move(note));
    pendingNotes_.clear();
  }

  // Reports the held diagnostic where it stands.
  void flush() {
    if (!held_) return;
    diags_.report(std::move(held_->diagnostic));
    for (Diagnostic& note : held_->includeNotes) diags_.report(std::move(note));
    held_.reset();
  }
  void EndSourceFile() override { flush(); }
  void finish() override { flush(); }

 private:
  // Where clang rejected a component name that is a valid swizzle (so the vector is a bool vector): kept for a
  // second attempt (see RewriteContext::boolSwizzles) instead of reported.
  bool rememberSwizzle(const clang::SourceManager& sm, clang::SourceLocation loc) {
    clang::PresumedLoc p = sm.getPresumedLoc(loc);
    const RewrittenSource* rw = p.isValid() ? sources_.rewritten(p.getFilename()) : nullptr;
    if (!rw) return false;
    size_t offset = sm.getFileOffset(loc);
    size_t end = offset;
    while (end < rw->text.size() && (std::isalnum(static_cast<unsigned char>(rw->text[end])) || rw->text[end] == '_'))
      ++end;
    llvm::StringRef name(rw->text.data() + offset, end - offset);
    if (name.empty() || name.size() > 4 ||
        (name.find_first_not_of("xyzw") != llvm::StringRef::npos &&
         name.find_first_not_of("rgba") != llvm::StringRef::npos))
      return false;
    swizzles_[p.getFilename()].insert(rw->originalOffset(offset));
    return true;
  }

 public:
  std::map<std::string, std::set<size_t>, std::less<>>& swizzles() { return swizzles_; }

 private:
  // "in file included from FILE:LINE" notes, innermost first, for a diagnostic in a header.
  // (as clang does, only when the file differs from the previous diagnostic's)
  void reportIncludeStack(const clang::SourceManager& sm, clang::SourceLocation loc) {
    clang::FileID file = sm.getFileID(loc);
    if (file == lastFile_) return;
    lastFile_ = file;
    clang::SourceLocation inc = sm.getIncludeLoc(file);
    for (int depth = 0; inc.isValid() && depth < 32; ++depth) {
      clang::PresumedLoc p = sm.getPresumedLoc(inc);
      if (!p.isValid()) break;
      if (!llvm::StringRef(p.getFilename()).starts_with(kStdlibRoot)) {
        Diagnostic note{Severity::Note, {}, 0, 0, "in file included from here", {}};
        sources_.locate(note, p.getFilename(), p.getLine(), p.getColumn());
        note.sourceLine.clear();
        pendingNotes_.push_back(std::move(note));
      }
      inc = sm.getIncludeLoc(sm.getFileID(inc));
    }
  }

  // The held diagnostic goes to the first place in the user's code that the notes after it name.
  void placeAtUse(const clang::SourceManager& sm, clang::SourceLocation loc) {
    if (!loc.isValid() || sm.getFilename(loc).starts_with(kStdlibRoot)) return;
    clang::PresumedLoc p = sm.getPresumedLoc(loc);
    if (!p.isValid()) return;
    sources_.locate(held_->diagnostic, p.getFilename(), p.getLine(), p.getColumn());
    lastFile_ = clang::FileID();
    reportIncludeStack(sm, loc);
    held_->includeNotes = std::move(pendingNotes_);
    pendingNotes_.clear();
    flush();
  }

  struct Held {
    Diagnostic diagnostic;
    std::vector<Diagnostic> includeNotes;
  };
  std::optional<Held> held_;
  Diagnostics& diags_;
  const SourceMap& sources_;
  bool stopped_ = false;
  std::map<std::string, std::set<size_t>, std::less<>> swizzles_;
  clang::FileID lastFile_;
  std::vector<Diagnostic> pendingNotes_;
};

// ---------------------------------------------------------------------------------------------------------------
// Kernel facts from the AST

std::optional<std::string> annotation(const clang::Decl* d, llvm::StringRef name, const clang::ASTContext& ctx,
                                      bool* present = nullptr) {
  for (const auto* a : d->specific_attrs<clang::AnnotateAttr>()) {
    if (a->getAnnotation() != name) continue;
    if (present) *present = true;
    if (a->args_size() == 0) return std::string();
    const clang::Expr* e = (*a->args_begin())->IgnoreParenImpCasts();
    if (const auto* s = llvm::dyn_cast<clang::StringLiteral>(e)) return s->getString().str();
    if (e->isValueDependent()) return std::nullopt;
    clang::Expr::EvalResult r;
    if (e->EvaluateAsInt(r, ctx)) return std::to_string(r.Val.getInt().getExtValue());
    return std::nullopt;
  }
  return std::nullopt;
}

// A decimal index from annotation() within 0..max.
bool indexInRange(const std::string& text, uint32_t max, uint32_t& out) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  uint64_t v = std::stoull(text);
  if (v > max) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

bool hasAnnotation(const clang::Decl* d, llvm::StringRef name) {
  for (const auto* a : d->specific_attrs<clang::AnnotateAttr>())
    if (a->getAnnotation() == name) return true;
  return false;
}

const char* addressSpaceName(clang::LangAS as) {
  if (!clang::isTargetAddressSpace(as)) return "thread";
  switch (clang::toTargetAddressSpace(as)) {
    case 1:
      return "device";
    case 4:
      return "constant";
    case 3:
      return "threadgroup";
    default:
      return "thread";
  }
}

// Metal's spelling of a type: address spaces by name, our vector typedefs by their Metal names.
std::string metalTypeName(clang::QualType t, const clang::PrintingPolicy& pp) {
  std::string quals;
  // (`constant` implies const: Metal does not spell it)
  if (t.isConstQualified() && t.getAddressSpace() != clang::getLangASFromTargetAS(4)) quals += "const ";
  if (t.isVolatileQualified()) quals += "volatile ";
  if (t.getAddressSpace() != clang::LangAS::Default) quals += std::string(addressSpaceName(t.getAddressSpace())) + " ";
  clang::QualType bare = t.getUnqualifiedType();
  if (const auto* p = bare->getAs<clang::PointerType>())
    return quals.empty() ? metalTypeName(p->getPointeeType(), pp) + "*"
                         : metalTypeName(p->getPointeeType(), pp) + "* " + quals;
  if (const auto* r = bare->getAs<clang::ReferenceType>()) return metalTypeName(r->getPointeeType(), pp) + "&";
  clang::QualType local = bare;
  local.removeLocalFastQualifiers();
  std::string name = local.getAsString(pp);
  // Strip our internal spellings and use Metal's names for the builtin types.
  for (const char* ns : {"metal::", "__m2v::"}) {
    size_t pos;
    while ((pos = name.find(ns)) != std::string::npos) name.erase(pos, strlen(ns));
  }
  for (auto [from, to] :
       {std::pair<const char*, const char*>{"_Float16", "half"}, {"__bf16", "bfloat"}, {"_Bool", "bool"}}) {
    size_t pos;
    while ((pos = name.find(from)) != std::string::npos) name.replace(pos, strlen(from), to);
  }
  return quals + name;
}

class KernelFactsCollector : public clang::RecursiveASTVisitor<KernelFactsCollector> {
 public:
  KernelFactsCollector(clang::ASTContext& ctx, FrontendOutput& out, Diagnostics& diags, const SourceMap& sources)
      : ctx_(ctx),
        out_(out),
        diags_(diags),
        sources_(sources),
        mangler_(ctx.createMangleContext()),
        pp_(ctx.getPrintingPolicy()) {
    pp_.SuppressTagKeyword = true;
    pp_.FullyQualifiedName = false;
  }

  bool shouldVisitTemplateInstantiations() const { return true; }

  bool VisitVarDecl(clang::VarDecl* vd) {
    if (!vd->hasGlobalStorage() || vd->isStaticLocal()) return true;
    bool present = false;
    auto idx = annotation(vd, "m2v.function_constant", ctx_, &present);
    if (!present) return true;
    if (!idx) {
      error(vd->getLocation(), "function constant index of '" + vd->getNameAsString() + "' is not a constant integer");
      return true;
    }
    uint32_t index = 0;
    if (!indexInRange(*idx, kMaxFunctionConstantIndex, index)) {
      error(vd->getLocation(), "function constant index " + *idx + " of '" + vd->getNameAsString() +
                                   "' is out of range: Metal allows [[function_constant(0)]] to [[function_constant(" +
                                   std::to_string(kMaxFunctionConstantIndex) + ")]]");
      return true;
    }
    FunctionConstantFacts fc;
    fc.name = vd->getNameAsString();
    fc.type = metalTypeName(vd->getType().getUnqualifiedType(), pp_);
    fc.index = index;
    fc.mangledName = mangle(vd);
    out_.functionConstants.push_back(fc);
    return true;
  }

  bool VisitFunctionDecl(clang::FunctionDecl* fd) {
    if (auto stage = annotation(fd, "m2v.render_stage", ctx_); stage && fd->isThisDeclarationADefinition()) {
      warning(fd->getLocation(),
              *stage + " function '" + fd->getNameAsString() +
                  "' is not compiled: only kernel functions are (render pipelines are not supported)");
      return true;
    }
    if (!fd->doesThisDeclarationHaveABody() && !fd->isTemplateInstantiation()) return true;
    if (fd->isDependentContext()) return true;
    bool hostNamed = false;
    auto hostName = annotation(fd, "m2v.host_name", ctx_, &hostNamed);
    bool isKernel = hasAnnotation(fd, "m2v.kernel");
    if (!hostNamed && !isKernel) return true;
    if (!hostNamed && fd->getTemplatedKind() != clang::FunctionDecl::TK_NonTemplate) return true;
    if (!fd->hasBody()) return true;
    if (!seen_.insert(fd->getCanonicalDecl()).second) return true;

    EntryFacts e;
    e.entryName = hostNamed && hostName ? *hostName : fd->getNameAsString();
    e.mangledName = mangle(fd);
    clang::PresumedLoc p =
        ctx_.getSourceManager().getPresumedLoc(ctx_.getSourceManager().getFileLoc(fd->getLocation()));
    if (p.isValid()) {
      Diagnostic d;
      sources_.locate(d, p.getFilename(), p.getLine(), p.getColumn());
      e.file = d.file;
      e.line = d.line;
      e.column = d.column;
    }
    if (!fd->getReturnType()->isVoidType()) {
      error(fd->getLocation(), "kernel '" + e.entryName + "' must return void");
      return true;
    }
    for (const clang::ParmVarDecl* pd : fd->parameters()) {
      ParamFacts pf;
      pf.param.name = pd->getNameAsString();
      clang::QualType t = pd->getType();
      pf.param.type = metalTypeName(t, pp_);
      clang::QualType pointee = t;
      if (t->isPointerType()) pointee = t->getPointeeType();
      if (t->isReferenceType()) pointee = t->getPointeeType();
      if (pointee != t) pf.param.addressSpace = addressSpaceName(pointee.getAddressSpace());
      pf.valueType = metalTypeName(pointee.getUnqualifiedType(), pp_);
      if (auto fc = annotation(pd, "m2v.function_constant_ref", ctx_)) pf.param.functionConstant = *fc;
      bool present = false;
      if (auto unsupported = annotation(pd, "m2v.unsupported_attribute", ctx_, &present); present) {
        unsupportedAt(pd->getLocation(), "kernel parameter attribute [[" + unsupported.value_or("?") +
                                             "]] (textures, samplers, stage_in and argument buffers are not "
                                             "supported yet)");
        return true;
      }
      if (auto b = annotation(pd, "m2v.builtin", ctx_, &present); present) {
        pf.param.kind = ParamKind::Builtin;
        pf.param.builtin = b.value_or("");
      } else if (auto idx = annotation(pd, "m2v.buffer", ctx_, &present); present) {
        if (!idx) {
          error(pd->getLocation(), "buffer index of '" + pf.param.name + "' is not a constant integer");
          return true;
        }
        pf.param.kind = ParamKind::Buffer;
        if (!indexInRange(*idx, kMaxBufferArguments - 1, pf.param.index)) {
          error(pd->getLocation(), "buffer index " + *idx + " of '" + pf.param.name +
                                       "' is out of range: Metal allows [[buffer(0)]] to [[buffer(" +
                                       std::to_string(kMaxBufferArguments - 1) + ")]]");
          return true;
        }
      } else if (auto idx = annotation(pd, "m2v.threadgroup", ctx_, &present); present) {
        if (!idx) {
          error(pd->getLocation(), "threadgroup index of '" + pf.param.name + "' is not a constant integer");
          return true;
        }
        pf.param.kind = ParamKind::Threadgroup;
        if (!indexInRange(*idx, kMaxThreadgroupArguments - 1, pf.param.index)) {
          error(pd->getLocation(), "threadgroup index " + *idx + " of '" + pf.param.name +
                                       "' is out of range: Metal allows [[threadgroup(0)]] to [[threadgroup(" +
                                       std::to_string(kMaxThreadgroupArguments - 1) + ")]]");
          return true;
        }
      } else if (t->isPointerType() || t->isReferenceType()) {
        // Metal assigns buffer indices in order to pointer arguments without an attribute.
        pf.param.kind = ParamKind::Buffer;
        pf.param.index = nextImplicitBuffer(e);
        if (pf.param.index >= kMaxBufferArguments) {
          error(pd->getLocation(), "kernel '" + e.entryName + "' has more than " + std::to_string(kMaxBufferArguments) +
                                       " buffer arguments ('" + pf.param.name + "' would be [[buffer(" +
                                       std::to_string(pf.param.index) + ")]]; Metal allows [[buffer(0)]] to [[buffer(" +
                                       std::to_string(kMaxBufferArguments - 1) + ")]])");
          return true;
        }
      } else {
        error(pd->getLocation(), "kernel parameter '" + pf.param.name +
                                     "' needs an attribute ([[buffer(n)]], [[threadgroup(n)]] or a built-in such as "
                                     "[[thread_position_in_grid]])");
        return true;
      }
      for (const ParamFacts& other : e.params)
        if (other.param.kind == pf.param.kind && pf.param.kind != ParamKind::Builtin &&
            other.param.index == pf.param.index && other.param.functionConstant.empty() &&
            pf.param.functionConstant.empty()) {  // function-constant-guarded parameters may share an index
          const char* what = pf.param.kind == ParamKind::Buffer ? "buffer" : "threadgroup";
          error(pd->getLocation(), std::string("parameters '") + other.param.name + "' and '" + pf.param.name +
                                       "' of kernel '" + e.entryName + "' both use [[" + what + "(" +
                                       std::to_string(pf.param.index) + ")]]");
          return true;
        }
      e.params.push_back(pf);
    }
    out_.entries.push_back(std::move(e));
    return true;
  }

 private:
  static uint32_t nextImplicitBuffer(const EntryFacts& e) {
    uint32_t next = 0;
    for (const ParamFacts& p : e.params)
      if (p.param.kind == ParamKind::Buffer) next = std::max(next, p.param.index + 1);
    return next;
  }

  std::string mangle(const clang::NamedDecl* d) {
    std::string s;
    llvm::raw_string_ostream os(s);
    if (const auto* fd = llvm::dyn_cast<clang::FunctionDecl>(d)) {
      if (!mangler_->shouldMangleDeclName(fd)) return fd->getName().str();
      mangler_->mangleName(clang::GlobalDecl(fd), os);
    } else {
      if (!mangler_->shouldMangleDeclName(d)) return d->getName().str();
      mangler_->mangleName(clang::GlobalDecl(llvm::cast<clang::VarDecl>(d)), os);
    }
    return s;
  }

  void at(clang::SourceLocation loc, Severity sev, std::string message) {
    Diagnostic d{sev, {}, 0, 0, std::move(message), {}};
    const clang::SourceManager& sm = ctx_.getSourceManager();
    clang::PresumedLoc p = sm.getPresumedLoc(sm.getFileLoc(loc));
    if (p.isValid()) sources_.locate(d, p.getFilename(), p.getLine(), p.getColumn());
    diags_.report(std::move(d));
  }
  void error(clang::SourceLocation loc, std::string m) { at(loc, Severity::Error, std::move(m)); }
  void unsupportedAt(clang::SourceLocation loc, std::string m) { at(loc, Severity::Unsupported, std::move(m)); }
  void warning(clang::SourceLocation loc, std::string m) { at(loc, Severity::Warning, std::move(m)); }

  clang::ASTContext& ctx_;
  FrontendOutput& out_;
  Diagnostics& diags_;
  const SourceMap& sources_;
  std::unique_ptr<clang::MangleContext> mangler_;
  clang::PrintingPolicy pp_;
  llvm::DenseSet<const clang::Decl*> seen_;
};

class KernelFactsConsumer : public clang::ASTConsumer {
 public:
  KernelFactsConsumer(FrontendOutput& out, Diagnostics& diags, const SourceMap& sources)
      : out_(out), diags_(diags), sources_(sources) {}
  void HandleTranslationUnit(clang::ASTContext& ctx) override {
    if (ctx.getDiagnostics().hasErrorOccurred()) return;
    KernelFactsCollector c(ctx, out_, diags_, sources_);
    c.TraverseDecl(ctx.getTranslationUnitDecl());
  }
  // Vertex and fragment functions (`vertex`, `fragment`, `[[vertex]]`, `[[fragment]]`) are declared but their bodies
  // are not parsed (clang's -skip-function-bodies asks here for each body): a file that holds a render pipeline's
  // functions beside its kernels compiles its kernels, whatever the render functions call.
  bool shouldSkipFunctionBody(clang::Decl* d) override {
    if (auto* t = llvm::dyn_cast<clang::FunctionTemplateDecl>(d)) d = t->getTemplatedDecl();
    return hasAnnotation(d, "m2v.render_stage");
  }

 private:
  FrontendOutput& out_;
  Diagnostics& diags_;
  const SourceMap& sources_;
};

// Bounds on macro expansion: macros that expand exponentially (`#define E1 E0 E0` ... E40) would keep clang busy for
// hours (each expansion costs it a few microseconds and grows its source-location table). The largest MLX kernel files
// make about 3,000 expansions and 120,000 tokens. At a limit an error is reported and macro expansion stops, so the
// tokens already on the expansion stack drain in a few steps and the parse ends with that error.
constexpr uint64_t kMaxMacroExpansions = 2'000'000;
constexpr unsigned kMaxPreprocessedTokens = 50'000'000;

class MacroExpansionBudget : public clang::PPCallbacks {
 public:
  explicit MacroExpansionBudget(clang::Preprocessor& pp) : pp_(pp) {}
  void MacroExpands(const clang::Token& name, const clang::MacroDefinition&, clang::SourceRange,
                    const clang::MacroArgs*) override {
    if (exhausted_ || (++expansions_ < kMaxMacroExpansions && pp_.getTokenCount() < kMaxPreprocessedTokens)) return;
    exhausted_ = true;
    clang::DiagnosticsEngine& d = pp_.getDiagnostics();
    d.Report(name.getLocation(), d.getCustomDiagID(clang::DiagnosticsEngine::Error,
                                                   "too many macro expansions (more than %0 expansions or %1 tokens); "
                                                   "stopped expanding macros"))
        << unsigned(kMaxMacroExpansions) << kMaxPreprocessedTokens;
    pp_.SetMacroExpansionOnlyInDirectives();
  }

 private:
  clang::Preprocessor& pp_;
  uint64_t expansions_ = 0;
  bool exhausted_ = false;
};

class MetalCodeGenAction : public clang::EmitLLVMOnlyAction {
 public:
  MetalCodeGenAction(llvm::LLVMContext* ctx, FrontendOutput& out, Diagnostics& diags, const SourceMap& sources)
      : EmitLLVMOnlyAction(ctx), out_(out), diags_(diags), sources_(sources) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci, llvm::StringRef file) override {
    ci.getPreprocessor().addPPCallbacks(std::make_unique<MacroExpansionBudget>(ci.getPreprocessor()));
    std::vector<std::unique_ptr<clang::ASTConsumer>> consumers;
    // Facts first: they must be read before code generation finishes the module.
    consumers.push_back(std::make_unique<KernelFactsConsumer>(out_, diags_, sources_));
    consumers.push_back(EmitLLVMOnlyAction::CreateASTConsumer(ci, file));
    return std::make_unique<clang::MultiplexConsumer>(std::move(consumers));
  }

 private:
  FrontendOutput& out_;
  Diagnostics& diags_;
  const SourceMap& sources_;
};

// -fsyntax-only: the AST and the kernel facts checks, no code generation.
class KernelFactsAction : public clang::ASTFrontendAction {
 public:
  KernelFactsAction(FrontendOutput& out, Diagnostics& diags, const SourceMap& sources)
      : out_(out), diags_(diags), sources_(sources) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&, llvm::StringRef) override {
    return std::make_unique<KernelFactsConsumer>(out_, diags_, sources_);
  }

 private:
  FrontendOutput& out_;
  Diagnostics& diags_;
  const SourceMap& sources_;
};

llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> stdlibFileSystem() {
  auto fs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  for (const EmbeddedFile& f : embeddedHeaders())
    fs->addFile(std::string(kStdlibRoot) + "/" + std::string(f.path), 0,
                llvm::MemoryBuffer::getMemBuffer(f.contents, f.path));
  return fs;
}

// The `[[...]]` attributes reach the IR as annotation intrinsics (with argument globals clang types wrongly for
// this target); everything they say was read from the AST already.
void stripAnnotations(llvm::Module& m) {
  std::vector<llvm::Function*> annotationFns;
  for (llvm::Function& f : m)
    if (f.getIntrinsicID() == llvm::Intrinsic::var_annotation || f.getIntrinsicID() == llvm::Intrinsic::ptr_annotation)
      annotationFns.push_back(&f);
  for (llvm::Function* f : annotationFns) {
    for (llvm::User* u : llvm::make_early_inc_range(f->users())) {
      auto* call = llvm::cast<llvm::CallInst>(u);
      if (!call->getType()->isVoidTy()) call->replaceAllUsesWith(call->getArgOperand(0));
      call->eraseFromParent();
    }
    f->eraseFromParent();
  }
  if (llvm::GlobalVariable* g = m.getGlobalVariable("llvm.global.annotations")) g->eraseFromParent();
  for (llvm::GlobalVariable& g : llvm::make_early_inc_range(m.globals()))
    if (g.getSection() == "llvm.metadata" && g.use_empty()) g.eraseFromParent();
  for (llvm::GlobalVariable& g : llvm::make_early_inc_range(m.globals()))
    if (g.getName().starts_with(".args") && g.use_empty()) g.eraseFromParent();
  for (llvm::GlobalVariable& g : llvm::make_early_inc_range(m.globals()))
    if (g.getName().starts_with(".str") && g.use_empty()) g.eraseFromParent();
}

// Reads every file `text` includes, transitively, and adds what they declare to the rewrite context: clang opens a
// header only after the file that includes it was rewritten, and a header's vector aliases and macros matter to
// that file too (MLX's fft.h declares function constants with steel/defines.h's STEEL_CONST).
void collectIncludedContext(const std::string& path, std::string_view text, const std::vector<std::string>& includeDirs,
                            RewriteContext& context, std::set<std::string>& visited) {
  for (const auto& [name, quoted] : includeDirectives(text)) {
    std::vector<std::string> candidates;
    if (quoted) candidates.push_back((llvm::sys::path::parent_path(path) + "/" + name).str());
    for (const std::string& dir : includeDirs) candidates.push_back(dir + "/" + name);
    for (const std::string& c : candidates) {
      llvm::SmallString<256> real(c);
      llvm::sys::path::remove_dots(real, true);
      if (!llvm::sys::fs::is_regular_file(real)) continue;
      if (!visited.insert(real.str().str()).second) break;
      auto buf = llvm::MemoryBuffer::getFile(real, /*IsText=*/true);
      if (!buf) break;
      std::string_view header = (*buf)->getBuffer();
      collectRewriteContext(header, context);
      collectIncludedContext(real.str().str(), header, includeDirs, context, visited);
      break;
    }
  }
}

// clang 22 stores an element of a bool vector through a variable index (`bool2 m; m[j] = x;`) as an insertelement
// of the byte it keeps bools in (i8) into a vector of i1, which is invalid IR. The bit is the byte's low bit.
void repairBoolVectorInserts(llvm::Module& m) {
  for (llvm::Function& f : m)
    for (llvm::Instruction& inst : llvm::instructions(f)) {
      auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(&inst);
      if (!ins) continue;
      llvm::Type* elem = llvm::cast<llvm::VectorType>(ins->getType())->getElementType();
      llvm::Value* v = ins->getOperand(1);
      if (!elem->isIntegerTy(1) || !v->getType()->isIntegerTy() || v->getType() == elem) continue;
      ins->setOperand(1, new llvm::TruncInst(v, elem, "bool", ins->getIterator()));
    }
}

}  // namespace

std::vector<std::string> metalMacroArguments(const CompileOptions& options) {
  std::vector<std::string> args = {"-D__METAL_VERSION__=" + std::to_string(options.metalVersion), "-D__METAL__=1",
                                   "-D__HAVE_NATIVE_BFLOAT__=1", "-D__HAVE_BFLOAT__=1", "-D__METAL2VK__=1"};
  if (options.fastMath) args.push_back("-D__M2V_FAST_MATH__=1");
  return args;
}

void addStdlibOverlay(llvm::vfs::OverlayFileSystem& fs, std::string* root) {
  fs.pushOverlay(stdlibFileSystem());
  if (root) *root = kStdlibRoot;
}

namespace {

// One parse of the translation unit. Bool-vector component names clang rejected are returned in `swizzles` (and
// not reported) so that the caller can parse again with them rewritten.
FrontendOutput parseOnce(const std::string& source, const std::string& name, const CompileOptions& options,
                         SourceMap& sources, Diagnostics& diags,
                         std::map<std::string, std::set<size_t>, std::less<>>& swizzles) {
  FrontendOutput out;
  static const bool attributesRegistered = metalAttributesRegistered() > 0;
  (void)attributesRegistered;
  out.context = std::make_unique<llvm::LLVMContext>();

  // The main file is rewritten here; included files are rewritten as they are opened. Clang sees an absolute path
  // (source text need not exist on disk); diagnostics show the name as given.
  llvm::SmallString<256> absolute(name);
  llvm::sys::fs::make_absolute(absolute);
  std::string mainPath = absolute.str().str();
  sources.setDisplayName(mainPath, name);
  {
    std::set<std::string> visited{mainPath};
    collectIncludedContext(mainPath, source, options.includeDirs, sources.rewriteContext(), visited);
  }
  sources.add(mainPath, source, rewriteMetalSource(source, &sources.rewriteContext(), mainPath));

  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(
      llvm::makeIntrusiveRefCnt<RewritingFileSystem>(llvm::vfs::getRealFileSystem(), sources));
  auto mainFs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  mainFs->addFile(mainPath, 0, llvm::MemoryBuffer::getMemBufferCopy(sources.rewritten(mainPath)->text, mainPath));
  overlay->pushOverlay(mainFs);
  overlay->pushOverlay(stdlibFileSystem());

  std::vector<std::string> args = {
      "-triple", "nvptx64-nvidia-cuda", "-emit-llvm", "-x", "c++", "-std=c++17", "-O2", "-disable-llvm-passes",
      "-disable-llvm-verifier", "-fno-rtti", "-ffp-contract=on", "-fno-threadsafe-statics", "-nostdsysteminc",
      "-nobuiltininc", "-nostdinc++", "-debug-info-kind=line-tables-only", "-dwarf-version=5", "-ferror-limit",
      std::to_string(options.errorLimit), "-fgnuc-version=4.2.1",
      // clang's documented nesting limit, set explicitly: without it 5,000 nested parentheses overflow the parser's
      // stack
      "-fbracket-depth", "256", "-skip-function-bodies", "-Wno-unknown-attributes", "-Wno-ignored-attributes",
      // Metal's own pragmas (`#pragma METAL internals : enable`) and warning groups (-Wmetal-addr-spaces) mean
      // nothing to clang; they are accepted without a word, as Metal code expects.
      "-Wno-unknown-pragmas", "-Wno-unknown-warning-option", "-Wno-duplicate-decl-specifier", "-Wno-c++20-extensions",
      "-Wno-c++17-extensions",
      // Metal has no double: an unsuffixed floating literal is a float.
      "-cl-single-precision-constant"};
  for (std::string& macro : metalMacroArguments(options)) args.push_back(std::move(macro));
  // User warning flags first, so that the switches below (which keep our rewriting quiet) win.
  for (const std::string& w : options.warnings) args.push_back(w);
  // Our headers are system headers: user -W flags do not reach into them.
  args.insert(args.end(), {"-isystem", std::string(kStdlibRoot),
                           // Metal's keywords and scalar types exist without any #include.
                           "-include", "__m2v/base.h"});
  // Quoted includes are looked up next to the including file first (clang's rule), then in -I directories.
  std::string dir = llvm::sys::path::parent_path(mainPath).str();
  for (const std::string& inc : options.includeDirs) args.insert(args.end(), {"-I", inc});
  if (!dir.empty()) args.insert(args.end(), {"-iquote", dir});
  for (const auto& [k, v] : options.defines) args.push_back("-D" + k + (v.empty() ? "" : "=" + v));
  args.push_back(mainPath);

  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  auto forwarder = std::make_unique<DiagnosticForwarder>(diags, sources);
  clang::DiagnosticOptions diagOpts;
  auto invocation = std::make_shared<clang::CompilerInvocation>();
  {
    clang::DiagnosticsEngine argDiags(llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(), diagOpts, forwarder.get(),
                                      false);
    if (!clang::CompilerInvocation::CreateFromArgs(*invocation, argv, argDiags)) {
      diags.internal("invalid front-end arguments");
      return out;
    }
  }
  invocation->getDiagnosticOpts().ShowCarets = false;  // keeps clang from printing "N errors generated"
  clang::CompilerInstance ci(invocation);
  ci.setVirtualFileSystem(overlay);
  ci.createDiagnostics(forwarder.get(), false);
  ci.createFileManager();

  bool ok;
  if (options.syntaxOnly) {
    KernelFactsAction facts(out, diags, sources);
    ok = ci.ExecuteAction(facts);
    forwarder->flush();
    swizzles = std::move(forwarder->swizzles());
    return out;
  }
  MetalCodeGenAction action(out.context.get(), out, diags, sources);
  ok = ci.ExecuteAction(action);
  forwarder->flush();
  swizzles = std::move(forwarder->swizzles());
  if (!ok || ci.getDiagnostics().hasErrorOccurred() || diags.hasErrors()) return out;
  out.module = action.takeModule();
  if (!out.module) {
    diags.internal("clang produced no LLVM module");
    return out;
  }
  stripAnnotations(*out.module);
  repairBoolVectorInserts(*out.module);
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*out.module, &os)) {
    diags.internal("clang produced invalid LLVM IR: " + err);
    out.module.reset();
  }
  return out;
}

}  // namespace

FrontendOutput runFrontend(const std::string& source, const std::string& name, const CompileOptions& options,
                           SourceMap& sources, Diagnostics& diags) {
  // Lets clang's deep recursions (template instantiation, constant evaluation) see how much stack is left and move to
  // a fresh stack before it runs out, as clang's own driver does.
  clang::noteBottomOfStack();
  std::map<std::string, std::set<size_t>, std::less<>> swizzles;
  size_t reported = diags.all().size();
  FrontendOutput out = parseOnce(source, name, options, sources, diags, swizzles);
  // Bool-vector component names: parse again with them rewritten (the earlier attempt's diagnostics go). A swizzle
  // of a swizzle (`b.rg.y`) shows only once the first is rewritten, hence a few rounds.
  for (int round = 0; !swizzles.empty(); ++round) {
    if (round == 4) {
      diags.error(name + ": bool vector component names that could not be rewritten");
      break;
    }
    diags.rollback(reported);
    sources.clearFiles();
    for (auto& [path, offsets] : swizzles)
      sources.rewriteContext().boolSwizzles[path].insert(offsets.begin(), offsets.end());
    swizzles.clear();
    out = parseOnce(source, name, options, sources, diags, swizzles);
  }
  return out;
}

}  // namespace m2v::frontend
