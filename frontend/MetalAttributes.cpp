// Metal's `[[...]]` attributes, registered with clang's parser (ParsedAttrInfoRegistry), so that clang parses them
// wherever C++ allows an attribute-specifier-seq (after a declarator with or without whitespace, on parameters,
// variables, functions, struct members, explicit instantiations, inside macro bodies after expansion) and Sema turns
// each into the `annotate("m2v....")` attribute the later stages read (ClangFrontend.cpp's EntryCollector).
#include "MetalAttributes.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/Basic/ParsedAttrInfo.h>
#include <clang/Lex/Lexer.h>
#include <clang/Sema/DeclSpec.h>
#include <clang/Sema/ParsedAttr.h>
#include <clang/Sema/Sema.h>

#include <array>
#include <string>
#include <string_view>

namespace m2v::frontend {
namespace {

using clang::ParsedAttrInfo;

// How an attribute becomes an annotation.
enum class Form {
  Kernel,            // [[kernel]] -> m2v.kernel
  Indexed,           // [[buffer(N)]] -> m2v.buffer, N (also host_name, threadgroup, max_total_threads_...)
  FunctionConstant,  // on a variable: m2v.function_constant, N; on a parameter: m2v.function_constant_ref, "name"
  Builtin,           // [[thread_position_in_grid]] -> m2v.builtin, "thread_position_in_grid"
  Unsupported,       // [[texture(0)]] -> m2v.unsupported_attribute, "texture"
  RenderStage,       // [[vertex]], [[fragment]] -> m2v.render_stage, "vertex" (ClangFrontend.cpp skips the body)
};

struct MetalAttrInfo : ParsedAttrInfo {
  // `spelling` is what clang reads between the brackets, `metalName` the name Metal gives it (they differ only for
  // `threadgroup`, whose spelling the address-space macro would otherwise expand: see MslRewriter.cpp).
  // Each has a C++11 spelling and a GNU one, which the rewriter writes where Metal allows an attribute list and C++
  // does not (explicit instantiations); `kernel` has no GNU spelling (clang's GNU `kernel` is its own attribute).
  MetalAttrInfo(const char* spelling, std::string_view metalName, Form form, unsigned numArgs, unsigned optArgs)
      : metalName_(metalName), form_(form) {
    NumArgs = numArgs;
    OptArgs = optArgs;
    NumArgMembers = numArgs + optArgs;
    spelling_[0] = {clang::AttributeCommonInfo::AS_CXX11, spelling};
    spelling_[1] = {clang::AttributeCommonInfo::AS_GNU, spelling};
    Spellings = llvm::ArrayRef<Spelling>(spelling_).take_front(form == Form::Kernel ? 1 : 2);
  }

  AttrHandling handleDeclAttribute(clang::Sema& s, clang::Decl* d, const clang::ParsedAttr& attr) const override {
    clang::ASTContext& ctx = s.getASTContext();
    // clang's parser reads an argument that is a lone name (`buffer(kIndex)`, `function_constant(has_bias)`) as an
    // identifier, not an expression, for attributes it does not know itself: here the name is looked up as an
    // expression would be (a template parameter, a constant), except where the name itself is the argument.
    llvm::SmallVector<clang::Expr*, 1> args;
    std::string identifier;
    for (unsigned k = 0; k < attr.getNumArgs(); ++k) {
      if (attr.isArgExpr(k)) {
        args.push_back(attr.getArgAsExpr(k));
      } else if (clang::IdentifierLoc* id = attr.getArgAsIdent(k)) {
        if (k == 0) identifier = id->getIdentifierInfo()->getName().str();
        if (form_ == Form::FunctionConstant && llvm::isa<clang::ParmVarDecl>(d)) continue;
        clang::CXXScopeSpec scope;
        clang::UnqualifiedId name;
        name.setIdentifier(id->getIdentifierInfo(), id->getLoc());
        clang::ExprResult e = s.ActOnIdExpression(s.getCurScope(), scope, clang::SourceLocation(), name, false, false);
        if (!e.isUsable()) return AttributeNotApplied;
        args.push_back(e.get());
      }
    }
    auto annotate = [&](llvm::StringRef annotation, llvm::MutableArrayRef<clang::Expr*> annotationArgs) {
      if (clang::Attr* a = s.CreateAnnotationAttr(attr, annotation, annotationArgs)) d->addAttr(a);
    };
    auto nameLiteral = [&](llvm::StringRef text) -> clang::Expr* {
      return clang::StringLiteral::Create(ctx, text, clang::StringLiteralKind::Ordinary, false,
                                          ctx.getStringLiteralArrayType(ctx.CharTy, text.size()), attr.getLoc());
    };
    switch (form_) {
      case Form::Kernel:
        annotate("m2v.kernel", {});
        break;
      case Form::Indexed:
        annotate("m2v." + metalName_, args);
        break;
      case Form::Builtin:
      case Form::Unsupported:
      case Form::RenderStage: {
        clang::Expr* name = nameLiteral(metalName_);
        annotate(form_ == Form::Builtin       ? "m2v.builtin"
                 : form_ == Form::RenderStage ? "m2v.render_stage"
                                              : "m2v.unsupported_attribute",
                 name);
        break;
      }
      case Form::FunctionConstant:
        if (llvm::isa<clang::ParmVarDecl>(d)) {
          // a parameter guarded by a bool function constant: its name
          std::string name = identifier;
          if (name.empty()) {
            if (args.empty()) return AttributeNotApplied;
            if (const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(args[0]->IgnoreParenImpCasts()))
              name = ref->getDecl()->getNameAsString();
            else
              name = clang::Lexer::getSourceText(clang::CharSourceRange::getTokenRange(args[0]->getSourceRange()),
                                                 ctx.getSourceManager(), ctx.getLangOpts())
                         .str();
          }
          clang::Expr* literal = nameLiteral(name);
          annotate("m2v.function_constant_ref", literal);
        } else if (auto* var = llvm::dyn_cast<clang::VarDecl>(d); var && !args.empty()) {
          // A function constant gets its value when the pipeline is made: it is neither `constexpr` nor `const` to
          // clang (whose constant folding would otherwise use a value it does not have, and which would want an
          // initializer), and it keeps the constant address space that `constant` gave it.
          var->setConstexpr(false);
          clang::QualType t = var->getType();
          if (t.isConstQualified()) {
            // keep the type as written (`uint`, not `unsigned int`: reflection names it in Metal's words)
            clang::QualType u = t;
            u.removeLocalConst();
            if (u.isConstQualified()) {  // const inside a typedef: the canonical type without it
              clang::Qualifiers q = t.getQualifiers();
              q.removeConst();
              u = ctx.getQualifiedType(t.getCanonicalType().getUnqualifiedType(), q);
            }
            var->setType(u);
          }
          annotate("m2v.function_constant", args);
        } else {
          return AttributeNotApplied;
        }
        break;
    }
    return AttributeApplied;
  }

 private:
  std::string metalName_;
  Form form_;
  std::array<Spelling, 2> spelling_;
};

// clang's registry instantiates each entry with its default constructor: one small class per attribute.
#define M2V_METAL_ATTR(Class, spelling, metalName, form, numArgs, optArgs)        \
  struct Class : MetalAttrInfo {                                                  \
    Class() : MetalAttrInfo(spelling, metalName, Form::form, numArgs, optArgs) {} \
  };                                                                              \
  clang::ParsedAttrInfoRegistry::Add<Class> register##Class(spelling, "Metal [[" metalName "]]");

M2V_METAL_ATTR(KernelAttr, "kernel", "kernel", Kernel, 0, 0)
M2V_METAL_ATTR(HostNameAttr, "host_name", "host_name", Indexed, 1, 0)
M2V_METAL_ATTR(BufferAttr, "buffer", "buffer", Indexed, 1, 0)
M2V_METAL_ATTR(ThreadgroupAttr, "__m2v_threadgroup", "threadgroup", Indexed, 1, 0)
M2V_METAL_ATTR(MaxThreadsAttr, "max_total_threads_per_threadgroup", "max_total_threads_per_threadgroup", Indexed, 1, 0)
M2V_METAL_ATTR(VertexAttr, "vertex", "vertex", RenderStage, 0, 0)
M2V_METAL_ATTR(FragmentAttr, "fragment", "fragment", RenderStage, 0, 0)
M2V_METAL_ATTR(FunctionConstantAttr, "function_constant", "function_constant", FunctionConstant, 1, 0)

#define M2V_BUILTIN(name) M2V_METAL_ATTR(Builtin_##name, #name, #name, Builtin, 0, 0)
M2V_BUILTIN(dispatch_quadgroups_per_threadgroup)
M2V_BUILTIN(dispatch_simdgroups_per_threadgroup)
M2V_BUILTIN(dispatch_threads_per_threadgroup)
M2V_BUILTIN(grid_origin)
M2V_BUILTIN(grid_size)
M2V_BUILTIN(quadgroup_index_in_threadgroup)
M2V_BUILTIN(quadgroups_per_threadgroup)
M2V_BUILTIN(simdgroup_index_in_threadgroup)
M2V_BUILTIN(simdgroups_per_threadgroup)
M2V_BUILTIN(thread_execution_width)
M2V_BUILTIN(thread_index_in_quadgroup)
M2V_BUILTIN(thread_index_in_simdgroup)
M2V_BUILTIN(thread_index_in_threadgroup)
M2V_BUILTIN(thread_position_in_grid)
M2V_BUILTIN(thread_position_in_threadgroup)
M2V_BUILTIN(threadgroup_position_in_grid)
M2V_BUILTIN(threadgroups_per_grid)
M2V_BUILTIN(threads_per_grid)
M2V_BUILTIN(threads_per_simdgroup)
M2V_BUILTIN(threads_per_threadgroup)
M2V_BUILTIN(simdgroup_size)
M2V_BUILTIN(quadgroup_size)
M2V_BUILTIN(thread_index_in_grid)
M2V_BUILTIN(dispatch_threads_per_grid)
M2V_BUILTIN(threadgroups_per_grid_size)
M2V_BUILTIN(thread_execution_width_in_grid)

// Metal attributes of what compute kernels here cannot use yet (textures, samplers, the other stages); registered so
// that the compiler names them. `user(name)` and `patch(quad, N)` are not among them: their arguments are names clang
// cannot parse as expressions, so clang skips them as unknown attributes (with a warning).
#define M2V_UNSUPPORTED(name, numArgs, optArgs) \
  M2V_METAL_ATTR(Unsupported_##name, #name, #name, Unsupported, numArgs, optArgs)
M2V_UNSUPPORTED(stage_in, 0, 0)
M2V_UNSUPPORTED(texture, 1, 0)
M2V_UNSUPPORTED(sampler, 1, 0)
M2V_UNSUPPORTED(id, 1, 0)
M2V_UNSUPPORTED(position, 0, 0)
M2V_UNSUPPORTED(vertex_id, 0, 0)
M2V_UNSUPPORTED(instance_id, 0, 0)
M2V_UNSUPPORTED(color, 1, 0)
M2V_UNSUPPORTED(raster_order_group, 1, 0)
M2V_UNSUPPORTED(imageblock_data, 0, 1)
M2V_UNSUPPORTED(payload, 0, 0)
M2V_UNSUPPORTED(mesh, 0, 0)

}  // namespace

int metalAttributesRegistered() {
  int n = 0;
  for (const auto& entry : clang::ParsedAttrInfoRegistry::entries()) {
    (void)entry;
    ++n;
  }
  return n;
}

}  // namespace m2v::frontend
