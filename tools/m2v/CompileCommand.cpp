// m2v compile: .metal in, one SPIR-V module and one reflection JSON per entry point out.
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <iostream>

#include "Commands.h"
#include "Emitter.h"
#include "metal2vk/compiler.h"

namespace m2v::cli {

// `metal3.1`, `macos-metal2.4`, `ios-metal1.2` -> 310, 240, 120.
std::optional<uint32_t> parseMetalStd(const std::string& s) {
  size_t at = s.rfind("metal");
  if (at == std::string::npos) return std::nullopt;
  std::string v = s.substr(at + 5);
  if (v.size() != 3 || !std::isdigit(static_cast<unsigned char>(v[0])) || v[1] != '.' ||
      !std::isdigit(static_cast<unsigned char>(v[2])))
    return std::nullopt;
  return static_cast<uint32_t>((v[0] - '0') * 100 + (v[2] - '0') * 10);
}

std::string moduleFileStem(const std::string& entry) {
  // File systems allow 255 bytes a name; MLX's entry names reach 300+. A long name keeps its first 160 bytes and
  // gains a hash of the whole name (FNV-1a, stable across runs and machines); the JSON keeps the full name.
  constexpr size_t kMaxStem = 200;
  bool plain = entry.size() <= kMaxStem && entry.find('/') == std::string::npos;
  if (plain) return entry;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : entry) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  std::string stem = entry.substr(0, 160);
  for (char& c : stem)
    if (c == '/') c = '_';
  return stem + "-" + hex;
}

extern const char kCompileUsage[] =
    R"(compile FILE.metal [-o DIR] [--entry NAME]... [-I DIR]... [-D NAME[=VALUE]]... [-j N] [--json] [--asm] [--ir]
      [--asm-variants] [--no-cooperative-matrix] [--native-bfloat16] [--no-abort-checks]
      [-x metal] [-std=metalX.Y] [-ffast-math | -fno-fast-math] [-fsyntax-only] [-ferror-limit=N] [-W...] [-c]
    Compile every kernel entry point to a SPIR-V module (NAME.spv) and its reflection (NAME.json), -j N entry
    points at a time (default: one per core). A kernel that multiplies half or bfloat simdgroup matrices also gets
    NAME.cooperative.spv/.json, its build on cooperative matrices (docs/SIMDGROUP_MATRIX.md), unless
    --no-cooperative-matrix; with --native-bfloat16 (or M2V_NATIVE_BFLOAT16=1) a kernel that narrows float to bfloat
    also gets NAME.native-bfloat16.spv/.json, those narrowings on VK_KHR_shader_bfloat16 (docs/BFLOAT16.md).
    --asm-variants: --asm prints those builds too, each after a line "; cooperative-matrix build" or
    "; native-bfloat16 build". --no-abort-checks (or M2V_ABORT_CHECKS=0): loops do not check the abort word
    through which the runtime stops a kernel that outlasts its time budget (docs/ABI.md). The third line's flags
    are those of Apple's `metal` compiler (as MLX's build passes them): language version, fast math, diagnostics
    only, error limit, warnings; -x metal and -c change nothing.
)";

int compileCommand(const Args& args) {
  CompileOptions options;
  std::string input, outDir;
  bool json = false, assembly = false, variants = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* flag) -> const std::string* {
      if (i + 1 >= args.size()) return nullptr;
      (void)flag;
      return &args[++i];
    };
    if (a == "-o" || a == "--entry" || a == "-I" || a == "-D") {
      const std::string* v = value(a.c_str());
      if (!v) return usageError("compile", a + " needs a value");
      if (a == "-o")
        outDir = *v;
      else if (a == "--entry")
        options.entries.push_back(*v);
      else if (a == "-I")
        options.includeDirs.push_back(*v);
      else {
        size_t eq = v->find('=');
        options.defines.emplace_back(v->substr(0, eq), eq == std::string::npos ? "" : v->substr(eq + 1));
      }
    } else if (a.rfind("-I", 0) == 0 && a.size() > 2) {
      options.includeDirs.push_back(a.substr(2));
    } else if (a.rfind("-D", 0) == 0 && a.size() > 2) {
      size_t eq = a.find('=');
      options.defines.emplace_back(a.substr(2, eq - 2), eq == std::string::npos ? "" : a.substr(eq + 1));
    } else if (a == "-x") {
      // MLX's build passes `-x metal`; Metal is the only language here.
      if (i + 1 >= args.size()) return usageError("compile", "-x needs a value");
      if (args[++i] != "metal") return usageError("compile", "-x " + args[i] + ": only 'metal' is accepted");
    } else if (a.rfind("-std=", 0) == 0) {
      auto version = parseMetalStd(a.substr(5));
      if (!version) return usageError("compile", "unknown language standard '" + a.substr(5) + "' (e.g. metal3.1)");
      options.metalVersion = *version;
    } else if (a == "--no-cooperative-matrix") {
      options.cooperativeMatrix = false;
    } else if (a == "--no-abort-checks") {
      options.abortChecks = false;
    } else if (a == "--native-bfloat16") {
      options.nativeBfloat16 = true;
    } else if (a == "--asm-variants") {
      variants = true;
    } else if (a == "-ffast-math" || a == "-fno-fast-math") {
      options.fastMath = a == "-ffast-math";
    } else if (a == "-fsyntax-only") {
      options.syntaxOnly = true;
    } else if (a.rfind("-ferror-limit=", 0) == 0) {
      char* end = nullptr;
      unsigned long n = std::strtoul(a.c_str() + 14, &end, 10);
      if (!end || *end || a.size() == 14) return usageError("compile", "bad value in '" + a + "'");
      options.errorLimit = static_cast<uint32_t>(n);
    } else if (a.rfind("-W", 0) == 0 && a.size() > 2) {
      options.warnings.push_back(a);
    } else if (a == "-j") {
      if (i + 1 >= args.size()) return usageError("compile", "-j needs a value");
      char* end = nullptr;
      unsigned long n = std::strtoul(args[++i].c_str(), &end, 10);
      if (!end || *end || args[i].empty()) return usageError("compile", "bad value for -j: '" + args[i] + "'");
      options.jobs = static_cast<unsigned>(n);
    } else if (a == "-c") {
      // Compile-only, as in `metal -c`: what m2v compile always does.
    } else if (a == "--json") {
      json = true;
    } else if (a == "--asm") {
      assembly = true;
    } else if (a == "--ir") {
      options.keepLoweredIR = true;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("compile", "unknown option '" + a + "'");
    } else if (input.empty()) {
      input = a;
    } else {
      return usageError("compile", "more than one input file");
    }
  }
  if (input.empty()) return usageError("compile", "no input file");

  CompileResult result = compileFile(input, options);
  std::cerr << result.diagnostics.format();
  bool writeFiles = !outDir.empty() || (!json && !assembly && !options.keepLoweredIR);
  if (outDir.empty()) outDir = ".";
  if (writeFiles && !result.kernels.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outDir)) {
      std::cerr << "m2v compile: cannot create " << outDir << ": " << ec.message() << "\n";
      return 1;
    }
  }
  for (const CompiledKernel& k : result.kernels) {
    if (json) std::cout << toJson(k.reflection) << "\n";
    if (options.keepLoweredIR) {
      std::cout << k.loweredIR;
      if (k.cooperative) std::cout << "; cooperative-matrix build\n" << k.cooperative->loweredIR;
    }
    if (assembly) {
      std::cout << spirv::disassembleModule(k.spirv);
      if (variants && k.cooperative)
        std::cout << "; cooperative-matrix build\n" << spirv::disassembleModule(k.cooperative->spirv);
      if (variants && k.nativeBfloat16)
        std::cout << "; native-bfloat16 build\n" << spirv::disassembleModule(k.nativeBfloat16->spirv);
    }
    if (!writeFiles) continue;
    std::string base = outDir + "/" + moduleFileStem(k.reflection.entry);
    std::ofstream spv(base + ".spv", std::ios::binary);
    spv.write(reinterpret_cast<const char*>(k.spirv.data()), static_cast<std::streamsize>(k.spirv.size() * 4));
    std::ofstream(base + ".json") << toJson(k.reflection) << "\n";
    if (!spv) {
      std::cerr << "m2v compile: cannot write " << base << ".spv\n";
      return 1;
    }
    if (k.cooperative) {  // the build with simdgroup_matrix multiplies on cooperative matrices
      std::ofstream cspv(base + ".cooperative.spv", std::ios::binary);
      const std::vector<uint32_t>& w = k.cooperative->spirv;
      cspv.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * 4));
      std::ofstream(base + ".cooperative.json") << toJson(k.cooperative->reflection) << "\n";
    }
    if (k.nativeBfloat16) {  // the build with float -> bfloat narrowings on the bfloat16 type
      std::ofstream nspv(base + ".native-bfloat16.spv", std::ios::binary);
      const std::vector<uint32_t>& w = k.nativeBfloat16->spirv;
      nspv.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * 4));
      std::ofstream(base + ".native-bfloat16.json") << toJson(k.nativeBfloat16->reflection) << "\n";
      if (!nspv) {
        std::cerr << "m2v compile: cannot write " << base << ".native-bfloat16.spv\n";
        return 1;
      }
    }
  }
  return static_cast<int>(result.status);
}

}  // namespace m2v::cli
