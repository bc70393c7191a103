// AbortChecksPass: a kernel whose threads never leave a loop (an endless loop, a spin-wait on a flag nobody sets)
// would hold the GPU until the device is lost; Vulkan cannot cancel a running dispatch. So every loop back edge counts
// in a per-thread counter, and the first and then every kAbortCheckInterval-th one reads the submission's abort word
// (docs/ABI.md): when the runtime has set it, the thread returns. The first read lets threads that start after the
// word was set leave at once (a grid of millions of threads would otherwise each run an interval). The counter is one
// for the whole function, so nested loops that each run few iterations still reach a check; the read is an atomic
// load (the word changes while the kernel runs), made only at those counts, so a loop pays an increment, a mask and
// a branch per trip.
//
// A loop whose trips, times those of the loops inside it, have a small constant bound (ScalarEvolution) ends soon on
// its own and gets no check; the loops around it do. Loop nests with a barrier get none (hasBarrier says why): a
// kernel stuck in one cannot be stopped, and the device is given up as before.
#include <llvm/ADT/DepthFirstIterator.h>
#include <llvm/ADT/SetVector.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/PromoteMemToReg.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

// A power of two: the counter is masked. Large enough that a loop pays almost nothing for the read, small enough
// that a thread reads the word within microseconds of work.
constexpr uint32_t kAbortCheckInterval = 1024;
// Loop nests bounded by at most this many trips in all need no check of their own.
constexpr unsigned kBoundedTrips = 4096;

// Whether the loop (or one inside it) has a threadgroup or simdgroup barrier. No loop of such a nest gets a check:
// with one, lavapipe (Mesa 22.3) lost the output of MLX's Stockham FFT (fft_mem_*, its radix-step loops). The
// modules are valid and the exit is never taken; lavapipe runs each 8-lane subgroup as a coroutine suspended at
// barriers, and stops resuming all of them once one has finished. A subgroup whose threads all returned early (the
// FFT's out-of-bounds threads) still walks the loop under an empty mask, once; the exit keeps lavapipe from
// unrolling the loop, so that subgroup passes fewer barriers than the live ones and ends first. (Barriers after an
// early return are outside SPIR-V's rules; the same happens without checks to a barrier loop whose trip count is
// known only at run time.)
bool hasBarrier(const llvm::Loop& l) {
  for (const llvm::BasicBlock* bb : l.blocks())
    for (const llvm::Instruction& i : *bb)
      if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&i))
        if (const llvm::Function* callee = call->getCalledFunction())
          if (auto name = stdlibIntrinsicName(*callee);
              name && (*name == "threadgroup_barrier" || *name == "simdgroup_barrier"))
            return true;
  return false;
}

}  // namespace

unsigned AbortChecksPass::checkedLoops(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  llvm::LoopInfo& li = am.getResult<llvm::LoopAnalysis>(f);
  llvm::ScalarEvolution& se = am.getResult<llvm::ScalarEvolutionAnalysis>(f);
  llvm::SetVector<std::pair<llvm::BasicBlock*, llvm::BasicBlock*>> backEdges;  // latch -> header
  // Trips of the loop and all loops inside it, at most (0: unbounded or more than kBoundedTrips).
  std::function<uint64_t(llvm::Loop*)> nestTrips = [&](llvm::Loop* l) -> uint64_t {
    uint64_t inner = 1;
    for (llvm::Loop* sub : l->getSubLoops())
      inner = std::max(inner, nestTrips(sub) ? nestTrips(sub) : kBoundedTrips + 1);
    uint64_t trips = se.getSmallConstantMaxTripCount(l) * inner;
    return trips <= kBoundedTrips ? trips : 0;
  };
  unsigned loops = 0;
  // Measurement knob: M2V_ABORT_CHECKS=barriers checks those nests too (to find where the miscompile comes from; a
  // different setting needs a different M2V_CACHE_DIR).
  static const bool checkBarrierNests = [] {
    const char* v = std::getenv("M2V_ABORT_CHECKS");
    return v && std::string(v) == "barriers";
  }();
  for (llvm::Loop* top : li) {
    if (hasBarrier(*top) && !checkBarrierNests) continue;
    for (llvm::Loop* l : llvm::depth_first(top)) {
      if (nestTrips(l) != 0) continue;
      llvm::SmallVector<llvm::BasicBlock*, 4> latches;
      l->getLoopLatches(latches);
      for (llvm::BasicBlock* latch : latches) backEdges.insert({latch, l->getHeader()});
      ++loops;
    }
  }
  if (backEdges.empty()) return 0;

  if (!reflection.abortWordOffset) {
    reflection.abortWordOffset = reflection.pushConstantSize;
    reflection.pushConstantSize += 8;
  }
  llvm::LLVMContext& ctx = f.getContext();
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  llvm::IRBuilder<> b(&*f.getEntryBlock().getFirstInsertionPt());
  llvm::AllocaInst* counter = b.CreateAlloca(i32, nullptr, "abort.counter");
  b.CreateStore(b.getInt32(0), counter);

  llvm::BasicBlock* leave = llvm::BasicBlock::Create(ctx, "abort.leave", &f);
  llvm::Type* ret = f.getReturnType();
  llvm::ReturnInst::Create(ctx, ret->isVoidTy() ? nullptr : llvm::PoisonValue::get(ret), leave);

  for (auto [latch, header] : backEdges) {
    // latch -> count -> header, and at counts 1, 1 + interval, ... count -> check -> header or leave.
    llvm::BasicBlock* count = llvm::SplitEdge(latch, header);
    b.SetInsertPoint(count->getTerminator());
    llvm::Value* next = b.CreateAdd(b.CreateLoad(i32, counter), b.getInt32(1));
    b.CreateStore(next, counter);
    llvm::Value* due = b.CreateICmpEQ(b.CreateAnd(next, b.getInt32(kAbortCheckInterval - 1)), b.getInt32(1));
    llvm::Instruction* checkEnd = llvm::SplitBlockAndInsertIfThen(due, count->getTerminator(), false);
    checkEnd->getParent()->setName("abort.check");
    b.SetInsertPoint(checkEnd);
    llvm::Value* address = callPseudo(b, pseudo::kPushI64, b.getInt64Ty(), {b.getInt32(reflection.abortWordOffset)});
    llvm::LoadInst* word = b.CreateAlignedLoad(i32, b.CreateIntToPtr(address, b.getPtrTy(kDeviceAS)), llvm::Align(4));
    word->setAtomic(llvm::AtomicOrdering::Monotonic);
    b.CreateCondBr(b.CreateICmpNE(word, b.getInt32(0)), leave, checkEnd->getSuccessor(0));
    checkEnd->eraseFromParent();
  }
  llvm::DominatorTree dt(f);
  llvm::PromoteMemToReg({counter}, dt);
  // The new exits make the loop-exit passes route values defined in loops (a variable's alloca among them) through
  // phis, which lifetime markers may not name; the SPIR-V emitter ignores the markers anyway.
  std::vector<llvm::IntrinsicInst*> markers;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb)
      if (auto* ii = llvm::dyn_cast<llvm::IntrinsicInst>(&i); ii && ii->isLifetimeStartOrEnd()) markers.push_back(ii);
  for (llvm::IntrinsicInst* ii : markers) ii->eraseFromParent();
  return loops;
}

llvm::PreservedAnalyses AbortChecksPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  if (f.isDeclaration() || !checkedLoops(f, am)) return llvm::PreservedAnalyses::all();
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
