// EntryABIPass: the kernel ABI of docs/ABI.md.
//
// `main` reads buffer addresses from the push-constant block (or from an argument buffer when they do not fit),
// computes Metal's built-ins from Vulkan's, and calls the kernel.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

// Converts a computed built-in (i32 or <3 x i32>) to the type the kernel declared (uint, ushort2, uint3, ...).
llvm::Value* convertBuiltin(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Type* target) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
  auto* tt = llvm::dyn_cast<llvm::FixedVectorType>(target);
  llvm::Type* targetElem = tt ? tt->getElementType() : target;
  if (vt && !tt) v = b.CreateExtractElement(v, uint64_t(0));
  if (vt && tt && vt->getNumElements() != tt->getNumElements()) {
    llvm::SmallVector<int, 4> mask;
    for (unsigned i = 0; i < tt->getNumElements(); ++i) mask.push_back(i < vt->getNumElements() ? int(i) : -1);
    v = b.CreateShuffleVector(v, mask);
  }
  if (!vt && tt) v = b.CreateVectorSplat(tt->getNumElements(), v);
  if (!targetElem->isIntegerTy()) return nullptr;
  llvm::Type* dest =
      tt ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(targetElem, tt->getNumElements())) : targetElem;
  return b.CreateZExtOrTrunc(v, dest);
}

}  // namespace

llvm::PreservedAnalyses EntryABIPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  llvm::Function* kernel = m.getFunction(entry.mangledName);
  if (!kernel) {
    diags.internal("kernel '" + entry.entryName + "' was not emitted by the front end");
    return llvm::PreservedAnalyses::all();
  }
  if (kernel->arg_size() != entry.params.size()) {
    diags.internal("kernel '" + entry.entryName + "': the IR signature does not match the Metal signature");
    return llvm::PreservedAnalyses::all();
  }
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  auto* v3 = llvm::FixedVectorType::get(i32, 3);

  // Push-constant layout.
  unsigned numBuffers = 0;
  for (const frontend::ParamFacts& p : entry.params) numBuffers += p.param.kind == ParamKind::Buffer;
  reflection.argumentBuffer = kPushArgsOffset + 8 * numBuffers + (roomForAbortWord ? 8 : 0) > kPushConstantLimit;
  reflection.pushConstantSize = reflection.argumentBuffer ? kPushArgsOffset + 8 : kPushArgsOffset + 8 * numBuffers;
  reflection.args.clear();

  auto* mainFn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                        llvm::GlobalValue::ExternalLinkage, "main", m);
  auto* entryBB = llvm::BasicBlock::Create(ctx, "entry", mainFn);
  llvm::IRBuilder<> b(entryBB);

  // Every invocation is a Metal thread: the runtime dispatches partial edge threadgroups as their own regions with
  // their own workgroup size (docs/ABI.md), so there is nothing to mask here.
  llvm::Value* grid = callPseudo(b, pseudo::kPushGrid, v3);
  llvm::Value* nominal = callPseudo(b, pseudo::kNominalThreadgroupSize, v3);
  llvm::Value* wg = callPseudo(b, std::string(pseudo::kBuiltinPrefix) + "workgroup_id", v3);
  llvm::Value* L = callPseudo(b, std::string(pseudo::kBuiltinPrefix) + "local_invocation_index", i32);
  auto comp = [&](llvm::Value* v, unsigned i) { return b.CreateExtractElement(v, uint64_t(i)); };
  // A threadgroup shape past the device's per-axis limits (Metal allows 1x1x1024, NVIDIA's Vulkan z stops at 64)
  // runs as a one-dimensional workgroup of the same size, Metal's shape in kThreadgroupShape: positions are then
  // recovered from the linear index, which Metal and Vulkan order alike (x fastest). Specialization constants
  // decide the select, so a workgroup of Metal's own shape pays nothing.
  llvm::Value* shape = callPseudo(b, pseudo::kThreadgroupShape, v3);
  llvm::Value* relaid = b.CreateICmpNE(comp(shape, 0), b.getInt32(0));
  llvm::Value* tg = b.CreateSelect(relaid, shape, callPseudo(b, pseudo::kWorkgroupSize, v3));
  llvm::Value* pos = callPseudo(b, std::string(pseudo::kBuiltinPrefix) + "local_invocation_id", v3);
  {
    // 1s when not relaid out, so the unused divisions below never divide by zero
    llvm::Value* sx = b.CreateSelect(relaid, comp(shape, 0), b.getInt32(1));
    llvm::Value* sy = b.CreateSelect(relaid, comp(shape, 1), b.getInt32(1));
    llvm::Value* sxy = b.CreateMul(sx, sy);
    llvm::Value* linear = llvm::UndefValue::get(v3);
    linear = b.CreateInsertElement(linear, b.CreateURem(L, sx), uint64_t(0));
    linear = b.CreateInsertElement(linear, b.CreateURem(b.CreateUDiv(L, sx), sy), uint64_t(1));
    linear = b.CreateInsertElement(linear, b.CreateUDiv(L, sxy), uint64_t(2));
    pos = b.CreateSelect(relaid, linear, pos);
  }
  auto product = [&](llvm::Value* v) { return b.CreateMul(b.CreateMul(comp(v, 0), comp(v, 1)), comp(v, 2)); };
  llvm::Value* count = product(tg);
  llvm::Value* nominalTotal = product(nominal);
  auto builtinCall = [&](const char* name, llvm::Type* t) {
    return callPseudo(b, std::string(pseudo::kBuiltinPrefix) + name, t);
  };
  auto ceilDiv = [&](llvm::Value* a, llvm::Value* d) {
    llvm::Value* one = a->getType()->isVectorTy() ? llvm::ConstantInt::get(v3, 1) : llvm::ConstantInt::get(i32, 1);
    return b.CreateUDiv(b.CreateAdd(a, b.CreateSub(d, one)), d);
  };

  auto builtinValue = [&](const std::string& n) -> llvm::Value* {
    if (n == "thread_position_in_grid") return b.CreateAdd(b.CreateMul(wg, nominal), pos);
    if (n == "thread_position_in_threadgroup") return pos;
    if (n == "threadgroup_position_in_grid") return wg;
    if (n == "threads_per_threadgroup") return tg;
    if (n == "dispatch_threads_per_threadgroup") return nominal;
    if (n == "threadgroups_per_grid") return ceilDiv(grid, nominal);
    if (n == "threads_per_grid" || n == "grid_size" || n == "dispatch_threads_per_grid") return grid;
    if (n == "grid_origin") return llvm::Constant::getNullValue(v3);
    if (n == "thread_index_in_threadgroup") return L;
    if (n == "thread_index_in_simdgroup") return builtinCall("subgroup_local_invocation_id", i32);
    if (n == "simdgroup_index_in_threadgroup") return builtinCall("subgroup_id", i32);
    if (n == "threads_per_simdgroup" || n == "thread_execution_width" || n == "simdgroup_size")
      return builtinCall("subgroup_size", i32);
    if (n == "simdgroups_per_threadgroup") return ceilDiv(count, builtinCall("subgroup_size", i32));
    if (n == "dispatch_simdgroups_per_threadgroup") return ceilDiv(nominalTotal, builtinCall("subgroup_size", i32));
    if (n == "quadgroup_index_in_threadgroup") return b.CreateUDiv(L, llvm::ConstantInt::get(i32, 4));
    if (n == "thread_index_in_quadgroup") return b.CreateURem(L, llvm::ConstantInt::get(i32, 4));
    if (n == "quadgroups_per_threadgroup") return ceilDiv(count, llvm::ConstantInt::get(i32, 4));
    if (n == "dispatch_quadgroups_per_threadgroup") return ceilDiv(nominalTotal, llvm::ConstantInt::get(i32, 4));
    if (n == "quadgroup_size") return llvm::ConstantInt::get(i32, 4);
    return nullptr;
  };

  llvm::Value* argBuffer = nullptr;
  if (reflection.argumentBuffer)
    argBuffer = b.CreateIntToPtr(callPseudo(b, pseudo::kPushI64, i64, {b.getInt32(kPushArgsOffset)}),
                                 llvm::PointerType::get(ctx, kConstantAS));

  std::vector<llvm::Value*> args;
  unsigned bufferSlot = 0;
  for (unsigned i = 0; i < entry.params.size(); ++i) {
    const frontend::ParamFacts& p = entry.params[i];
    llvm::Argument* formal = kernel->getArg(i);
    llvm::Type* t = formal->getType();
    llvm::Value* v = nullptr;
    switch (p.param.kind) {
      case ParamKind::Builtin: {
        llvm::Value* raw = builtinValue(p.param.builtin);
        if (!raw) {
          diags.unsupported("built-in [[" + p.param.builtin + "]] of kernel '" + entry.entryName + "'");
          return llvm::PreservedAnalyses::all();
        }
        v = convertBuiltin(b, raw, t);
        if (!v) {
          diags.error(entry.file + ":" + std::to_string(entry.line) + ": built-in parameter '" + p.param.name +
                      "' must have an integer type");
          return llvm::PreservedAnalyses::all();
        }
        break;
      }
      case ParamKind::Buffer: {
        uint32_t offset = reflection.argumentBuffer ? 8 * bufferSlot : kPushArgsOffset + 8 * bufferSlot;
        ++bufferSlot;
        reflection.args.push_back({p.param.index, offset});
        llvm::Value* addr =
            argBuffer
                ? static_cast<llvm::Value*>(b.CreateLoad(i64, b.CreateConstGEP1_32(b.getInt8Ty(), argBuffer, offset)))
                : callPseudo(b, pseudo::kPushI64, i64, {b.getInt32(offset)});
        if (t->isPointerTy()) {
          unsigned as = t->getPointerAddressSpace();
          if (as != kDeviceAS && as != kConstantAS) {
            diags.error("buffer parameter '" + p.param.name + "' of kernel '" + entry.entryName +
                        "' must point to device or constant memory");
            return llvm::PreservedAnalyses::all();
          }
          if (formal->hasByValAttr()) {
            diags.unsupported("by-value aggregate buffer parameter '" + p.param.name + "'");
            return llvm::PreservedAnalyses::all();
          }
          v = b.CreateIntToPtr(addr, t);
        } else {
          // A by-value argument: its bytes are in a buffer the runtime filled.
          v = b.CreateLoad(t, b.CreateIntToPtr(addr, llvm::PointerType::get(ctx, kConstantAS)));
        }
        break;
      }
      case ParamKind::Threadgroup: {
        if (!t->isPointerTy() || t->getPointerAddressSpace() != kThreadgroupAS) {
          diags.error("[[threadgroup(" + std::to_string(p.param.index) + ")]] parameter '" + p.param.name +
                      "' must be a threadgroup pointer");
          return llvm::PreservedAnalyses::all();
        }
        std::string name = "m2v.threadgroup." + std::to_string(p.param.index);
        auto* g = m.getGlobalVariable(name, true);
        if (!g) {
          g = new llvm::GlobalVariable(m, llvm::ArrayType::get(b.getInt8Ty(), 0), false,
                                       llvm::GlobalValue::ExternalLinkage, nullptr, name, nullptr,
                                       llvm::GlobalValue::NotThreadLocal, kThreadgroupAS);
          g->setAlignment(llvm::Align(16));
          g->setMetadata(pseudo::kDynamicThreadgroupMD,
                         llvm::MDNode::get(ctx, llvm::ConstantAsMetadata::get(b.getInt32(p.param.index))));
          reflection.dynamicThreadgroupMemory.push_back({p.param.index, kThreadgroupLengthSpecBase + p.param.index});
        }
        v = g;
        break;
      }
    }
    args.push_back(v);
  }
  // Program-scope initializers that are not constant (`constant bool has_x = is_function_constant_defined(x);`)
  // are C++ global constructors: they run first, in every thread, before the kernel reads them.
  if (llvm::GlobalVariable* ctors = m.getGlobalVariable("llvm.global_ctors")) {
    if (auto* list = llvm::dyn_cast<llvm::ConstantArray>(ctors->getInitializer()))
      for (const llvm::Use& entry : list->operands())
        if (auto* ctor = llvm::dyn_cast<llvm::Function>(llvm::cast<llvm::ConstantStruct>(entry.get())->getOperand(1)))
          b.CreateCall(ctor)->setCallingConv(ctor->getCallingConv());
    ctors->eraseFromParent();
  }
  llvm::CallInst* call = b.CreateCall(kernel, args);
  call->setCallingConv(kernel->getCallingConv());  // clang's spir_func: a mismatch would make the call UB
  b.CreateRetVoid();

  kernel->setLinkage(llvm::GlobalValue::InternalLinkage);
  kernel->setComdat(nullptr);
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
