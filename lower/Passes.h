// The lowering passes, in the order Pipeline.cpp runs them. Each pass does one job on an LLVM module that holds one
// kernel entry point; see each .cpp for the details.
#pragma once

#include <llvm/IR/PassManager.h>
#include <llvm/IR/ValueHandle.h>

#include <memory>
#include <set>
#include <vector>

#include "Frontend.h"

namespace llvm {
class Loop;
}

namespace m2v::lower {

// A new module (in `m`'s context) with the kernel `mangledName` and exactly the functions and globals it reaches;
// null when there is no such function.
std::unique_ptr<llvm::Module> extractEntry(const llvm::Module& m, llvm::StringRef mangledName);

// Deletes instructions that only feed each other (dead phi cycles), leaving control flow as it is.
struct RemoveDeadCyclesPass : llvm::PassInfoMixin<RemoveDeadCyclesPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};

// Gives each loop that has no exit an exit that is never taken (structured control flow needs one).
struct ExitInfiniteLoopsPass : llvm::PassInfoMixin<ExitInfiniteLoopsPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};

// Keeps the chosen kernel and what it reaches; everything else becomes internal and is dropped.
struct SelectEntryPass : llvm::PassInfoMixin<SelectEntryPass> {
  explicit SelectEntryPass(std::string mangledName) : kernel(std::move(mangledName)) {}
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
  std::string kernel;
};

// Program-scope `[[function_constant(n)]]` globals become specialization constants.
struct FunctionConstantsPass : llvm::PassInfoMixin<FunctionConstantsPass> {
  FunctionConstantsPass(const std::vector<frontend::FunctionConstantFacts>& fcs, KernelReflection& r)
      : constants(fcs), reflection(r) {}
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
  const std::vector<frontend::FunctionConstantFacts>& constants;
  KernelReflection& reflection;
};

// Builds the `main` entry: buffer addresses from push constants, Metal built-ins from Vulkan ones (with Metal's
// partial edge threadgroups), dynamic threadgroup memory; then calls the kernel. With `roomForAbortWord`, the push
// block keeps 8 bytes after the addresses for AbortChecksPass (an argument buffer holds them when that room is
// missing).
struct EntryABIPass : llvm::PassInfoMixin<EntryABIPass> {
  EntryABIPass(const frontend::EntryFacts& e, KernelReflection& r, Diagnostics& d, bool room)
      : entry(e), reflection(r), diags(d), roomForAbortWord(room) {}
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
  const frontend::EntryFacts& entry;
  KernelReflection& reflection;
  Diagnostics& diags;
  bool roomForAbortWord;
};

// Lists, in reflection.spinWaits, the loops that leave only when an atomic or volatile load of device memory
// returns a value another thread stores (lower/FindSpinWaits.cpp).
struct FindSpinWaitsPass : llvm::PassInfoMixin<FindSpinWaitsPass> {
  explicit FindSpinWaitsPass(KernelReflection& r) : reflection(r) {}
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
  KernelReflection& reflection;
};

// Every loop without a small constant trip bound checks the submission's abort word now and then and returns when
// it is set, so that the runtime can stop a kernel that does not end (lower/AbortChecks.cpp). The word's address
// goes at the end of the push block (reflection.abortWordOffset).
struct AbortChecksPass : llvm::PassInfoMixin<AbortChecksPass> {
  explicit AbortChecksPass(KernelReflection& r) : reflection(r) {}
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
  unsigned checkedLoops(llvm::Function& f, llvm::FunctionAnalysisManager& am);
  KernelReflection& reflection;
};

// Gives `__m2v::` intrinsic declarations the attributes the optimizer must respect (convergent cross-lane
// operations, side-effect-free math), and makes every other function inlinable.
// Gives a kernel that uses simdgroup functions a second body with 32-lane simdgroups emulated over any subgroup
// size, chosen by specialization constant kEmulateSimdgroupsSpecId (KernelReflection::emulatedSimdgroups), or says
// why it cannot (simdgroupEmulationRefused). Runs on a function whose exits are unified and switches lowered.
struct EmulateSimdgroupsPass : llvm::PassInfoMixin<EmulateSimdgroupsPass> {
  explicit EmulateSimdgroupsPass(KernelReflection& r) : reflection(r) {}
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager&);
  KernelReflection& reflection;
};

struct IntrinsicAttributesPass : llvm::PassInfoMixin<IntrinsicAttributesPass> {
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
};

// Metal's precise float exp, exp2, exp10, log, log2, log10, tanh (metal_math's __m2v::precise16_pick) whose result is
// only rounded to half or only to bfloat take the 16-bit evaluation; every other pick takes the float routine
// (lower/NarrowPreciseMath.cpp). Inside the optimizer (`final` false) it decides only the picks whose uses are in
// sight; after it, the rest.
struct ResolvePrecise16Pass : llvm::PassInfoMixin<ResolvePrecise16Pass> {
  explicit ResolvePrecise16Pass(bool f) : final(f) {}
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
  bool final;
};

// Thread variables that one pointer (a phi or select) may point into become elements of one array.
struct MergeSelectedAllocasPass : llvm::PassInfoMixin<MergeSelectedAllocasPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};

// Bool vectors of more than four lanes become integers with a bit per lane (SPIR-V vectors have 2 to 4).
struct WideBoolVectorsPass : llvm::PassInfoMixin<WideBoolVectorsPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};

// Integers of widths SPIR-V lacks (i5, i24, ...) are computed in the next wider legal type.
struct WidenOddIntegersPass : llvm::PassInfoMixin<WidenOddIntegersPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};

// Functions with vectors of more than four lanes (other than bool vectors) are scalarized (SPIR-V vectors have 2 to 4).
// With fragmentBits, into vectors of at most that many bits.
struct SplitWideVectorsPass : llvm::PassInfoMixin<SplitWideVectorsPass> {
  explicit SplitWideVectorsPass(unsigned fragmentBits = 0) : fragmentBits(fragmentBits) {}
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
  unsigned fragmentBits;
};

// memcpy/memmove/memset become explicit loads and stores (SPIR-V has no such operations for our pointers).
struct ExpandMemoryIntrinsicsPass : llvm::PassInfoMixin<ExpandMemoryIntrinsicsPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};

// Innermost loops that stream through device memory, without convergent operations, run several iterations per
// trip (trip count checked at run time), so that a thread has several iterations' loads in flight
// (lower/UnrollStreamingLoops.cpp).
struct UnrollStreamingLoopsPass : llvm::PassInfoMixin<UnrollStreamingLoopsPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};
// The size in instructions of a loop that streams device memory (loads at addresses that vary per iteration, no
// convergent operation; for unrolling also not forbidden by the source or done already); 0 for any other loop
// (UnrollStreamingLoops.cpp).
unsigned streamingLoopSize(const llvm::Loop& loop, bool forUnrolling = true);
// In the blocks of innermost streaming loops, device loads (with the address arithmetic they need) move ahead of the
// arithmetic that consumes earlier loads, so all of a trip's loads can be issued before the first wait (no measurable
// effect on the H200, whose driver schedules them so already; lower/ClusterStreamingLoads.cpp).
struct ClusterStreamingLoadsPass : llvm::PassInfoMixin<ClusterStreamingLoadsPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};
// A thread's adjacent narrow loads and stores of device or constant memory become vector accesses (up to 4
// elements, 16 bytes) on a fast path taken when the buffer addresses and the integer arguments the addresses are
// computed from are multiples of 16 and written buffers lie apart from the others; the kernel as it was is the
// other path (lower/WidenAccesses.cpp). Where the addresses come from threadgroup-uniform values computed later (a
// batch offset, a params field), the check is made there and only the code after it is copied.
struct WidenAccessesPass : llvm::PassInfoMixin<WidenAccessesPass> {
  WidenAccessesPass(const frontend::EntryFacts& entry, const KernelReflection& reflection);
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
  std::set<uint64_t> boundConstants;  // slots of constant-space arguments the host must bind (no function constant)
};

// bfloat vectors loaded from buffers become 32-bit words, and bfloat lanes of a word widened to float a shift or a
// mask of the word; bfloat pairs narrowed from float and stored to buffers are rounded and stored as 32-bit words
// (lower/BFloatWords.cpp).
struct BFloatWordsPass : llvm::PassInfoMixin<BFloatWordsPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};

// Threadgroup arrays that meet in a phi or select share one arena variable.
struct MergeThreadgroupArraysPass : llvm::PassInfoMixin<MergeThreadgroupArraysPass> {
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
};

// Records which loops the source asked not to unroll (Mode::Record, before structurizing, which drops LLVM's loop
// metadata) and marks the loops those headers still head again (Mode::Restore, after) (lower/KeepLoopHints.cpp).
struct LoopHints {
  std::vector<llvm::WeakVH> dontUnroll;  // loop headers
};
struct KeepLoopHintsPass : llvm::PassInfoMixin<KeepLoopHintsPass> {
  enum class Mode { Record, Restore };
  KeepLoopHintsPass(Mode m, std::shared_ptr<LoopHints> h) : mode(m), hints(std::move(h)) {}
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
  Mode mode;
  std::shared_ptr<LoopHints> hints;
};

// After StructurizeCFG: gives every selection header its own merge block, so that merge blocks are unique.
struct UniqueMergeBlocksPass : llvm::PassInfoMixin<UniqueMergeBlocksPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};

// Decides, per simdgroup_multiply_accumulate, between the cooperative-matrix path and the subgroup-shuffle path:
// cooperative where `cooperative` is set and both operands hold half values, or both bfloat values
// (lower/CooperativeMatrix.cpp).
struct ResolveMatrixPathPass : llvm::PassInfoMixin<ResolveMatrixPathPass> {
  ResolveMatrixPathPass(bool c, unsigned& n) : cooperative(c), cooperativeMultiplies(&n) {}
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
  bool cooperative;
  unsigned* cooperativeMultiplies;
};

// Expands the cooperative multiplies (half or bfloat operands) into layout conversions and 16x8x8 cooperative-matrix
// operations, cancels the conversions between multiplies and pairs multiplies that share an operand.
struct CooperativeMatrixPass : llvm::PassInfoMixin<CooperativeMatrixPass> {
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
};

// Loads fragments that are permuted into the device's layout in that layout instead (addresses recomputed per lane;
// lower/FragmentLoads.cpp).
struct LoadFragmentsInDeviceLayoutPass : llvm::PassInfoMixin<LoadFragmentsInDeviceLayoutPass> {
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
};

// Consecutive k steps of 16x8x8 operations (the second accumulates onto the first's whole result) become one 16x8x16
// operation (lower/CooperativeMatrix.cpp).
struct FuseKStepsPass : llvm::PassInfoMixin<FuseKStepsPass> {
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
};

// Two bfloat 16x8x16 operations that share A become one 16x16x16 operation (lower/CooperativeMatrix.cpp).
struct FuseColumnBlocksPass : llvm::PassInfoMixin<FuseColumnBlocksPass> {
  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& am);
};

// Which simdgroup_matrix path lowerEntry builds.
enum class MatrixPath { Shuffle, Cooperative };

// Runs everything above plus LLVM's optimizer and structurizer for one entry. Returns false after reporting to
// `diags`.
bool lowerEntry(llvm::Module& m, const frontend::EntryFacts& entry,
                const std::vector<frontend::FunctionConstantFacts>& fcs, KernelReflection& reflection,
                Diagnostics& diags, MatrixPath path = MatrixPath::Shuffle, bool abortChecks = true);

// True when the entry's module multiplies simdgroup matrices and has half or bfloat values, so that a
// cooperative-matrix build may differ from the portable one.
bool mayMultiply16BitMatrices(const llvm::Module& m);

}  // namespace m2v::lower
