// m2v metal, m2v metallib: Apple's Metal toolchain (`xcrun metal`, `xcrun metallib`) as MLX's build calls it, with
// metal2vk's compiler and library files (include/metal2vk/library_file.h) in place of AIR and .metallib.
#include <iostream>
#include <stdexcept>
#include <unordered_map>

#include "Commands.h"
#include "Frontend.h"
#include "metal2vk/compiler.h"
#include "metal2vk/library_file.h"

namespace m2v::cli {

extern const char kMetalUsage[] =
    R"(metal [-x metal] [-I DIR]... [-D NAME[=VALUE]]... [-std=metalX.Y] [-ffast-math | -fno-fast-math] [-W...] [-w]
      (-E [-P] [-C] [-CC] [-H] FILE | -c FILE.metal -o OUT.air | FILE.air... -o OUT.metallib) [-j N]
    Apple's `metal` driver as MLX's build uses it. -E: preprocess FILE as the compiler sees it, to standard
    output; -H lists the included headers on standard error as clang does ("." per depth, then the path; our own
    metal_stdlib headers left out). -c: FILE into a library file (the .air of Apple's flow): its [[host_name]]
    instantiations kept as source and compiled on first use (newFunction), as Apple compiles AIR for the GPU when a
    pipeline needs it; its other kernels compiled now. Otherwise: merge library files (and compile any .metal
    given) into one library file, the .metallib that the Metal API's newLibrary(URL) reads. Apple-only flags
    (-mmacosx-version-min=, -gline-tables-only, -frecord-sources, -fmetal-enable-logging) are accepted and change
    nothing.
)";

extern const char kMetallibUsage[] =
    R"(metallib FILE.air... -o OUT.metallib | metallib --list FILE
    Merge library files into one (Apple's `metallib`); an entry point defined twice is an error. --list prints each
    entry point of a library file and how it is held: "compiled", or "deferred FILE" (kept as source, compiled on
    first use).
)";

namespace {

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool isLibraryFile(const std::string& path) { return endsWith(path, ".air") || endsWith(path, ".metallib"); }

// Reads `path` as Apple's `metal -c` does and appends it: a deferred source (include/metal2vk/deferred_source.h)
// whose [[host_name]] instantiations compile when first asked for, and the file's other kernels, compiled now from
// the body (which also checks the whole file's templates as written). The compiler's exit status (diagnostics
// printed), 0 when it compiled.
int compileInto(const std::string& path, const CompileOptions& options, LibraryContents& library) {
  std::optional<DeferredFile> file = deferFile(path, options);
  if (!file) return static_cast<int>(Status::UserError);
  std::cerr << file->body.diagnostics.format();
  if (file->body.status != Status::Ok) return static_cast<int>(file->body.status);
  for (CompiledKernel& k : file->body.kernels) library.kernels.push_back(std::move(k));
  if (!file->source.entries.empty()) library.sources.push_back(std::move(file->source));
  return 0;
}

// Merges library files into `library` and writes `output`; an entry point in two inputs is an error naming both.
int link(const std::string& command, const std::vector<std::string>& libraries, LibraryContents library,
         const std::string& output) {
  std::unordered_map<std::string, std::string> origin;
  auto add = [&](const std::string& entry, const std::string& from) {
    auto [it, fresh] = origin.emplace(entry, from);
    if (!fresh)
      std::cerr << "m2v " << command << ": error: entry point '" << entry << "' is defined in both " << it->second
                << " and " << from << "\n";
    return fresh;
  };
  for (const CompiledKernel& k : library.kernels) add(k.reflection.entry, "the compiled sources");
  for (const DeferredSource& s : library.sources)
    for (const DeferredEntry& e : s.entries) add(e.name, "the compiled sources");
  try {
    for (const std::string& lib : libraries) {
      LibraryContents read = readLibrary(lib);
      for (CompiledKernel& k : read.kernels) {
        if (!add(k.reflection.entry, lib)) return 1;
        library.kernels.push_back(std::move(k));
      }
      for (DeferredSource& s : read.sources) {
        for (const DeferredEntry& e : s.entries)
          if (!add(e.name, lib)) return 1;
        library.sources.push_back(std::move(s));
      }
    }
    writeLibrary(output, library);
  } catch (const std::runtime_error& e) {
    std::cerr << "m2v " << command << ": error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int metalCommand(const Args& args) {
  CompileOptions options;
  frontend::PreprocessOptions pp;
  bool preprocess = false, compileOnly = false, listHeaders = false;
  std::string output;
  std::vector<std::string> sources, libraries;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&](std::string& into) {
      if (i + 1 >= args.size()) return false;
      into = args[++i];
      return true;
    };
    std::string v;
    if (a == "-o") {
      if (!next(output)) return usageError("metal", "-o needs a value");
    } else if (a == "-I") {
      if (!next(v)) return usageError("metal", "-I needs a value");
      options.includeDirs.push_back(v);
    } else if (a.rfind("-I", 0) == 0) {
      options.includeDirs.push_back(a.substr(2));
    } else if (a == "-D" || a.rfind("-D", 0) == 0) {
      if (a == "-D" && !next(v)) return usageError("metal", "-D needs a value");
      if (a != "-D") v = a.substr(2);
      size_t eq = v.find('=');
      options.defines.emplace_back(v.substr(0, eq), eq == std::string::npos ? "" : v.substr(eq + 1));
    } else if (a == "-x") {
      if (!next(v)) return usageError("metal", "-x needs a value");
      if (v != "metal") return usageError("metal", "-x " + v + ": only 'metal' is accepted");
    } else if (a.rfind("-std=", 0) == 0) {
      auto version = parseMetalStd(a.substr(5));
      if (!version) return usageError("metal", "unknown language standard '" + a.substr(5) + "' (e.g. metal3.1)");
      options.metalVersion = *version;
    } else if (a == "-ffast-math" || a == "-fno-fast-math") {
      options.fastMath = a == "-ffast-math";
    } else if (a == "-E") {
      preprocess = true;
    } else if (a == "-c") {
      compileOnly = true;
    } else if (a == "-P") {
      pp.lineMarkers = false;
    } else if (a == "-C") {
      pp.keepComments = true;
    } else if (a == "-CC") {
      pp.keepComments = pp.keepCommentsInMacros = true;
    } else if (a == "-H") {
      listHeaders = true;
    } else if (a == "-w") {
      pp.warnings = false;
      options.warnings.push_back("-w");
    } else if (a == "-j") {
      if (!next(v) || v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
        return usageError("metal", "-j needs a number");
      options.jobs = unsigned(std::stoul(v));
    } else if (a == "--no-cooperative-matrix") {
      options.cooperativeMatrix = false;
    } else if (a == "--no-abort-checks") {
      options.abortChecks = false;
    } else if (a == "--native-bfloat16") {
      options.nativeBfloat16 = true;
    } else if (a.rfind("-W", 0) == 0 && a.size() > 2) {
      options.warnings.push_back(a);
    } else if (a.rfind("-mmacosx-version-min=", 0) == 0 || a == "-gline-tables-only" || a == "-frecord-sources" ||
               a == "-fmetal-enable-logging") {
      // Apple's deployment target and debug records: nothing to do with them here.
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usageError("metal", "unknown option '" + a + "'");
    } else if (isLibraryFile(a)) {
      libraries.push_back(a);
    } else {
      sources.push_back(a);
    }
  }

  if (preprocess) {
    if (sources.size() != 1 || !libraries.empty()) return usageError("metal", "-E takes exactly one source file");
    if (!output.empty()) return usageError("metal", "-E writes to standard output (no -o)");
    std::vector<std::string> headers;
    bool ok = frontend::preprocessFile(sources[0], options, pp, listHeaders ? &headers : nullptr);
    for (const std::string& h : headers) std::cerr << h << "\n";
    return ok ? 0 : 1;
  }
  if (compileOnly) {
    if (sources.size() != 1 || !libraries.empty()) return usageError("metal", "-c takes exactly one .metal file");
    if (output.empty()) return usageError("metal", "-c needs -o OUT.air");
    LibraryContents library;
    if (int status = compileInto(sources[0], options, library)) return status;
    return link("metal", {}, std::move(library), output);
  }
  if (sources.empty() && libraries.empty()) return usageError("metal", "no input files");
  if (output.empty()) return usageError("metal", "no output file (-o OUT.metallib)");
  LibraryContents library;
  for (const std::string& s : sources)
    if (int status = compileInto(s, options, library)) return status;
  return link("metal", libraries, std::move(library), output);
}

// --list: the entry points of a library file, one a line.
int listLibrary(const std::string& path) {
  try {
    LibraryContents library = readLibrary(path);
    for (const CompiledKernel& k : library.kernels) std::cout << k.reflection.entry << "\tcompiled\n";
    for (const DeferredSource& s : library.sources)
      for (const DeferredEntry& e : s.entries) std::cout << e.name << "\tdeferred " << s.name << "\n";
  } catch (const std::runtime_error& e) {
    std::cerr << "m2v metallib: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int metallibCommand(const Args& args) {
  if (!args.empty() && args[0] == "--list") {
    if (args.size() != 2) return usageError("metallib", "--list takes one library file");
    return listLibrary(args[1]);
  }
  std::string output;
  std::vector<std::string> libraries;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o") {
      if (i + 1 >= args.size()) return usageError("metallib", "-o needs a value");
      output = args[++i];
    } else if (!args[i].empty() && args[i][0] == '-') {
      return usageError("metallib", "unknown option '" + args[i] + "'");
    } else {
      libraries.push_back(args[i]);
    }
  }
  if (libraries.empty()) return usageError("metallib", "no input files");
  if (output.empty()) return usageError("metallib", "no output file (-o OUT.metallib)");
  return link("metallib", libraries, {}, output);
}

}  // namespace m2v::cli
