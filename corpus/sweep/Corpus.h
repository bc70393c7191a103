// The conformance corpus: kernel manifests (*.cases), CPU references, the runner and the sweep report.
// This library (m2v_corpus) links only m2v_runtime: compilation is done by the caller (`m2v sweep`) or loaded from
// precompiled modules (`m2v-sweep-run --modules DIR`), so the same runner works on a machine without LLVM.
// Manifest format: corpus/README.md.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "metal2vk/compiler.h"
#include "metal2vk/reflection.h"
#include "metal2vk/runtime.h"

namespace m2v::corpus {

// Furthest stage a kernel reached. None: the front end failed (nothing parsed).
enum class Stage { None = 0, Parse, IR, SpirV, Valid, Ran, Matched };
const char* stageName(Stage s);
constexpr int kStageCount = 7;

struct BufferSpec {
  uint32_t index = 0;
  std::string name;
  std::string role;   // in, out (poisoned, compared), inout (initialised, compared), scratch (zeroed, not compared)
  std::string dtype;  // f32 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64 bool
  std::vector<uint64_t> shape;
  std::string init;   // rand LO HI | iota | const V | zero | bits | addrtable NAME,NAME,...
  std::vector<std::string> initArgs;
  uint64_t count() const;
};

struct BytesField {
  std::string name, dtype;
  std::vector<double> values;
};
struct BytesSpec {  // setBytes: fields packed with natural alignment
  uint32_t index = 0;
  std::vector<BytesField> fields;
};
struct FunctionConstantSpec {
  uint32_t index = 0;
  std::string name, dtype;
  double value = 0;
};

struct Case {
  std::string name;       // unique in the corpus
  std::string manifest;   // path of the .cases file, and line of `case`
  int line = 0;
  std::string source;     // path of the .metal file
  std::string entry;      // entry point (host_name)
  std::string dtype;      // variant dtype ("" when the case has none)
  std::string ref;        // reference name
  bool groups = false;    // dispatchThreadgroups (else dispatchThreads)
  Size3 grid, threadgroup;
  std::vector<BufferSpec> buffers;
  std::vector<BytesSpec> bytes;
  std::vector<FunctionConstantSpec> constants;
  std::vector<std::pair<uint32_t, uint32_t>> tgmem;  // index, bytes
  std::map<std::string, double> params;
  double tolerance = 0;
  bool memoryBound = false;
  std::string note;
};

// Loads every *.cases file of `dir` (sorted). Problems go to `errors` ("file:line: message").
std::vector<Case> loadCorpus(const std::string& dir, const std::string& filter, std::vector<std::string>& errors);

// --- references -----------------------------------------------------------------------------------------------
struct Array {
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<double> v;
};
struct RefCtx {
  const Case& c;
  std::map<std::string, Array> in;        // every buffer's initial contents (as stored in its dtype)
  std::map<std::string, Array> expected;  // out/inout buffers: NaN = not compared; inout starts as the initial contents
  std::map<std::string, std::vector<double>> values;  // setBytes fields, function constants, params (by name)
  explicit RefCtx(const Case& cs) : c(cs) {}
  const std::vector<double>& x(const std::string& name) const;  // input values
  std::vector<double>& y(const std::string& name);              // expected output values
  double s(const std::string& name) const;                      // scalar (first value)
  int64_t i(const std::string& name) const { return int64_t(s(name)); }
  const std::vector<double>& arr(const std::string& name) const;
  bool has(const std::string& name) const { return values.count(name) != 0; }
};
using RefFn = std::function<void(RefCtx&)>;
const RefFn* findReference(const std::string& name);
struct RegisterRef {
  RegisterRef(const char* name, RefFn fn);
};
#define M2V_REF(NAME) \
  static void ref_##NAME(::m2v::corpus::RefCtx& c); \
  static ::m2v::corpus::RegisterRef reg_##NAME(#NAME, ref_##NAME); \
  static void ref_##NAME(::m2v::corpus::RefCtx& c)
// Rounds a value to the precision of dtype (f16/bf16/f32), for references that model intermediate storage.
double roundTo(const std::string& dtype, double v);

// --- compiled modules -----------------------------------------------------------------------------------------
struct CompiledEntry {
  Stage stage = Stage::None;  // Valid when the module is usable
  std::string cause;          // failure category when stage < Valid
  std::string message;        // first diagnostic
  double compileMs = 0;       // of the whole file, shared by its entries
  std::vector<uint32_t> spirv;
  KernelReflection reflection;
  // The cooperative-matrix build (docs/SIMDGROUP_MATRIX.md); `m2v sweep` only (module files hold the portable one).
  std::shared_ptr<const CompiledModule> cooperative;
  // The native-bfloat16 build (CompiledModule::nativeBfloat16); `m2v sweep` only, like the cooperative one.
  std::shared_ptr<const CompiledModule> nativeBfloat16;
};
// Makes the kernel a case runs; null: Device::createKernel on the portable module.
using KernelFn = std::function<Kernel(Device&, const CompiledEntry&)>;
// Key: source path + "\n" + entry.
using Modules = std::map<std::string, CompiledEntry>;
inline std::string moduleKey(const std::string& source, const std::string& entry) { return source + "\n" + entry; }

// Writes modules as DIR/<source stem>/<entry>.spv/.json plus DIR/compile.tsv (status of every entry); reads them back.
bool writeModules(const std::string& dir, const Modules& modules, std::string& error);
bool readModules(const std::string& dir, const std::vector<Case>& cases, Modules& modules, std::string& error);

// --- running and reporting ------------------------------------------------------------------------------------
struct RunOptions {
  std::string device;
  uint64_t seed = 0;   // 0: a fresh seed from the clock (reported)
  int repeat = 0;      // extra timed dispatches after the checked one (median GPU time reported)
  // With repeat: before the timed dispatches, run the same dispatch for this long (ms) so the GPU has left its
  // low-power clocks (on the H200 a few short dispatches after an idle pause run at a third of the memory bandwidth;
  // bench/stream-vs-raw-h200.md).
  static constexpr int kDefaultWarmupMs = 500;
  int warmupMs = kDefaultWarmupMs;
  bool progress = false;
  KernelFn makeKernel;
};
struct CaseResult {
  std::string name, source, entry, dtype;
  Stage stage = Stage::None;
  std::string cause, message;
  double compileMs = 0, gpuUs = -1, maxError = -1, tolerance = 0;
  double bytesMoved = 0;  // memory-bound cases: sum of buffer sizes read and written
  uint64_t seed = 0;
  bool memoryBound = false;
};
struct SweepMeta {
  std::string tool, device, driver, date, corpusDir;
  uint64_t seed = 0;
  double wallSeconds = 0;
  int jobs = 1;
  double ceilingGBs = 0;  // --ceiling-gbs: memory bandwidth ceiling (vkprobe) for the fraction column
};
std::vector<CaseResult> runCases(const std::vector<Case>& cases, const Modules& modules, const RunOptions& options,
                                 SweepMeta& meta, std::ostream& log);
// PREFIX.md, PREFIX.tsv, PREFIX.json
bool writeReports(const std::string& prefix, const std::vector<CaseResult>& results, const SweepMeta& meta,
                  std::string& error);
void printSummary(const std::vector<CaseResult>& results, std::ostream& out);
// Returns the floor entries that did not reach "matched" (and names unknown to the corpus); empty = gate passes.
std::vector<std::string> checkFloor(const std::string& floorFile, const std::vector<CaseResult>& results,
                                    std::string& error);

// Shared driver of `m2v sweep` and `m2v-sweep-run`: parses the common options. `compile` is null for the
// runtime-only tool (then --modules is required).
using CompileFn = std::function<Modules(const std::vector<Case>& cases, int jobs, bool progress, std::ostream& log)>;
int sweepMain(const std::string& tool, const std::vector<std::string>& args, CompileFn compile,
              KernelFn makeKernel = nullptr);

}  // namespace m2v::corpus
