// The compiler driver: front end once per file, then lowering, SPIR-V emission and validation per entry point.
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_set>

#include "Emitter.h"
#include "Frontend.h"
#include "Passes.h"
#include "metal2vk/compiler.h"

namespace m2v {

const char* compilerVersion() { return "metal2vk-0.1.0-abi1"; }

namespace {

// What an entry point can reach: from the kernel, the global constructors and the other `llvm.*` globals, and every
// alias, through calls and any other reference (constant expressions, global initializers).
struct Reachable {
  std::unordered_set<const llvm::GlobalValue*> values;
};

Reachable reachableFrom(const llvm::Module& m, const std::string& kernel) {
  Reachable r;
  std::unordered_set<const llvm::Value*> seen;
  std::vector<const llvm::Value*> work;
  auto push = [&](const llvm::Value* v) {
    if (llvm::isa<llvm::Constant>(v) && seen.insert(v).second) work.push_back(v);
  };
  if (const llvm::Function* f = m.getFunction(kernel)) push(f);
  for (const llvm::GlobalVariable& g : m.globals())
    if (g.getName().starts_with("llvm.")) push(&g);
  for (const llvm::GlobalAlias& a : m.aliases()) push(&a);  // an alias must keep pointing at a definition
  while (!work.empty()) {
    const llvm::Value* v = work.back();
    work.pop_back();
    if (const auto* gv = llvm::dyn_cast<llvm::GlobalValue>(v)) r.values.insert(gv);
    if (const auto* f = llvm::dyn_cast<llvm::Function>(v)) {
      for (const llvm::BasicBlock& bb : *f)
        for (const llvm::Instruction& inst : bb)
          for (const llvm::Use& op : inst.operands()) push(op.get());
      if (f->hasPersonalityFn()) push(f->getPersonalityFn());
    } else if (const auto* g = llvm::dyn_cast<llvm::GlobalVariable>(v)) {
      if (g->hasInitializer()) push(g->getInitializer());
    } else if (const auto* a = llvm::dyn_cast<llvm::GlobalAlias>(v)) {
      push(a->getAliasee());
    } else if (const auto* c = llvm::dyn_cast<llvm::Constant>(v)) {
      for (const llvm::Use& op : c->operands()) push(op.get());
    }
  }
  return r;
}

void copyComdat(llvm::Module& dst, llvm::GlobalObject* to, const llvm::GlobalObject* from) {
  if (const llvm::Comdat* c = from->getComdat()) {
    llvm::Comdat* nc = dst.getOrInsertComdat(c->getName());
    nc->setSelectionKind(c->getSelectionKind());
    to->setComdat(nc);
  }
}

// A copy of `src` with only the global values an entry point reaches (llvm::CloneModule creates every function of the
// file at least as a declaration: with N entry points that made compiling a file quadratic in N).
std::unique_ptr<llvm::Module> cloneForEntry(const llvm::Module& src, const std::string& kernel) {
  const Reachable reach = reachableFrom(src, kernel);
  auto dst = std::make_unique<llvm::Module>(src.getModuleIdentifier(), src.getContext());
  dst->setSourceFileName(src.getSourceFileName());
  dst->setDataLayout(src.getDataLayout());
  dst->setTargetTriple(src.getTargetTriple());
  dst->setModuleInlineAsm(src.getModuleInlineAsm());
  llvm::ValueToValueMapTy vmap;
  auto wanted = [&](const llvm::GlobalValue& gv) { return reach.values.count(&gv) != 0; };
  for (const llvm::GlobalVariable& g : src.globals()) {
    if (!wanted(g)) continue;
    auto* ng = new llvm::GlobalVariable(*dst, g.getValueType(), g.isConstant(), g.getLinkage(), nullptr, g.getName(),
                                        nullptr, g.getThreadLocalMode(), g.getType()->getAddressSpace());
    ng->copyAttributesFrom(&g);
    vmap[&g] = ng;
  }
  for (const llvm::Function& f : src) {
    if (!wanted(f)) continue;
    llvm::Function* nf = llvm::Function::Create(llvm::cast<llvm::FunctionType>(f.getValueType()), f.getLinkage(),
                                                f.getAddressSpace(), f.getName(), dst.get());
    nf->copyAttributesFrom(&f);
    vmap[&f] = nf;
  }
  for (const llvm::GlobalAlias& a : src.aliases()) {
    auto* na = llvm::GlobalAlias::create(a.getValueType(), a.getType()->getPointerAddressSpace(), a.getLinkage(),
                                         a.getName(), dst.get());
    na->copyAttributesFrom(&a);
    vmap[&a] = na;
  }
  const auto flags = llvm::RF_NullMapMissingGlobalValues;
  for (const llvm::GlobalVariable& g : src.globals()) {
    if (!wanted(g)) continue;
    auto* ng = llvm::cast<llvm::GlobalVariable>(vmap[&g]);
    llvm::SmallVector<std::pair<unsigned, llvm::MDNode*>, 1> mds;
    g.getAllMetadata(mds);
    for (auto& [kind, md] : mds) ng->addMetadata(kind, *llvm::MapMetadata(md, vmap, flags));
    if (g.hasInitializer()) ng->setInitializer(llvm::MapValue(g.getInitializer(), vmap, flags));
    copyComdat(*dst, ng, &g);
  }
  for (const llvm::Function& f : src) {
    if (!wanted(f) || f.isDeclaration()) continue;
    auto* nf = llvm::cast<llvm::Function>(vmap[&f]);
    auto to = nf->arg_begin();
    for (const llvm::Argument& arg : f.args()) {
      to->setName(arg.getName());
      vmap[&arg] = &*to++;
    }
    llvm::SmallVector<llvm::ReturnInst*, 8> returns;
    llvm::CloneFunctionInto(nf, &f, vmap, llvm::CloneFunctionChangeType::ClonedModule, returns);
    if (f.hasPersonalityFn()) nf->setPersonalityFn(llvm::MapValue(f.getPersonalityFn(), vmap, flags));
    copyComdat(*dst, nf, &f);
  }
  for (const llvm::GlobalAlias& a : src.aliases())
    if (const llvm::Constant* aliasee = a.getAliasee())
      llvm::cast<llvm::GlobalAlias>(vmap[&a])->setAliasee(llvm::MapValue(aliasee, vmap, flags));
  for (const llvm::NamedMDNode& nmd : src.named_metadata()) {
    llvm::NamedMDNode* n = dst->getOrInsertNamedMetadata(nmd.getName());
    for (const llvm::MDNode* op : nmd.operands()) n->addOperand(llvm::MapMetadata(op, vmap, flags));
  }
  return dst;
}

}  // namespace

CompileResult compileSource(const std::string& source, const std::string& name, const CompileOptions& options) {
  CompileResult result;
  Diagnostics& diags = result.diagnostics;
  frontend::SourceMap sources;
  frontend::FrontendOutput fe = frontend::runFrontend(source, name, options, sources, diags);
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

    std::unique_ptr<llvm::Module> m = cloneForEntry(*fe.module, entry.mangledName);
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
