// Compiled-module cache of the MLX front door: memory, then disk, then the compiler.
// Key: SHA-256 of the compiler input text, the compile options, compilerVersion(), the embedded headers and the
// identity of the binary holding the compiler (so a rebuilt compiler never reuses an old module).
//
// Disk entries live in <cache dir>/mlx/<sha256>.m2vmod, one file per kernel (layout: at kMagic below),
// written to a unique temporary file in the same directory and renamed into place (atomic on POSIX), so
// concurrent processes either see a complete entry or none; an unreadable entry is recompiled and replaced.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

#include "EmbeddedHeaders.h"
#include "Sha256.h"
#include "metal2vk/compiler.h"
#include "metal2vk/library_file.h"
#include "metal2vk/mlx.h"

namespace fs = std::filesystem;

namespace m2v::mlx {

namespace {

// compileSource resolves a relative file name against the real working directory (compiler bug, see the issue
// note), so the assembled text gets an absolute virtual name; diagnostics show it.
const std::string kVirtualDir = "/metal_kernel/";

// The checksum catches what the write-to-temp + rename cannot: a file damaged after it was written.
// An entry: magic, variant bits (1: a cooperative-matrix build follows the portable module, 2: a native-bfloat16
// build follows, in that order), per module the reflection JSON and the SPIR-V words (each with its length), then a
// checksum of all of them.
constexpr char kMagic[8] = {'M', '2', 'V', 'M', 'O', 'D', '0', '4'};
constexpr uint64_t kHasCooperative = 1, kHasNativeBfloat16 = 2;
constexpr size_t kChecksumChars = 64;

std::string payloadChecksum(const std::vector<std::pair<std::string, const std::vector<uint32_t>*>>& parts) {
  Sha256 sha;
  for (const auto& [json, words] : parts) {
    sha.field(json);
    sha.field(std::string_view(reinterpret_cast<const char*>(words->data()), words->size() * 4));
  }
  return sha.hex();
}

struct CacheState {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const CompiledModule>> modules;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<CompiledKernel>>> libraries;
  CacheStats stats;
};

CacheState& state() {
  static CacheState s;
  return s;
}

// Hash of the embedded metal_stdlib headers (the prelude included): generated code depends on them.
const std::string& headersHash() {
  static const std::string h = [] {
    Sha256 sha;
    for (const auto& f : frontend::embeddedHeaders()) {
      sha.field(f.path);
      sha.field(f.contents);
    }
    return sha.hex();
  }();
  return h;
}

// Identity of the binary that contains the compiler (path, size, modification time): compilerVersion() is bumped
// by hand, a rebuilt compiler is not, and a stale module from an older build must never be served.
const std::string& compilerBinaryIdentity() {
  static const std::string id = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&compileSource), &info) || !info.dli_fname) return std::string("unknown");
    struct stat st {};
    if (::stat(info.dli_fname, &st) != 0) return std::string(info.dli_fname);
    return std::string(info.dli_fname) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
           "." + std::to_string(st.st_mtim.tv_nsec);
  }();
  return id;
}

CompileOptions optionsFor(const Assembly& a) {
  CompileOptions o;
  o.entries = {a.kernelName};
  o.validate = true;
  return o;
}

std::string optionsText(const CompileOptions& o) {
  std::string s;
  for (const auto& e : o.entries) s += "entry=" + e + ";";
  for (const auto& d : o.includeDirs) s += "I=" + d + ";";
  for (const auto& [k, v] : o.defines) s += "D=" + k + "=" + v + ";";
  s += o.validate ? "validate;" : "";
  s += buildsNativeBfloat16(o) ? "native-bfloat16;" : "";
  s += buildsAbortChecks(o) ? "" : "no-abort-checks;";
  return s;
}

std::optional<CompiledModule> readEntry(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  char magic[8];
  uint64_t variants = 0;
  if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) return std::nullopt;
  if (!in.read(reinterpret_cast<char*>(&variants), 8) || (variants & ~(kHasCooperative | kHasNativeBfloat16)))
    return std::nullopt;
  std::vector<CompiledModule> modules(1 + bool(variants & kHasCooperative) + bool(variants & kHasNativeBfloat16));
  std::vector<std::pair<std::string, const std::vector<uint32_t>*>> parts;
  for (CompiledModule& m : modules) {
    uint64_t jsonBytes = 0, words = 0;
    if (!in.read(reinterpret_cast<char*>(&jsonBytes), 8) || jsonBytes > (64u << 20)) return std::nullopt;
    std::string json(jsonBytes, '\0');
    if (!in.read(json.data(), std::streamsize(jsonBytes))) return std::nullopt;
    if (!in.read(reinterpret_cast<char*>(&words), 8) || words > (256u << 20)) return std::nullopt;
    m.spirv.resize(words);
    if (!in.read(reinterpret_cast<char*>(m.spirv.data()), std::streamsize(words * 4))) return std::nullopt;
    auto r = reflectionFromJson(json);
    if (!r || m.spirv.empty() || m.spirv[0] != 0x07230203u) return std::nullopt;
    m.reflection = std::move(*r);
    parts.emplace_back(std::move(json), &m.spirv);
  }
  std::string checksum(kChecksumChars, '\0');
  if (!in.read(checksum.data(), std::streamsize(kChecksumChars))) return std::nullopt;
  if (in.peek() != std::char_traits<char>::eof()) return std::nullopt;
  if (checksum != payloadChecksum(parts)) return std::nullopt;
  size_t next = 1;
  if (variants & kHasCooperative)
    modules[0].cooperative = std::make_shared<const CompiledModule>(std::move(modules[next++]));
  if (variants & kHasNativeBfloat16)
    modules[0].nativeBfloat16 = std::make_shared<const CompiledModule>(std::move(modules[next++]));
  return std::move(modules[0]);
}

bool writeEntry(const fs::path& path, const CompiledModule& m) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::random_device rd;
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    std::vector<const CompiledModule*> modules{&m};
    if (m.cooperative) modules.push_back(m.cooperative.get());
    if (m.nativeBfloat16) modules.push_back(m.nativeBfloat16.get());
    uint64_t variants = (m.cooperative ? kHasCooperative : 0) | (m.nativeBfloat16 ? kHasNativeBfloat16 : 0);
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(&variants), 8);
    std::vector<std::pair<std::string, const std::vector<uint32_t>*>> parts;
    for (const CompiledModule* module : modules) {
      std::string json = toJson(module->reflection);
      uint64_t jsonBytes = json.size(), words = module->spirv.size();
      out.write(reinterpret_cast<const char*>(&jsonBytes), 8);
      out.write(json.data(), std::streamsize(json.size()));
      out.write(reinterpret_cast<const char*>(&words), 8);
      out.write(reinterpret_cast<const char*>(module->spirv.data()), std::streamsize(words * 4));
      parts.emplace_back(std::move(json), &module->spirv);
    }
    out.write(payloadChecksum(parts).data(), std::streamsize(kChecksumChars));
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace

std::string moduleCacheDirectory() {
  const char* env = std::getenv("M2V_CACHE_DIR");
  if (env && *env) {
    if (std::string(env) == "-") return {};
    return (fs::path(env) / "mlx").string();
  }
  const char* home = std::getenv("HOME");
  if (!home || !*home) return {};
  return (fs::path(home) / ".cache" / "metal2vk" / "mlx").string();
}

std::string cacheKey(const Assembly& assembly) {
  Sha256 sha;
  sha.field("m2v-mlx-module-2");
  sha.field(compilerVersion());
  sha.field(headersHash());
  sha.field(compilerBinaryIdentity());
  sha.field(optionsText(optionsFor(assembly)));
  sha.field(compilerInput(assembly));
  return sha.hex();
}

std::shared_ptr<const CompiledModule> compileCached(const Assembly& assembly) {
  CacheState& st = state();
  const std::string key = cacheKey(assembly);
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    auto it = st.modules.find(key);
    if (it != st.modules.end()) {
      st.stats.memoryHits++;
      return it->second;
    }
  }
  const std::string dir = moduleCacheDirectory();
  const fs::path file = dir.empty() ? fs::path() : fs::path(dir) / (key + ".m2vmod");
  std::shared_ptr<const CompiledModule> module;
  bool fromDisk = false;
  if (!dir.empty()) {
    if (auto m = readEntry(file)) {
      module = std::make_shared<const CompiledModule>(std::move(*m));
      fromDisk = true;
    }
  }
  if (!module) {
    CompileOptions options = optionsFor(assembly);
    CompileResult r = compileSource(compilerInput(assembly), kVirtualDir + assembly.kernelName + ".metal", options);
    if (r.status != Status::Ok) throw CompileError(r.status, r.diagnostics.format(), assembly.kernelName);
    const CompiledKernel* found = nullptr;
    for (const auto& k : r.kernels)
      if (k.reflection.entry == assembly.kernelName) found = &k;
    if (!found)
      throw CompileError(Status::UserError,
                         "error: the compiled source has no kernel named '" + assembly.kernelName + "'\n",
                         assembly.kernelName);
    module = std::make_shared<const CompiledModule>(*found);
    bool wrote = !dir.empty() && writeEntry(file, *module);
    std::lock_guard<std::mutex> lock(st.mutex);
    st.stats.compiles++;
    if (wrote) st.stats.diskWrites++;
  }
  std::lock_guard<std::mutex> lock(st.mutex);
  if (fromDisk) st.stats.diskHits++;
  auto [it, inserted] = st.modules.emplace(key, module);
  return it->second;
}

std::shared_ptr<const std::vector<CompiledKernel>> compileLibraryCached(const std::string& source,
                                                                        const std::string& name,
                                                                        const CompileOptions& options) {
  std::string text = optionsText(options);
  text += options.fastMath ? "fast;" : "";
  text += "metal=" + std::to_string(options.metalVersion) + ";";
  for (const auto& w : options.warnings) text += "W=" + w + ";";
  Sha256 sha;
  sha.field("m2v-metal-library-1");
  sha.field(compilerVersion());
  sha.field(headersHash());
  sha.field(compilerBinaryIdentity());
  sha.field(text);
  sha.field(source);
  const std::string key = sha.hex();
  CacheState& st = state();
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (auto it = st.libraries.find(key); it != st.libraries.end()) {
      st.stats.memoryHits++;
      return it->second;
    }
  }
  const std::string dir = moduleCacheDirectory();
  const fs::path file = dir.empty() ? fs::path() : fs::path(dir) / (key + ".m2vlib");
  std::shared_ptr<const std::vector<CompiledKernel>> kernels;
  bool fromDisk = false, wrote = false;
  if (!dir.empty() && fs::exists(file)) {
    try {
      kernels = std::make_shared<const std::vector<CompiledKernel>>(readLibraryFile(file.string()));
      fromDisk = true;
    } catch (const std::runtime_error&) {
      // Damaged or from another compiler: compile again and replace it.
    }
  }
  if (!kernels) {
    CompileResult r = compileSource(source, name, options);
    if (r.status != Status::Ok) throw CompileError(r.status, r.diagnostics.format(), name);
    kernels = std::make_shared<const std::vector<CompiledKernel>>(std::move(r.kernels));
    if (!dir.empty()) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      try {
        writeLibraryFile(file.string(), *kernels);
        wrote = true;
      } catch (const std::runtime_error&) {
        // The disk cache is an optimisation: an unwritable directory is not an error.
      }
    }
  }
  std::lock_guard<std::mutex> lock(st.mutex);
  if (fromDisk)
    st.stats.diskHits++;
  else
    st.stats.compiles++;
  if (wrote) st.stats.diskWrites++;
  return st.libraries.emplace(key, kernels).first->second;
}

CacheStats cacheStats() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().stats;
}

void clearMemoryCache() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().modules.clear();
  state().libraries.clear();
}

}  // namespace m2v::mlx
