// EmulateSimdgroupsPass: a kernel that uses simdgroup or quadgroup functions gets a second body in which Metal's
// 32-lane simdgroups are emulated over whatever subgroup size the device has (threads 32k..32k+31 of the
// threadgroup form simdgroup k; spirv/EmitSimdEmulation.cpp exchanges the operands through workgroup memory). The
// specialization constant kEmulateSimdgroupsSpecId chooses the body when the pipeline is made, so the native body
// stays as it was and pays nothing.
//
// The exchange needs barriers, which every thread of the workgroup must reach together. A simdgroup function that
// only some threads reach (behind a branch on the thread's position, after an early return) is therefore moved into
// control flow all threads share: the region between the divergent branch and the point where its paths meet is
// linearized: every thread runs each of its blocks in turn, instructions with effects only where the thread's own
// path goes through the block, and the simdgroup function with the thread's path as Metal's active-lane mask.
// A kernel where that is impossible (a simdgroup function in a loop whose trip count differs between threads) keeps
// only its native body, and reflection says why (simdgroupEmulationRefused).
#include <llvm/ADT/SetVector.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/PostDominators.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <functional>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

constexpr uint32_t kSimdWidth = 32;

enum class LaneCall { None, Operation, LaneBuiltin };

// What a call is to the emulation: a simdgroup/quadgroup operation (exchanges values), a built-in that names a lane
// or a simdgroup, or neither.
LaneCall laneCallKind(const llvm::CallInst& call, std::string* name = nullptr) {
  const llvm::Function* f = call.getCalledFunction();
  if (!f) return LaneCall::None;
  if (auto n = stdlibIntrinsicName(*f)) {
    if (name) *name = *n;
    if (*n == "simd_lane_id" || *n == "simd_size" || *n == "simd_group_id") return LaneCall::LaneBuiltin;
    if (*n == "simdgroup_barrier" || n->rfind("simd_", 0) == 0 || n->rfind("quad_", 0) == 0) return LaneCall::Operation;
    return LaneCall::None;
  }
  llvm::StringRef fn = f->getName();
  if (fn.starts_with(pseudo::kBuiltinPrefix)) {
    llvm::StringRef which = fn.drop_front(std::strlen(pseudo::kBuiltinPrefix));
    if (which.starts_with("subgroup_") || which == "num_subgroups") {
      if (name) *name = which.str();
      return LaneCall::LaneBuiltin;
    }
  }
  return LaneCall::None;
}

// The vote that keeps a loop going while any thread of the workgroup still runs it (makeTripCountUniform;
// spirv/EmitSimdEmulation.cpp): the same result for every thread.
constexpr const char* kWorkgroupAny = "workgroup_any";

bool isWorkgroupVote(const llvm::Instruction& i) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(&i);
  return call && call->getCalledFunction() &&
         call->getCalledFunction()->getName() == std::string(pseudo::kEmulatedSimdPrefix) + kWorkgroupAny;
}

// Which values and branches of the emulated body differ between the threads of a workgroup. Sources: the thread's
// position, lane-varying results, atomics, thread memory; then everything computed from them, phis where paths
// chosen by a divergent branch meet, and values that leave a loop whose exit differs between threads.
class Divergence {
 public:
  Divergence(const llvm::SetVector<llvm::BasicBlock*>& blocks, llvm::PostDominatorTree& pdt)
      : blocks_(blocks), pdt_(pdt) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (llvm::BasicBlock* bb : blocks_)
        for (llvm::Instruction& i : *bb)
          if (!divergent_.count(&i) && becomesDivergent(i)) {
            divergent_.insert(&i);
            changed = true;
          }
      for (llvm::BasicBlock* bb : blocks_) {
        auto* br = llvm::dyn_cast<llvm::BranchInst>(bb->getTerminator());
        bool branchDiverges = br && br->isConditional() && divergent_.count(br->getCondition());
        auto* sw = llvm::dyn_cast<llvm::SwitchInst>(bb->getTerminator());
        branchDiverges |= sw && divergent_.count(sw->getCondition());
        if (branchDiverges && !regions_.count(bb)) {
          regions_[bb] = regionOf(bb);
          changed = true;
        }
      }
    }
  }

  // Blocks some threads run and others skip: those between a divergent branch and where its paths meet.
  bool inDivergentRegion(const llvm::BasicBlock* bb) const {
    for (auto& [branch, region] : regions_)
      if (region.count(bb)) return true;
    return false;
  }
  const std::map<llvm::BasicBlock*, llvm::SmallPtrSet<llvm::BasicBlock*, 16>>& regions() const { return regions_; }
  bool isDivergent(const llvm::Value* v) const { return divergent_.count(v); }

 private:
  // The blocks from `branch` to where its paths meet (its immediate post-dominator); records where paths from two
  // of its successors come together (the phis there pick by the thread's path).
  llvm::SmallPtrSet<llvm::BasicBlock*, 16> regionOf(llvm::BasicBlock* branch) {
    llvm::SmallPtrSet<llvm::BasicBlock*, 16> region;
    llvm::DomTreeNode* node = pdt_.getNode(branch);
    llvm::BasicBlock* join = node && node->getIDom() ? node->getIDom()->getBlock() : nullptr;
    llvm::DenseMap<llvm::BasicBlock*, unsigned> reachedFrom;  // how many of the branch's successors reach a block
    llvm::SmallPtrSet<llvm::BasicBlock*, 4> successors(llvm::succ_begin(branch), llvm::succ_end(branch));
    for (llvm::BasicBlock* start : successors) {
      llvm::SmallPtrSet<llvm::BasicBlock*, 16> seen;
      std::vector<llvm::BasicBlock*> work{start};
      while (!work.empty()) {
        llvm::BasicBlock* bb = work.back();
        work.pop_back();
        if (bb == join || !seen.insert(bb).second) continue;
        region.insert(bb);
        ++reachedFrom[bb];
        for (llvm::BasicBlock* s : llvm::successors(bb)) work.push_back(s);
      }
    }
    auto& merges = merges_[branch];
    if (join) merges.insert(join);
    for (auto& [bb, count] : reachedFrom)
      if (count > 1) merges.insert(bb);
    return region;
  }

  bool becomesDivergent(llvm::Instruction& i) {
    if (isWorkgroupVote(i)) return false;
    for (llvm::Value* op : i.operands())
      if (divergent_.count(op)) return true;
    if (llvm::isa<llvm::PHINode>(i))
      for (auto& [branch, merges] : merges_)
        if (merges.count(i.getParent())) return true;
    // A value made inside a divergent region and used past it: its last definition differs between threads.
    for (auto& [branch, region] : regions_)
      if (region.count(i.getParent()))
        for (llvm::User* u : i.users())
          if (auto* ui = llvm::dyn_cast<llvm::Instruction>(u); ui && !region.count(ui->getParent())) return true;
    if (llvm::isa<llvm::AtomicRMWInst, llvm::AtomicCmpXchgInst>(i)) return true;
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&i)) {
      const llvm::Value* object = llvm::getUnderlyingObject(load->getPointerOperand());
      return llvm::isa<llvm::AllocaInst>(object) || load->getPointerAddressSpace() == kGenericAS;
    }
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(&i)) {
      std::string name;
      switch (laneCallKind(*call, &name)) {
        case LaneCall::Operation:
          return true;
        case LaneCall::LaneBuiltin:
          return name != "simd_size" && name != "subgroup_size" && name != "num_subgroups";
        case LaneCall::None:
          break;
      }
      const llvm::Function* f = call->getCalledFunction();
      if (!f) return true;
      llvm::StringRef fn = f->getName();
      if (fn.starts_with(pseudo::kBuiltinPrefix))
        return fn.ends_with("local_invocation_index") || fn.ends_with("local_invocation_id");
      if (auto n = stdlibIntrinsicName(*f)) return n->find("atomic") != std::string::npos;
      return !f->isIntrinsic() && !fn.starts_with("m2v.") && !call->doesNotAccessMemory();
    }
    return false;
  }

  const llvm::SetVector<llvm::BasicBlock*>& blocks_;
  llvm::PostDominatorTree& pdt_;
  llvm::DenseSet<const llvm::Value*> divergent_;
  std::map<llvm::BasicBlock*, llvm::SmallPtrSet<llvm::BasicBlock*, 16>> regions_;
  std::map<llvm::BasicBlock*, llvm::SmallPtrSet<llvm::BasicBlock*, 4>> merges_;
};

// Whether a thread may run `i` whatever path it takes: no effects, no memory read, and it always returns.
bool runsForEveryThread(llvm::Instruction& i) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(&i);
  return !i.mayHaveSideEffects() && !i.mayReadFromMemory() &&
         (llvm::isSafeToSpeculativelyExecute(&i) ||
          (call && call->doesNotAccessMemory() && call->willReturn() && !call->isConvergent()));
}

bool isLaneOperation(const llvm::Instruction& i) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(&i);
  return call && laneCallKind(*call) == LaneCall::Operation;
}

// A threadgroup barrier: in linearized code every thread reaches it, so it runs unguarded -- the synchronization a
// kernel that calls it behind a branch on the thread's position (MLX's gemv) means.
bool isThreadgroupBarrier(const llvm::Instruction& i) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(&i);
  auto name = call && call->getCalledFunction() ? stdlibIntrinsicName(*call->getCalledFunction()) : std::nullopt;
  return name && *name == "threadgroup_barrier";
}

// Moves `i` under `if (p)`, in place (its block is split around it); where it did not run its result is poison,
// which that thread never uses.
void guardInPlace(llvm::Instruction& i, llvm::Value* p) {
  llvm::Instruction* thenTerm = llvm::SplitBlockAndInsertIfThen(p, &i, false);
  llvm::BasicBlock* head = thenTerm->getParent()->getSinglePredecessor();
  llvm::BasicBlock* tail = i.getParent();
  thenTerm->getParent()->setName("guarded");
  tail->setName("linear");
  i.moveBefore(thenTerm->getIterator());
  if (i.getType()->isVoidTy()) return;
  llvm::PHINode* merged = llvm::PHINode::Create(i.getType(), 2, "", tail->begin());
  i.replaceUsesWithIf(merged, [&](llvm::Use& u) { return u.getUser() != merged; });
  merged->addIncoming(&i, thenTerm->getParent());
  merged->addIncoming(llvm::PoisonValue::get(i.getType()), head);
}

// Linearizes the region of divergent branch `branch` (blocks `reach`): the region's blocks run one after another
// for every thread, in topological order; each block's instructions with effects run under the block's predicate
// (whether this thread's path goes through it), phis become selects on the incoming edges' predicates, and
// emulated lane operations get the predicate as their active mask. A loop inside the region with one exit block
// stays a loop: without lane operations it is entered under its header's predicate; with them, every thread runs
// it (its instructions with effects under the predicate), which needs a trip count that is the same for every
// thread and that the threads that skip it can compute. Returns an empty string, or why the region cannot be
// linearized (then nothing was changed).
std::string linearize(llvm::BasicBlock* branch, const llvm::SmallPtrSet<llvm::BasicBlock*, 16>& reach,
                      llvm::BasicBlock* skippedBlock, const Divergence& divergence, llvm::DominatorTree& dt,
                      llvm::LoopInfo& loops, llvm::DenseMap<llvm::CallInst*, llvm::Value*>& activeOf) {
  // The region proper: what only the branch leads to. Where its paths meet other code first, the chain ends in a
  // branch to each place the region's edges leave it for (still divergent there, but past the lane operation).
  llvm::SmallPtrSet<llvm::BasicBlock*, 16> region;
  for (llvm::BasicBlock* bb : reach)
    if (dt.dominates(branch, bb)) region.insert(bb);
  if (!region.count(skippedBlock)) return "the simdgroup function where other paths join it";
  // Nodes: a block, or the outermost loop that lies wholly in the region (its header stands for it).
  auto loopOf = [&](llvm::BasicBlock* bb) -> llvm::Loop* {
    llvm::Loop* outer = nullptr;
    for (llvm::Loop* l = loops.getLoopFor(bb); l && region.count(l->getHeader()); l = l->getParentLoop()) outer = l;
    return outer;
  };
  // Predecessors as they were: linearizing redirects a loop's exit edges.
  llvm::DenseMap<llvm::BasicBlock*, std::vector<llvm::BasicBlock*>> predecessorsOf;
  for (llvm::BasicBlock* bb : region) {
    predecessorsOf[bb].assign(llvm::pred_begin(bb), llvm::pred_end(bb));
    for (llvm::BasicBlock* pred : predecessorsOf[bb])
      if (pred != branch && !region.count(pred)) return "a block entered from outside it";
  }
  // Loops that every thread runs: those with a lane operation or a threadgroup barrier.
  llvm::SmallPtrSet<llvm::Loop*, 4> runByAll;
  for (llvm::BasicBlock* bb : region)
    if (llvm::Loop* l = loopOf(bb);
        l && llvm::any_of(*bb, [](auto& i) { return isLaneOperation(i) || isThreadgroupBarrier(i); }))
      runByAll.insert(l);
  auto outsideIncomings = [](llvm::PHINode& phi, llvm::Loop* l) {
    return llvm::count_if(phi.blocks(), [&](llvm::BasicBlock* from) { return !l->contains(from); });
  };
  // Whether a thread that skips the region's blocks still computes `v` as those that run them do: values from
  // before the branch, and what is computed from them without effects (outside loops entered under a predicate).
  llvm::DenseMap<const llvm::Value*, bool> computable;
  std::function<bool(llvm::Value*)> computedByAll = [&](llvm::Value* v) {
    auto* i = llvm::dyn_cast<llvm::Instruction>(v);
    if (!i || !region.count(i->getParent())) return true;
    if (auto it = computable.find(i); it != computable.end()) return it->second;
    computable[i] = true;  // a cycle through a loop's phis: holds if every other input holds
    llvm::Loop* l = loopOf(i->getParent());
    bool ok = !isLaneOperation(*i) && (!l || runByAll.count(l));
    if (isWorkgroupVote(*i)) return computable[i] = ok;  // every thread calls it and gets the same answer
    if (auto* phi = llvm::dyn_cast<llvm::PHINode>(i))
      ok &= l && (phi->getParent() != l->getHeader() || outsideIncomings(*phi, l) == 1);
    else
      ok &= runsForEveryThread(*i);
    for (llvm::Value* op : i->operands()) ok = ok && computedByAll(op);
    return computable[i] = ok;
  };
  llvm::DenseMap<llvm::BasicBlock*, llvm::BasicBlock*> nodeOf;
  for (llvm::BasicBlock* bb : region) {
    if (!llvm::isa<llvm::BranchInst>(bb->getTerminator())) return "a block ends in neither a branch nor a return";
    llvm::Loop* l = loopOf(bb);
    if (!l) {
      nodeOf[bb] = bb;
      continue;
    }
    for (llvm::BasicBlock* lb : l->blocks())
      if (!region.count(lb)) return "a loop the branch leaves";
    if (!l->getUniqueExitBlock()) return "a loop with several exits";
    // A loop every thread runs leaves where every thread goes, on a condition every thread computes alike.
    if (runByAll.count(l) && l->isLoopExiting(bb)) {
      auto* br = llvm::cast<llvm::BranchInst>(bb->getTerminator());
      bool allThreadsThere = llvm::none_of(divergence.regions(), [&](const auto& branchRegion) {
        return l->contains(branchRegion.first) && branchRegion.second.count(bb);
      });
      if (!allThreadsThere || divergence.isDivergent(br->getCondition()))
        return "a simdgroup function in a loop whose trip count differs between threads";
      if (!computedByAll(br->getCondition()))
        return "a simdgroup function in a loop whose trip count the threads that skip it do not compute";
    }
    nodeOf[bb] = l->getHeader();
  }
  // Successor nodes of a node: for a loop, its exit block.
  auto nodeSuccessors = [&](llvm::BasicBlock* node) {
    std::vector<llvm::BasicBlock*> out;
    if (llvm::Loop* l = loopOf(node))
      out.push_back(l->getUniqueExitBlock());
    else
      out.assign(llvm::succ_begin(node), llvm::succ_end(node));
    return out;
  };
  // Topological order of the nodes (Kahn over edges between them).
  std::vector<llvm::BasicBlock*> order;
  llvm::DenseMap<llvm::BasicBlock*, unsigned> pending;
  llvm::SmallPtrSet<llvm::BasicBlock*, 16> nodes;
  for (auto& [bb, node] : nodeOf) nodes.insert(node);
  for (llvm::BasicBlock* node : nodes)
    for (llvm::BasicBlock* s : nodeSuccessors(node))
      if (nodes.count(s)) ++pending[s];
  std::vector<llvm::BasicBlock*> ready;
  for (llvm::BasicBlock* node : nodes)
    if (!pending[node]) ready.push_back(node);
  while (!ready.empty()) {
    llvm::BasicBlock* node = ready.back();
    ready.pop_back();
    order.push_back(node);
    for (llvm::BasicBlock* s : nodeSuccessors(node))
      if (nodes.count(s) && --pending[s] == 0) ready.push_back(s);
  }
  if (order.size() != nodes.size()) return "a loop with a simdgroup function or one the branch leaves";

  llvm::LLVMContext& ctx = branch->getContext();
  llvm::Function* f = branch->getParent();
  // The condition under which a thread goes from `from` to `to`, given it is in `from`.
  auto edgeCondition = [&](llvm::IRBuilder<>& b, llvm::BasicBlock* from, llvm::BasicBlock* to) -> llvm::Value* {
    auto* br = llvm::cast<llvm::BranchInst>(from->getTerminator());
    if (!br->isConditional() || br->getSuccessor(0) == br->getSuccessor(1)) return b.getTrue();
    return br->getSuccessor(0) == to ? br->getCondition() : b.CreateNot(br->getCondition());
  };

  // The linear chain: starts in a new block after `branch`'s own instructions.
  llvm::BasicBlock* chain = llvm::BasicBlock::Create(ctx, "linear", f);
  llvm::BasicBlock* head = chain;
  llvm::IRBuilder<> b(chain);
  llvm::DenseMap<std::pair<llvm::BasicBlock*, llvm::BasicBlock*>, llvm::Value*> edge;
  // Predicates of `branch`'s edges (the branch is in uniform control flow: every thread is there).
  {
    llvm::IRBuilder<> at(branch->getTerminator());
    for (llvm::BasicBlock* s : llvm::successors(branch)) edge[{branch, s}] = edgeCondition(at, branch, s);
  }
  // The value of `phi` for this thread: its incoming value on the edge the thread took (selected among the edges
  // from `from` blocks); the incomings from those blocks are then removed.
  auto selectIncoming = [&](llvm::PHINode& phi, const std::function<bool(llvm::BasicBlock*)>& from) {
    llvm::Value* v = llvm::PoisonValue::get(phi.getType());
    for (unsigned k = 0; k < phi.getNumIncomingValues(); ++k)
      if (from(phi.getIncomingBlock(k)))
        if (auto it = edge.find({phi.getIncomingBlock(k), phi.getParent()}); it != edge.end())
          v = b.CreateSelect(it->second, phi.getIncomingValue(k), v);
    for (unsigned k = phi.getNumIncomingValues(); k-- > 0;)
      if (from(phi.getIncomingBlock(k))) phi.removeIncomingValue(k, false);
    return v;
  };
  std::vector<llvm::BasicBlock*> moved;  // blocks whose instructions went into the chain
  // Instructions with effects, and the predicate they run under: guarded once the chain and the loops have their
  // final edges (splitting their blocks last, the exit edges and the values used later follow the splits).
  std::vector<std::pair<llvm::Instruction*, llvm::Value*>> toGuard;
  for (llvm::BasicBlock* node : order) {
    // The node's predicate: any incoming edge taken.
    llvm::Value* p = b.getFalse();
    llvm::Loop* loop = loopOf(node);
    for (llvm::BasicBlock* pred : predecessorsOf[node])
      if (loop && loop->contains(pred))
        continue;
      else if (auto it = edge.find({pred, node}); it != edge.end())
        p = b.CreateOr(p, it->second);

    if (loop) {
      // The loop stays a loop, its exits continue the chain. Without lane operations it is entered under p; with
      // them every thread runs it (the same trip count), its instructions with effects under p.
      bool everyThread = runByAll.count(loop);
      for (llvm::BasicBlock* lb : everyThread ? loop->blocks() : llvm::ArrayRef<llvm::BasicBlock*>{})
        for (llvm::Instruction& i : *lb) {
          if (isLaneOperation(i)) {
            activeOf[llvm::cast<llvm::CallInst>(&i)] = p;
          } else if (isWorkgroupVote(i)) {  // the threads off the loop's path do not keep it going
            llvm::Value* stays = i.getOperand(0);
            i.setOperand(0, llvm::SelectInst::Create(p, stays, llvm::ConstantInt::getFalse(ctx), "", i.getIterator()));
          } else if (auto* br = llvm::dyn_cast<llvm::BranchInst>(&i); br && br->isConditional()) {
            // Branches inside the loop: a thread off the path may branch on a value it did not compute.
            if (!loop->isLoopExiting(lb))
              br->setCondition(new llvm::FreezeInst(br->getCondition(), "", br->getIterator()));
          } else if (!i.isTerminator() && !llvm::isa<llvm::PHINode>(i) && !runsForEveryThread(i) &&
                     !isThreadgroupBarrier(i)) {
            toGuard.emplace_back(&i, p);
          }
        }
      auto outside = [&](llvm::BasicBlock* bb) { return !loop->contains(bb); };
      for (llvm::PHINode& phi : node->phis()) {
        llvm::Value* entry = nullptr;
        if (everyThread && outsideIncomings(phi, loop) == 1)  // computed by every thread (computedByAll)
          for (unsigned k = 0; k < phi.getNumIncomingValues(); ++k)
            if (outside(phi.getIncomingBlock(k))) entry = phi.getIncomingValue(k);
        if (entry) phi.removeIncomingValue(llvm::find_if(phi.blocks(), outside) - phi.block_begin(), false);
        phi.addIncoming(entry ? entry : selectIncoming(phi, outside), chain);
      }
      llvm::BasicBlock* exit = loop->getUniqueExitBlock();
      llvm::SmallVector<llvm::BasicBlock*, 4> exiting;
      loop->getExitingBlocks(exiting);
      llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx, "linear", f);
      if (everyThread)
        b.CreateBr(node);
      else
        b.CreateCondBr(p, node, after);
      for (llvm::BasicBlock* x : exiting) x->getTerminator()->replaceSuccessorWith(exit, after);
      b.SetInsertPoint(after);
      // Which exit edge the thread took, and the loop's values, where the chain goes on.
      for (llvm::BasicBlock* x : exiting) {
        llvm::PHINode* took = b.CreatePHI(b.getInt1Ty(), 0);
        for (llvm::BasicBlock* from : llvm::predecessors(after)) took->addIncoming(b.getInt1(from == x), from);
        edge[{x, exit}] = everyThread ? b.CreateAnd(p, took) : took;
      }
      for (llvm::BasicBlock* lb : loop->blocks())
        for (llvm::Instruction& i : *lb) {
          bool usedOutside = llvm::any_of(i.users(), [&](llvm::User* u) {
            auto* ui = llvm::cast<llvm::Instruction>(u);
            return !loop->contains(ui->getParent()) && ui->getParent() != after;
          });
          if (!usedOutside) continue;
          llvm::PHINode* out = llvm::PHINode::Create(i.getType(), 0, "", after->getFirstNonPHIIt());
          for (llvm::BasicBlock* from : llvm::predecessors(after))
            out->addIncoming(loop->contains(from) ? static_cast<llvm::Value*>(&i) : llvm::PoisonValue::get(i.getType()),
                             from);
          i.replaceUsesWithIf(out, [&](llvm::Use& u) {
            auto* ui = llvm::cast<llvm::Instruction>(u.getUser());
            return !loop->contains(ui->getParent()) && ui->getParent() != after;
          });
        }
      chain = after;
      continue;
    }

    llvm::BasicBlock* bb = node;
    moved.push_back(bb);
    for (llvm::PHINode& phi : llvm::make_early_inc_range(bb->phis())) {
      phi.replaceAllUsesWith(selectIncoming(phi, [](llvm::BasicBlock*) { return true; }));
      phi.eraseFromParent();
    }
    // The block's instructions: pure ones run for everyone, the rest under the predicate.
    llvm::Instruction* term = bb->getTerminator();
    for (llvm::Instruction& i : llvm::make_early_inc_range(*bb)) {
      if (&i == term) break;
      if (isLaneOperation(i)) {
        // Within a loop that every thread runs, the lane is active where it is on the loop's path too.
        llvm::Value*& active = activeOf[llvm::cast<llvm::CallInst>(&i)];
        active = active ? b.CreateAnd(active, p) : p;
        i.moveBefore(*chain, chain->end());
        continue;
      }
      if (runsForEveryThread(i) || isThreadgroupBarrier(i)) {
        i.moveBefore(*chain, chain->end());
        continue;
      }
      i.moveBefore(*chain, chain->end());
      toGuard.emplace_back(&i, p);
    }
    // Edge predicates out of this block.
    for (llvm::BasicBlock* s : llvm::successors(bb)) edge[{bb, s}] = b.CreateAnd(p, edgeCondition(b, bb, s));
  }
  // Where the region's edges leave it: each target's phis select the edge the thread took, and the chain ends in a
  // cascade of branches, one per target.
  auto fromRegion = [&](llvm::BasicBlock* from) { return from == branch || region.count(from); };
  llvm::SetVector<llvm::BasicBlock*> exits;
  for (auto& [fromTo, taken] : edge)
    if (!region.count(fromTo.second)) exits.insert(fromTo.second);
  std::vector<std::pair<llvm::BasicBlock*, llvm::Value*>> cascade;  // target, whether this thread goes there
  for (llvm::BasicBlock* exit : exits) {
    llvm::Value* goes = b.getFalse();
    for (auto& [fromTo, taken] : edge)
      if (fromTo.second == exit) goes = b.CreateOr(goes, taken);
    cascade.emplace_back(exit, goes);
  }
  std::vector<std::pair<llvm::PHINode*, llvm::Value*>> exitValues;
  for (llvm::BasicBlock* exit : exits)
    for (llvm::PHINode& phi : exit->phis()) exitValues.emplace_back(&phi, selectIncoming(phi, fromRegion));
  for (size_t k = 0; k < cascade.size(); ++k) {
    llvm::BasicBlock* from = b.GetInsertBlock();
    if (k + 1 == cascade.size()) {
      b.CreateBr(cascade[k].first);
    } else {
      llvm::BasicBlock* next = llvm::BasicBlock::Create(ctx, "linear.exit", f);
      b.CreateCondBr(cascade[k].second, cascade[k].first, next);
      b.SetInsertPoint(next);
    }
    for (auto& [phi, v] : exitValues)
      if (phi->getParent() == cascade[k].first) phi->addIncoming(v, from);
  }
  // `branch` now enters the chain; the moved blocks (only their terminators are left) go.
  branch->getTerminator()->eraseFromParent();
  llvm::BranchInst::Create(head, branch);
  for (llvm::BasicBlock* bb : moved) bb->dropAllReferences();
  for (llvm::BasicBlock* bb : moved) bb->eraseFromParent();
  for (auto& [i, p] : toGuard) guardInPlace(*i, p);
  return "";
}

// Makes loop `l`, whose threads leave it at different times, run the same number of times for every thread of the
// workgroup: a new header H runs the old body only for threads still in the loop (`alive`), every back edge and
// every exit edge goes to a vote block V, and V loops back while any thread of the workgroup is alive. What the
// loop hands to the code after it (values used there, the exit block's phis) is captured in V on the thread's own
// exit edge. The threads that left still go around, as inactive lanes, so each simdgroup function in the body is
// reached by the whole workgroup once the body is linearized. Returns an empty string, or why not (then nothing
// was changed).
std::string makeTripCountUniform(llvm::Loop* l) {
  llvm::BasicBlock* header = l->getHeader();
  llvm::BasicBlock* exit = l->getUniqueExitBlock();
  if (!exit) return "several exits";
  llvm::Function* f = header->getParent();
  llvm::LLVMContext& ctx = f->getContext();
  std::vector<llvm::BasicBlock*> outsidePreds, latches, exiting;
  for (llvm::BasicBlock* pred : llvm::predecessors(header))
    (l->contains(pred) ? latches : outsidePreds).push_back(pred);
  for (llvm::BasicBlock* bb : l->blocks()) {
    if (!llvm::isa<llvm::BranchInst>(bb->getTerminator())) return "a block ends in neither a branch nor a return";
    unsigned toExit = llvm::count(llvm::successors(bb), exit), toHeader = llvm::count(llvm::successors(bb), header);
    if (toExit > 1 || toHeader > 1) return "a branch with both of its edges to one block";
    if (toExit) exiting.push_back(bb);
  }
  if (outsidePreds.size() != 1) return "several entries";

  llvm::BasicBlock* entry = outsidePreds[0];
  llvm::BasicBlock* newHeader = llvm::BasicBlock::Create(ctx, "uniform.header", f, header);
  llvm::BasicBlock* vote = llvm::BasicBlock::Create(ctx, "uniform.vote", f);
  llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx, "uniform.after", f);
  llvm::Type* i1 = llvm::Type::getInt1Ty(ctx);
  llvm::PHINode* alive = llvm::PHINode::Create(i1, 2, "alive", newHeader);
  llvm::PHINode* aliveNext = llvm::PHINode::Create(i1, 0, "alive.next", vote);
  // One block on each back edge and each exit edge, so that the vote's phis see which edge a thread took.
  auto splitTo = [&](llvm::BasicBlock* from, llvm::BasicBlock* to, const char* name) {
    llvm::BasicBlock* edgeBlock = llvm::BasicBlock::Create(ctx, name, f);
    from->getTerminator()->replaceSuccessorWith(to, edgeBlock);
    llvm::BranchInst::Create(vote, edgeBlock);
    return edgeBlock;
  };
  std::vector<std::pair<llvm::BasicBlock*, llvm::BasicBlock*>> backEdges, exitEdges;  // (from, edge block)
  for (llvm::BasicBlock* latch : latches) backEdges.emplace_back(latch, splitTo(latch, header, "uniform.latch"));
  for (llvm::BasicBlock* x : exiting) exitEdges.emplace_back(x, splitTo(x, exit, "uniform.exit"));
  // The vote's inputs: per back edge the loop's value, per exit edge the value leaving, from H the value kept.
  auto voteValue = [&](llvm::Type* type, const std::function<llvm::Value*(llvm::BasicBlock*)>& onBackEdge,
                       const std::function<llvm::Value*(llvm::BasicBlock*)>& onExit, llvm::Value* kept,
                       const llvm::Twine& name) {
    llvm::PHINode* phi = llvm::PHINode::Create(type, 0, name, vote->getFirstNonPHIIt());
    for (auto& [latch, edgeBlock] : backEdges) phi->addIncoming(onBackEdge(latch), edgeBlock);
    for (auto& [x, edgeBlock] : exitEdges) phi->addIncoming(onExit(x), edgeBlock);
    phi->addIncoming(kept, newHeader);
    return phi;
  };
  for (auto& [latch, edgeBlock] : backEdges) aliveNext->addIncoming(llvm::ConstantInt::getTrue(ctx), edgeBlock);
  for (auto& [x, edgeBlock] : exitEdges) aliveNext->addIncoming(llvm::ConstantInt::getFalse(ctx), edgeBlock);
  aliveNext->addIncoming(llvm::ConstantInt::getFalse(ctx), newHeader);
  alive->addIncoming(llvm::ConstantInt::getTrue(ctx), entry);
  alive->addIncoming(aliveNext, vote);
  // The old header's phis move to H: entered from before the loop or from the vote.
  for (llvm::PHINode& phi : llvm::make_early_inc_range(header->phis())) {
    llvm::PHINode* moved = llvm::PHINode::Create(phi.getType(), 2, phi.getName() + ".uniform", alive->getIterator());
    moved->addIncoming(phi.getIncomingValueForBlock(entry), entry);
    llvm::PHINode* next = voteValue(
        phi.getType(), [&](llvm::BasicBlock* latch) { return phi.getIncomingValueForBlock(latch); },
        [&](llvm::BasicBlock*) { return moved; }, moved, phi.getName() + ".next");
    moved->addIncoming(next, vote);
    phi.replaceAllUsesWith(moved);
    phi.eraseFromParent();
  }
  // What leaves the loop: the exit block's phis and values used past the loop, captured on the thread's exit edge.
  std::vector<llvm::Instruction*> usedOutside;
  for (llvm::BasicBlock* bb : l->blocks())
    for (llvm::Instruction& i : *bb)
      if (llvm::any_of(i.users(), [&](llvm::User* u) {
            auto* ui = llvm::cast<llvm::Instruction>(u);
            return !l->contains(ui->getParent()) && ui->getParent() != vote &&
                   !(llvm::isa<llvm::PHINode>(ui) && ui->getParent() == exit);
          }))
        usedOutside.push_back(&i);
  auto capture = [&](llvm::Type* type, const std::function<llvm::Value*(llvm::BasicBlock*)>& leaving,
                     const llvm::Twine& name) {
    llvm::PHINode* kept = llvm::PHINode::Create(type, 2, name + ".kept", newHeader->getFirstNonPHIIt());
    kept->addIncoming(llvm::PoisonValue::get(type), entry);
    llvm::PHINode* next = voteValue(
        type, [&](llvm::BasicBlock*) { return kept; }, leaving, kept, name + ".left");
    kept->addIncoming(next, vote);
    return next;
  };
  for (llvm::Instruction* i : usedOutside) {
    llvm::PHINode* left = capture(
        i->getType(), [&](llvm::BasicBlock*) { return i; }, i->getName());
    i->replaceUsesWithIf(left, [&](llvm::Use& u) {
      auto* ui = llvm::cast<llvm::Instruction>(u.getUser());
      return !l->contains(ui->getParent()) && ui->getParent() != vote && ui != left &&
             !(llvm::isa<llvm::PHINode>(ui) && ui->getParent() == exit);
    });
  }
  for (llvm::PHINode& phi : exit->phis()) {
    llvm::PHINode* left = capture(
        phi.getType(), [&](llvm::BasicBlock* x) { return phi.getIncomingValueForBlock(x); }, phi.getName());
    for (auto& [x, edgeBlock] : exitEdges) phi.removeIncomingValue(x, false);
    phi.addIncoming(left, after);
  }
  // H: the body for the threads still in the loop; V: around again while any thread of the workgroup is.
  entry->getTerminator()->replaceSuccessorWith(header, newHeader);
  llvm::BranchInst::Create(header, vote, alive, newHeader);
  llvm::IRBuilder<> b(vote);
  llvm::Module& m = *f->getParent();
  llvm::FunctionCallee voteFn = m.getOrInsertFunction(std::string(pseudo::kEmulatedSimdPrefix) + kWorkgroupAny, i1, i1);
  llvm::CallInst* any = b.CreateCall(voteFn, {aliveNext}, "any.alive");
  any->setDebugLoc(header->getTerminator()->getDebugLoc());
  b.CreateCondBr(any, newHeader, after);
  llvm::BranchInst::Create(exit, after);
  return "";
}

// The blocks reachable from `entry`, in depth-first order.
llvm::SetVector<llvm::BasicBlock*> reachableFrom(llvm::BasicBlock* entry) {
  llvm::SetVector<llvm::BasicBlock*> seen;
  std::vector<llvm::BasicBlock*> work{entry};
  while (!work.empty()) {
    llvm::BasicBlock* bb = work.back();
    work.pop_back();
    if (!seen.insert(bb)) continue;
    for (llvm::BasicBlock* s : llvm::successors(bb)) work.push_back(s);
  }
  return seen;
}

}  // namespace

llvm::PreservedAnalyses EmulateSimdgroupsPass::run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
  if (f.getName() != "main") return llvm::PreservedAnalyses::all();
  bool usesLanes = false;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& i : bb)
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(&i)) {
        usesLanes |= laneCallKind(*call) != LaneCall::None;
        const llvm::Function* callee = call->getCalledFunction();
        if (callee && !callee->isDeclaration()) {
          reflection.simdgroupEmulationRefused = kernelLocation(i) + ": a call of a function not inlined";
          return llvm::PreservedAnalyses::all();
        }
      }
  if (!usesLanes) return llvm::PreservedAnalyses::all();

  llvm::LLVMContext& ctx = f.getContext();
  llvm::Module& m = *f.getParent();
  llvm::Type* i1 = llvm::Type::getInt1Ty(ctx);
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);

  // The emulated body: a copy of every block; thread memory (allocas) is shared, the bodies never both run.
  llvm::BasicBlock* oldEntry = &f.getEntryBlock();
  llvm::BasicBlock* dispatch = llvm::BasicBlock::Create(ctx, "dispatch", &f, oldEntry);
  for (llvm::Instruction& i : llvm::make_early_inc_range(*oldEntry))
    if (llvm::isa<llvm::AllocaInst>(i)) i.moveBefore(*dispatch, dispatch->end());
  std::vector<llvm::BasicBlock*> originals;
  for (llvm::BasicBlock& bb : f)
    if (&bb != dispatch) originals.push_back(&bb);
  llvm::ValueToValueMapTy vmap;
  llvm::SetVector<llvm::BasicBlock*> emulated;
  for (llvm::BasicBlock* bb : originals) {
    llvm::BasicBlock* copy = llvm::CloneBasicBlock(bb, vmap, ".emu", &f);
    vmap[bb] = copy;
    emulated.insert(copy);
  }
  llvm::SmallVector<llvm::BasicBlock*, 0> copies(emulated.begin(), emulated.end());
  llvm::remapInstructionsInBlocks(copies, vmap);
  llvm::IRBuilder<> b(dispatch);
  llvm::FunctionCallee specFn = m.getOrInsertFunction(std::string(pseudo::kSpecPrefix) + "i1", i1, i32);
  llvm::cast<llvm::Function>(specFn.getCallee())->setDoesNotAccessMemory();
  llvm::CallInst* emulate = b.CreateCall(specFn, {b.getInt32(kEmulateSimdgroupsSpecId)});
  auto* emulatedEntry = llvm::cast<llvm::BasicBlock>(vmap[oldEntry]);
  b.CreateCondBr(emulate, emulatedEntry, oldEntry);

  auto giveUp = [&](const std::string& why) {
    reflection.simdgroupEmulationRefused = why;
    dispatch->getTerminator()->eraseFromParent();
    emulate->eraseFromParent();
    llvm::BranchInst::Create(oldEntry, dispatch);
    for (llvm::BasicBlock* bb : emulated) bb->dropAllReferences();
    for (llvm::BasicBlock* bb : emulated) bb->eraseFromParent();
    return llvm::PreservedAnalyses::none();
  };

  // Phis that merge one value from every path (left by jump threading) are that value: the same for every thread.
  for (bool changed = true; changed;) {
    changed = false;
    for (llvm::BasicBlock* bb : emulated)
      for (llvm::PHINode& phi : llvm::make_early_inc_range(bb->phis()))
        if (llvm::Value* same = phi.hasConstantValue()) {
          phi.replaceAllUsesWith(same);
          phi.eraseFromParent();
          changed = true;
        }
  }
  // Loops that threads leave at different times with a lane operation inside: every thread goes around until the
  // last one leaves (makeTripCountUniform), innermost first.
  for (bool changed = true; changed;) {
    changed = false;
    llvm::PostDominatorTree pdt(f);
    Divergence divergence(emulated, pdt);
    llvm::DominatorTree dt(f);
    llvm::LoopInfo loops(dt);
    llvm::SmallVector<llvm::Loop*, 4> order = loops.getLoopsInPreorder();
    for (auto it = order.rbegin(); it != order.rend() && !changed; ++it) {  // inner loops first
      llvm::Loop* l = *it;
      if (!emulated.count(l->getHeader())) continue;
      bool lanes = false, divergentExit = false;
      for (llvm::BasicBlock* bb : l->blocks()) {
        lanes |= llvm::any_of(*bb, isLaneOperation);
        auto* br = llvm::dyn_cast<llvm::BranchInst>(bb->getTerminator());
        divergentExit |=
            l->isLoopExiting(bb) && br && br->isConditional() && divergence.isDivergent(br->getCondition());
      }
      if (!lanes || !divergentExit) continue;
      if (std::string why = makeTripCountUniform(l); !why.empty()) {
        llvm::Instruction* op = nullptr;
        for (llvm::BasicBlock* bb : l->blocks())
          for (llvm::Instruction& i : *bb)
            if (!op && isLaneOperation(i)) op = &i;
        std::string name;
        laneCallKind(*llvm::cast<llvm::CallInst>(op), &name);
        return giveUp(kernelLocation(*op) + ": " + name + " in a loop that threads leave at different times, with " +
                      why);
      }
      changed = true;
      emulated = reachableFrom(emulatedEntry);
    }
  }

  // Lane operations some threads skip: linearize the outermost divergent region around them, until none is left.
  // Then threadgroup barriers some threads skip (Vulkan leaves those undefined; Apple's GPUs synchronize the
  // threadgroup): where the region can be linearized every thread reaches them, else they stay as they are.
  llvm::DenseMap<llvm::CallInst*, llvm::Value*> activeOf;
  llvm::SmallPtrSet<llvm::Instruction*, 4> barriersLeft;
  for (;;) {
    llvm::PostDominatorTree pdt(f);
    Divergence divergence(emulated, pdt);
    llvm::Instruction* skipped = nullptr;
    for (bool barriers : {false, true})
      for (llvm::BasicBlock* bb : emulated)
        for (llvm::Instruction& i : *bb)
          if (!skipped && (barriers ? isThreadgroupBarrier(i) && !barriersLeft.count(&i) : isLaneOperation(i)) &&
              divergence.inDivergentRegion(bb))
            skipped = &i;
    if (!skipped) break;
    bool isBarrier = isThreadgroupBarrier(*skipped);
    // The outermost region that holds it: its branch lies in no other region.
    llvm::BasicBlock* branch = nullptr;
    for (auto& [candidate, region] : divergence.regions()) {
      if (!region.count(skipped->getParent())) continue;
      bool outermost = true;
      for (auto& [other, otherRegion] : divergence.regions()) outermost &= !otherRegion.count(candidate);
      if (outermost) branch = candidate;
    }
    std::string name = "threadgroup_barrier";
    laneCallKind(*llvm::cast<llvm::CallInst>(skipped), &name);
    std::string why = "a loop that threads leave at different times";  // every region holding it lies in another's
    if (branch) {
      llvm::DominatorTree dt(f);
      llvm::LoopInfo loops(dt);
      why = linearize(branch, divergence.regions().at(branch), skipped->getParent(), divergence, dt, loops, activeOf);
    }
    if (!why.empty() && isBarrier) {
      barriersLeft.insert(skipped);
      continue;
    }
    if (!branch) return giveUp(kernelLocation(*skipped) + ": " + name + " in " + why);
    if (!why.empty())
      return giveUp(kernelLocation(*skipped) + ": " + name + " is skipped by some threads (the branch at " +
                    kernelLocation(*branch->getTerminator()) +
                    "), and the code from that branch to where its paths meet has " + why +
                    ", which the emulation cannot run for the threads that skip it");
    emulated = reachableFrom(emulatedEntry);
  }

  // The emulated calls: lane built-ins from the thread's index, operations through the exchange.
  for (llvm::BasicBlock* bb : emulated)
    for (llvm::Instruction& i : llvm::make_early_inc_range(*bb)) {
      auto* call = llvm::dyn_cast<llvm::CallInst>(&i);
      std::string name;
      LaneCall kind = call ? laneCallKind(*call, &name) : LaneCall::None;
      if (kind == LaneCall::None) continue;
      b.SetInsertPoint(call);
      llvm::Value* result = nullptr;
      if (kind == LaneCall::LaneBuiltin) {
        llvm::Value* index = callPseudo(b, std::string(pseudo::kBuiltinPrefix) + "local_invocation_index", i32);
        if (name == "simd_lane_id" || name == "subgroup_local_invocation_id")
          result = b.CreateAnd(index, kSimdWidth - 1);
        else if (name == "simd_group_id" || name == "subgroup_id")
          result = b.CreateLShr(index, 5);
        else if (name == "simd_size" || name == "subgroup_size")
          result = b.getInt32(kSimdWidth);
        else {  // num_subgroups
          llvm::Value* size = callPseudo(b, pseudo::kWorkgroupSize, llvm::FixedVectorType::get(i32, 3));
          llvm::Value* threads = b.CreateMul(
              b.CreateMul(b.CreateExtractElement(size, uint64_t(0)), b.CreateExtractElement(size, uint64_t(1))),
              b.CreateExtractElement(size, uint64_t(2)));
          result = b.CreateLShr(b.CreateAdd(threads, b.getInt32(kSimdWidth - 1)), 5);
        }
        result = b.CreateZExtOrTrunc(result, call->getType());
      } else {
        llvm::Function* callee = call->getCalledFunction();
        std::vector<llvm::Type*> params(callee->getFunctionType()->param_begin(),
                                        callee->getFunctionType()->param_end());
        params.push_back(i1);
        auto* type = llvm::FunctionType::get(call->getType(), params, false);
        std::string pseudoName = std::string(pseudo::kEmulatedSimdPrefix) + name + "." + callee->getName().str();
        auto* fn = llvm::cast<llvm::Function>(m.getOrInsertFunction(pseudoName, type).getCallee());
        fn->copyAttributesFrom(callee);
        std::vector<llvm::Value*> args(call->arg_begin(), call->arg_end());
        llvm::Value* active = activeOf.lookup(call);
        args.push_back(active ? active : b.getTrue());
        llvm::CallInst* emulatedCall = b.CreateCall(fn, args);
        emulatedCall->setDebugLoc(call->getDebugLoc());
        result = emulatedCall;
      }
      if (!call->getType()->isVoidTy()) call->replaceAllUsesWith(result);
      call->eraseFromParent();
    }
  reflection.emulatedSimdgroups = true;
  return llvm::PreservedAnalyses::none();
}

}  // namespace m2v::lower
