// m2v: the metal2vk command line.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <map>

#include "Commands.h"
#include "metal2vk/review.h"

namespace m2v::cli {

int usageError(const std::string& command, const std::string& message) {
  std::cerr << "m2v " << command << ": " << message << "\n(run 'm2v help' for usage)\n";
  return 2;
}

}  // namespace m2v::cli

namespace {

const char* kUsage = R"(usage: m2v <command> [options]

commands:
  compile FILE.metal [-o DIR] [--entry NAME]... [-I DIR]... [-D NAME[=VALUE]]... [--json] [--asm] [--ir]
      Compile every kernel entry point to a SPIR-V module (NAME.spv) and its reflection (NAME.json).
  run FILE.metal --entry NAME --grid X[,Y,Z] | --groups X[,Y,Z]  --threadgroup X[,Y,Z] --arg INDEX=SPEC...
      [--out INDEX=FILE]... [--time] [--repeat N] [--device SEL] [--fc INDEX=VALUE]... [--tgmem INDEX=BYTES]...
      [-I DIR]... [-D NAME[=VALUE]]... [--seed S]
      Compile one kernel and run it (--grid: dispatchThreads, --groups: dispatchThreadgroups). SPEC is
      DTYPE:COUNT:rand | DTYPE:COUNT:const:V | DTYPE:COUNT:iota | DTYPE:COUNT:zero | DTYPE:file:PATH | DTYPE:scalar:V
      with DTYPE one of f32 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64 bool. Writable buffers are summarised unless
      --out writes them (raw bytes); --time prints GPU time per dispatch. The device goes to stderr.
  examples [--device SEL] [--filter SUBSTR] [--dir DIR]
      Compile and run the bundled example kernels, check each against its CPU reference and print a table.
  mlx SPEC.json [--print-source] [--verbose] [-o DIR] [--device SEL]
      Run one mx.fast.metal_kernel call described in JSON (inputs inline, random or .npy; docs/MLX.md) and write
      each output as DIR/NAME.npy; --print-source prints MLX's assembled kernel text instead of running.
  review --root PATH [--compile-commands FILE] [-I DIR]... TARGET [--json] [--config FILE] [--fail-on SEVERITY]
         [-j N] [--full-parse] [--no-cache] [--cache-dir DIR]
      Review a Vulkan compute backend for async-pipeline hazards. TARGET: a file, function, class or symbol,
      --diff FILE, --commit SHA or a git range A..B.
  sweep DIR [-j N] [--device SEL] [--report PREFIX] [--filter SUBSTR] [--floor FILE] [--seed S] [--repeat N]
        [--emit-modules DIR] [--compile-only] [--modules DIR]
      Compile (in parallel) and run every case of a corpus directory (corpus/kernels), check each against its CPU
      reference and report the furthest stage reached (Markdown + TSV + JSON with --report). --floor FILE fails
      (exit 1) when a listed kernel does not reach "matched". m2v-sweep-run runs precompiled modules without LLVM.
  bench compile FILE.metal... [--runs N]
      Compile time per kernel file, in process, best of N runs (default 5), as a Markdown table.
  help
      Show this text.

exit codes: 0 success, 1 error in the input, 2 usage error, 3 unsupported construct, 4 internal error,
            5 device failure
)";

// Hostile input must never end m2v with a signal (exit codes 0-5 only). Two nets:
// - commands run on a thread with a 1 GiB stack (reserved, touched only as used): clang's parser and semantic
//   analysis recurse once per operand of a long expression (a+a+...+a, 100,000 terms overflows the usual 8 MiB);
// - a fatal signal that still happens (a defect) is reported as an internal error, exit code 4, instead of a core dump.
//   Not under the sanitizers, which report such signals themselves.
constexpr size_t kCommandStackBytes = size_t(1) << 30;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define M2V_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define M2V_SANITIZED 1
#endif
#endif

#ifndef M2V_SANITIZED
void onFatalSignal(int sig) {
  // Only async-signal-safe calls here.
  const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                     : sig == SIGILL ? "SIGILL" : "SIGABRT";
  const char* parts[] = {"m2v: internal error: crashed with ", name,
                         " (a defect in metal2vk; please report it with the input)\n"};
  for (const char* p : parts) (void)!write(2, p, strlen(p));
  _exit(4);
}

void installCrashHandler() {
  static char altStack[1 << 16];  // the handler must run even when the stack overflowed
  stack_t ss{};
  ss.ss_sp = altStack;
  ss.ss_size = sizeof altStack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = onFatalSignal;
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}
#endif

struct CommandCall {
  std::function<int()> run;
  int status = 4;
};

void* commandThread(void* p) {
  auto* call = static_cast<CommandCall*>(p);
#ifndef M2V_SANITIZED
  installCrashHandler();  // per thread: the alternate signal stack belongs to the thread that overflows
#endif
  try {
    call->status = call->run();
  } catch (const std::exception& e) {
    std::cerr << "m2v: internal error: " << e.what() << "\n";
    call->status = 4;
  } catch (...) {
    std::cerr << "m2v: internal error: unknown exception\n";
    call->status = 4;
  }
  return nullptr;
}

// Runs the command on a thread with a large stack; on the calling thread when no such thread can be made.
int runWithLargeStack(std::function<int()> run) {
  CommandCall call{std::move(run)};
  pthread_attr_t attr;
  pthread_t thread;
  bool started = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, kCommandStackBytes) == 0 &&
                 pthread_create(&thread, &attr, commandThread, &call) == 0;
  pthread_attr_destroy(&attr);
  if (started)
    pthread_join(thread, nullptr);
  else
    commandThread(&call);
  return call.status;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace m2v::cli;
  std::map<std::string, std::function<int(const Args&)>> commands = {
      {"compile", compileCommand},
      {"bench", benchCommand},
      {"review", [](const Args& a) { return m2v::runReviewCli(a, std::cout, std::cerr); }},
      {"run", runCommand},
      {"examples", examplesCommand},
      {"sweep", sweepCommand},
      {"mlx", mlxCommand},
  };
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  auto it = commands.find(argv[1]);
  if (it == commands.end()) return usageError(argv[1], "unknown command");
  Args args(argv + 2, argv + argc);
  return runWithLargeStack([&] { return it->second(args); });
}
