// LoadFragmentsInDeviceLayoutPass (cooperative-matrix build, after CooperativeMatrixPass).
//
// A fragment loaded element by element (simdgroup_load, MLX's MMAFrag::load through thread_elements()) and then
// permuted into the device's layout by to_nv_ac / to_nv_b is loaded in that layout instead: the address each element
// came from is recomputed for the lane that holds it in the device's layout, which removes the permutation's
// shuffles. Sound when the address depends on the lane only through the subgroup lane id and otherwise on values
// every lane of the subgroup shares; anything else keeps the permutation.
//
// A B fragment in threadgroup memory whose element (r, c) provably lies at base + r * rowStep + c * colStep, with
// one step 2 bytes and the other a constant multiple of 16 bytes, and base 16-byte aligned, is one cooperative-matrix
// load instead (m2v.coopmat.load_b: the device's own transposing load; its two elements lie in two rows otherwise).
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/ConstantFolding.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/KnownBits.h>

#include <array>
#include <map>
#include <optional>

#include "Intrinsics.h"
#include "Passes.h"

namespace m2v::lower {

namespace {

// Rewrites values of one function as another lane would compute them.
class LaneRewriter {
 public:
  explicit LaneRewriter(llvm::Function& f) : dominators_(f) {
    for (llvm::Instruction& i : llvm::instructions(f))
      if (auto* c = llvm::dyn_cast<llvm::CallInst>(&i); c && isLaneId(c)) lanes_.push_back(c);
  }
  bool hasLane() const { return !lanes_.empty(); }
  llvm::CallInst* lane() const { return lanes_.front(); }

  // `v` with the lane id replaced by `otherLane` (an i32 computed right after the lane id), or null.
  llvm::Value* rewrite(llvm::Value* v, llvm::Value* otherLane) {
    auto key = std::make_pair(v, otherLane);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    llvm::Value* out = nullptr;
    if (isLane(v)) {
      out = otherLane->getType() == v->getType() ? otherLane : nullptr;
    } else if (!dependsOnLane(v)) {
      out = isUniform(v) ? v : nullptr;
    } else if (auto* i = llvm::dyn_cast<llvm::Instruction>(v); i && isPureArithmetic(i)) {
      llvm::Instruction* copy = i->clone();
      bool ok = true;
      for (llvm::Use& op : copy->operands())
        if (llvm::Value* r = rewrite(op.get(), otherLane))
          op.set(r);
        else
          ok = false;
      if (ok && llvm::all_of(copy->operands(), [](llvm::Use& op) { return llvm::isa<llvm::Constant>(op.get()); })) {
        // another lane's constant arithmetic (the lane id given as a constant): fold it
        out = llvm::ConstantFoldInstruction(copy, i->getModule()->getDataLayout());
        if (out)
          copy->deleteValue();
        else
          copy->insertAfter(i->getIterator()), out = copy;
      } else if (ok) {
        copy->insertAfter(i->getIterator());
        out = copy;
      } else {
        copy->deleteValue();
      }
    }
    memo_[key] = out;
    return out;
  }

 private:
  static bool isLaneId(llvm::CallInst* c) {
    llvm::Function* f = c->getCalledFunction();
    if (!f) return false;
    return f->getName() == std::string(pseudo::kBuiltinPrefix) + "subgroup_local_invocation_id" ||
           stdlibIntrinsicName(*f) == "simd_lane_id";
  }
  bool isLane(llvm::Value* v) const { return llvm::is_contained(lanes_, v); }
  static bool isPureArithmetic(llvm::Instruction* i) {
    return llvm::isa<llvm::BinaryOperator, llvm::CastInst, llvm::GetElementPtrInst, llvm::SelectInst, llvm::CmpInst>(i);
  }
  bool dependsOnLane(llvm::Value* v) {
    if (auto it = depends_.find(v); it != depends_.end()) return it->second;
    depends_[v] = false;  // cycles (phis) are judged by their other inputs
    bool d = isLane(v);
    if (auto* i = llvm::dyn_cast<llvm::Instruction>(v); i && !d)
      for (llvm::Value* op : i->operands()) d |= dependsOnLane(op);
    return depends_[v] = d;
  }
  // The same value in every lane of a subgroup. A phi is only when it heads a loop whose branches into it are
  // uniform (an induction variable); elsewhere a divergent branch could pick its input.
  bool isUniform(llvm::Value* v) {
    if (llvm::isa<llvm::Constant, llvm::Argument, llvm::BasicBlock>(v)) return true;
    if (auto it = uniform_.find(v); it != uniform_.end()) return it->second;
    if (auto* phi = llvm::dyn_cast<llvm::PHINode>(v)) {
      llvm::BasicBlock* header = phi->getParent();
      bool loopHeader = llvm::any_of(llvm::predecessors(header),
                                     [&](llvm::BasicBlock* p) { return dominators_.dominates(header, p); });
      if (!loopHeader) return uniform_[v] = false;
      size_t mark = order_.size();
      uniform_[v] = true;  // optimistic around the loop; undone below if it fails
      order_.push_back(v);
      bool u = true;
      for (llvm::BasicBlock* p : llvm::predecessors(header)) {
        auto* br = llvm::dyn_cast<llvm::BranchInst>(p->getTerminator());
        u &= br && (br->isUnconditional() || isUniform(br->getCondition()));
      }
      for (llvm::Value* in : phi->incoming_values()) u = u && isUniform(in);
      if (!u)
        while (order_.size() > mark) {
          uniform_.erase(order_.back());
          order_.pop_back();
        }
      return uniform_[v] = u;
    }
    bool u = false;
    if (auto* c = llvm::dyn_cast<llvm::CallInst>(v)) {
      llvm::Function* f = c->getCalledFunction();
      llvm::StringRef n = f ? f->getName() : "";
      std::optional<std::string> std = f ? stdlibIntrinsicName(*f) : std::nullopt;
      static const char* uniformBuiltins[] = {"workgroup_id", "num_workgroups", "subgroup_id", "subgroup_size",
                                              "num_subgroups"};
      for (const char* b : uniformBuiltins) u |= n == std::string(pseudo::kBuiltinPrefix) + b;
      u |= n == pseudo::kPushI64 || n == pseudo::kPushGrid || n == pseudo::kWorkgroupSize ||
           n == pseudo::kNominalThreadgroupSize || n == pseudo::kThreadgroupShape || n.starts_with(pseudo::kSpecPrefix);
      u |= std == "simd_group_id" || std == "simd_size";
    } else if (auto* ld = llvm::dyn_cast<llvm::LoadInst>(v)) {
      u = ld->isSimple() && ld->getPointerAddressSpace() == kConstantAS && isUniform(ld->getPointerOperand());
    } else if (auto* i = llvm::dyn_cast<llvm::Instruction>(v); i && isPureArithmetic(i)) {
      u = llvm::all_of(i->operands(), [&](llvm::Value* op) { return isUniform(op); });
    }
    order_.push_back(v);
    return uniform_[v] = u;
  }

  std::vector<llvm::CallInst*> lanes_;
  std::map<std::pair<llvm::Value*, llvm::Value*>, llvm::Value*> memo_;
  std::map<llvm::Value*, bool> depends_, uniform_;
  std::vector<llvm::Value*> order_;  // uniform_ entries in the order they were decided
  llvm::DominatorTree dominators_;
};

// The two loads a fragment's elements come from, when `v` is built from them element by element.
std::optional<std::array<llvm::LoadInst*, 2>> elementLoads(llvm::Value* v) {
  std::array<llvm::LoadInst*, 2> loads{nullptr, nullptr};
  for (llvm::Value* at = v; auto* ins = llvm::dyn_cast<llvm::InsertElementInst>(at); at = ins->getOperand(0)) {
    auto* index = llvm::dyn_cast<llvm::ConstantInt>(ins->getOperand(2));
    auto* ld = llvm::dyn_cast<llvm::LoadInst>(ins->getOperand(1));
    if (!index || index->getZExtValue() > 1 || !ld || !ld->isSimple()) return std::nullopt;
    if (!loads[index->getZExtValue()]) loads[index->getZExtValue()] = ld;
  }
  if (!loads[0] || !loads[1]) return std::nullopt;
  return loads;
}

// Lane arithmetic in IR (the emitter's LaneMath, for the lowering).
struct IRLanes {
  llvm::IRBuilder<>& b;
  llvm::Value* lane;
  llvm::Value* c(uint32_t v) { return b.getInt32(v); }
  llvm::Value* g() { return b.CreateLShr(lane, 2); }
  llvm::Value* t() { return b.CreateAnd(lane, 3); }
  // the Apple lane holding row r, columns 2p and 2p + 1
  llvm::Value* appleLaneOf(llvm::Value* r, llvm::Value* p) {
    llvm::Value* lo = b.CreateOr(b.CreateAnd(p, 1), b.CreateShl(b.CreateAnd(r, 3), 1));
    llvm::Value* hi = b.CreateOr(b.CreateShl(b.CreateLShr(p, 1), 3), b.CreateShl(b.CreateLShr(r, 2), 4));
    return b.CreateOr(lo, hi);
  }
};

// The Apple lane holding row r, columns 2p and 2p + 1 (IRLanes::appleLaneOf for constants).
uint32_t appleLaneOf(uint32_t r, uint32_t p) { return (p & 1) | (r & 3) << 1 | (p >> 1) << 3 | (r >> 2) << 4; }

// A half B fragment in threadgroup memory at base + r * rowStep + c * colStep (element (r, c), constant steps, one of
// them 2 bytes, the other a multiple of 16; base 16-byte aligned) as one cooperative-matrix load; false otherwise.
// The address of each of the 64 elements is the load's address as the Apple lane holding it computes it; the steps
// are differences that ScalarEvolution proves constant.
bool loadBAsCooperativeMatrix(llvm::CallInst* conversion, const std::array<llvm::LoadInst*, 2>& loads,
                              llvm::LoadInst* last, LaneRewriter& lanes, llvm::ScalarEvolution& se) {
  // A subgroup operation: only where the multiply runs (its block), never under a branch only some lanes take.
  if (!conversion->getType()->getScalarType()->isHalfTy() || last->getParent() != conversion->getParent()) return false;
  for (llvm::LoadInst* ld : loads)
    if (ld->getPointerAddressSpace() != kThreadgroupAS || !ld->getType()->isHalfTy()) return false;
  llvm::Type* laneType = lanes.lane()->getType();
  auto address = [&](uint32_t r, uint32_t c) {
    return lanes.rewrite(loads[c & 1]->getPointerOperand(), llvm::ConstantInt::get(laneType, appleLaneOf(r, c / 2)));
  };
  llvm::Value* base = address(0, 0);
  if (!base) return false;
  const llvm::SCEV* baseScev = se.getSCEV(base);
  auto offset = [&](uint32_t r, uint32_t c) -> std::optional<int64_t> {
    llvm::Value* p = address(r, c);
    if (!p) return std::nullopt;
    auto* k = llvm::dyn_cast<llvm::SCEVConstant>(se.getMinusSCEV(se.getSCEV(p), baseScev));
    if (!k) return std::nullopt;
    return k->getAPInt().getSExtValue();
  };
  std::optional<int64_t> rowStep = offset(1, 0), colStep = offset(0, 1);
  if (!rowStep || !colStep) return false;
  for (uint32_t r = 0; r < 8; ++r)
    for (uint32_t c = 0; c < 8; ++c)
      if (offset(r, c) != r * *rowStep + c * *colStep) return false;
  bool columnMajor = *rowStep == 2;
  int64_t stride = columnMajor ? *colStep : *rowStep;
  if ((columnMajor ? *rowStep : *colStep) != 2 || stride <= 0 || stride % 16 || stride > INT32_MAX) return false;
  const llvm::DataLayout& dl = conversion->getModule()->getDataLayout();
  if (llvm::computeKnownBits(base, dl).countMinTrailingZeros() < 4) return false;

  llvm::IRBuilder<> b(last->getNextNode());
  llvm::Function* f = declareSubgroupPseudo(
      *conversion->getModule(), pseudo::kCoopMatLoadB,
      llvm::FunctionType::get(conversion->getType(), {base->getType(), b.getInt32Ty(), b.getInt1Ty()}, false),
      /*readsArgMemory=*/true);
  llvm::Value* fragment = b.CreateCall(f, {base, b.getInt32(static_cast<uint32_t>(stride)), b.getInt1(columnMajor)});
  conversion->replaceAllUsesWith(fragment);
  conversion->eraseFromParent();
  return true;
}

// Loads a fragment that to_nv_ac / to_nv_b would permute directly in the device's layout; false where it cannot.
bool loadInDeviceLayout(llvm::CallInst* conversion, LaneRewriter& lanes, llvm::ScalarEvolution& se) {
  auto loads = elementLoads(conversion->getArgOperand(0));
  if (!loads || !lanes.hasLane()) return false;
  bool isB = callToPseudo(conversion, pseudo::kSgmToNvB) != nullptr;
  if ((*loads)[0]->getParent() != (*loads)[1]->getParent()) return false;
  llvm::LoadInst* last = (*loads)[0]->comesBefore((*loads)[1]) ? (*loads)[1] : (*loads)[0];
  if (isB && loadBAsCooperativeMatrix(conversion, *loads, last, lanes, se)) return true;
  llvm::IRBuilder<> lb(lanes.lane()->getNextNode());
  IRLanes l{lb, lanes.lane()};
  // Per result element k: the source lane, and whether it is that lane's element 1.
  std::array<llvm::Value*, 2> source, second;
  if (!isB) {
    source = {l.appleLaneOf(l.g(), l.t()), nullptr};
    source[1] = source[0];
    second = {lb.getFalse(), lb.getTrue()};
  } else {
    llvm::Value* odd = lb.CreateICmpNE(lb.CreateAnd(l.g(), 1), l.c(0));
    for (uint32_t k = 0; k < 2; ++k) {
      source[k] = l.appleLaneOf(lb.CreateAdd(lb.CreateShl(l.t(), 1), l.c(k)), lb.CreateLShr(l.g(), 1));
      second[k] = odd;
    }
  }
  const llvm::DataLayout& dl = conversion->getModule()->getDataLayout();
  if (!isB) {
    // A and C: the device lane's two elements are adjacent in the source lane's row; one 4-byte load where the
    // address is provably 4-byte aligned.
    llvm::Value* p0 = lanes.rewrite((*loads)[0]->getPointerOperand(), source[0]);
    llvm::Value* p1 = lanes.rewrite((*loads)[1]->getPointerOperand(), source[0]);
    if (!p0 || !p1) return false;
    unsigned bits = dl.getIndexTypeSizeInBits(p0->getType());
    llvm::APInt off0(bits, 0), off1(bits, 0);
    const llvm::Value* base0 = p0->stripAndAccumulateInBoundsConstantOffsets(dl, off0);
    const llvm::Value* base1 = p1->stripAndAccumulateInBoundsConstantOffsets(dl, off1);
    if (base0 == base1 && (off1 - off0) == 2 && llvm::computeKnownBits(p0, dl).countMinTrailingZeros() >= 2) {
      llvm::IRBuilder<> b(last->getNextNode());
      llvm::Value* pair = b.CreateAlignedLoad(conversion->getType(), p0, llvm::Align(4));
      conversion->replaceAllUsesWith(pair);
      conversion->eraseFromParent();
      return true;
    }
  }
  std::array<llvm::Value*, 2> elems{};
  for (uint32_t k = 0; k < 2; ++k) {
    llvm::Value* p0 = lanes.rewrite((*loads)[0]->getPointerOperand(), source[k]);
    llvm::Value* p1 = lanes.rewrite((*loads)[1]->getPointerOperand(), source[k]);
    if (!p0 || !p1) return false;
    // load where the original loads are (same memory state), after both addresses exist
    llvm::IRBuilder<> b(last->getNextNode());
    llvm::Value* p = b.CreateSelect(second[k], p1, p0);
    llvm::LoadInst* ld = b.CreateAlignedLoad(conversion->getType()->getScalarType(), p,
                                             std::min((*loads)[0]->getAlign(), (*loads)[1]->getAlign()));
    elems[k] = ld;
  }
  llvm::IRBuilder<> b(conversion);
  llvm::Value* v = llvm::PoisonValue::get(conversion->getType());
  for (uint32_t k = 0; k < 2; ++k) v = b.CreateInsertElement(v, elems[k], uint64_t(k));
  conversion->replaceAllUsesWith(v);
  conversion->eraseFromParent();
  return true;
}

}  // namespace

llvm::PreservedAnalyses LoadFragmentsInDeviceLayoutPass::run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
  bool changed = false;
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    LaneRewriter lanes(f);
    llvm::TargetLibraryInfoImpl libraryInfo(m.getTargetTriple());
    llvm::TargetLibraryInfo library(libraryInfo);
    llvm::AssumptionCache assumptions(f);
    llvm::DominatorTree dominators(f);
    llvm::LoopInfo loops(dominators);
    llvm::ScalarEvolution se(f, library, assumptions, dominators, loops);
    std::vector<llvm::CallInst*> conversions;
    for (llvm::Instruction& i : llvm::instructions(f))
      if (llvm::CallInst* c = callToPseudo(&i, pseudo::kSgmToNvAC); c && c->getType()->getScalarSizeInBits() == 16)
        conversions.push_back(c);
      else if (llvm::CallInst* c = callToPseudo(&i, pseudo::kSgmToNvB))
        conversions.push_back(c);
    for (llvm::CallInst* c : conversions) changed |= loadInDeviceLayout(c, lanes, se);
  }
  return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
}

}  // namespace m2v::lower
