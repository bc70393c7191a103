// UnrollStreamingLoopsPass: loops that stream through device memory run several iterations per trip.
//
// A memory-bound loop such as MLX's gemv (`for (i < n_iter) { x = in[bn..]; for tm: w = mat[..]; acc += w * x; }`)
// issues one iteration's loads, waits for them, does its arithmetic, and only then issues the next iteration's:
// a thread never has more than one iteration's loads in flight. Unrolled by `count` with the trip count checked at
// run time, `count` iterations' loads are independent instructions of one block and the device's scheduler issues
// them together. The count is 2: on the H200, MLX's gemv at 8192x8192 ran 67.9 us as written, 57.8 us unrolled by 2
// and 67.2 us by 4 (qmv: 30.6, 24.1 and 24.2 us at 4096x14336; bench/membound-round3.md). What it applies to:
//  - innermost loops that load from device memory at addresses that change from iteration to iteration;
//  - with a trip count unknown at compile time (a known one was already unrolled as far as LLVM finds it worth);
//  - with no convergent operation (barrier, simdgroup operation): the remainder loop would run it a different
//    number of times in different threads;
//  - not marked `#pragma nounroll` / `unroll(disable)` in the source (MLX's Metal-4 GEMM k loop);
//  - while `count` copies of the body stay within kMaxUnrolledInstructions (MLX's Metal-4 GEMM loops are thousands
//    of instructions and have enough loads per iteration already).
// A short inner loop that itself streams memory (MLX's qmv: `for (row < 4)` inside the k loop) is unrolled
// completely first, so that the loop around it becomes innermost; SROA after this pass (Pipeline.cpp) makes the
// thread arrays such a loop indexed registers.
// Where LLVM cannot compute the trip count (an unsigned induction with a run-time step may wrap), nothing changes.
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/OptimizationRemarkEmitter.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Instructions.h>
#include <llvm/Transforms/Utils/LoopSimplify.h>
#include <llvm/Transforms/Utils/LoopUtils.h>
#include <llvm/Transforms/Utils/UnrollLoop.h>

#include <cstdlib>
#include <vector>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

unsigned streamingLoopSize(const llvm::Loop& loop, bool forUnrolling) {
  // `#pragma unroll(disable)`, nounroll, or unrolled already
  if (forUnrolling && (llvm::hasUnrollTransformation(&loop) & llvm::TM_Disable)) return 0;
  unsigned size = 0;
  bool streams = false;
  for (const llvm::BasicBlock* bb : loop.blocks())
    for (const llvm::Instruction& i : *bb) {
      ++size;
      if (auto* call = llvm::dyn_cast<llvm::CallBase>(&i); call && call->isConvergent()) return 0;
      if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(&i))
        streams |= ld->getPointerAddressSpace() == kDeviceAS && !loop.isLoopInvariant(ld->getPointerOperand());
    }
  return streams ? size : 0;
}

namespace {

// Copies of a streaming loop's body stay within this many instructions (the loops of MLX's gemv, gemv_t and
// qmv are 100-400 instructions; its Metal-4 GEMM loops thousands).
constexpr unsigned kMaxUnrolledInstructions = 1024;
// Inner loops of at most this many iterations (MLX's "for each of a thread's rows") are unrolled completely so that
// the loop around them becomes the innermost one.
constexpr unsigned kMaxInnerTripCount = 8;

unsigned unrollCount() {
  static const unsigned count = [] {
    const char* s = std::getenv("M2V_UNROLL_STREAMING");
    return s ? unsigned(std::atoi(s)) : 2u;
  }();
  return count;
}

struct Analyses {
  llvm::LoopInfo& li;
  llvm::ScalarEvolution& se;
  llvm::DominatorTree& dt;
  llvm::AssumptionCache& ac;
  llvm::TargetTransformInfo& tti;
  llvm::OptimizationRemarkEmitter& ore;
};

// Unrolls `loop` by `count` (completely when `count` is its trip count, else with a remainder loop for the
// iterations left over); false when LLVM's unroller cannot.
bool unroll(llvm::Loop* loop, unsigned count, bool runtime, Analyses& a) {
  llvm::simplifyLoop(loop, &a.dt, &a.li, &a.se, &a.ac, nullptr, false);
  llvm::formLCSSARecursively(*loop, a.dt, &a.li, &a.se);
  if (!loop->isLoopSimplifyForm() || !loop->getExitingBlock() || loop->getExitingBlock() != loop->getLoopLatch())
    return false;
  llvm::UnrollLoopOptions options{};
  options.Count = count;
  options.Runtime = runtime;
  options.SCEVExpansionBudget = 16;
  return llvm::UnrollLoop(loop, options, &a.li, &a.se, &a.dt, &a.ac, &a.tti, &a.ore, true) !=
         llvm::LoopUnrollResult::Unmodified;
}

}  // namespace

llvm::PreservedAnalyses UnrollStreamingLoopsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  unsigned count = unrollCount();
  if (count < 2) return llvm::PreservedAnalyses::all();
  Analyses a{am.getResult<llvm::LoopAnalysis>(f),          am.getResult<llvm::ScalarEvolutionAnalysis>(f),
             am.getResult<llvm::DominatorTreeAnalysis>(f), am.getResult<llvm::AssumptionAnalysis>(f),
             am.getResult<llvm::TargetIRAnalysis>(f),      am.getResult<llvm::OptimizationRemarkEmitterAnalysis>(f)};
  bool changed = false;
  // Short inner loops of streaming loop nests first.
  std::vector<llvm::Loop*> inner;
  for (llvm::Loop* loop : a.li.getLoopsInPreorder()) {
    unsigned trips = loop->isInnermost() && loop->getParentLoop() && loop->getParentLoop()->getSubLoops().size() == 1
                         ? a.se.getSmallConstantTripCount(loop)
                         : 0;
    unsigned size = trips > 1 && trips <= kMaxInnerTripCount ? streamingLoopSize(*loop) : 0;
    if (size && size * trips <= kMaxUnrolledInstructions) inner.push_back(loop);
  }
  for (llvm::Loop* loop : inner) changed |= unroll(loop, a.se.getSmallConstantTripCount(loop), false, a);

  std::vector<std::pair<llvm::Loop*, unsigned>> streaming;
  for (llvm::Loop* loop : a.li.getLoopsInPreorder()) {
    unsigned size = loop->isInnermost() && a.se.getSmallConstantTripCount(loop) == 0 ? streamingLoopSize(*loop) : 0;
    unsigned n = count;
    while (n > 1 && size * n > kMaxUnrolledInstructions) n /= 2;
    if (size && n > 1) streaming.emplace_back(loop, n);
  }
  for (auto [loop, n] : streaming) changed |= unroll(loop, n, true, a);
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
