// m2v sweep: compile every kernel of a corpus directory (thread pool, one front-end run per .metal file) and run each
// case against its CPU reference (corpus/sweep). Compile failures are mapped to the furthest stage reached.
#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include "Commands.h"
#include "Corpus.h"
#include "metal2vk/compiler.h"
#include "metal2vk/mlx.h"

namespace m2v::cli {

namespace {

using corpus::CompiledEntry;
using corpus::Stage;

std::string firstError(const Diagnostics& d) {
  for (const Diagnostic& x : d.all())
    if (x.severity != Severity::Note && x.severity != Severity::Warning) {
      std::string m = Diagnostics::format(x);
      return m.substr(0, m.find('\n'));
    }
  return "compilation failed without a diagnostic";
}

// Classifies a failed entry from its own diagnostics (compiled alone). `frontendOk`: another entry of the file
// compiled, so the front end itself worked.
CompiledEntry classify(const CompileResult& r, bool frontendOk) {
  CompiledEntry e;
  e.message = firstError(r.diagnostics);
  std::string all;
  for (const Diagnostic& d : r.diagnostics.all()) all += d.message + "\n";
  auto has = [&](const char* s) { return all.find(s) != std::string::npos; };
  switch (r.diagnostics.status()) {
    case Status::Unsupported: e.cause = "compile: unsupported"; break;
    case Status::InternalError: e.cause = "compile: internal error"; break;
    case Status::UserError: e.cause = "compile: error"; break;
    default: e.cause = "compile: failed"; break;
  }
  if (has("failed validation")) {
    e.stage = Stage::SpirV;
    e.cause = "compile: SPIR-V validation";
    // The validator's message is on the following lines; keep it.
    for (const Diagnostic& d : r.diagnostics.all())
      if (d.message.find("failed validation") != std::string::npos) {
        std::string m = d.message;
        size_t nl = m.find('\n');
        e.message = nl == std::string::npos ? m : m.substr(nl + 1, m.find('\n', nl + 1) - nl - 1);
      }
  } else if (has("lowering produced invalid LLVM IR") || has("was not emitted by the front end") ||
             has("IR signature does not match") || has("built-in [[") || has("buffer parameter '") ||
             has("[[threadgroup(")) {
    e.stage = Stage::Parse;  // parsed; lowering failed
  } else if (r.diagnostics.status() == Status::UserError && !frontendOk) {
    e.stage = Stage::None;  // clang rejected the file
  } else if (frontendOk || r.diagnostics.status() != Status::UserError) {
    e.stage = has("clang produced") || has("invalid front-end arguments") ? Stage::None : Stage::IR;
  }
  return e;
}

corpus::Modules compileAll(const std::vector<corpus::Case>& cases, int jobs, bool progress, std::ostream& log) {
  std::map<std::string, std::set<std::string>> files;  // source -> entries wanted
  for (const corpus::Case& c : cases) files[c.source].insert(c.entry);
  std::vector<std::string> sources;
  for (auto& [f, e] : files) sources.push_back(f);

  corpus::Modules modules;
  std::mutex mu;
  std::atomic<size_t> next{0}, done{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < sources.size();) {
      const std::string& src = sources[i];
      auto t0 = std::chrono::steady_clock::now();
      CompileResult r = compileFile(src);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::map<std::string, CompiledEntry> out;
      for (CompiledKernel& k : r.kernels) {
        CompiledEntry e;
        e.stage = Stage::Valid;
        e.compileMs = ms;
        e.reflection = std::move(k.reflection);
        e.spirv = std::move(k.spirv);
        e.cooperative = std::move(k.cooperative);
        e.nativeBfloat16 = std::move(k.nativeBfloat16);
        out[e.reflection.entry] = std::move(e);
      }
      bool frontendOk = !r.kernels.empty();
      for (const std::string& entry : files[src]) {
        if (out.count(entry)) continue;
        CompileOptions one;
        one.entries = {entry};
        auto t1 = std::chrono::steady_clock::now();
        CompileResult alone = compileFile(src, one);
        CompiledEntry e;
        if (!alone.kernels.empty()) {  // compiles alone but not with its file: report it as an internal problem
          e.stage = Stage::SpirV;
          e.cause = "compile: entry missing from whole-file compile";
          e.message = firstError(r.diagnostics);
        } else {
          e = classify(alone, frontendOk);
        }
        e.compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
        out[entry] = std::move(e);
      }
      std::lock_guard<std::mutex> lock(mu);
      for (auto& [entry, e] : out) modules[corpus::moduleKey(src, entry)] = std::move(e);
      size_t d = ++done;
      if (progress) {
        int width = 30, filled = int(width * d / sources.size());
        log << "\rcompiling [" << std::string(filled, '#') << std::string(width - filled, '.') << "] " << d << "/"
            << sources.size() << "\033[K" << std::flush;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < std::max(1, std::min<int>(jobs, int(sources.size()))); ++i) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  if (progress) log << "\r\033[K";
  return modules;
}

}  // namespace

extern const char kSweepUsage[] =
    R"(sweep DIR [-j N] [--device SEL] [--report PREFIX] [--filter SUBSTR] [--floor FILE] [--seed S] [--repeat N]
      [--ceiling-gbs GBS] [--emit-modules DIR] [--compile-only] [--modules DIR]
    Compile (in parallel) and run every case of a corpus directory (corpus/kernels), check each against its CPU
    reference and report the furthest stage reached (Markdown + TSV + JSON with --report). --floor FILE fails
    (exit 1) when a listed kernel does not reach "matched". m2v-sweep-run runs precompiled modules without LLVM.
)";

int sweepCommand(const Args& args) {
  // Kernels with a cooperative-matrix or native-bfloat16 build run it where the device can (M2V_SIMDGROUP_MATRIX,
  // M2V_NATIVE_BFLOAT16 choose).
  auto makeKernel = [](Device& device, const CompiledEntry& e) {
    CompiledModule m{e.reflection, e.spirv, e.cooperative, {}};
    m.nativeBfloat16 = e.nativeBfloat16;
    return mlx::createKernelFor(device, m);
  };
  return corpus::sweepMain("m2v sweep", args, compileAll, makeKernel);
}

}  // namespace m2v::cli
