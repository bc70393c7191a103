// lowerEntry: the whole lowering for one entry point, from clang's module to IR the SPIR-V emitter accepts.
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/ReplaceConstant.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/ADCE.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/InferAddressSpaces.h>
#include <llvm/Transforms/Scalar/LoopIdiomRecognize.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Transforms/Scalar/StructurizeCFG.h>
#include <llvm/Transforms/Utils/FixIrreducible.h>
#include <llvm/Transforms/Utils/LoopSimplify.h>
#include <llvm/Transforms/Utils/LowerSwitch.h>
#include <llvm/Transforms/Utils/UnifyFunctionExitNodes.h>
#include <llvm/Transforms/Utils/UnifyLoopExits.h>

#include <set>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

// After optimization, a buffer argument whose address nothing reads is unused: the runtime lets the host leave it
// unbound, as Metal does (MLX's gemv declares bias buffers its non-axpby instances never touch). Addresses are
// push constants, or 8-byte loads from the argument buffer whose address is the push constant at kPushArgsOffset
// (EntryABI); an access to the argument buffer this does not recognise counts every argument as used.
static void markUnusedArguments(llvm::Module& m, KernelReflection& reflection) {
  std::set<uint64_t> read;
  bool unknownAccess = false;
  auto addArgumentBufferReads = [&](llvm::Value* table) {
    for (llvm::User* u : table->users()) {
      if (llvm::isa<llvm::LoadInst>(u)) {
        read.insert(0);
        continue;
      }
      auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(u);
      llvm::APInt offset(64, 0);
      if (!gep || !gep->accumulateConstantOffset(m.getDataLayout(), offset) ||
          !llvm::all_of(gep->users(), [](llvm::User* g) { return llvm::isa<llvm::LoadInst>(g); })) {
        unknownAccess = true;
        continue;
      }
      if (!gep->use_empty()) read.insert(offset.getZExtValue());
    }
  };
  if (llvm::Function* push = m.getFunction(pseudo::kPushI64))
    for (llvm::User* u : push->users()) {
      auto* call = llvm::dyn_cast<llvm::CallInst>(u);
      auto* offset = call ? llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(0)) : nullptr;
      if (!offset) {
        unknownAccess = true;
        continue;
      }
      if (!reflection.argumentBuffer) {
        read.insert(offset->getZExtValue());
        continue;
      }
      if (offset->getZExtValue() != kPushArgsOffset) continue;  // the abort word's address
      for (llvm::User* cu : call->users()) {
        if (auto* table = llvm::dyn_cast<llvm::IntToPtrInst>(cu)) addArgumentBufferReads(table);
        else unknownAccess = true;
      }
    }
  for (PushArg& a : reflection.args) a.used = unknownAccess || read.count(a.offset) != 0;
}

namespace {

// `unreachable` ends a path the program never takes (undefined behaviour); SPIR-V's structurizer needs a real exit.
struct ReplaceUnreachablePass : llvm::PassInfoMixin<ReplaceUnreachablePass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
    std::vector<llvm::UnreachableInst*> work;
    for (llvm::BasicBlock& bb : f)
      if (auto* u = llvm::dyn_cast<llvm::UnreachableInst>(bb.getTerminator())) work.push_back(u);
    for (llvm::UnreachableInst* u : work) {
      llvm::ReturnInst::Create(f.getContext(), nullptr, u->getIterator());
      u->eraseFromParent();
    }
    return work.empty() ? llvm::PreservedAnalyses::all() : llvm::PreservedAnalyses::none();
  }
};

}  // namespace

bool lowerEntry(llvm::Module& m, const frontend::EntryFacts& entry,
                const std::vector<frontend::FunctionConstantFacts>& fcs, KernelReflection& reflection,
                Diagnostics& diags, MatrixPath path, bool abortChecks) {
  unsigned cooperativeMultiplies = 0;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = false;  // SPIR-V vectors have 2-4 lanes; LLVM's vectorizers make wider ones
  pto.SLPVectorization = false;
  pto.LoopInterleaving = false;
  llvm::PassBuilder pb(nullptr, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.registerPeepholeEPCallback(
      [](llvm::FunctionPassManager& fpm, llvm::OptimizationLevel) { fpm.addPass(ResolvePrecise16Pass(false)); });
  pb.crossRegisterProxies(lam, fam, cgam, mam);

  {
    llvm::ModulePassManager mpm;
    mpm.addPass(SelectEntryPass(entry.mangledName));
    mpm.addPass(FunctionConstantsPass(fcs, reflection));
    mpm.addPass(EntryABIPass(entry, reflection, diags, abortChecks));
    mpm.addPass(IntrinsicAttributesPass());
    // The shuffle path is chosen before optimization, so its code is optimized exactly as written.
    if (path == MatrixPath::Shuffle) mpm.addPass(ResolveMatrixPathPass(false, cooperativeMultiplies));
    mpm.run(m, mam);
  }
  if (diags.hasErrors()) return false;
  // A threadgroup array is its own variable, or sits at an offset of an arena that respects its alignment
  // (MergeThreadgroupArrays): 16-byte alignment costs nothing and lets the optimizer prove wide accesses aligned.
  for (llvm::GlobalVariable& g : m.globals())
    if (g.getAddressSpace() == kThreadgroupAS && g.getAlign().valueOrOne() < llvm::Align(16))
      g.setAlignment(llvm::Align(16));

  // LLVM's optimizer as at -O2, without the vectorizers, and without turning loops into memset/memcpy (GPUs have
  // neither; expanding them again would lose the loop's element width).
  static const bool noLoopIdioms = (llvm::DisableLIRP::All = true);  // process-wide; set once (compiles run in threads)
  (void)noLoopIdioms;
  // Nor sinking the instructions two branches end with into their successor: it splits a thread's adjacent accesses
  // over two blocks (`if (whole) { x[0..3] } else { if (i < n) x[0] ... if (i + 3 < n) x[3] }` leaves x[3] shared
  // after both), and WidenAccesses combines accesses within one block only.
  static const bool noSinking = [] {
    auto& options = llvm::cl::getRegisteredOptions();
    auto it = options.find("sink-common-insts");
    return it != options.end() && !it->second->addOccurrence(0, "sink-common-insts", "false");
  }();
  (void)noSinking;
  static const bool emulatedSimdgroups = ruleEnabled("M2V_EMULATED_SIMDGROUPS");
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(m, mam);

  // The cooperative path is chosen after optimization, which shows where operands come from (half loads).
  if (path == MatrixPath::Cooperative) {
    llvm::ModulePassManager mpm;
    mpm.addPass(ResolveMatrixPathPass(true, cooperativeMultiplies));
    llvm::FunctionPassManager cleanup;
    cleanup.addPass(llvm::InstCombinePass());
    cleanup.addPass(llvm::SimplifyCFGPass());
    // 8-wide register fragments (Metal 4) as float2 pairs: their accumulators then stay in the device's layout
    cleanup.addPass(SplitWideVectorsPass(64));
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(cleanup)));
    mpm.addPass(CooperativeMatrixPass());
    mpm.addPass(LoadFragmentsInDeviceLayoutPass());
    llvm::FunctionPassManager cse;
    cse.addPass(llvm::EarlyCSEPass());
    cse.addPass(llvm::InstCombinePass());
    cse.addPass(llvm::ADCEPass());
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(cse)));
    mpm.addPass(FuseKStepsPass());
    mpm.addPass(FuseColumnBlocksPass());
    mpm.run(m, mam);
  }

  {
    llvm::FunctionPassManager fpm;
    // C++ references and `this` are generic pointers; after inlining most resolve to device, constant or
    // threadgroup memory again.
    fpm.addPass(ResolvePrecise16Pass(true));
    fpm.addPass(llvm::InferAddressSpacesPass(kGenericAS));
    fpm.addPass(llvm::InstCombinePass());
    fpm.addPass(ExpandMemoryIntrinsicsPass());
    fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
    fpm.addPass(llvm::InstCombinePass());
    fpm.addPass(MergeSelectedAllocasPass());
    fpm.addPass(WideBoolVectorsPass());
    fpm.addPass(SplitWideVectorsPass());
    fpm.addPass(WidenOddIntegersPass());
    fpm.addPass(UnrollStreamingLoopsPass());
    // a thread's array indexed by an unrolled loop's counter (MLX's qmv `result[row]`) becomes registers
    fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
    fpm.addPass(llvm::InstCombinePass());
    fpm.addPass(llvm::EarlyCSEPass());
    fpm.addPass(llvm::SimplifyCFGPass());
    llvm::ModulePassManager mpm;
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
    // Wide device accesses need resolved address spaces and add a branch the structurizer must see.
    mpm.addPass(WidenAccessesPass(entry, reflection));
    // After widening, so that the loads it moves are the wide ones.
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(ClusterStreamingLoadsPass()));
    mpm.run(m, mam);
  }
  {
    auto hints = std::make_shared<LoopHints>();
    llvm::FunctionPassManager fpm;
    fpm.addPass(KeepLoopHintsPass(KeepLoopHintsPass::Mode::Record, hints));
    fpm.addPass(BFloatWordsPass());
    fpm.addPass(llvm::SimplifyCFGPass());
    fpm.addPass(ReplaceUnreachablePass());
    // Devices without 32-wide subgroups run the emulated body (the cooperative build needs 32-wide ones anyway).
    // Before the abort checks: their early exits from loops would make every branch look as if its paths met only
    // at the kernel's end.
    if (path == MatrixPath::Shuffle && emulatedSimdgroups) {
      fpm.addPass(llvm::UnifyFunctionExitNodesPass());
      fpm.addPass(llvm::LowerSwitchPass());
      // one exit block per loop: a loop inside a linearized region is entered and left as one node
      fpm.addPass(llvm::FixIrreduciblePass());
      fpm.addPass(llvm::UnifyLoopExitsPass());
      fpm.addPass(EmulateSimdgroupsPass(reflection));
    }
    fpm.addPass(FindSpinWaitsPass(reflection));  // before the abort checks add loads of their own
    if (abortChecks) fpm.addPass(AbortChecksPass(reflection));
    fpm.addPass(ExitInfiniteLoopsPass());
    fpm.addPass(llvm::UnifyFunctionExitNodesPass());
    fpm.addPass(llvm::LowerSwitchPass());
    fpm.addPass(llvm::FixIrreduciblePass());
    fpm.addPass(llvm::UnifyLoopExitsPass());
    fpm.addPass(llvm::LoopSimplifyPass());
    fpm.addPass(llvm::StructurizeCFGPass());
    fpm.addPass(llvm::LoopSimplifyPass());
    fpm.addPass(UniqueMergeBlocksPass());
    fpm.addPass(RemoveDeadCyclesPass());
    fpm.addPass(KeepLoopHintsPass(KeepLoopHintsPass::Mode::Restore, hints));
    llvm::ModulePassManager mpm;
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
    mpm.run(m, mam);
  }
  {
    llvm::ModulePassManager mpm;
    mpm.addPass(MergeThreadgroupArraysPass());
    mpm.run(m, mam);
  }
  markUnusedArguments(m, reflection);
  reflection.cooperativeMatrixMultiplies = cooperativeMultiplies;
  // The emitter works on instructions: constant expressions over globals (`gep (@table, 4)`) become instructions.
  std::vector<llvm::Constant*> globals;
  for (llvm::GlobalVariable& g : m.globals()) globals.push_back(&g);
  llvm::convertUsersOfConstantsToInstructions(globals);

  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(m, &os)) {
    diags.internal("lowering produced invalid LLVM IR for '" + entry.entryName + "': " + err);
    return false;
  }
  return true;
}

bool mayMultiply16BitMatrices(const llvm::Module& m) {
  bool multiplies = false;
  for (const llvm::Function& f : m)
    multiplies |= !f.use_empty() && stdlibIntrinsicName(f) == "simd_mma_cooperative";
  if (!multiplies) return false;
  // A cooperative multiply needs half or bfloat operands (or floats extended from them): a kernel without such a
  // value anywhere (MLX's float32 instances) has none, and is not lowered a second time.
  auto narrow = [](const llvm::Value* v) {
    const llvm::Type* t = v->getType()->getScalarType();
    return t->isHalfTy() || t->isBFloatTy();
  };
  for (const llvm::Function& f : m)
    for (const llvm::BasicBlock& bb : f)
      for (const llvm::Instruction& i : bb)
        if (narrow(&i) || llvm::any_of(i.operands(), [&](const llvm::Use& op) { return narrow(op.get()); }))
          return true;
  return false;
}

}  // namespace m2v::lower
