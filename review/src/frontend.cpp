// The only translation unit that includes clang's AST headers: parse with LibTooling, walk function bodies once,
// and record calls, conditions, loops and variables into the plain model of model.h.
#include "frontend.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/MacroInfo.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Tooling/CompilationDatabase.h>
#include <clang/Tooling/JSONCompilationDatabase.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <set>

#ifndef M2V_CLANG_RESOURCE_DIR
#define M2V_CLANG_RESOURCE_DIR ""
#endif

using namespace clang;

namespace m2v::review {
namespace {

std::string squash(llvm::StringRef s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string canonicalPath(llvm::StringRef p) {
  llvm::SmallString<256> real;
  if (!llvm::sys::fs::real_path(p, real)) return std::string(real);
  llvm::SmallString<256> abs(p);
  llvm::sys::fs::make_absolute(abs);
  llvm::sys::path::remove_dots(abs, true);
  return std::string(abs);
}

class Extractor {
 public:
  Extractor(ASTContext& ctx, Codebase& cb, const ParseOptions& opts)
      : ctx_(ctx), sm_(ctx.getSourceManager()), cb_(cb), opts_(opts) {}

  void function(const FunctionDecl* fd) {
    if (!fd->doesThisDeclarationHaveABody() || fd->isImplicit()) return;
    if (auto* md = dyn_cast<CXXMethodDecl>(fd))
      if (md->getParent() && md->getParent()->isLambda()) return;
    if (fd->isTemplateInstantiation()) return;
    SourceLocation loc = sm_.getExpansionLoc(fd->getLocation());
    std::string file = fileOf(loc);
    if (file.empty() || !underRoot(file)) return;
    std::string key = keyOf(fd);
    if (cb_.functions.count(key)) return;  // seen from another TU (header)
    Function f;
    f.key = key;
    f.name = fd->getNameAsString();
    f.qualName = fd->getQualifiedNameAsString();
    if (auto* md = dyn_cast<CXXMethodDecl>(fd)) {
      f.className = md->getParent()->getNameAsString();
      f.isVirtual = md->isVirtual();
      std::vector<const CXXMethodDecl*> todo(md->overridden_methods().begin(), md->overridden_methods().end());
      std::set<std::string> seen;
      while (!todo.empty()) {  // every method up the hierarchy that a virtual call may name
        const CXXMethodDecl* b = todo.back();
        todo.pop_back();
        if (!seen.insert(keyOf(b)).second) continue;
        f.overrides.push_back(keyOf(b));
        todo.insert(todo.end(), b->overridden_methods().begin(), b->overridden_methods().end());
      }
    }
    f.internalLinkage = !fd->isExternallyVisible();
    f.file = file;
    f.line = sm_.getExpansionLineNumber(sm_.getExpansionLoc(fd->getBeginLoc()));
    f.endLine = sm_.getExpansionLineNumber(sm_.getExpansionLoc(fd->getEndLoc()));
    for (auto* p : fd->parameters()) {
      Var v;
      v.name = p->getNameAsString();
      v.type = p->getType().getAsString();
      v.isParam = true;
      v.line = line(p->getLocation());
      v.initKind = "param";
      // the default argument (inherited from the declaration): a call that omits it passes this value
      if (p->hasDefaultArg() && !p->hasUnparsedDefaultArg() && !p->hasUninstantiatedDefaultArg() &&
          p->getDefaultArg())
        v.initText = text(p->getDefaultArg());
      f.params.push_back(v.name);
      f.vars.push_back(v);
    }
    cur_ = &f;
    Ctx c;
    walk(fd->getBody(), c);
    cur_ = nullptr;
    cb_.functions.emplace(key, std::move(f));
  }

 private:
  struct Ctx {
    std::vector<Cond> conds;
    std::vector<Loop> loops;
    bool inCondition = false;
    bool inOnce = false;
  };

  ASTContext& ctx_;
  SourceManager& sm_;
  Codebase& cb_;
  const ParseOptions& opts_;
  Function* cur_ = nullptr;

  std::string fileOf(SourceLocation loc) {
    if (loc.isInvalid()) return "";
    FileID id = sm_.getFileID(loc);
    auto fe = sm_.getFileEntryRefForID(id);
    if (!fe) return "";
    return canonicalPath(fe->getName());
  }
  bool underRoot(const std::string& f) {
    return f.size() > opts_.root.size() && f.compare(0, opts_.root.size(), opts_.root) == 0 &&
           f[opts_.root.size()] == '/';
  }
  unsigned line(SourceLocation l) { return sm_.getExpansionLineNumber(sm_.getExpansionLoc(l)); }
  std::string text(SourceRange r) {
    if (r.isInvalid()) return "";
    // Code written inside a macro (a `UNARY_GPU(cls, op)` body, a `CHECK(x)` argument): its own spelling, so the
    // condition `!dispatch_unary(...)` reads as written instead of as the macro call that expands it.
    if (r.getBegin().isMacroID() && r.getEnd().isMacroID()) {
      SourceLocation b = sm_.getSpellingLoc(r.getBegin()), e = sm_.getSpellingLoc(r.getEnd());
      if (sm_.getFileID(b) == sm_.getFileID(e) && !sm_.isBeforeInTranslationUnit(e, b)) {
        bool invalid = false;
        llvm::StringRef s =
            Lexer::getSourceText(CharSourceRange::getTokenRange(b, e), sm_, ctx_.getLangOpts(), &invalid);
        if (!invalid && !s.empty() && s.size() < 4000) return squash(s);
      }
    }
    CharSourceRange cr = sm_.getExpansionRange(r);
    bool invalid = false;
    llvm::StringRef s = Lexer::getSourceText(cr, sm_, ctx_.getLangOpts(), &invalid);
    if (invalid) return "";
    return squash(s);
  }
  std::string text(const Stmt* s) { return s ? text(s->getSourceRange()) : ""; }

  std::string keyOf(const FunctionDecl* fd) {
    if (auto* pat = fd->getTemplateInstantiationPattern()) fd = pat;
    if (auto* tmpl = fd->getPrimaryTemplate()) fd = tmpl->getTemplatedDecl();
    std::string k = fd->getQualifiedNameAsString() + "(";
    bool first = true;
    for (auto* p : fd->parameters()) {
      if (!first) k += ", ";
      first = false;
      k += p->getType().getCanonicalType().getAsString();
    }
    k += ")";
    if (auto* md = dyn_cast<CXXMethodDecl>(fd))
      if (md->isConst()) k += " const";
    // Internal linkage (static, anonymous namespace): the same name in two units is two functions.
    if (!fd->isExternallyVisible()) {
      const FunctionDecl* def = fd->getDefinition() ? fd->getDefinition() : fd;
      k += "@" + fileOf(sm_.getExpansionLoc(def->getLocation()));
    }
    return k;
  }

  // Root variable an expression names: x, x.foo, x[i], *x, inputs[0] ... -> x
  std::string rootVar(const Expr* e) {
    for (int guard = 0; e && guard < 32; ++guard) {
      e = e->IgnoreParenImpCasts();
      if (auto* d = dyn_cast<DeclRefExpr>(e)) return d->getDecl()->getNameAsString();
      if (auto* m = dyn_cast<MemberExpr>(e)) {
        if (isa<CXXThisExpr>(m->getBase()->IgnoreParenImpCasts())) return m->getMemberDecl()->getNameAsString();
        e = m->getBase();
        continue;
      }
      if (auto* a = dyn_cast<ArraySubscriptExpr>(e)) {
        e = a->getBase();
        continue;
      }
      if (auto* op = dyn_cast<CXXOperatorCallExpr>(e)) {
        if (op->getNumArgs() > 0 &&
            (op->getOperator() == OO_Subscript || op->getOperator() == OO_Star || op->getOperator() == OO_Arrow)) {
          e = op->getArg(0);
          continue;
        }
        return "";
      }
      if (auto* u = dyn_cast<UnaryOperator>(e)) {
        e = u->getSubExpr();
        continue;
      }
      if (auto* t = dyn_cast<MaterializeTemporaryExpr>(e)) {
        e = t->getSubExpr();
        continue;
      }
      if (auto* c = dyn_cast<CXXConstructExpr>(e)) {
        if (c->getNumArgs() == 1) {
          e = c->getArg(0);
          continue;
        }
        return "";
      }
      if (auto* mc = dyn_cast<CXXMemberCallExpr>(e)) {  // x.at(0), inputs.front()
        auto* callee = mc->getMethodDecl();
        if (callee && (callee->getName() == "at" || callee->getName() == "front" || callee->getName() == "back")) {
          e = mc->getImplicitObjectArgument();
          continue;
        }
        return "";
      }
      if (auto* ds = dyn_cast<CXXDependentScopeMemberExpr>(e)) {
        if (ds->isImplicitAccess()) return "";
        e = ds->getBase();
        continue;
      }
      return "";
    }
    return "";
  }

  void collectVars(const Stmt* s, std::vector<std::string>& out) {
    if (!s) return;
    if (auto* d = dyn_cast<DeclRefExpr>(s)) {
      auto n = d->getDecl()->getNameAsString();
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
    for (auto* c : s->children()) collectVars(c, out);
  }

  bool mentionsAny(const std::string& t, const std::vector<std::string>& names) {
    for (auto& n : names) {
      size_t p = t.find(n);
      while (p != std::string::npos) {
        bool l = p == 0 || !(std::isalnum(static_cast<unsigned char>(t[p - 1])) || t[p - 1] == '_');
        size_t e = p + n.size();
        bool r = e >= t.size() || !(std::isalnum(static_cast<unsigned char>(t[e])) || t[e] == '_');
        if (l && r) return true;
        p = t.find(n, p + 1);
      }
    }
    return false;
  }

  // Does a condition read an environment switch: directly, through a variable initialized from one, or through a
  // function whose body reads one?
  bool envGated(const Expr* cond) {
    if (!cond) return false;
    if (mentionsAny(text(cond), opts_.envFunctions)) return true;
    bool found = false;
    std::function<void(const Stmt*)> scan = [&](const Stmt* s) {
      if (!s || found) return;
      if (auto* d = dyn_cast<DeclRefExpr>(s)) {
        if (auto* vd = dyn_cast<VarDecl>(d->getDecl())) {
          if (vd->getInit() && mentionsAny(text(vd->getInit()), opts_.envFunctions)) found = true;
        } else if (auto* fd = dyn_cast<FunctionDecl>(d->getDecl())) {
          const FunctionDecl* def = fd->getDefinition();
          if (def && def->getBody() && mentionsAny(text(def->getBody()), opts_.envFunctions)) found = true;
        }
      }
      for (auto* c : s->children()) scan(c);
    };
    scan(cond);
    return found;
  }

  // `if (!flag) { ...; flag = true; }` with a static flag: one-time warm-up.
  bool onceFlag(const Expr* cond, const Stmt* then) {
    std::set<const VarDecl*> statics;
    std::function<void(const Stmt*)> scan = [&](const Stmt* s) {
      if (!s) return;
      if (auto* d = dyn_cast<DeclRefExpr>(s))
        if (auto* vd = dyn_cast<VarDecl>(d->getDecl()))
          if (vd->hasGlobalStorage()) statics.insert(vd);
      for (auto* c : s->children()) scan(c);
    };
    scan(cond);
    if (statics.empty() || !then) return false;
    bool assigned = false;
    std::function<void(const Stmt*)> find = [&](const Stmt* s) {
      if (!s || assigned) return;
      const Expr* lhs = nullptr;
      if (auto* b = dyn_cast<BinaryOperator>(s)) {
        if (b->isAssignmentOp()) lhs = b->getLHS();
      } else if (auto* oc = dyn_cast<CXXOperatorCallExpr>(s)) {
        if (oc->getOperator() == OO_Equal && oc->getNumArgs() > 0) lhs = oc->getArg(0);
      } else if (auto* mc = dyn_cast<CXXMemberCallExpr>(s)) {  // atomic flag.store(true)
        if (mc->getMethodDecl() && mc->getMethodDecl()->getName() == "store") lhs = mc->getImplicitObjectArgument();
      }
      if (lhs)
        if (auto* d = dyn_cast<DeclRefExpr>(lhs->IgnoreParenImpCasts()))
          if (auto* vd = dyn_cast<VarDecl>(d->getDecl()))
            if (statics.count(vd)) assigned = true;
      for (auto* c : s->children()) find(c);
    };
    find(then);
    return assigned;
  }

  Cond makeCond(const Expr* e, const std::string& kind, const Stmt* then = nullptr) {
    Cond c;
    c.text = text(e);
    c.kind = kind;
    c.line = e ? line(e->getBeginLoc()) : 0;
    c.envGated = envGated(e);
    c.onceFlag = (kind == "if" || kind == "guard") && onceFlag(e, then);
    collectVars(e, c.vars);
    return c;
  }

  static bool exits(const Stmt* s) {
    if (!s) return false;
    if (isa<ReturnStmt>(s) || isa<CXXThrowExpr>(s)) return true;
    if (auto* cs = dyn_cast<CompoundStmt>(s)) return !cs->body_empty() && exits(cs->body_back());
    if (auto* e = dyn_cast<ExprWithCleanups>(s)) return exits(e->getSubExpr());
    if (auto* i = dyn_cast<IfStmt>(s)) return i->getElse() && exits(i->getThen()) && exits(i->getElse());
    return false;
  }

  void addLoop(Ctx& c, const Stmt* s, const std::string& kind, SourceLocation end) {
    Loop l;
    l.kind = kind;
    l.line = line(s->getBeginLoc());
    l.header = text(SourceRange(s->getBeginLoc(), end));
    if (auto* f = dyn_cast<ForStmt>(s))
      if (auto* b = dyn_cast_or_null<BinaryOperator>(f->getCond() ? f->getCond()->IgnoreParenImpCasts() : nullptr))
        if (b->getOpcode() == BO_LT || b->getOpcode() == BO_LE)
          if (auto* lit = dyn_cast<IntegerLiteral>(b->getRHS()->IgnoreParenImpCasts()))
            l.constBound = static_cast<long>(lit->getValue().getLimitedValue()) + (b->getOpcode() == BO_LE);
    c.loops.push_back(l);
  }

  std::string useOf(const Expr* call) {
    const Expr* e = call;
    for (int guard = 0; guard < 8; ++guard) {
      auto parents = ctx_.getParents(*e);
      if (parents.empty()) return "other";
      const auto& p = parents[0];
      if (auto* pe = p.get<Expr>()) {
        if (isa<ImplicitCastExpr>(pe) || isa<ParenExpr>(pe) || isa<MaterializeTemporaryExpr>(pe) ||
            isa<CXXBindTemporaryExpr>(pe) || isa<ExprWithCleanups>(pe) || isa<CStyleCastExpr>(pe) ||
            isa<CXXStaticCastExpr>(pe) || isa<CXXReinterpretCastExpr>(pe) || isa<CXXFunctionalCastExpr>(pe) ||
            isa<RecoveryExpr>(pe) || isa<CXXConstCastExpr>(pe)) {
          e = pe;
          continue;
        }
        if (auto* a = dyn_cast<ArraySubscriptExpr>(pe))
          return a->getBase()->IgnoreParenImpCasts() == e->IgnoreParenImpCasts() || a->getBase() == e ? "subscript"
                                                                                                      : "other";
        if (auto* u = dyn_cast<UnaryOperator>(pe)) return u->getOpcode() == UO_Deref ? "deref" : "other";
        if (auto* b = dyn_cast<BinaryOperator>(pe)) {
          if (b->isAssignmentOp()) {
            std::string v = rootVar(b->getLHS());
            return v.empty() ? "other" : "var:" + v;
          }
          if (b->isAdditiveOp()) {
            e = pe;
            continue;
          }  // ptr + offset
          return "other";
        }
        if (auto* oc = dyn_cast<CXXOperatorCallExpr>(pe)) {
          if (oc->getOperator() == OO_Equal && oc->getNumArgs() == 2) {
            std::string v = rootVar(oc->getArg(0));
            return v.empty() ? "other" : "var:" + v;
          }
          return "other";
        }
        if (auto* ce = dyn_cast<CallExpr>(pe)) {
          std::string n;
          if (auto* fd = ce->getDirectCallee())
            n = fd->getQualifiedNameAsString();
          else
            n = calleeText(ce);
          return "arg:" + n;
        }
        if (isa<CXXConstructExpr>(pe)) {
          e = pe;
          continue;
        }
        return "other";
      }
      if (auto* vd = p.get<VarDecl>()) return "var:" + vd->getNameAsString();
      if (p.get<IfStmt>() || p.get<WhileStmt>() || p.get<SwitchStmt>()) return "cond";
      return "other";
    }
    return "other";
  }

  std::string calleeText(const CallExpr* ce) {
    const Expr* c = ce->getCallee();
    if (!c) return "";
    c = c->IgnoreParenImpCasts();
    if (auto* ul = dyn_cast<UnresolvedLookupExpr>(c)) return ul->getName().getAsString();
    if (auto* dm = dyn_cast<CXXDependentScopeMemberExpr>(c)) return dm->getMember().getAsString();
    if (auto* um = dyn_cast<UnresolvedMemberExpr>(c)) return um->getMemberName().getAsString();
    if (auto* me = dyn_cast<MemberExpr>(c)) return me->getMemberDecl()->getNameAsString();
    if (auto* dr = dyn_cast<DeclRefExpr>(c)) return dr->getDecl()->getNameAsString();
    return "";
  }

  std::string typeName(QualType t) {
    if (t.isNull()) return "";
    t = t.getNonReferenceType();
    if (t->isPointerType()) t = t->getPointeeType();
    return t.getUnqualifiedType().getAsString();
  }

  // Splits "obj.method<T>(...)" / "ns::fn(...)" source text when clang could only keep a RecoveryExpr.
  void textualCall(const std::string& t, Event& ev) {
    size_t paren = t.find('(');
    if (paren == std::string::npos || paren == 0) return;
    std::string head = t.substr(0, paren);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    if (!head.empty() && head.back() == '>') {
      size_t lt = head.rfind('<');
      if (lt != std::string::npos) {
        ev.templateArgs = head.substr(lt + 1, head.size() - lt - 2);
        head = head.substr(0, lt);
      }
    }
    size_t i = head.size();
    while (i > 0 && (std::isalnum(static_cast<unsigned char>(head[i - 1])) || head[i - 1] == '_')) --i;
    ev.name = head.substr(i);
    std::string before = head.substr(0, i);
    if (before.size() >= 1 && before.back() == '.')
      ev.receiver = before.substr(0, before.size() - 1);
    else if (before.size() >= 2 && before.compare(before.size() - 2, 2, "->") == 0)
      ev.receiver = before.substr(0, before.size() - 2);
    else
      ev.qualName = head;
    if (!ev.receiver.empty()) {
      size_t j = 0;
      while (j < ev.receiver.size() &&
             (std::isalnum(static_cast<unsigned char>(ev.receiver[j])) || ev.receiver[j] == '_'))
        ++j;
      ev.receiverVar = ev.receiver.substr(0, j);
    }
  }

  void stamp(Event& ev, const Stmt* s, const Ctx& c) {
    ev.line = line(s->getBeginLoc());
    ev.col = sm_.getExpansionColumnNumber(sm_.getExpansionLoc(s->getBeginLoc()));
    ev.conds = c.conds;
    ev.loops = c.loops;
    ev.inCondition = c.inCondition;
    ev.inOnce = c.inOnce;
  }

  void recordCall(const CallExpr* ce, const Ctx& c) {
    Event ev;
    ev.kind = "call";
    ev.text = text(ce);
    stamp(ev, ce, c);
    const FunctionDecl* fd = ce->getDirectCallee();
    if (fd) {
      ev.name = fd->getNameAsString();
      ev.qualName = fd->getQualifiedNameAsString();
      ev.calleeKey = keyOf(fd);
      if (auto* targs = fd->getTemplateSpecializationArgs()) {
        std::string s;
        for (unsigned i = 0; i < targs->size(); ++i) {
          if (targs->get(i).getKind() != TemplateArgument::Type) continue;
          if (!s.empty()) s += ", ";
          s += targs->get(i).getAsType().getAsString();
        }
        ev.templateArgs = s;
      }
    } else {
      ev.name = calleeText(ce);
    }
    const Expr* obj = nullptr;
    unsigned firstArg = 0;
    if (auto* mc = dyn_cast<CXXMemberCallExpr>(ce)) {
      obj = mc->getImplicitObjectArgument();
    } else if (auto* oc = dyn_cast<CXXOperatorCallExpr>(ce)) {
      (void)oc;
      return;  // operators are not interesting calls (their operands are walked)
    } else if (auto* callee = ce->getCallee()) {
      callee = callee->IgnoreParenImpCasts();
      if (auto* dm = dyn_cast<CXXDependentScopeMemberExpr>(callee)) {
        if (!dm->isImplicitAccess()) obj = dm->getBase();
      } else if (auto* um = dyn_cast<UnresolvedMemberExpr>(callee)) {
        if (!um->isImplicitAccess()) obj = um->getBase();
      } else if (auto* me = dyn_cast<MemberExpr>(callee)) {
        obj = me->getBase();
      }
    }
    if (obj && !isa<CXXThisExpr>(obj->IgnoreParenImpCasts())) {
      ev.receiver = text(obj);
      ev.receiverVar = rootVar(obj);
      ev.receiverType = typeName(obj->getType());
    }
    if (ev.templateArgs.empty()) {  // dependent or unresolved: read it from the text
      Event t;
      textualCall(ev.text, t);
      ev.templateArgs = t.templateArgs;
      if (ev.name.empty()) {
        ev.name = t.name;
        if (ev.receiver.empty()) {
          ev.receiver = t.receiver;
          ev.receiverVar = t.receiverVar;
        }
      }
    }
    for (unsigned i = firstArg; i < ce->getNumArgs(); ++i) {
      const Expr* a = ce->getArg(i);
      if (isa<CXXDefaultArgExpr>(a)) continue;
      ev.args.push_back(text(a));
      ev.argVars.push_back(rootVar(a));
    }
    ev.use = useOf(ce);
    if (ev.use == "subscript" || ev.use == "deref") ev.isWrite = writesThrough(ce);
    if (ev.name.empty()) return;
    cur_->events.push_back(std::move(ev));
  }

  // A pointer read or write (`p[i]`, `*p`) through the variable at the root of `base`.
  void recordDeref(const Expr* whole, const Expr* base, const Ctx& c) {
    std::string v = rootVar(base);
    if (v.empty()) return;
    Event ev;
    ev.kind = "deref";
    ev.name = v;
    ev.receiverVar = v;
    ev.text = text(whole);
    ev.isWrite = isWriteTarget(whole);
    stamp(ev, whole, c);
    cur_->events.push_back(std::move(ev));
  }

  void recordRecovery(const RecoveryExpr* re, const Ctx& c) {
    // pointer reads inside code clang could not type (`v[i]` on a variable whose type is unknown)
    std::string t = text(re);
    for (size_t i = 0; i < t.size(); ++i) {
      if (!(std::isalpha(static_cast<unsigned char>(t[i])) || t[i] == '_') ||
          (i > 0 && (std::isalnum(static_cast<unsigned char>(t[i - 1])) || t[i - 1] == '_' || t[i - 1] == '.')))
        continue;
      size_t j = i;
      while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_')) ++j;
      std::string name = t.substr(i, j - i);
      size_t k = j;
      while (k < t.size() && t[k] == ' ') ++k;
      if (k < t.size() && t[k] == '[' && cur_->var(name) && !cur_->var(name)->isParam) {
        Event d;
        d.kind = "deref";
        d.name = d.receiverVar = name;
        d.text = t;
        stamp(d, re, c);
        cur_->events.push_back(std::move(d));
      }
      i = j;
    }
    Event ev;
    ev.kind = "call";
    ev.text = text(re);
    textualCall(ev.text, ev);
    if (ev.name.empty()) return;
    stamp(ev, re, c);
    bool first = true;
    for (auto* sub : re->subExpressions()) {
      if (!sub) continue;
      std::string t = text(sub);
      // the callee itself (`f`, `ns::f`, `obj.f`) comes first among the sub-expressions: not an argument
      bool callee = first && (t == ev.name || (t.size() > ev.name.size() &&
                                               t.compare(t.size() - ev.name.size(), ev.name.size(), ev.name) == 0 &&
                                               t.find('(') == std::string::npos));
      first = false;
      if (callee) continue;
      ev.args.push_back(t);
      ev.argVars.push_back(rootVar(sub));
    }
    ev.use = useOf(re);
    cur_->events.push_back(std::move(ev));
  }

  void recordVar(const VarDecl* vd) {
    Var v;
    v.name = vd->getNameAsString();
    v.type = vd->getType().getAsString();
    v.line = line(vd->getLocation());
    v.isStatic = vd->isStaticLocal() || vd->hasGlobalStorage();
    const Expr* init = vd->getInit();
    if (!init) {
      v.initKind = "none";
    } else {
      v.initText = text(init);
      collectVars(init, v.initVars);
      const Expr* e = init->IgnoreImplicit();
      while (true) {
        if (auto* x = dyn_cast<ExprWithCleanups>(e)) {
          e = x->getSubExpr()->IgnoreImplicit();
          continue;
        }
        if (auto* x = dyn_cast<MaterializeTemporaryExpr>(e)) {
          e = x->getSubExpr()->IgnoreImplicit();
          continue;
        }
        if (auto* x = dyn_cast<CXXBindTemporaryExpr>(e)) {
          e = x->getSubExpr()->IgnoreImplicit();
          continue;
        }
        if (auto* x = dyn_cast<CXXFunctionalCastExpr>(e)) {
          e = x->getSubExpr()->IgnoreImplicit();
          continue;
        }
        if (auto* x = dyn_cast<CXXConstructExpr>(e)) {
          auto* ctor = x->getConstructor();
          if (x->getNumArgs() == 1 && ctor && ctor->isCopyOrMoveConstructor()) {
            e = x->getArg(0)->IgnoreImplicit();
            continue;
          }
        }
        break;
      }
      if (auto* ce = dyn_cast<CallExpr>(e)) {
        v.initKind = "op";
        if (auto* fd = ce->getDirectCallee())
          v.initCallee = fd->getNameAsString();
        else
          v.initCallee = calleeText(ce);
        if (v.initCallee.empty()) {
          Event t;
          textualCall(v.initText, t);
          v.initCallee = t.name;
        }
      } else if (auto* ctor = dyn_cast<CXXConstructExpr>(e); ctor && ctor->getNumArgs() == 0) {
        v.initKind = "none";  // default-constructed (an empty optional, a handle filled later)
      } else if (auto* ctor = dyn_cast<CXXConstructExpr>(e)) {
        bool placeholder = false;
        for (auto* a : ctor->arguments()) {
          std::string at = text(a);
          if (at == "nullptr" || at.find("make_shared") != std::string::npos || at.find("NULL") != std::string::npos)
            placeholder = true;
        }
        v.initKind = placeholder ? "placeholder" : "host";
      } else if (isa<InitListExpr>(e) || isa<IntegerLiteral>(e) || isa<FloatingLiteral>(e) ||
                 isa<CXXBoolLiteralExpr>(e)) {
        v.initKind = "host";
      } else if (isa<RecoveryExpr>(e)) {
        Event t;
        textualCall(v.initText, t);
        v.initKind = t.name.empty() ? "other" : "op";
        v.initCallee = t.name;
      } else if (!rootVar(e).empty()) {
        v.initKind = "alias";
        v.initVars = {rootVar(e)};
      } else {
        v.initKind = "other";
      }
    }
    cur_->vars.push_back(std::move(v));
  }

  bool isOnceCall(const CallExpr* ce) {
    std::string n;
    if (auto* fd = ce->getDirectCallee())
      n = fd->getNameAsString();
    else
      n = calleeText(ce);
    return std::find(opts_.onceFunctions.begin(), opts_.onceFunctions.end(), n) != opts_.onceFunctions.end();
  }

  void walkChildren(const Stmt* s, Ctx& c) {
    for (auto* ch : s->children()) walk(ch, c);
  }

  void walk(const Stmt* s, Ctx c) {
    if (!s) return;
    if (auto* cs = dyn_cast<CompoundStmt>(s)) {
      Ctx local = c;
      size_t caseIdx = SIZE_MAX;
      for (auto* ch : cs->body()) {
        if (auto* sc = dyn_cast<SwitchCase>(ch)) {
          // statements after a case label belong to that case until the next label
          if (caseIdx != SIZE_MAX) local.conds.resize(caseIdx);
          caseIdx = local.conds.size();
          const Stmt* inner = sc;
          std::string labels;
          while (auto* k = dyn_cast_or_null<SwitchCase>(inner)) {
            if (auto* cst = dyn_cast<CaseStmt>(k))
              labels += (labels.empty() ? "" : ", ") + text(cst->getLHS());
            else
              labels += (labels.empty() ? "" : ", ") + std::string("default");
            inner = k->getSubStmt();
          }
          Cond cd;
          cd.kind = labels == "default" ? "default" : "case";
          cd.text = labels;
          cd.owner = switchText_;
          cd.line = line(sc->getBeginLoc());
          local.conds.push_back(cd);
          walk(inner, local);
          continue;
        }
        walk(ch, local);
        if (auto* is = dyn_cast<IfStmt>(ch)) {
          if (!is->getElse() && exits(is->getThen()) && is->getCond()) {
            Cond g = makeCond(is->getCond(), "guard", is->getThen());
            local.conds.push_back(g);
          }
        }
      }
      return;
    }
    if (auto* is = dyn_cast<IfStmt>(s)) {
      if (is->getInit()) walk(is->getInit(), c);
      if (is->getConditionVariableDeclStmt()) walk(is->getConditionVariableDeclStmt(), c);
      Ctx cc = c;
      cc.inCondition = true;
      walk(is->getCond(), cc);
      Ctx t = c;
      if (is->getCond()) t.conds.push_back(makeCond(is->getCond(), "if", is->getThen()));
      walk(is->getThen(), t);
      if (is->getElse()) {
        Ctx e = c;
        if (is->getCond()) e.conds.push_back(makeCond(is->getCond(), "else"));
        walk(is->getElse(), e);
      }
      return;
    }
    if (auto* sw = dyn_cast<SwitchStmt>(s)) {
      if (sw->getInit()) walk(sw->getInit(), c);
      Ctx cc = c;
      cc.inCondition = true;
      walk(sw->getCond(), cc);
      std::string saved = switchText_;
      switchText_ = text(sw->getCond());
      walk(sw->getBody(), c);
      switchText_ = saved;
      return;
    }
    if (auto* fs = dyn_cast<ForStmt>(s)) {
      if (fs->getInit()) walk(fs->getInit(), c);
      Ctx l = c;
      addLoop(l, fs, "for", fs->getRParenLoc());
      walk(fs->getCond(), l);
      walk(fs->getInc(), l);
      walk(fs->getBody(), l);
      return;
    }
    if (auto* rf = dyn_cast<CXXForRangeStmt>(s)) {
      walk(rf->getRangeInit(), c);
      Ctx l = c;
      addLoop(l, rf, "range-for", rf->getRParenLoc());
      if (rf->getLoopVarStmt()) walk(rf->getLoopVarStmt(), l);
      walk(rf->getBody(), l);
      return;
    }
    if (auto* ws = dyn_cast<WhileStmt>(s)) {
      Ctx l = c;
      addLoop(l, ws, "while", ws->getRParenLoc());
      Ctx lc = l;
      lc.inCondition = true;
      walk(ws->getCond(), lc);
      walk(ws->getBody(), l);
      return;
    }
    if (auto* ds = dyn_cast<DoStmt>(s)) {
      Ctx l = c;
      addLoop(l, ds, "do", ds->getRParenLoc());
      walk(ds->getBody(), l);
      Ctx lc = l;
      lc.inCondition = true;
      walk(ds->getCond(), lc);
      return;
    }
    if (auto* co = dyn_cast<ConditionalOperator>(s)) {
      Ctx cc = c;
      cc.inCondition = true;
      walk(co->getCond(), cc);
      Ctx t = c;
      t.conds.push_back(makeCond(co->getCond(), "?:"));
      walk(co->getTrueExpr(), t);
      Ctx e = c;
      e.conds.push_back(makeCond(co->getCond(), "else ?:"));
      walk(co->getFalseExpr(), e);
      return;
    }
    if (auto* le = dyn_cast<LambdaExpr>(s)) {
      walk(le->getBody(), c);
      return;
    }
    if (auto* rs = dyn_cast<ReturnStmt>(s)) {
      // A return with its value and the conditions that lead to it: callers judge "runs only when f(...) refuses"
      // by the conditions of f's `return false`.
      Event ev;
      ev.kind = "return";
      ev.text = rs->getRetValue() ? text(rs->getRetValue()) : "";
      stamp(ev, rs, c);
      cur_->events.push_back(std::move(ev));
      walkChildren(s, c);
      return;
    }
    if (auto* dst = dyn_cast<DeclStmt>(s)) {
      for (auto* d : dst->decls()) {
        if (auto* vd = dyn_cast<VarDecl>(d)) {
          recordVar(vd);
          Ctx ic = c;
          if (vd->isStaticLocal()) ic.inOnce = true;
          if (vd->getInit()) walk(vd->getInit(), ic);
        }
      }
      return;
    }
    if (auto* re = dyn_cast<RecoveryExpr>(s)) {
      recordRecovery(re, c);
      walkChildren(s, c);
      return;
    }
    if (auto* as = dyn_cast<ArraySubscriptExpr>(s)) {
      recordDeref(as, as->getBase(), c);
      walkChildren(s, c);
      return;
    }
    if (auto* uo = dyn_cast<UnaryOperator>(s)) {
      if (uo->getOpcode() == UO_Deref) recordDeref(uo, uo->getSubExpr(), c);
      walkChildren(s, c);
      return;
    }
    if (auto* dr = dyn_cast<DeclRefExpr>(s)) {
      if (!calleeRefs_.count(dr))
        if (auto* fd = dyn_cast<FunctionDecl>(dr->getDecl())) recordRef(dr, fd, c);
      return;
    }
    if (auto* ce = dyn_cast<CallExpr>(s)) {
      if (auto* callee = ce->getCallee())
        if (auto* dr = dyn_cast<DeclRefExpr>(callee->IgnoreParenImpCasts())) calleeRefs_.insert(dr);
      recordCall(ce, c);
      if (auto* oc = dyn_cast<CXXOperatorCallExpr>(ce))  // x = op(...) on class types (array)
        if (oc->getOperator() == OO_Equal && oc->getNumArgs() == 2) recordAssign(oc->getArg(0), oc->getArg(1), oc, c);
      if (auto* mc = dyn_cast<CXXMemberCallExpr>(ce))  // opt.emplace(x) / opt.reset(x): opt now names x
        if (auto* md = mc->getMethodDecl())
          if ((md->getName() == "emplace" || md->getName() == "reset") && mc->getNumArgs() == 1)
            recordAssign(mc->getImplicitObjectArgument(), mc->getArg(0), mc, c);
      if (isOnceCall(ce)) {
        Ctx oc = c;
        oc.inOnce = true;
        walkChildren(s, oc);
        return;
      }
      walkChildren(s, c);
      return;
    }
    if (auto* bo = dyn_cast<BinaryOperator>(s)) {
      if (bo->getOpcode() == BO_Assign) recordAssign(bo->getLHS(), bo->getRHS(), bo, c);
      walkChildren(s, c);
      return;
    }
    if (auto* oc = dyn_cast<CXXOperatorCallExpr>(s)) {
      if (oc->getOperator() == OO_Equal && oc->getNumArgs() == 2) recordAssign(oc->getArg(0), oc->getArg(1), oc, c);
      walkChildren(s, c);
      return;
    }
    walkChildren(s, c);
  }

  // `f()[i] = v` / `*f() = v`: the pointer a call returns is written through, not read.
  bool writesThrough(const Expr* call) {
    const Expr* e = call;
    for (int guard = 0; guard < 8; ++guard) {
      auto parents = ctx_.getParents(*e);
      if (parents.empty()) return false;
      const Expr* pe = parents[0].get<Expr>();
      if (!pe) return false;
      if (isa<ImplicitCastExpr>(pe) || isa<ParenExpr>(pe) ||
          (isa<BinaryOperator>(pe) && cast<BinaryOperator>(pe)->isAdditiveOp())) {
        e = pe;
        continue;
      }
      if ((isa<ArraySubscriptExpr>(pe) &&
           cast<ArraySubscriptExpr>(pe)->getBase()->IgnoreParenImpCasts() == e->IgnoreParenImpCasts()) ||
          (isa<UnaryOperator>(pe) && cast<UnaryOperator>(pe)->getOpcode() == UO_Deref)) {
        auto pp = ctx_.getParents(*pe);
        if (pp.empty()) return false;
        if (auto* b = pp[0].get<BinaryOperator>())
          return b->isAssignmentOp() && b->getLHS()->IgnoreParenImpCasts() == pe;
        return false;
      }
      return false;
    }
    return false;
  }

  bool isWriteTarget(const Expr* e) {
    auto parents = ctx_.getParents(*e);
    if (parents.empty()) return false;
    if (auto* b = parents[0].get<BinaryOperator>()) return b->isAssignmentOp() && b->getLHS() == e;
    return false;
  }

  void recordAssign(const Expr* lhs, const Expr* rhs, const Stmt* s, const Ctx& c) {
    std::string v = rootVar(lhs);
    if (v.empty()) return;
    if (!isa<DeclRefExpr>(lhs->IgnoreParenImpCasts())) return;  // only whole-variable reassignments
    Event ev;
    ev.kind = "assign";
    ev.name = v;
    ev.receiverVar = v;
    ev.text = text(s);
    const Expr* r = rhs->IgnoreImplicit();
    if (auto* x = dyn_cast<MaterializeTemporaryExpr>(r)) r = x->getSubExpr()->IgnoreImplicit();
    if (auto* x = dyn_cast<CXXBindTemporaryExpr>(r)) r = x->getSubExpr()->IgnoreImplicit();
    if (auto* ce = dyn_cast<CallExpr>(r)) {
      ev.qualName = "op";
      if (auto* fd = ce->getDirectCallee())
        ev.templateArgs = fd->getNameAsString();
      else
        ev.templateArgs = calleeText(ce);
    } else if (isa<CXXConstructExpr>(r)) {
      ev.qualName = "host";
    } else {
      ev.qualName = "alias";
      ev.templateArgs = rootVar(r);
    }
    collectVars(rhs, ev.argVars);
    stamp(ev, s, c);
    cur_->events.push_back(std::move(ev));
  }

  // A function named without being called (table entry, std::function target, callback): a possible call.
  void recordRef(const DeclRefExpr* dr, const FunctionDecl* fd, const Ctx& c) {
    Event ev;
    ev.kind = "ref";
    ev.name = fd->getNameAsString();
    ev.qualName = fd->getQualifiedNameAsString();
    ev.calleeKey = keyOf(fd);
    ev.text = text(dr);
    stamp(ev, dr, c);
    ev.inOnce = false;  // registered once, called on every use
    cur_->events.push_back(std::move(ev));
  }

  std::string switchText_;
  std::set<const DeclRefExpr*> calleeRefs_;
};

thread_local std::vector<std::string> deps_;  // of the unit parsed last (one tool runs one unit at a time)
thread_local double tBegin_ = 0, tParsed_ = 0, tExtracted_ = 0;  // CPU time at each phase (M2V_REVIEW_TRACE_PARSE)
double cpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

class Consumer : public ASTConsumer {
 public:
  Consumer(Codebase& cb, const ParseOptions& o) : cb_(cb), o_(o) {}
  bool shouldSkipFunctionBody(Decl* d) override {
    auto& sm = d->getASTContext().getSourceManager();
    SourceLocation loc = sm.getExpansionLoc(d->getLocation());
    if (loc.isInvalid() || sm.isWrittenInMainFile(loc)) return false;
    auto fe = sm.getFileEntryRefForID(sm.getFileID(loc));
    if (!fe) return false;
    auto it = underRoot_.find(fe->getName());
    if (it == underRoot_.end()) {
      std::string f = canonicalPath(fe->getName());
      bool in = f.size() > o_.root.size() && f.compare(0, o_.root.size(), o_.root) == 0 && f[o_.root.size()] == '/';
      it = underRoot_.emplace(fe->getName().str(), in).first;
    }
    return !it->second;
  }
  void HandleTranslationUnit(ASTContext& ctx) override {
    tParsed_ = cpuNow();
    // The files of the tree this unit read (the on-disk cache revalidates them before reusing the model).
    auto& sm = ctx.getSourceManager();
    deps_.clear();
    for (auto it = sm.fileinfo_begin(); it != sm.fileinfo_end(); ++it) {
      std::string f = canonicalPath(it->first.getName());
      auto under = [&](const std::string& d) {
        return f.size() > d.size() && f.compare(0, d.size(), d) == 0 && f[d.size()] == '/';
      };
      bool mine = under(o_.root);
      for (auto& d : o_.includeDirs) mine = mine || under(d);
      if (mine) deps_.push_back(f);
    }
    std::sort(deps_.begin(), deps_.end());
    deps_.erase(std::unique(deps_.begin(), deps_.end()), deps_.end());
    Extractor ex(ctx, cb_, o_);
    struct V : RecursiveASTVisitor<V> {
      Extractor* ex;
      bool VisitFunctionDecl(FunctionDecl* fd) {
        ex->function(fd);
        return true;
      }
    } v;
    v.ex = &ex;
    // The declarations this unit parsed, not those of a precompiled prefix (outside headers, never reviewed):
    // reading those would deserialize all of them.
    // The parent map (ASTContext::getParents) is built over the same declarations.
    std::vector<Decl*> local(ctx.getTranslationUnitDecl()->noload_decls_begin(),
                             ctx.getTranslationUnitDecl()->noload_decls_end());
    ctx.setTraversalScope(local);
    for (Decl* d : local) v.TraverseDecl(d);
    tExtracted_ = cpuNow();
  }

 private:
  Codebase& cb_;
  const ParseOptions& o_;
  std::map<std::string, bool, std::less<>> underRoot_;
};

class Action : public ASTFrontendAction {
 public:
  Action(Codebase& cb, const ParseOptions& o) : cb_(cb), o_(o) {}
  bool BeginSourceFileAction(CompilerInstance& ci) override {
    // Bodies of functions outside the tree (the C++ library, vulkan.hpp) are skipped: the review never reads them,
    // and parsing them is most of the time of a unit (see Consumer::shouldSkipFunctionBody).
    ci.getFrontendOpts().SkipFunctionBodies = true;
    tBegin_ = cpuNow();
    ci.getPreprocessor().SetSuppressIncludeNotFoundError(true);
    ci.getDiagnostics().setFatalsAsError(true);
    return true;
  }
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance&, llvm::StringRef) override {
    return std::make_unique<Consumer>(cb_, o_);
  }

 private:
  Codebase& cb_;
  const ParseOptions& o_;
};

class Factory : public tooling::FrontendActionFactory {
 public:
  Factory(Codebase& cb, const ParseOptions& o) : cb_(cb), o_(o) {}
  std::unique_ptr<FrontendAction> create() override { return std::make_unique<Action>(cb_, o_); }

 private:
  Codebase& cb_;
  const ParseOptions& o_;
};

// A compile database written on another machine names directories that do not exist here (clang would abort on
// the chdir): run those commands from the root instead, with the same arguments.
class PortableDatabase : public tooling::CompilationDatabase {
 public:
  PortableDatabase(std::unique_ptr<tooling::CompilationDatabase> inner, std::string root)
      : inner_(std::move(inner)), root_(std::move(root)) {}
  std::vector<tooling::CompileCommand> getCompileCommands(llvm::StringRef file) const override {
    return fix(inner_->getCompileCommands(file));
  }
  std::vector<std::string> getAllFiles() const override { return inner_->getAllFiles(); }
  std::vector<tooling::CompileCommand> getAllCompileCommands() const override {
    return fix(inner_->getAllCompileCommands());
  }

 private:
  std::vector<tooling::CompileCommand> fix(std::vector<tooling::CompileCommand> cmds) const {
    for (auto& c : cmds)
      if (!llvm::sys::fs::is_directory(c.Directory)) c.Directory = root_;
    return cmds;
  }
  std::unique_ptr<tooling::CompilationDatabase> inner_;
  std::string root_;
};

class Counter : public DiagnosticConsumer {
 public:
  unsigned errors = 0;
  std::string first;  // first error of the current unit
  void HandleDiagnostic(DiagnosticsEngine::Level level, const Diagnostic& info) override {
    if (level < DiagnosticsEngine::Error) return;
    ++errors;
    if (!first.empty()) return;
    llvm::SmallString<160> msg;
    info.FormatDiagnostic(msg);
    std::string where;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      auto& sm = info.getSourceManager();
      auto loc = sm.getExpansionLoc(info.getLocation());
      where = llvm::sys::path::filename(sm.getFilename(loc)).str() + ":" +
              std::to_string(sm.getExpansionLineNumber(loc)) + ": ";
    }
    first = where + std::string(msg);
  }
};

// Builds the precompiled prefix: every body skipped (all of it is outside the tree), the files read and the macros
// defined kept for the caller's checks.
class PchAction : public GeneratePCHAction {
 public:
  PchAction(std::string out, std::vector<std::string>& inputs, std::set<std::string>& macros)
      : out_(std::move(out)), inputs_(inputs), macros_(macros) {}
  bool BeginInvocation(CompilerInstance& ci) override {
    ci.getFrontendOpts().OutputFile = out_;
    ci.getFrontendOpts().SkipFunctionBodies = true;
    return GeneratePCHAction::BeginInvocation(ci);
  }
  bool BeginSourceFileAction(CompilerInstance& ci) override {
    ci.getDiagnostics().setFatalsAsError(true);
    return GeneratePCHAction::BeginSourceFileAction(ci);
  }
  void EndSourceFileAction() override {
    CompilerInstance& ci = getCompilerInstance();
    Preprocessor& pp = ci.getPreprocessor();
    SourceManager& sm = ci.getSourceManager();
    for (auto it = pp.macro_begin(); it != pp.macro_end(); ++it) {
      const MacroInfo* mi = pp.getMacroInfo(it->first);
      if (!mi) continue;
      SourceLocation loc = mi->getDefinitionLoc();
      if (loc.isInvalid() || !sm.getFileEntryRefForID(sm.getFileID(sm.getExpansionLoc(loc)))) continue;  // built in
      macros_.insert(it->first->getName().str());
    }
    for (auto it = sm.fileinfo_begin(); it != sm.fileinfo_end(); ++it)
      inputs_.push_back(canonicalPath(it->first.getName()));
    std::sort(inputs_.begin(), inputs_.end());
    inputs_.erase(std::unique(inputs_.begin(), inputs_.end()), inputs_.end());
    GeneratePCHAction::EndSourceFileAction();
  }

 private:
  std::string out_;
  std::vector<std::string>& inputs_;
  std::set<std::string>& macros_;
};

class PchFactory : public tooling::FrontendActionFactory {
 public:
  PchFactory(std::string out, std::vector<std::string>& inputs, std::set<std::string>& macros)
      : out_(std::move(out)), inputs_(inputs), macros_(macros) {}
  std::unique_ptr<FrontendAction> create() override { return std::make_unique<PchAction>(out_, inputs_, macros_); }

 private:
  std::string out_;
  std::vector<std::string>& inputs_;
  std::set<std::string>& macros_;
};

// The options every unit is parsed with, beyond the compile command: recover from everything, say nothing.
std::vector<std::string> extraArgs(const ParseOptions& opts) {
  std::vector<std::string> extra = {"-ferror-limit=0", "-Wno-everything", "-fno-spell-checking"};
  // The build machine's clang headers when they are there; otherwise clang's default, relative to the executable
  // (<prefix>/lib/clang/N, where the portable archive puts them).
  if (std::string(M2V_CLANG_RESOURCE_DIR).size() && llvm::sys::fs::is_directory(M2V_CLANG_RESOURCE_DIR))
    extra.push_back("-resource-dir=" M2V_CLANG_RESOURCE_DIR);
  if (!opts.compileCommands.empty())
    for (auto& i : opts.includeDirs) extra.push_back("-I" + i);
  return extra;
}

std::vector<std::string> fixedArgs(const ParseOptions& opts, const char* language) {
  std::vector<std::string> args = {"-std=c++20", language};
  for (auto& i : opts.includeDirs) args.push_back("-I" + i);
  return args;
}

}  // namespace

bool buildPrefixPch(const ParseOptions& opts, const std::string& headerPath, const std::string& pchPath,
                    std::vector<std::string>& inputs, std::set<std::string>& macros, std::string& why) {
  if (!opts.compileCommands.empty()) {
    why = "units have their own compile commands";
    return false;
  }
  tooling::FixedCompilationDatabase db(opts.root, fixedArgs(opts, "-xc++-header"));
  tooling::ClangTool tool(db, {headerPath});
  tool.appendArgumentsAdjuster(
      tooling::getInsertArgumentAdjuster(extraArgs(opts), tooling::ArgumentInsertPosition::END));
  Counter counter;
  tool.setDiagnosticConsumer(&counter);
  tool.setPrintErrorMessage(false);
  PchFactory factory(pchPath, inputs, macros);
  int rc = tool.run(&factory);
  if (counter.errors) {
    why = "the outside headers do not parse on their own: " + counter.first;
    return false;
  }
  if (rc != 0 || !llvm::sys::fs::exists(pchPath)) {
    why = "the precompiled header was not written";
    return false;
  }
  return true;
}

bool parseCodebase(const ParseOptions& opts, Codebase& out, std::string& err) {
  out.root = opts.root;
  std::unique_ptr<tooling::CompilationDatabase> db;
  if (!opts.compileCommands.empty()) {
    std::string path = opts.compileCommands;
    if (llvm::sys::fs::is_directory(path)) path += "/compile_commands.json";
    db = tooling::JSONCompilationDatabase::loadFromFile(path, err, tooling::JSONCommandLineSyntax::AutoDetect);
    if (!db) return false;
  } else {
    db = std::make_unique<tooling::FixedCompilationDatabase>(opts.root, fixedArgs(opts, "-xc++"));
  }
  std::vector<std::string> files = opts.files;
  if (files.empty()) {
    err = "no translation units to parse";
    return false;
  }
  if (!opts.compileCommands.empty())
    db = std::make_unique<PortableDatabase>(tooling::inferMissingCompileCommands(std::move(db)), opts.root);
  std::vector<std::string> extra = extraArgs(opts);
  if (!opts.pch.empty()) {
    extra.push_back("-include-pch");
    extra.push_back(opts.pch);
  }
  Counter counter;
  Factory factory(out, opts);
  for (auto& f : files) {  // one tool per file: deterministic order, no progress chatter
    tooling::ClangTool tool(*db, {f});
    tool.appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(extra, tooling::ArgumentInsertPosition::END));
    tool.setDiagnosticConsumer(&counter);
    tool.setPrintErrorMessage(false);
    unsigned before = counter.errors;
    counter.first.clear();
    double t0 = cpuNow();
    tool.run(&factory);  // errors are recovered from, never fatal to the review
    static const bool trace = std::getenv("M2V_REVIEW_TRACE_PARSE") != nullptr;
    if (trace)  // CPU seconds of this thread per phase, to see what a unit costs
      std::fprintf(stderr, "m2v review: %s: setup %.2f s, parse %.2f s, extract %.2f s, teardown %.2f s%s\n", f.c_str(),
                   tBegin_ - t0, tParsed_ - tBegin_, tExtracted_ - tParsed_, cpuNow() - tExtracted_,
                   opts.pch.empty() ? "" : " (precompiled prefix)");
    ParseStatus ps;
    ps.file = f;
    ps.deps = deps_;
    deps_.clear();
    ps.errors = counter.errors - before;
    ps.firstError = counter.first;
    out.parseStatus.push_back(ps);
  }
  out.errors += counter.errors;
  out.parsedFiles = files;
  for (auto& ps : out.parseStatus)
    for (auto& [k, fn] : out.functions)
      if (fn.file == ps.file) ++ps.functions;
  return true;
}

}  // namespace m2v::review
