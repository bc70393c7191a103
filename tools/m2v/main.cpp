// m2v: the metal2vk command line. Each command's usage text lives beside the command (k*Usage in its file).
#include <llvm/Config/llvm-config.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>

#include "Commands.h"
#include "metal2vk/compiler.h"
#include "metal2vk/review.h"

namespace m2v::cli {

int usageError(const std::string& command, const std::string& message) {
  std::cerr << "m2v " << command << ": " << message << "\n(run 'm2v " << command << " --help' for usage)\n";
  return 2;
}

}  // namespace m2v::cli

namespace {

using m2v::cli::Args;

// `m2v review` parses its own options (review/src/cli.cpp prints the full usage for `m2v review --help`).
const char kReviewSummary[] =
    R"(review --root PATH [--compile-commands FILE] [-I DIR]... TARGET [--json] [--config FILE] [--fail-on SEVERITY]
      [-j N] [--full-parse] [--no-cache] [--cache-dir DIR]
    Review a Vulkan compute backend for async-pipeline hazards. TARGET: a file, function, class or symbol,
    --diff FILE, --commit SHA or a git range A..B.
)";

struct Command {
  const char* name;
  int (*run)(const Args&);
  const char* usage;  // "NAME ARGS...\n    description\n"
};

int reviewCommand(const Args& a) { return m2v::runReviewCli(a, std::cout, std::cerr); }

const Command kCommands[] = {
    {"compile", m2v::cli::compileCommand, m2v::cli::kCompileUsage},
    {"run", m2v::cli::runCommand, m2v::cli::kRunUsage},
    {"examples", m2v::cli::examplesCommand, m2v::cli::kExamplesUsage},
    {"mlx", m2v::cli::mlxCommand, m2v::cli::kMlxUsage},
    {"review", reviewCommand, kReviewSummary},
    {"sweep", m2v::cli::sweepCommand, m2v::cli::kSweepUsage},
    {"bench", m2v::cli::benchCommand, m2v::cli::kBenchUsage},
    {"metal", m2v::cli::metalCommand, m2v::cli::kMetalUsage},
    {"metallib", m2v::cli::metallibCommand, m2v::cli::kMetallibUsage},
};

const char kExitCodes[] =
    "exit codes: 0 success, 1 error in the input, 2 usage error, 3 unsupported construct, 4 internal error,\n"
    "            5 device failure\n";

void printOverview(std::ostream& os) {
  os << "usage: m2v <command> [options]      (m2v <command> --help: that command's usage; m2v --version)\n\n"
        "commands:\n";
  for (const Command& c : kCommands) {
    std::istringstream lines(c.usage);
    for (std::string line; std::getline(lines, line);) os << "  " << line << "\n";
  }
  os << "  help\n      Show this text.\n\n" << kExitCodes;
}

void printVersion(std::ostream& os) {
  os << "m2v " << M2V_VERSION << " (" << M2V_BUILD_KIND << ")\n"
     << "compiler " << m2v::compilerVersion() << ", built with LLVM and clang " << LLVM_VERSION_STRING << "\n";
}

bool asksForHelp(const Args& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

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
  if (argc < 2) {
    printOverview(std::cerr);
    return 2;
  }
  if (!std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    printOverview(std::cout);
    return 0;
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
    printVersion(std::cout);
    return 0;
  }
  Args args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name)) continue;
    if (c.run != reviewCommand && asksForHelp(args)) {
      std::cout << "usage: m2v " << c.usage << "\n" << kExitCodes;
      return 0;
    }
    return runWithLargeStack([&] { return c.run(args); });
  }
  return m2v::cli::usageError(argv[1], "unknown command");
}
